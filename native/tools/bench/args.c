/*
 * railgauge-bench: parsing of option values that every pattern shares
 * (numbers in a range, message sizes, log-spaced sweeps) and the one-line
 * usage error. The patterns' own files call these; none calls back into
 * main.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "bench.h"

/* Prints one line naming the problem and returns the usage exit code. */
int rg_bench_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "railgauge-bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return RG_BENCH_EXIT_USAGE;
}

int rg_bench_parse_double(const char *text, double lo, double hi, double *out_p)
{
    char  *end;
    double v;

    v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi) {
        return -1;
    }
    *out_p = v;
    return 0;
}

int rg_bench_parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    long  v;

    errno = 0;
    v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

int rg_bench_parse_int(const char *text, long lo, long hi, int *out_p)
{
    char *end;
    long  v;

    v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out_p = (int)v;
    return 0;
}

static int rg__bench_size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Sorts and removes duplicates. */
static void rg__bench_sizes_normalize(rg_bench_opts_t *opts)
{
    size_t i, k = 0;

    qsort(opts->sizes, opts->nsizes, sizeof(opts->sizes[0]), rg__bench_size_cmp);
    for (i = 0; i < opts->nsizes; i++) {
        if (k == 0 || opts->sizes[k - 1] != opts->sizes[i]) {
            opts->sizes[k++] = opts->sizes[i];
        }
    }
    opts->nsizes = k;
}

int rg_bench_parse_sizes(const char *text, rg_bench_opts_t *opts)
{
    char     copy[4096];
    char    *tok, *save = NULL;
    rg_err_t err;
    size_t   v;

    if (strlen(text) >= sizeof(copy)) {
        return rg_bench_usage_error("--sizes: list too long (%s...)", "");
    }
    strcpy(copy, text);
    opts->nsizes = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (rg_parse_size(tok, &v, &err) != RG_OK) {
            return rg_bench_usage_error("--sizes: %s", rg_err_message(&err));
        }
        if (v > RG_BENCH_SIZE_LIMIT) {
            return rg_bench_usage_error("--sizes: %s is above the limit of 1 GiB", tok);
        }
        if (opts->nsizes == RG_BENCH_MAX_SIZES) {
            return rg_bench_usage_error("--sizes: more than 512 sizes (%s)", tok);
        }
        opts->sizes[opts->nsizes++] = v;
    }
    if (opts->nsizes == 0) {
        return rg_bench_usage_error("--sizes: empty list '%s'", text);
    }
    rg__bench_sizes_normalize(opts);
    return 0;
}

/* A log-spaced sweep with per_octave points per doubling, rounded to bytes. */
int rg_bench_make_sweep(rg_bench_opts_t *opts, size_t lo, size_t hi, int per_octave)
{
    double x, step;

    opts->nsizes = 0;
    step = pow(2.0, 1.0 / per_octave);
    for (x = (double)(lo == 0 ? 1 : lo); x <= (double)hi * 1.0000001; x *= step) {
        if (opts->nsizes == RG_BENCH_MAX_SIZES) {
            return rg_bench_usage_error("the sweep has more than 512 sizes%s; lower --per-octave", "");
        }
        opts->sizes[opts->nsizes++] = (size_t)llround(x);
    }
    if (lo == 0) {
        opts->sizes[opts->nsizes++] = 0;
    }
    if (opts->nsizes < RG_BENCH_MAX_SIZES && opts->sizes[opts->nsizes - 1] != hi) {
        opts->sizes[opts->nsizes++] = hi;
    }
    rg__bench_sizes_normalize(opts);
    return 0;
}
