/*
 * The timing both bench programs share (spsc_floor.c, mpi_pingpong.c): a
 * TSC or CLOCK_MONOTONIC timer calibrated against CLOCK_MONOTONIC, and the
 * median of sorted tick counts. Each program sets bt_use_tsc from --timer.
 */
#ifndef RG_BENCH_TIMING_H
#define RG_BENCH_TIMING_H

#include <stddef.h>
#include <stdint.h>
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

#endif /* RG_BENCH_TIMING_H */
