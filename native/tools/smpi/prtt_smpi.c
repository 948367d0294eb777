/*
 * prtt_smpi: the three PRTT patterns of Hoefler, Lichei and Rehm (IPDPS 2007)
 * as a plain MPI program, to be built with smpicc and run under smpirun on the
 * platform and configuration that `railgauge export --to simgrid` writes. It
 * is the proof of that export: tests/test_export_simgrid.py compares what it
 * prints with the model the export came from and with the gauge's own
 * measurement. CMake does not build it (it needs SimGrid's smpicc).
 *
 * PRTT(n, d, s): rank 0 sends n messages of s bytes, waiting d between two
 * sends, and rank 1 answers with one message of s bytes once it has all n;
 * rank 0 times from its first send to the end of the answer's receive, as
 * railgauge-bench prtt does (native/tools/bench/prtt.c). For every size the
 * program measures PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) with
 * d = PRTT(1,0,s), the delay rule of the paper and of the gauge ("prtt1").
 *
 * Under SMPI the delay is simulated time: nanosleep() is SMPI's simulated
 * sleep (smpi_nanosleep, through smpi_helpers.h), during which the simulated
 * host is busy for exactly d, as the busy delay of the real tool is. A loop
 * spinning on MPI_Wtime would charge the simulation whatever the host running
 * it happened to spend.
 *
 * A size may name its delay, SIZE@D (D in us): a test that compares with a
 * measurement passes the delay that measurement used.
 *
 * Usage: prtt_smpi [-n N] [-r REPS] SIZE[@D]...
 * Output: one JSON object a line on rank 0's stdout,
 *   {"type":"prtt","n":N,"d_us":D,"s":S,"us":T}
 * with T the mean of REPS repetitions after one warm-up (a simulation is
 * deterministic, so they agree; the mean guards against a first-message
 * effect of the simulator).
 */
#include <mpi.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRTT_MAX_SIZES 256

typedef struct {
    long   n;
    long   reps;
    size_t sizes[PRTT_MAX_SIZES];
    double delays[PRTT_MAX_SIZES]; /* < 0: d = PRTT(1,0,s) */
    int    nsizes;
    size_t max_size;
} prtt_opts_t;

static int prtt_parse_long(const char *s, long min, long *out_p)
{
    char *end = NULL;
    long  v;

    errno = 0;
    v     = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min) {
        return -1;
    }
    *out_p = v;
    return 0;
}

/* SIZE or SIZE@D into the next slot of o. */
static int prtt_parse_size(char *arg, prtt_opts_t *o)
{
    char  *at = strchr(arg, '@');
    char  *end = NULL;
    long   v;
    double d = -1.0;

    if (o->nsizes >= PRTT_MAX_SIZES) {
        return -1;
    }
    if (at != NULL) {
        *at = '\0';
        errno = 0;
        d     = strtod(at + 1, &end);
        if (errno != 0 || end == at + 1 || *end != '\0' || !(d >= 0.0)) {
            return -1;
        }
    }
    if (prtt_parse_long(arg, 1, &v) != 0) {
        return -1;
    }
    o->sizes[o->nsizes]  = (size_t)v;
    o->delays[o->nsizes] = d;
    o->nsizes++;
    if ((size_t)v > o->max_size) {
        o->max_size = (size_t)v;
    }
    return 0;
}

static int prtt_parse(int argc, char **argv, prtt_opts_t *o)
{
    int i;

    o->n        = 16;
    o->reps     = 3;
    o->nsizes   = 0;
    o->max_size = 1;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            if (prtt_parse_long(argv[++i], 2, &o->n) != 0) {
                fprintf(stderr, "prtt_smpi: -n wants an integer >= 2, got '%s'\n", argv[i]);
                return -1;
            }
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            if (prtt_parse_long(argv[++i], 1, &o->reps) != 0) {
                fprintf(stderr, "prtt_smpi: -r wants an integer >= 1, got '%s'\n", argv[i]);
                return -1;
            }
        } else if (prtt_parse_size(argv[i], o) != 0) {
            fprintf(stderr, "prtt_smpi: bad argument '%s' (usage: prtt_smpi [-n N] [-r REPS] "
                            "SIZE[@D_US]..., at most %d sizes)\n", argv[i], PRTT_MAX_SIZES);
            return -1;
        }
    }
    if (o->nsizes == 0) {
        fprintf(stderr, "prtt_smpi: no message sizes given\n");
        return -1;
    }
    return 0;
}

