/*
 * mpi_pingpong: MPI_Send/MPI_Recv ping-pong between ranks 0 and 1, measured
 * exactly like spsc_floor so the two can share a table: warm-up (with a payload
 * check), then several batches of timed samples: one TSC read (rdtscp,
 * calibrated against CLOCK_MONOTONIC; --timer clock uses clock_gettime) per
 * sample of --group round trips, 16 for sizes up to 4 KiB and 1 above.  Per
 * size rank 0 prints one JSON line:
 *
 *   {"impl":"openmpi","s":8,"oneway_us":..,"min_oneway_us":..,"mean_oneway_us":..,
 *    "p99_oneway_us":..,"bw_MBps":..,"iters":..,"batches":..,"batch_oneway_us":[..]}
 *
 * oneway_us is the median over all samples of (sample time / group) / 2 and bw_MBps is
 * s / oneway_us (10^6 bytes/s).  The implementation name is the first
 * argument, so one source serves Open MPI and MPICH:
 *
 *   mpirun -n 2 mpi_pingpong openmpi [--sizes 1,8,1048576] [--iters N]
 *          [--batches B] [--warmup W] [--big-bytes BYTES] [--min-iters N]
 *          [--group G] [--timer tsc|clock]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <immintrin.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "bench_common.h"

#define PP_MAX_SIZES 32
#define PP_TAG 17

struct pp_opts {
    const char *impl;
    size_t sizes[PP_MAX_SIZES];
    int nsizes;
    long iters;
    long big_bytes;
    long min_iters;
    int batches;
    long warmup;
    long group;
};

/* Round trips per timed sample: small sizes are timed in groups, because the
 * TSC of this kind of machine advances in 10 ns steps (AMD counts a 100 MHz
 * reference clock), a tenth of a small round trip. */
static long pp_group_for(const struct pp_opts *o, size_t s)
{
    return s <= 4096 ? o->group : 1;
}

static long pp_iters_for(const struct pp_opts *o, size_t s)
{
    long n = o->iters;

    if (s > 4096) {
        long budget = o->big_bytes / (long)s;
        if (budget < n)
            n = budget;
    }
    if (n < o->min_iters)
        n = o->min_iters;
    /* Whole samples of pp_group_for() round trips each, at least one. */
    long g = pp_group_for(o, s);
    return n < g ? g : n / g * g;
}

static int pp_parse(int argc, char **argv, struct pp_opts *o)
{
    *o = (struct pp_opts){
        .impl = NULL,
        .sizes = {1, 8, 1048576},
        .nsizes = 3,
        .iters = 100000,
        .big_bytes = 256L << 20,
        .min_iters = 100,
        .batches = 5,
        .warmup = 10000,
        .group = 16,
    };
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "mpi_pingpong: the first argument must be the implementation name\n");
        return -1;
    }
    o->impl = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;

        if (!v)
            goto bad;
        i++;
        if (!strcmp(a, "--sizes")) {
            if (bt_parse_sizes(v, o->sizes, PP_MAX_SIZES, &o->nsizes))
                goto bad;
        } else if (!strcmp(a, "--iters")) {
            if (bt_parse_long(v, 1, &o->iters))
                goto bad;
        } else if (!strcmp(a, "--min-iters")) {
            if (bt_parse_long(v, 1, &o->min_iters))
                goto bad;
        } else if (!strcmp(a, "--big-bytes")) {
            if (bt_parse_long(v, 1, &o->big_bytes))
                goto bad;
        } else if (!strcmp(a, "--batches")) {
            if (bt_parse_long(v, 1, &n) || n > 1000)
                goto bad;
            o->batches = (int)n;
        } else if (!strcmp(a, "--warmup")) {
            if (bt_parse_long(v, 0, &o->warmup))
                goto bad;
        } else if (!strcmp(a, "--group")) {
            if (bt_parse_long(v, 1, &o->group) || o->group > 4096)
                goto bad;
        } else if (!strcmp(a, "--timer")) {
            if (!strcmp(v, "tsc"))
                bt_use_tsc = 1;
            else if (!strcmp(v, "clock"))
                bt_use_tsc = 0;
            else
                goto bad;
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "mpi_pingpong: bad or missing value for option '%s'\n", a);
        return -1;
    }
    return 0;
}

static void pp_fill(unsigned char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(i * 131u + seed);
}

static int pp_check(const unsigned char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (unsigned char)(i * 131u + seed))
            return -1;
    return 0;
}

