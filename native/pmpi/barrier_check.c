/*
 * railgauge: an MPI program that checks MPI_Barrier at run time, used by
 * tests/test_pmpi.py with librailgauge-pmpi-<flavour>.so preloaded.
 *
 *   barrier_check ITERATIONS MAX_DELAY_US [--no-barrier]
 *   barrier_check ITERATIONS 0 --time
 *
 * Each iteration every rank waits a random 0..MAX_DELAY_US, records the time
 * (CLOCK_MONOTONIC: one clock for the ranks of one host), calls MPI_Barrier
 * on MPI_COMM_WORLD (even iterations) or on its half of a split of it (odd
 * ones), and records the time again. Rank 0 gathers the times and counts the
 * iterations in which a rank left before a rank of the same communicator
 * entered. It prints "violations=V barriers=B choice=C shm=S" (B: the
 * barriers the preloaded library ran, from railgauge_pmpi_barriers(), -1
 * without it; C its last choice; S 1 where its last communicator's barrier
 * ran on shared-memory flags, 0 on messages, -1 without it) and exits 1 if
 * V > 0; 3 where MPI_Init or MPI_Barrier returned an error (printed).
 * --no-barrier skips the barrier, to show that the check can fail.
 * --time measures instead: 100 untimed barriers on MPI_COMM_WORLD, then
 * ITERATIONS timed ones, each rank timing each of its barriers from entry to
 * exit; rank 0 prints "median_us=M p99_us=Q barriers=B" over every rank's
 * samples (as railgauge-bench barrier reports them).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* The --time mode (see above). */
static int time_barrier(long iters, int rank, int size)
{
    uint64_t *d = malloc((size_t)iters * sizeof(*d)), *all = NULL;
    unsigned long (*count)(void);
    long      i;
    size_t    n = (size_t)iters * (size_t)size;

    for (i = 0; i < 100; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (i = 0; i < iters; i++) {
        uint64_t t0 = now_ns();
        MPI_Barrier(MPI_COMM_WORLD);
        d[i] = now_ns() - t0;
    }
    if (rank == 0) {
        all = malloc(n * sizeof(*all));
    }
    MPI_Gather(d, (int)iters, MPI_UINT64_T, all, (int)iters, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(all, n, sizeof(*all), cmp_u64);
        *(void **)&count = dlsym(RTLD_DEFAULT, "railgauge_pmpi_barriers");
        printf("median_us=%.3f p99_us=%.3f barriers=%ld\n", all[n / 2] * 1e-3,
               all[(size_t)(0.99 * (double)(n - 1))] * 1e-3, count ? (long)count() : -1L);
        fflush(stdout);
    }
    free(d);
    free(all);
    return 0;
}

static int fail(const char *what, int rc, int rank)
{
    char text[MPI_MAX_ERROR_STRING];
    int  len = 0;

    MPI_Error_string(rc, text, &len);
    fprintf(stderr, "barrier_check: rank %d: %s returned an error: %s\n", rank, what, text);
    return 3;
}

int main(int argc, char **argv)
{
    long      iters, max_delay, i;
    int       rank = 0, size, rc, skip, q, violations = 0;
    MPI_Comm  half;
    uint64_t *t, *all = NULL;
    int      *colors = NULL, color;
    unsigned  seed;
    unsigned long (*count)(void);
    const char *(*choice)(void);
    int (*shm)(void);

    if (argc < 3) {
        fprintf(stderr, "usage: barrier_check ITERATIONS MAX_DELAY_US [--no-barrier]\n");
        return 2;
    }
    iters = atol(argv[1]);
    max_delay = atol(argv[2]);
    skip = argc > 3 && strcmp(argv[3], "--no-barrier") == 0;
    rc = MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rc != MPI_SUCCESS) {
        rc = fail("MPI_Init", rc, rank);
        MPI_Finalize();
        return rc;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 3 && strcmp(argv[3], "--time") == 0) {
        time_barrier(iters, rank, size);
        MPI_Finalize();
        return 0;
    }
    color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    t = malloc((size_t)iters * 2 * sizeof(*t));
    seed = 12345u + 977u * (unsigned)rank;
    for (i = 0; i < iters; i++) {
        uint64_t until = now_ns() + (uint64_t)(max_delay * 1000.0 * rand_r(&seed) / RAND_MAX);
        while (now_ns() < until) {
        }
        t[2 * i] = now_ns();
        if (!skip) {
            rc = MPI_Barrier(i % 2 == 0 ? MPI_COMM_WORLD : half);
            if (rc != MPI_SUCCESS) {
                rc = fail("MPI_Barrier", rc, rank);
                MPI_Finalize();
                return rc;
            }
        }
        t[2 * i + 1] = now_ns();
    }
    if (rank == 0) {
        all = malloc((size_t)size * (size_t)iters * 2 * sizeof(*all));
        colors = malloc((size_t)size * sizeof(*colors));
    }
    MPI_Gather(t, (int)(2 * iters), MPI_UINT64_T, all, (int)(2 * iters), MPI_UINT64_T, 0,
               MPI_COMM_WORLD);
    MPI_Gather(&color, 1, MPI_INT, colors, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (i = 0; i < iters; i++) {
            int bad = 0, c;
            for (c = 0; c < 2 && !bad; c++) {
                uint64_t max_in = 0, min_out = UINT64_MAX;
                for (q = 0; q < size; q++) {
                    if (i % 2 == 1 && colors[q] != c) {
                        continue;
                    }
                    if (all[((size_t)q * iters + i) * 2] > max_in) {
                        max_in = all[((size_t)q * iters + i) * 2];
                    }
                    if (all[((size_t)q * iters + i) * 2 + 1] < min_out) {
                        min_out = all[((size_t)q * iters + i) * 2 + 1];
                    }
                }
                bad = max_in > 0 && min_out < max_in;
            }
            violations += bad;
        }
        *(void **)&count = dlsym(RTLD_DEFAULT, "railgauge_pmpi_barriers");
        *(void **)&choice = dlsym(RTLD_DEFAULT, "railgauge_pmpi_choice");
        *(void **)&shm = dlsym(RTLD_DEFAULT, "railgauge_pmpi_shm");
        printf("violations=%d barriers=%ld choice=%s shm=%d\n", violations,
               count ? (long)count() : -1L, choice ? choice() : "-", shm ? shm() : -1);
        fflush(stdout);
    }
    free(t);
    free(all);
    free(colors);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return violations > 0 ? 1 : 0;
}
