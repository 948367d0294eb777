/*
 * railgauge: a calibrated cycle timer (see timer.h).
 *
 * The TSC is used only where CPUID promises that it ticks at a constant rate
 * in every P-state and C-state (the "invariant TSC" bit); otherwise a rate
 * calibrated at init would silently drift with frequency scaling. The
 * calibration is cheap (three windows of about 7 ms) so that every process
 * can afford it at start-up.
 */
#include "base/timer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

/* Calibration: RG__TIMER_CAL_WINDOWS windows of RG__TIMER_CAL_WINDOW_NS each;
 * the median rate is kept so that one window disturbed by preemption does not
 * skew the result. */
#define RG__TIMER_CAL_WINDOWS    3
#define RG__TIMER_CAL_WINDOW_NS  7000000ull
/* Tries used to pair a TSC read with a CLOCK_MONOTONIC read: the pair whose
 * two clock reads lie closest together bounds the pairing error best. */
#define RG__TIMER_PAIR_TRIES     8
/* Resolution: the median of this many smallest non-zero deltas. */
#define RG__TIMER_RES_TRIES      1001
/* A clock that does not move within this many reads is treated as stuck, so
 * that the resolution loop cannot spin forever. */
#define RG__TIMER_RES_MAX_SPINS  100000
/* Overhead: the median over batches of back-to-back reads. */
#define RG__TIMER_OVH_BATCHES    7
#define RG__TIMER_OVH_READS      1000
/* A calibrated rate outside this range (GHz) cannot be a real TSC; it means
 * the calibration was disturbed, and the fallback is the safer choice. */
#define RG__TIMER_MIN_GHZ        0.05
#define RG__TIMER_MAX_GHZ        20.0

/* Stops the compiler from moving memory accesses across a timer read. */
#define RG__COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")

/* Tells the core that this is a spin-wait loop: on x86 the pause instruction
 * saves power and avoids the memory-order machine clear on loop exit, and it
 * yields the core to a hyperthread sibling. */
static inline void rg__timer_cpu_relax(void)
{
#if defined(__x86_64__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    RG__COMPILER_BARRIER();
#endif
}

uint64_t rg_time_mono_ns(void)
{
    struct timespec ts;

    /* CLOCK_MONOTONIC cannot fail on Linux once rg_timer_init() has seen it
     * work; 0 is returned rather than garbage if it ever does. */
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/* rdtsc is not ordered with respect to other instructions: the lfence before
 * it waits for earlier instructions to finish, the one after it keeps later
 * instructions from starting before the read, and the compiler barriers keep
 * the compiler from doing the same reordering. */
static inline uint64_t rg__timer_rdtsc(void)
{
    uint64_t t;

    RG__COMPILER_BARRIER();
    _mm_lfence();
    t = __rdtsc();
    _mm_lfence();
    RG__COMPILER_BARRIER();
    return t;
}

/* Returns 1 when CPUID reports an invariant TSC, else 0 and a reason. */
static int rg__timer_tsc_invariant(char *why, size_t why_len)
{
    unsigned int eax, ebx, ecx, edx;
    unsigned int max_ext;

    /* Leaf 0x80000007 is only meaningful when the CPU says it has it; reading
     * a leaf beyond the maximum returns the data of the highest basic leaf on
     * Intel parts, which could set bit 8 by accident. */
    max_ext = __get_cpuid_max(0x80000000u, NULL);
    if (max_ext < 0x80000007u) {
        snprintf(why, why_len, "CPUID has no leaf 0x80000007 (maximum "
                 "extended leaf is 0x%x), so TSC invariance is unknown", max_ext);
        return 0;
    }
    __cpuid(0x80000007u, eax, ebx, ecx, edx);
    (void)eax;
    (void)ebx;
    (void)ecx;
    if (!(edx & (1u << 8))) {
        snprintf(why, why_len, "CPUID reports no invariant TSC (leaf "
                 "0x80000007 EDX bit 8 is clear)");
        return 0;
    }
    return 1;
}

/* Reads the TSC and CLOCK_MONOTONIC as close together as possible: of a few
 * tries, the one whose two monotonic reads bracket the TSC read most tightly
 * is kept, and the TSC read is paired with their midpoint. */
static void rg__timer_read_pair(uint64_t *tsc_p, double *mono_ns_p)
{
    uint64_t best_gap = UINT64_MAX, m0, m1, t;
    uint64_t best_tsc = 0;
    double   best_mono = 0.0;
    int      i;

    for (i = 0; i < RG__TIMER_PAIR_TRIES; i++) {
        m0 = rg_time_mono_ns();
        t  = rg__timer_rdtsc();
        m1 = rg_time_mono_ns();
        if (m1 - m0 < best_gap) {
            best_gap  = m1 - m0;
            best_tsc  = t;
            best_mono = (double)m0 + (double)(m1 - m0) / 2.0;
        }
    }
    *tsc_p     = best_tsc;
    *mono_ns_p = best_mono;
}
#endif /* __x86_64__ */

static int rg__timer_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median of v[0..n-1], the upper middle value for an even n; sorts v. */
static double rg__timer_median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), rg__timer_cmp_double);
    return v[n / 2];
}