/* The simulated delay of d microseconds (whole nanoseconds, as main rounds it). */
static void prtt_delay(double d_us)
{
    struct timespec ts;
    double          ns = d_us * 1e3 + 0.5;

    if (ns < 1.0) {
        return;
    }
    ts.tv_sec  = (time_t)(ns / 1e9);
    ts.tv_nsec = (long)(ns - (double)ts.tv_sec * 1e9);
    nanosleep(&ts, NULL);
}

/* One repetition on rank 0: n sends d apart, one receive; the time in us. */
static double prtt_once(char *buf, size_t s, long n, double d_us)
{
    double t0 = MPI_Wtime();
    long   i;

    for (i = 0; i < n; i++) {
        if (i > 0) {
            prtt_delay(d_us);
        }
        MPI_Send(buf, (int)s, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    }
    MPI_Recv(buf, (int)s, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return (MPI_Wtime() - t0) * 1e6;
}

/* One repetition on rank 1: n receives, one answer. */
static void prtt_answer(char *buf, size_t s, long n)
{
    long i;

    for (i = 0; i < n; i++) {
        MPI_Recv(buf, (int)s, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Send(buf, (int)s, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
}

/* One point: a warm-up and reps timed repetitions; rank 0 returns the mean. */
static double prtt_point(int rank, char *buf, size_t s, long n, double d_us, long reps)
{
    double sum = 0.0;
    long   r;

    for (r = 0; r <= reps; r++) {
        if (rank == 0) {
            double t = prtt_once(buf, s, n, d_us);
            if (r > 0) {
                sum += t;
            }
        } else {
            prtt_answer(buf, s, n);
        }
    }
    return sum / (double)reps;
}

int main(int argc, char **argv)
{
    prtt_opts_t o;
    char       *buf;
    int         rank, size, i, rc = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (prtt_parse(argc, argv, &o) != 0 || size != 2) {
        if (size != 2 && rank == 0) {
            fprintf(stderr, "prtt_smpi: needs exactly 2 ranks, has %d\n", size);
        }
        MPI_Finalize();
        return 2;
    }
    buf = calloc(o.max_size, 1);
    if (buf == NULL) {
        fprintf(stderr, "prtt_smpi: cannot allocate %zu bytes\n", o.max_size);
        rc = 1;
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (i = 0; i < o.nsizes && rc == 0; i++) {
        size_t s  = o.sizes[i];
        double p1 = prtt_point(rank, buf, s, 1, 0.0, o.reps);
        double pn = prtt_point(rank, buf, s, o.n, 0.0, o.reps);
        double pd;

        double d  = o.delays[i] >= 0.0 ? o.delays[i] : p1;

        /* The delay as slept: whole nanoseconds, and so reported. */
        d = (double)(long long)(d * 1e3 + 0.5) / 1e3;

        /* Rank 1 needs not know d: only rank 0 waits. */
        pd = prtt_point(rank, buf, s, o.n, d, o.reps);
        if (rank == 0) {
            printf("{\"type\":\"prtt\",\"n\":1,\"d_us\":0,\"s\":%zu,\"us\":%.9g}\n", s, p1);
            printf("{\"type\":\"prtt\",\"n\":%ld,\"d_us\":0,\"s\":%zu,\"us\":%.9g}\n", o.n, s, pn);
            printf("{\"type\":\"prtt\",\"n\":%ld,\"d_us\":%.9g,\"s\":%zu,\"us\":%.9g}\n", o.n, d, s,
                   pd);
            fflush(stdout);
        }
    }
    free(buf);
    MPI_Finalize();
    return rc;
}
