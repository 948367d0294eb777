/*
 * railgauge: tests of the summary statistics.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/stats.h"
#include "task.h"

/* Fills x with 1, 2, ..., n shuffled (a fixed LCG, so runs are repeatable). */
static void rg__test_fill_shuffled(double *x, size_t n)
{
    uint64_t state = 12345;
    size_t   i, j;
    double   tmp;

    for (i = 0; i < n; i++) {
        x[i] = (double)(i + 1);
    }
    for (i = n - 1; i > 0; i--) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        j = (size_t)((state >> 33) % (i + 1));
        tmp = x[i];
        x[i] = x[j];
        x[j] = tmp;
    }
}

TEST_IMPL(stats_basic)
{
    double     x[] = {5.0, 1.0, 4.0, 2.0, 3.0};
    rg_stats_t s;
    rg_err_t   err;
    size_t     i;

    ASSERT_OK(rg_stats_compute(x, 5, &s, &err), &err);
    ASSERT_INT_EQ(s.count, 5);
    ASSERT(s.min == 1.0);
    ASSERT(s.max == 5.0);
    ASSERT_DBL_NEAR(s.mean, 3.0, 1e-12);
    ASSERT(s.median == 3.0);
    ASSERT_DBL_NEAR(s.stddev, sqrt(2.5), 1e-12);   /* sample, n - 1 */
    ASSERT_DBL_NEAR(s.p99, 4.96, 1e-12);           /* 1 + 4 * 0.99 */
    /* The input is sorted in place, as documented. */
    for (i = 0; i < 5; i++) {
        ASSERT(x[i] == (double)(i + 1));
    }

    /* One sample: no spread at all. */
    x[0] = 7.5;
    ASSERT_OK(rg_stats_compute(x, 1, &s, &err), &err);
    ASSERT(s.min == 7.5 && s.max == 7.5 && s.median == 7.5 && s.p99 == 7.5);
    ASSERT(s.stddev == 0.0);
    ASSERT(s.median_ci_lo == 7.5 && s.median_ci_hi == 7.5);
    return 0;
}

TEST_IMPL(stats_median)
{
    double     odd[]  = {9.0, 1.0, 5.0, 3.0, 7.0, 2.0, 8.0};
    double     even[] = {4.0, 1.0, 3.0, 2.0};
    double     same[] = {2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0};
    rg_stats_t s;
    rg_err_t   err;

    ASSERT_OK(rg_stats_compute(odd, 7, &s, &err), &err);
    ASSERT(s.median == 5.0);
    ASSERT_OK(rg_stats_compute(even, 4, &s, &err), &err);
    ASSERT(s.median == 2.5);
    ASSERT_DBL_NEAR(s.mean, 2.5, 1e-12);
    ASSERT_OK(rg_stats_compute(same, 8, &s, &err), &err);
    ASSERT(s.median == 2.0 && s.stddev == 0.0);
    ASSERT(s.median_ci_lo == 2.0 && s.median_ci_hi == 2.0);
    return 0;
}

TEST_IMPL(stats_quantile)
{
    double     x[100];
    rg_stats_t s;
    rg_err_t   err;
    double     five[] = {1.0, 2.0, 3.0, 4.0, 5.0};

    rg__test_fill_shuffled(x, 100);
    ASSERT_OK(rg_stats_compute(x, 100, &s, &err), &err);
    /* Type 7: h = 99 * 0.99 = 98.01, between x[98] = 99 and x[99] = 100. */
    ASSERT_DBL_NEAR(s.p99, 99.01, 1e-9);
    ASSERT_DBL_NEAR(s.median, 50.5, 1e-12);
    ASSERT_DBL_NEAR(s.mean, 50.5, 1e-12);
    ASSERT_DBL_NEAR(s.stddev, sqrt(100.0 * 101.0 / 12.0), 1e-9);

    ASSERT(rg_stats_quantile_sorted(five, 5, 0.0) == 1.0);
    ASSERT(rg_stats_quantile_sorted(five, 5, 1.0) == 5.0);
    ASSERT(rg_stats_quantile_sorted(five, 5, 0.25) == 2.0);
    ASSERT_DBL_NEAR(rg_stats_quantile_sorted(five, 5, 0.1), 1.4, 1e-12);
    /* q outside [0, 1] clamps; no data or a NaN q gives NaN. */
    ASSERT(rg_stats_quantile_sorted(five, 5, -1.0) == 1.0);
    ASSERT(rg_stats_quantile_sorted(five, 5, 2.0) == 5.0);
    ASSERT(isnan(rg_stats_quantile_sorted(five, 0, 0.5)));
    ASSERT(isnan(rg_stats_quantile_sorted(NULL, 5, 0.5)));
    ASSERT(isnan(rg_stats_quantile_sorted(five, 5, NAN)));
    return 0;
}