/* Returns nonzero on every rank when flag is nonzero on any rank. */
static int pp_any(int flag)
{
    int any = 0;

    MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

/* Runs one size on both ranks.  Returns 0, or -1 after printing the cause. */
static int pp_run_size(const struct pp_opts *o, int rank, size_t s, unsigned char *sbuf,
                       unsigned char *rbuf, double tpn)
{
    long group = pp_group_for(o, s);
    long iters = pp_iters_for(o, s) / group; /* timed samples per batch */
    size_t nsamp = (size_t)iters * (size_t)o->batches;
    /* ticks of one sample -> one-way µs */
    double us_half = 1.0 / (tpn * 2000.0 * (double)group);
    uint64_t *rtt = NULL, *tmp = NULL;
    double *batch_med = NULL, sum_ticks = 0.0;
    int bad = 0, rc = -1;
    int n = (int)s;

    if (rank == 0) {
        rtt = malloc(nsamp * sizeof(*rtt));
        tmp = malloc((size_t)iters * sizeof(*tmp));
        batch_med = malloc((size_t)o->batches * sizeof(*batch_med));
        if (!rtt || !tmp || !batch_med) {
            fprintf(stderr, "mpi_pingpong: out of memory for %zu samples\n", nsamp);
            bad = 1;
        }
    }
    /* Both ranks must agree to go on, or one would wait for the other forever. */
    if (pp_any(bad))
        goto out;

    /* Warm-up with a payload check on both sides. */
    for (long i = 0; i < o->warmup; i++) {
        if (rank == 0) {
            pp_fill(sbuf, s, (unsigned)i);
            MPI_Send(sbuf, n, MPI_BYTE, 1, PP_TAG, MPI_COMM_WORLD);
            MPI_Recv(rbuf, n, MPI_BYTE, 1, PP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad |= pp_check(rbuf, s, (unsigned)i);
        } else {
            MPI_Recv(rbuf, n, MPI_BYTE, 0, PP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad |= pp_check(rbuf, s, (unsigned)i);
            MPI_Send(rbuf, n, MPI_BYTE, 0, PP_TAG, MPI_COMM_WORLD);
        }
    }
    if (bad)
        fprintf(stderr, "mpi_pingpong: payload check failed on rank %d (s=%zu)\n", rank, s);
    if (pp_any(bad))
        goto out;
    for (int b = 0; b < o->batches; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            uint64_t *r = rtt + (size_t)b * (size_t)iters;
            uint64_t t0 = bt_ticks(), tb = t0;

            for (long i = 0; i < iters; i++) {
                for (long g = 0; g < group; g++) {
                    MPI_Send(sbuf, n, MPI_BYTE, 1, PP_TAG, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, n, MPI_BYTE, 1, PP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                uint64_t t1 = bt_ticks();
                r[i] = t1 - t0;
                t0 = t1;
            }
            sum_ticks += (double)(t0 - tb);
            memcpy(tmp, r, (size_t)iters * sizeof(*tmp));
            qsort(tmp, (size_t)iters, sizeof(*tmp), bt_cmp_u64);
            batch_med[b] = bt_median_sorted(tmp, (size_t)iters) * us_half;
        } else {
            for (long i = 0; i < iters * group; i++) {
                MPI_Recv(rbuf, n, MPI_BYTE, 0, PP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(rbuf, n, MPI_BYTE, 0, PP_TAG, MPI_COMM_WORLD);
            }
        }
    }
    if (rank == 0) {
        qsort(rtt, nsamp, sizeof(*rtt), bt_cmp_u64);
        double med = bt_median_sorted(rtt, nsamp) * us_half;
        double p99 = (double)rtt[(size_t)((double)(nsamp - 1) * 0.99)] * us_half;

        printf("{\"impl\":\"%s\",\"s\":%zu,\"oneway_us\":%.4f,\"min_oneway_us\":%.4f,"
               "\"mean_oneway_us\":%.4f,\"p99_oneway_us\":%.4f,\"bw_MBps\":%.2f,"
               "\"iters\":%ld,\"group\":%ld,\"batches\":%d,\"warmup\":%ld,\"timer\":\"%s\","
               "\"ticks_per_ns\":%.6f,\"batch_oneway_us\":[",
               o->impl, s, med, (double)rtt[0] * us_half, sum_ticks / (double)nsamp * us_half, p99,
               (double)s / med, iters * group, group, o->batches, o->warmup,
               bt_use_tsc ? "tsc" : "clock", tpn);
        for (int b = 0; b < o->batches; b++)
            printf("%s%.4f", b ? "," : "", batch_med[b]);
        printf("]}\n");
        fflush(stdout);
    }
    rc = 0;
out:
    free(rtt);
    free(tmp);
    free(batch_med);
    return rc;
}

int main(int argc, char **argv)
{
    struct pp_opts o;
    int rank = 0, size = 0, rc = 0, any_rc = 0;
    size_t maxs = 0;
    unsigned char *sbuf = NULL, *rbuf = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (pp_parse(argc, argv, &o)) {
        MPI_Finalize();
        return 2;
    }
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks, got %d\n", size);
        MPI_Finalize();
        return 2;
    }
    for (int k = 0; k < o.nsizes; k++)
        if (o.sizes[k] > maxs)
            maxs = o.sizes[k];
    sbuf = aligned_alloc(4096, (maxs + 4095) / 4096 * 4096);
    rbuf = aligned_alloc(4096, (maxs + 4095) / 4096 * 4096);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "mpi_pingpong: out of memory for %zu-byte buffers\n", maxs);
        rc = 1;
    } else {
        memset(sbuf, 0, maxs);
        memset(rbuf, 0, maxs);
    }
    any_rc = pp_any(rc);
    double tpn = bt_ticks_per_ns();
    for (int k = 0; k < o.nsizes && !any_rc; k++)
        any_rc = pp_any(pp_run_size(&o, rank, o.sizes[k], sbuf, rbuf, tpn) ? 1 : 0);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return any_rc ? 1 : 0;
}
