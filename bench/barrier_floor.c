/*
 * barrier_floor: the floor for a shared-memory barrier.
 *
 * P threads, thread t pinned to CPU t (when there are that many), run the
 * n-way dissemination barrier of coll/ (round r: signal me + i(n+1)^r, wait
 * for me - i(n+1)^r, mod P, for the i in 1..n with i(n+1)^r < P) on bare
 * flags: every (thread, round, slot) has its own 128-byte line holding an
 * epoch; a signal is one release store of the barrier's epoch into the
 * receiver's line, a wait spins with pause on acquire loads of its own lines.
 * No processes, no futex, no sleeper count, no sequentially consistent store,
 * no timeout check: whatever railgauge's runtime barrier costs on top of this
 * is overhead (docs/coll.md).
 *
 * Timing as railgauge-bench barrier does it: every thread reads
 * CLOCK_MONOTONIC around each barrier, back to back, after a warm-up; the
 * statistics are over every thread's iterations. For each (P, n) one JSON line
 * goes to stdout:
 *
 *   {"impl":"flag-floor","P":16,"n":3,"rounds":3,"iterations":20000,
 *    "median_us":..,"p99_us":..,"min_us":..,"mean_us":..,"pinned":true,
 *    "oversubscribed":false}
 *
 * Where P exceeds the CPUs the spin yields (sched_yield) after a few polls, as
 * a pure spin would wait for scheduler ticks; the line says oversubscribed.
 *
 *   barrier_floor -P 4,8,16 -n 1,2,3,4 --iters 20000
 *
 * Build: cc -O2 -Wall -Wextra -Werror -std=c11 -pthread -o barrier_floor barrier_floor.c
 * Exit status: 0 done, 1 a failure (a thread could not start, out of memory),
 * 2 bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#define FLOOR_LINE   128
#define FLOOR_MAXP   1024
#define FLOOR_MAXN   16
#define FLOOR_MAXR   64
#define FLOOR_LIST   32

typedef struct floor_line {
    _Alignas(FLOOR_LINE) _Atomic uint64_t epoch;
    char pad[FLOOR_LINE - sizeof(uint64_t)];
} floor_line_t;

typedef struct floor_run {
    int            P, n, rounds, over;
    long           iters, warmup;
    floor_line_t  *lines;       /* [thread][round][slot] */
    int            nsend[FLOOR_MAXR], dist[FLOOR_MAXR][FLOOR_MAXN];
    uint64_t      *times;       /* [thread][iters] */
    pthread_barrier_t start;
    _Atomic int    pin_failed;
} floor_run_t;

typedef struct floor_thread {
    floor_run_t *run;
    int          me;
} floor_thread_t;

static floor_line_t *floor_slot(floor_run_t *x, int t, int r, int i)
{
    return &x->lines[((size_t)t * (size_t)x->rounds + (size_t)r) * (size_t)x->n + (size_t)i];
}

static void floor_barrier(floor_run_t *x, int me, uint64_t e)
{
    int r, i;

    for (r = 0; r < x->rounds; r++) {
        for (i = 0; i < x->nsend[r]; i++) {
            int to = (me + x->dist[r][i]) % x->P;
            atomic_store_explicit(&floor_slot(x, to, r, i)->epoch, e, memory_order_release);
        }
        for (i = 0; i < x->nsend[r]; i++) {
            _Atomic uint64_t *w = &floor_slot(x, me, r, i)->epoch;
            unsigned          k = 0;
            while (atomic_load_explicit(w, memory_order_acquire) < e) {
                _mm_pause();
                if (x->over && ++k % 64 == 0) {
                    sched_yield();
                }
            }
        }
    }
}

static void *floor_main(void *arg)
{
    floor_thread_t *th = arg;
    floor_run_t    *x  = th->run;
    uint64_t       *t  = x->times + (size_t)th->me * (size_t)x->iters;
    long            k;
    uint64_t        e = 0;
    long            ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    if (ncpu > 0 && th->me < ncpu) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(th->me, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
            atomic_store(&x->pin_failed, 1);
        }
    } else {
        atomic_store(&x->pin_failed, 1);
    }
    pthread_barrier_wait(&x->start);
    for (k = 0; k < x->warmup; k++) {
        floor_barrier(x, th->me, ++e);
    }
    for (k = 0; k < x->iters; k++) {
        uint64_t t0 = bt_now_ns();
        floor_barrier(x, th->me, ++e);
        t[k] = bt_now_ns() - t0;
    }
    return NULL;
}

/* The n-way schedule (coll/sched.c): round r reaches distances i(n+1)^r < P. */
static int floor_plan(floor_run_t *x)
{
    long long base = 1;
    int       r = 0, i;

    while (base < x->P) {
        if (r == FLOOR_MAXR) {
            return -1;
        }
        x->nsend[r] = 0;
        for (i = 1; i <= x->n && (long long)i * base < x->P; i++) {
            x->dist[r][x->nsend[r]++] = (int)((long long)i * base % x->P);
        }
        base *= (long long)x->n + 1;
        r++;
    }
    x->rounds = r;
    return 0;
}

