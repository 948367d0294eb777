/*
 * What both bench programs share (spsc_floor.c, mpi_pingpong.c): a TSC or
 * CLOCK_MONOTONIC timer calibrated against CLOCK_MONOTONIC, the median of
 * sorted tick counts, and the parsing of numeric options and size lists.
 * Each program sets bt_use_tsc from --timer.
 */
#ifndef RG_BENCH_COMMON_H
#define RG_BENCH_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

static inline uint64_t bt_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timer of the timed loop: the TSC (rdtscp waits for the round trip's loads
 * to finish), or CLOCK_MONOTONIC with --timer clock, which costs about 20 ns a
 * call in the VM this was written on.  Either one can advance in steps of 10 ns
 * (AMD's TSC counts a 100 MHz reference clock), hence the samples of --group
 * round trips for small sizes. */
static int bt_use_tsc = 1;

static inline uint64_t bt_ticks(void)
{
    unsigned aux;

    return bt_use_tsc ? __rdtscp(&aux) : bt_now_ns();
}

/* Ticks per nanosecond, measured against CLOCK_MONOTONIC over 50 ms. */
static inline double bt_ticks_per_ns(void)
{
    uint64_t n0, n1, c0, c1;

    if (!bt_use_tsc)
        return 1.0;
    n0 = bt_now_ns();
    c0 = bt_ticks();
    do {
        _mm_pause();
        n1 = bt_now_ns();
    } while (n1 - n0 < 50000000u);
    c1 = bt_ticks();
    return (double)(c1 - c0) / (double)(n1 - n0);
}

static inline int bt_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static inline double bt_median_sorted(const uint64_t *v, size_t n)
{
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2.0;
}

/* A whole number >= lo (decimal, 0x hex or 0 octal); 0, or -1 if it is not one. */
static inline int bt_parse_long(const char *s, long lo, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 0);
    if (errno || end == s || *end || v < lo)
        return -1;
    *out = v;
    return 0;
}

/* A comma-separated list of 1 B .. 1 GiB sizes, at most max of them, into
 * sizes[]; 0, or -1 for an empty, too long or malformed list. */
static inline int bt_parse_sizes(const char *arg, size_t *sizes, int max, int *n)
{
    char buf[512];
    char *save = NULL;

    if (strlen(arg) >= sizeof(buf))
        return -1;
    strcpy(buf, arg);
    *n = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long v;
        if (*n == max || bt_parse_long(tok, 1, &v) || v > (1L << 30))
            return -1;
        sizes[(*n)++] = (size_t)v;
    }
    return *n ? 0 : -1;
}

#endif /* RG_BENCH_COMMON_H */
