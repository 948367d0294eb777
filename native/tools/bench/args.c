/*
 * railgauge-bench: parsing of option values that every pattern shares
 * (numbers in a range, message sizes, log-spaced sweeps) and the one-line
 * usage error. The patterns' own files call these; none calls back into
 * main.c.
 */
#include <errno.h>
#include <getopt.h>
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

/* ---- options from a table ------------------------------------------------ */

/* Another rank than 0 by the launchers' variables: it keeps quiet. */
static int rg__bench_quiet_rank(void)
{
    static const char *const vars[] = {"RG_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};
    size_t                   i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0') {
            return strcmp(v, "0") != 0;
        }
    }
    return 0;
}

int rg_bench_rank_usage_error(const char *prefix, const char *fmt, const char *arg)
{
    if (!rg__bench_quiet_rank()) {
        fprintf(stderr, "%s: ", prefix);
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n");
    }
    return RG_BENCH_EXIT_USAGE;
}

/* "--NAME must be WHAT, not 'ARG'". */
static int rg__bench_range_error(const rg_bench_optdef_t *d, const char *arg, const char *prefix)
{
    char what[160], fmt[320];

    if (d->what != NULL) {
        snprintf(what, sizeof(what), "%s", d->what);
    } else {
        snprintf(what, sizeof(what), "an integer in %.0f..%.0f", d->lo, d->hi);
    }
    snprintf(fmt, sizeof(fmt), "--%s must be %s, not '%%s'", d->name, what);
    return rg_bench_rank_usage_error(prefix, fmt, arg);
}

/* One option's value into opts. */
static int rg__bench_set(const rg_bench_optdef_t *d, const char *arg, void *opts,
                         const char *prefix)
{
    char  *field = (char *)opts + d->offset;
    long   lv;
    double dv;
    size_t i;

    switch (d->kind) {
    case RG_BOPT_FLAG:
        *(int *)(void *)field = 1;
        return 0;
    case RG_BOPT_LONG:
    case RG_BOPT_INT:
    case RG_BOPT_UINT:
        if (rg_bench_parse_long(arg, (long)d->lo, (long)d->hi, &lv) != 0) {
            return rg__bench_range_error(d, arg, prefix);
        }
        if (d->kind == RG_BOPT_LONG) {
            *(long *)(void *)field = lv;
        } else if (d->kind == RG_BOPT_INT) {
            *(int *)(void *)field = (int)lv;
        } else {
            *(unsigned *)(void *)field = (unsigned)lv;
        }
        return 0;
    case RG_BOPT_DOUBLE:
        errno = 0;
        if (rg_bench_parse_double(arg, d->lo, d->hi, &dv) != 0 || errno != 0) {
            return rg__bench_range_error(d, arg, prefix);
        }
        *(double *)(void *)field = dv;
        return 0;
    case RG_BOPT_STRING:
        *(const char **)(void *)field = arg;
        return 0;
    case RG_BOPT_NAME:
        if (strlen(arg) >= (size_t)d->hi) {
            char fmt[96];

            snprintf(fmt, sizeof(fmt), "--%s: name too long '%%s'", d->name);
            return rg_bench_rank_usage_error(prefix, fmt, arg);
        }
        snprintf(field, (size_t)d->hi, "%s", arg);
        return 0;
    case RG_BOPT_CHOICE:
        for (i = 0; d->choices[i] != NULL; i++) {
            if (strcmp(arg, d->choices[i]) == 0) {
                *(int *)(void *)field = (int)i;
                return 0;
            }
        }
        return rg__bench_range_error(d, arg, prefix);
    case RG_BOPT_CALL:
        return d->call(opts, arg, prefix);
    }
    return rg_bench_rank_usage_error(prefix, "option kind unknown (%s)", d->name);
}

int rg_bench_getopt(int argc, char **argv, const rg_bench_optdef_t *defs, size_t ndefs,
                    void *opts, const char *prefix, void (*usage)(FILE *f))
{
    struct option longopts[48];
    size_t        i;
    int           c, rc;

    if (ndefs + 2 > sizeof(longopts) / sizeof(longopts[0])) {
        return rg_bench_rank_usage_error(prefix, "too many options in a table%s", "");
    }
    for (i = 0; i < ndefs; i++) {
        longopts[i].name    = defs[i].name;
        longopts[i].has_arg = defs[i].kind == RG_BOPT_FLAG ? no_argument : required_argument;
        longopts[i].flag    = NULL;
        longopts[i].val     = 256 + (int)i;
    }
    longopts[ndefs]     = (struct option){"help", no_argument, NULL, 'h'};
    longopts[ndefs + 1] = (struct option){NULL, 0, NULL, 0};
    optind = 2;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        }
        if (c < 256 || c >= 256 + (int)ndefs) {
            return rg_bench_rank_usage_error(prefix, "unknown option or missing value '%s'",
                                             argv[optind - 1]);
        }
        rc = rg__bench_set(&defs[c - 256], optarg, opts, prefix);
        if (rc != 0) {
            return rc;
        }
        if (defs[c - 256].given >= 0) {
            *(int *)(void *)((char *)opts + defs[c - 256].given) = 1;
        }
    }
    if (optind < argc) {
        return rg_bench_rank_usage_error(prefix, "unexpected argument '%s'", argv[optind]);
    }
    return 0;
}
