/*
 * railgauge: summary statistics of a sample of times.
 */
#ifndef RG_BASE_STATS_H
#define RG_BASE_STATS_H

#include <stddef.h>

#include "base/error.h"

typedef struct rg_stats {
    size_t count;
    double min, max, mean, median, p99, stddev;
    /* 95% confidence interval of the median: distribution-free, from the
     * binomial order statistics (normal approximation above 20 samples,
     * exact binomial below; for n < 6 the interval is [min, max]). */
    double median_ci_lo, median_ci_hi;
} rg_stats_t;

/* Computes the summary of x[0..n-1]; sorts x in place. n == 0 or a
 * non-finite value gives RG_ERR_INVALID. */
rg_status_t rg_stats_compute(double *x, size_t n, rg_stats_t *out, rg_err_t *err);

/* Quantile q in [0,1] of sorted x by linear interpolation (type 7); q
 * outside [0,1] is clamped; NaN for n == 0, x == NULL or a NaN q. */
double rg_stats_quantile_sorted(const double *x, size_t n, double q);

/* Relative half-width of the median's CI: (hi - lo) / (2 * |median|);
 * infinity for a zero median, NaN for s == NULL. */
double rg_stats_median_rel_halfwidth(const rg_stats_t *s);

#endif /* RG_BASE_STATS_H */