/* Checks the CI of the shuffled sample 1..n against the expected ranks. */
static int rg__test_ci(size_t n, double lo, double hi)
{
    double    *x = malloc(n * sizeof(*x));
    rg_stats_t s;
    rg_err_t   err;
    int        ok;

    ASSERT(x != NULL);
    rg__test_fill_shuffled(x, n);
    ok = rg_stats_compute(x, n, &s, &err) == RG_OK;
    free(x);
    if (!ok) {
        RG__TEST_FAIL("n = %zu: %s", n, rg_err_message(&err));
    }
    if (s.median_ci_lo != lo || s.median_ci_hi != hi) {
        RG__TEST_FAIL("n = %zu: CI [%g, %g], expected [%g, %g]", n,
                      s.median_ci_lo, s.median_ci_hi, lo, hi);
    }
    ASSERT(s.median_ci_lo <= s.median && s.median <= s.median_ci_hi);
    return 0;
}

TEST_IMPL(stats_ci_small)
{
    /* Below 6 samples no order statistics reach 95%: [min, max]. */
    ASSERT(rg__test_ci(2, 1.0, 2.0) == 0);
    ASSERT(rg__test_ci(3, 1.0, 3.0) == 0);
    ASSERT(rg__test_ci(5, 1.0, 5.0) == 0);
    return 0;
}

TEST_IMPL(stats_ci_exact)
{
    /* Exact binomial: n = 6..8 still need [x(1), x(n)] (n = 6: 96.9%;
     * [x(2), x(5)] covers only 78.1%); n = 9 gives [x(2), x(8)] (96.1%);
     * n = 20 gives [x(6), x(15)] (95.9%; [x(7), x(14)] has 88.5%). */
    ASSERT(rg__test_ci(6, 1.0, 6.0) == 0);
    ASSERT(rg__test_ci(8, 1.0, 8.0) == 0);
    ASSERT(rg__test_ci(9, 2.0, 8.0) == 0);
    ASSERT(rg__test_ci(12, 3.0, 10.0) == 0);
    ASSERT(rg__test_ci(20, 6.0, 15.0) == 0);
    return 0;
}

TEST_IMPL(stats_ci_normal)
{
    /* n = 100: floor(50 - 9.8) = 40 and ceil(51 + 9.8) = 61.
     * n = 21: floor(10.5 - 4.49) = 6 and ceil(11.5 + 4.49) = 16.
     * n = 1000: floor(500 - 30.99) = 469 and ceil(501 + 30.99) = 532. */
    ASSERT(rg__test_ci(100, 40.0, 61.0) == 0);
    ASSERT(rg__test_ci(21, 6.0, 16.0) == 0);
    ASSERT(rg__test_ci(1000, 469.0, 532.0) == 0);
    return 0;
}

TEST_IMPL(stats_ci_random)
{
    uint64_t   state = 99;
    double     x[257];
    rg_stats_t s;
    rg_err_t   err;
    size_t     n, i;

    /* Skewed, tied, and of every size: the CI is ordered and holds the
     * median, and the summary is ordered as a summary must be. */
    for (n = 1; n <= 257; n += 8) {
        for (i = 0; i < n; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = 1000.0 + (double)((state >> 40) % 64) * (double)((state >> 20) % 5);
        }
        ASSERT_OK(rg_stats_compute(x, n, &s, &err), &err);
        ASSERT(s.min <= s.median_ci_lo);
        ASSERT(s.median_ci_lo <= s.median);
        ASSERT(s.median <= s.median_ci_hi);
        ASSERT(s.median_ci_hi <= s.max);
        ASSERT(s.min <= s.mean && s.mean <= s.max);
        ASSERT(s.median <= s.p99 && s.p99 <= s.max);
        ASSERT(s.stddev >= 0.0);
    }
    return 0;
}

TEST_IMPL(stats_invalid)
{
    double     x[] = {3.0, 1.0, NAN, 2.0};
    double     y[] = {3.0, INFINITY};
    rg_stats_t s, before;
    rg_err_t   err;

    memset(&s, 0x5a, sizeof(s));
    before = s;

    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_stats_compute(x, 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "empty");

    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_stats_compute(x, 4, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "sample 2 of 4 is nan");
    /* A rejected sample is neither sorted nor summarised. */
    ASSERT(x[0] == 3.0 && x[1] == 1.0);

    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_stats_compute(y, 2, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "is inf");

    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_stats_compute(NULL, 3, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "NULL");
    ASSERT_INT_EQ(rg_stats_compute(y, 1, NULL, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_stats_compute(y, 0, &s, NULL), RG_ERR_INVALID);

    ASSERT(memcmp(&s, &before, sizeof(s)) == 0);
    return 0;
}

TEST_IMPL(stats_rel_halfwidth)
{
    rg_stats_t s;

    memset(&s, 0, sizeof(s));
    s.median = 10.0;
    s.median_ci_lo = 9.0;
    s.median_ci_hi = 12.0;
    ASSERT_DBL_NEAR(rg_stats_median_rel_halfwidth(&s), 0.15, 1e-12);
    s.median = 0.0;
    ASSERT(isinf(rg_stats_median_rel_halfwidth(&s)));
    ASSERT(isnan(rg_stats_median_rel_halfwidth(NULL)));
    return 0;
}