static int floor_one(int P, int n, long iters, long warmup)
{
    floor_run_t     x;
    floor_thread_t *th = NULL;
    pthread_t      *tid = NULL;
    size_t          nlines, all, i;
    int             t, started = 0, rc = 1;
    double          med, p99, mn, mean = 0;
    long            ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    memset(&x, 0, sizeof(x));
    x.P = P;
    x.n = n;
    x.iters = iters;
    x.warmup = warmup;
    x.over = ncpu > 0 && P > ncpu;
    if (floor_plan(&x) != 0) {
        fprintf(stderr, "barrier_floor: P = %d, n = %d: too many rounds\n", P, n);
        return 1;
    }
    nlines = (size_t)P * (size_t)(x.rounds ? x.rounds : 1) * (size_t)n;
    all = (size_t)P * (size_t)iters;
    x.lines = aligned_alloc(FLOOR_LINE, nlines * sizeof(floor_line_t));
    x.times = malloc(all * sizeof(uint64_t));
    th = calloc((size_t)P, sizeof(*th));
    tid = calloc((size_t)P, sizeof(*tid));
    if (x.lines == NULL || x.times == NULL || th == NULL || tid == NULL) {
        fprintf(stderr, "barrier_floor: out of memory for P = %d, %ld iterations\n", P, iters);
        goto out;
    }
    for (i = 0; i < nlines; i++) {
        atomic_init(&x.lines[i].epoch, 0);
    }
    if (pthread_barrier_init(&x.start, NULL, (unsigned)P) != 0) {
        fprintf(stderr, "barrier_floor: pthread_barrier_init failed\n");
        goto out;
    }
    atomic_init(&x.pin_failed, 0);
    for (t = 0; t < P; t++) {
        th[t].run = &x;
        th[t].me = t;
        if ((errno = pthread_create(&tid[t], NULL, floor_main, &th[t])) != 0) {
            perror("barrier_floor: pthread_create");
            /* The started threads wait at the start barrier forever: exit. */
            exit(1);
        }
        started++;
    }
    for (t = 0; t < started; t++) {
        pthread_join(tid[t], NULL);
    }
    pthread_barrier_destroy(&x.start);
    qsort(x.times, all, sizeof(uint64_t), bt_cmp_u64);
    for (i = 0; i < all; i++) {
        mean += (double)x.times[i];
    }
    mean /= (double)all;
    med = (double)x.times[all / 2] / 1e3;
    p99 = (double)x.times[(size_t)((double)(all - 1) * 0.99)] / 1e3;
    mn = (double)x.times[0] / 1e3;
    printf("{\"impl\":\"flag-floor\",\"P\":%d,\"n\":%d,\"rounds\":%d,\"iterations\":%ld,"
           "\"median_us\":%.4f,\"p99_us\":%.4f,\"min_us\":%.4f,\"mean_us\":%.4f,"
           "\"pinned\":%s,\"oversubscribed\":%s}\n",
           P, n, x.rounds, iters, med, p99, mn, mean / 1e3,
           atomic_load(&x.pin_failed) ? "false" : "true", x.over ? "true" : "false");
    fflush(stdout);
    rc = 0;
out:
    free(x.lines);
    free(x.times);
    free(th);
    free(tid);
    return rc;
}

static int floor_list(const char *s, int lo, int hi, int *out, int *nout)
{
    char *end;
    long  v;

    *nout = 0;
    for (;;) {
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || end == s || v < lo || v > hi || *nout == FLOOR_LIST) {
            return -1;
        }
        out[(*nout)++] = (int)v;
        if (*end == '\0') {
            return 0;
        }
        if (*end != ',') {
            return -1;
        }
        s = end + 1;
    }
}

static void floor_usage(FILE *f)
{
    fprintf(f, "usage: barrier_floor [-P P[,P...]] [-n N[,N...]] [--iters I] [--warmup W]\n"
               "  -P        thread counts, 2..%d (default: the CPUs)\n"
               "  -n        n of the n-way barrier, 1..%d (default 1,2,3,4)\n"
               "  --iters   timed barriers per thread (default 20000)\n"
               "  --warmup  untimed barriers first (default 2000)\n",
            FLOOR_MAXP, FLOOR_MAXN);
}

int main(int argc, char **argv)
{
    int  Ps[FLOOR_LIST], ns[FLOOR_LIST] = {1, 2, 3, 4}, nP = 1, nn = 4, i, j;
    long iters = 20000, warmup = 2000, ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    Ps[0] = ncpu >= 2 ? (int)(ncpu > FLOOR_MAXP ? FLOOR_MAXP : ncpu) : 2;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            floor_usage(stdout);
            return 0;
        }
        if (v == NULL) {
            fprintf(stderr, "barrier_floor: %s needs a value\n", a);
            floor_usage(stderr);
            return 2;
        }
        if (strcmp(a, "-P") == 0) {
            if (floor_list(v, 2, FLOOR_MAXP, Ps, &nP) != 0) {
                fprintf(stderr, "barrier_floor: -P %s: thread counts in 2..%d\n", v,
                        FLOOR_MAXP);
                return 2;
            }
        } else if (strcmp(a, "-n") == 0) {
            if (floor_list(v, 1, FLOOR_MAXN, ns, &nn) != 0) {
                fprintf(stderr, "barrier_floor: -n %s: values in 1..%d\n", v, FLOOR_MAXN);
                return 2;
            }
        } else if (strcmp(a, "--iters") == 0 || strcmp(a, "--warmup") == 0) {
            char *end;
            long  x;
            errno = 0;
            x = strtol(v, &end, 10);
            if (errno != 0 || *end != '\0' || x < (a[2] == 'i' ? 1 : 0) || x > 10000000) {
                fprintf(stderr, "barrier_floor: %s %s: an integer in %d..10000000\n", a, v,
                        a[2] == 'i' ? 1 : 0);
                return 2;
            }
            *(a[2] == 'i' ? &iters : &warmup) = x;
        } else {
            fprintf(stderr, "barrier_floor: unknown option %s\n", a);
            floor_usage(stderr);
            return 2;
        }
        i++;
    }
    for (i = 0; i < nP; i++) {
        for (j = 0; j < nn; j++) {
            if (floor_one(Ps[i], ns[j], iters, warmup) != 0) {
                return 1;
            }
        }
    }
    return 0;
}