uint64_t rg_timer_ticks(const rg_timer_t *timer)
{
#if defined(__x86_64__)
    if (timer->source == RG_TIMER_TSC) {
        return rg__timer_rdtsc();
    }
#else
    (void)timer;
#endif
    return rg_time_mono_ns();
}

double rg_timer_ns(const rg_timer_t *timer, uint64_t ticks)
{
    return (double)ticks * timer->ns_per_tick;
}

double rg_timer_us(const rg_timer_t *timer, uint64_t ticks)
{
    return rg_timer_ns(timer, ticks) / 1000.0;
}

uint64_t rg_timer_ticks_from_ns(const rg_timer_t *timer, double ns)
{
    double ticks;

    /* A NaN or negative duration means "no wait"; a huge one saturates
     * rather than overflowing the conversion, which would be undefined. */
    if (!(ns > 0.0)) {
        return 0;
    }
    ticks = ceil(ns * timer->ticks_per_ns);
    if (ticks >= 18446744073709551616.0) {
        return UINT64_MAX;
    }
    return (uint64_t)ticks;
}

void rg_timer_spin_ns(const rg_timer_t *timer, double ns)
{
    uint64_t start, span;

    span = rg_timer_ticks_from_ns(timer, ns);
    if (span == 0) {
        return;
    }
    /* Elapsed ticks are compared, not an absolute deadline, so that a
     * deadline beyond UINT64_MAX cannot wrap around and end the wait early. */
    start = rg_timer_ticks(timer);
    while (rg_timer_ticks(timer) - start < span) {
        rg__timer_cpu_relax();
    }
}

/* Measures resolution_ns and overhead_ns of the timer's current source. */
static void rg__timer_measure(rg_timer_t *timer)
{
    double   res[RG__TIMER_RES_TRIES];
    double   ovh[RG__TIMER_OVH_BATCHES];
    size_t   nres = 0;
    uint64_t t0, t1, m0, m1;
    int      i, j;

    for (i = 0; i < RG__TIMER_RES_TRIES; i++) {
        t0 = rg_timer_ticks(timer);
        for (j = 0; j < RG__TIMER_RES_MAX_SPINS; j++) {
            t1 = rg_timer_ticks(timer);
            if (t1 != t0) {
                res[nres++] = rg_timer_ns(timer, t1 - t0);
                break;
            }
        }
        /* One stuck try is enough to know; the rest would only add delay. */
        if (j == RG__TIMER_RES_MAX_SPINS) {
            break;
        }
    }

    /* The overhead is timed with the timer's own clock; for the fallback
     * this includes one clock_gettime per batch, negligible over 1000 reads. */
    for (i = 0; i < RG__TIMER_OVH_BATCHES; i++) {
        m0 = rg_timer_ticks(timer);
        for (j = 0; j < RG__TIMER_OVH_READS; j++) {
            (void)rg_timer_ticks(timer);
        }
        m1 = rg_timer_ticks(timer);
        ovh[i] = rg_timer_ns(timer, m1 - m0) / (double)(RG__TIMER_OVH_READS + 1);
    }

    /* A clock that never moved has no measurable resolution; NaN says so
     * rather than claiming a precision it does not have. An even count
     * takes the upper middle value, which is conservative. */
    timer->resolution_ns = (nres == 0) ? NAN : rg__timer_median(res, nres);
    /* The smallest batch: a read never costs less than that, while a batch
     * that was preempted or ran on a throttled CPU costs more. Measurements
     * subtract this cost from their spans, so it must never be too large. */
    timer->overhead_ns = ovh[0];
    for (i = 1; i < RG__TIMER_OVH_BATCHES; i++) {
        if (ovh[i] < timer->overhead_ns) {
            timer->overhead_ns = ovh[i];
        }
    }
}

