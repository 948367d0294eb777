/*
 * railgauge: summary statistics of a sample of times (see stats.h).
 *
 * Latency samples are skewed and often multi-modal, so the interval reported
 * is for the median and makes no assumption about the distribution: the
 * number of samples below the true median is Binomial(n, 1/2), which gives
 * the confidence of any pair of order statistics [x_(j), x_(k)] directly
 * (J.-Y. Le Boudec, "Performance Evaluation of Computer and Communication
 * Systems", Theorem 2.1).
 */
#include "base/stats.h"

#include <math.h>
#include <stdlib.h>

/* Confidence level of the median's interval, and the sample count up to
 * which the binomial sums are done exactly. */
#define RG__STATS_CI_LEVEL      0.95
#define RG__STATS_CI_EXACT_MAX  20
/* Below this count no pair of order statistics reaches 95% (even [min, max]
 * covers only 1 - 2^(1-n)), so [min, max] is reported as the best there is. */
#define RG__STATS_CI_MIN_N      6

static int rg__stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double rg_stats_quantile_sorted(const double *x, size_t n, double q)
{
    double h, frac;
    size_t lo;

    if (x == NULL || n == 0 || isnan(q)) {
        return NAN;
    }
    if (q <= 0.0) {
        return x[0];
    }
    if (q >= 1.0) {
        return x[n - 1];
    }
    /* Type 7 (the default of R and NumPy): h = (n - 1) q, interpolated
     * between the order statistics on either side of h. */
    h    = (double)(n - 1) * q;
    lo   = (size_t)floor(h);
    frac = h - (double)lo;
    if (lo + 1 >= n) {
        return x[n - 1];
    }
    return x[lo] + frac * (x[lo + 1] - x[lo]);
}

/* Finds the 1-based ranks j <= k of the median's 95% interval. */
static void rg__stats_median_ranks(size_t n, size_t *j_p, size_t *k_p)
{
    double coef, tail, half_width;
    size_t i, j;
    long   lo, hi;

    if (n < RG__STATS_CI_MIN_N) {
        *j_p = 1;
        *k_p = n;
        return;
    }

    if (n <= RG__STATS_CI_EXACT_MAX) {
        /* P(x_(j) <= median < x_(k)) = P(j <= B < k) with B ~ Bin(n, 1/2).
         * For the symmetric pair k = n + 1 - j this is 1 - 2 P(B <= j - 1),
         * so j is the largest rank whose lower tail P(B <= j - 1) is still
         * at most (1 - level) / 2. Ranks grow from 1 while that holds. */
        coef = 1.0;             /* C(n, 0) */
        tail = ldexp(1.0, -(int)n);
        j    = 1;
        for (i = 1; i < n / 2; i++) {
            double next;

            coef = coef * (double)(n - i + 1) / (double)i;   /* C(n, i) */
            next = tail + coef * ldexp(1.0, -(int)n);        /* P(B <= i) */
            if (1.0 - 2.0 * next < RG__STATS_CI_LEVEL) {
                break;
            }
            tail = next;
            j    = i + 1;
        }
        *j_p = j;
        *k_p = n + 1 - j;
        return;
    }

    /* Above RG__STATS_CI_EXACT_MAX the binomial is close enough to a normal
     * with mean n/2 and standard deviation sqrt(n)/2: 1.96 sqrt(n) / 2. */
    half_width = 0.98 * sqrt((double)n);
    lo = (long)floor((double)n / 2.0 - half_width);
    hi = (long)ceil((double)n / 2.0 + 1.0 + half_width);
    *j_p = (lo < 1) ? 1 : (size_t)lo;
    *k_p = (hi > (long)n) ? n : (size_t)hi;
}

rg_status_t rg_stats_compute(double *x, size_t n, rg_stats_t *out, rg_err_t *err)
{
    rg_stats_t s;
    double     mean = 0.0, m2 = 0.0, delta;
    size_t     i, j, k;

    if (out == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_stats_compute: out is NULL");
    }
    if (n == 0) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "cannot summarise an empty sample (n = 0)");
    }
    if (x == NULL) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "rg_stats_compute: x is NULL but n = %zu", n);
    }
    /* Every value is checked before sorting, so a bad sample leaves both x
     * and out untouched. */
    for (i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "sample %zu of %zu is %g; every sample must be "
                              "a finite number", i, n, x[i]);
        }
    }

    qsort(x, n, sizeof(*x), rg__stats_cmp_double);

    /* Welford's update keeps the variance accurate when the spread is tiny
     * compared with the mean, as it is for repeated latencies. */
    for (i = 0; i < n; i++) {
        delta = x[i] - mean;
        mean += delta / (double)(i + 1);
        m2   += delta * (x[i] - mean);
    }

    s.count  = n;
    s.min    = x[0];
    s.max    = x[n - 1];
    s.mean   = mean;
    s.median = rg_stats_quantile_sorted(x, n, 0.5);
    s.p99    = rg_stats_quantile_sorted(x, n, 0.99);
    s.stddev = (n > 1) ? sqrt(m2 / (double)(n - 1)) : 0.0;

    rg__stats_median_ranks(n, &j, &k);
    s.median_ci_lo = x[j - 1];
    s.median_ci_hi = x[k - 1];

    *out = s;
    return RG_OK;
}

double rg_stats_median_rel_halfwidth(const rg_stats_t *s)
{
    if (s == NULL) {
        return NAN;
    }
    if (s->median == 0.0) {
        return INFINITY;
    }
    return (s->median_ci_hi - s->median_ci_lo) / (2.0 * fabs(s->median));
}
