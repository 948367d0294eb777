/*
 * railgauge: a calibrated cycle timer.
 *
 * On x86-64 with a constant and nonstop TSC (CPUID 0x80000007 EDX bit 8) the
 * timer reads rdtsc and converts ticks with a rate calibrated against
 * CLOCK_MONOTONIC at init; elsewhere it falls back to clock_gettime. The
 * resolution reported is the smallest non-zero difference of two successive
 * reads (median over many tries), in nanoseconds.
 */
#ifndef RG_BASE_TIMER_H
#define RG_BASE_TIMER_H

#include <stdint.h>

#include "base/error.h"

typedef enum rg_timer_source {
    RG_TIMER_TSC = 1,
    RG_TIMER_MONOTONIC = 2
} rg_timer_source_t;

typedef struct rg_timer {
    rg_timer_source_t source;
    double            ticks_per_ns;   /* 1.0 for the clock_gettime fallback */
    double            ns_per_tick;
    double            resolution_ns;  /* measured at init; NaN if the clock never moved */
    double            overhead_ns;    /* cost of one rg_timer_ticks() */
    int               tsc_invariant;  /* CPUID said constant + nonstop */
    char              why_fallback[128]; /* a sentence; empty when the TSC is used */
} rg_timer_t;

/* Checks the TSC, calibrates it (about 20 ms) or falls back. force_monotonic
 * selects the fallback even where the TSC is usable (for tests). A TSC that
 * cannot be used is not an error: the timer falls back, returns RG_OK and
 * says why in why_fallback. Errors: RG_ERR_INVALID (timer is NULL),
 * RG_ERR_SYSTEM (CLOCK_MONOTONIC does not work). */
rg_status_t rg_timer_init(rg_timer_t *timer, int force_monotonic, rg_err_t *err);

/* Raw ticks: rdtsc, or nanoseconds from CLOCK_MONOTONIC. */
uint64_t rg_timer_ticks(const rg_timer_t *timer);

/* Ticks to nanoseconds / microseconds. */
double rg_timer_ns(const rg_timer_t *timer, uint64_t ticks);
double rg_timer_us(const rg_timer_t *timer, uint64_t ticks);

/* Nanoseconds to ticks (for busy-wait deadlines), rounded up so that a wait
 * is never shortened; 0 for ns <= 0 or NaN, UINT64_MAX where too large. */
uint64_t rg_timer_ticks_from_ns(const rg_timer_t *timer, double ns);

/* Busy-waits (keeps the CPU busy, as the PRTT delay d requires) for at least
 * ns; returns at once for ns <= 0 or NaN. */
void rg_timer_spin_ns(const rg_timer_t *timer, double ns);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t rg_time_mono_ns(void);

#endif /* RG_BASE_TIMER_H */