static void rg__timer_use_monotonic(rg_timer_t *timer)
{
    timer->source       = RG_TIMER_MONOTONIC;
    timer->ticks_per_ns = 1.0;
    timer->ns_per_tick  = 1.0;
}

#if defined(__x86_64__)
/* Calibrates the TSC against CLOCK_MONOTONIC; returns the rate in ticks/ns,
 * or 0 with a reason where the result is implausible. */
static double rg__timer_calibrate(char *why, size_t why_len)
{
    double   rate[RG__TIMER_CAL_WINDOWS];
    double   mono0, mono1, ghz;
    uint64_t tsc0, tsc1, deadline;
    int      i;

    for (i = 0; i < RG__TIMER_CAL_WINDOWS; i++) {
        rg__timer_read_pair(&tsc0, &mono0);
        deadline = (uint64_t)mono0 + RG__TIMER_CAL_WINDOW_NS;
        while (rg_time_mono_ns() < deadline) {
            rg__timer_cpu_relax();
        }
        rg__timer_read_pair(&tsc1, &mono1);
        rate[i] = (mono1 > mono0 && tsc1 > tsc0) ?
                  (double)(tsc1 - tsc0) / (mono1 - mono0) : 0.0;
    }
    ghz = rg__timer_median(rate, RG__TIMER_CAL_WINDOWS);
    if (!(ghz >= RG__TIMER_MIN_GHZ && ghz <= RG__TIMER_MAX_GHZ)) {
        snprintf(why, why_len, "TSC calibration gave an implausible %.3g GHz, "
                 "so CLOCK_MONOTONIC is used instead", ghz);
        return 0.0;
    }
    return ghz;
}
#endif

rg_status_t rg_timer_init(rg_timer_t *timer, int force_monotonic, rg_err_t *err)
{
    struct timespec ts;
    rg_timer_t      t;

    if (timer == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_timer_init: timer is NULL");
    }
    /* Every path, TSC included, relies on CLOCK_MONOTONIC (calibration,
     * fallback, rg_time_mono_ns), so it must work before anything else. */
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                "clock_gettime(CLOCK_MONOTONIC) failed");
    }

    memset(&t, 0, sizeof(t));
    rg__timer_use_monotonic(&t);

#if defined(__x86_64__)
    t.tsc_invariant = rg__timer_tsc_invariant(t.why_fallback,
                                              sizeof(t.why_fallback));
    if (force_monotonic) {
        snprintf(t.why_fallback, sizeof(t.why_fallback),
                 "the caller asked for CLOCK_MONOTONIC (force_monotonic)");
    } else if (t.tsc_invariant) {
        double rate = rg__timer_calibrate(t.why_fallback, sizeof(t.why_fallback));

        if (rate > 0.0) {
            t.source         = RG_TIMER_TSC;
            t.ticks_per_ns   = rate;
            t.ns_per_tick    = 1.0 / rate;
            t.why_fallback[0] = '\0';
        }
    }
#else
    snprintf(t.why_fallback, sizeof(t.why_fallback), "%s",
             force_monotonic ?
             "the caller asked for CLOCK_MONOTONIC (force_monotonic)" :
             "this CPU architecture has no cycle counter support in "
             "railgauge, so CLOCK_MONOTONIC is used");
#endif

    rg__timer_measure(&t);
    *timer = t;
    return RG_OK;
}
