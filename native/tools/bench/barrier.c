/*
 * railgauge-bench barrier: the latency of a barrier of coll/ over the
 * messaging runtime, OSU-style (warm-up, then many timed iterations; min,
 * median, p99 over every rank's iterations), with optional random entry
 * skew, and a run-time proof of correctness (--check): every rank records
 * when it entered and left each barrier on CLOCK_MONOTONIC (one clock for
 * all ranks of one host), rank 0 gathers them and verifies that in every
 * iteration no rank left before the last one entered.
 *
 *   railgauge run -n 8 -- railgauge-bench barrier --algorithm nway --n 3 --json
 *   railgauge run -n 8 -- railgauge-bench barrier --algorithm recdbl --check
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "bench.h"
#include "base/stats.h"
#include "base/timer.h"
#include "boot/boot.h"
#include "exec/barrier.h"
#include "proto/proto.h"

enum { RG__EXIT_OK = 0, RG__EXIT_FAIL = 1, RG__EXIT_USAGE = 2 };

/* The tag of the gather of times to rank 0 (any user tag but the barrier's). */
#define RG__TAG_TIMES 7

typedef struct rg__bopts {
    char                   transport[64];
    rg_coll_barrier_spec_t spec;
    const char            *alg_text;
    int                    n;
    long                   iters, warmup;
    double                 skew_us;
    int                    skew_given;
    int                    json, check;
    const char            *out_path;  /* --out: the JSON line goes there */
    int                    impl;      /* --impl: 0 auto, 1 messages, 2 shared memory */
    unsigned               seed;
    int                    drop_rounds;
    double                 timeout_s;
} rg__bopts_t;

static int rg__usage_error(const char *fmt, const char *arg)
{
    return rg_bench_rank_usage_error("railgauge-bench barrier", fmt, arg);
}

static void rg__usage(FILE *f)
{
    fprintf(f,
        "usage: railgauge-bench barrier --algorithm A [--n N] [options]\n"
        "\n"
        "The latency of one barrier of coll/ over the messaging runtime.\n"
        "  --algorithm A     linear, binomial, recdbl, dissem or nway (nway:N); the\n"
        "                    stacks' own: ring (Open MPI's double ring), kdissem:K,\n"
        "                    recexch:K (MPICH's k-dissemination, recursive exchange)\n"
        "  --n N             n of the n-way dissemination, K of kdissem and recexch\n"
        "  --transport T     shm, tcp, ofi:<provider>, mpi (default $RG_TRANSPORT, else shm)\n"
        "  --iterations N    timed barriers (default 1000)\n"
        "  --warmup N        untimed barriers first (default 100)\n"
        "  --skew-us X       each rank waits a random 0..X us before each barrier\n"
        "                    (default 0; 100 with --check)\n"
        "  --check           verify on one clock that no rank left a barrier before\n"
        "                    the last rank entered it (ranks on one host); exit 1 if not\n"
        "  --seed S          seed of the random skew (default 1)\n"
        "  --timeout S       seconds one round may wait (default 60; 0: none)\n"
        "  --drop-rounds K   run the schedule without its last K rounds: NOT a\n"
        "                    barrier; shows that --check catches a broken one\n"
        "  --json            one JSON object: algorithm, n, P, median_us, p99_us, ...\n"
        "  --out FILE        write that JSON object to FILE instead of standard output\n"
        "  --impl I          auto (default: flags in shared memory over the shm transport\n"
        "                    when every rank is on this host, else messages), messages\n"
        "                    (over the runtime, any transport) or shm (flags; fails where\n"
        "                    the ranks span hosts)\n");
}

static const char *const rg__impls[] = {"auto", "messages", "shm", NULL};

static const rg_bench_optdef_t rg__bopts[] = {
    RG_BOPT("algorithm", STRING, rg__bopts_t, alg_text, 0, 0, NULL),
    RG_BOPT("n", INT, rg__bopts_t, n, 1, RG_COLL_K_MAX, NULL),
    RG_BOPT("transport", NAME, rg__bopts_t, transport, 0, sizeof(((rg__bopts_t *)0)->transport),
            NULL),
    RG_BOPT("iterations", LONG, rg__bopts_t, iters, 1, 1000000, NULL),
    RG_BOPT("warmup", LONG, rg__bopts_t, warmup, 0, 1000000, NULL),
    RG_BOPT_G("skew-us", DOUBLE, rg__bopts_t, skew_us, 0, 1e6, "microseconds in [0, 1000000]",
              skew_given),
    RG_BOPT("check", FLAG, rg__bopts_t, check, 0, 0, NULL),
    RG_BOPT("seed", UINT, rg__bopts_t, seed, 0, 0x7fffffff, "a non-negative integer"),
    RG_BOPT("timeout", DOUBLE, rg__bopts_t, timeout_s, 0, 86400, "seconds in [0, 86400]"),
    RG_BOPT("drop-rounds", INT, rg__bopts_t, drop_rounds, 0, 1000, NULL),
    RG_BOPT("json", FLAG, rg__bopts_t, json, 0, 0, NULL),
    RG_BOPT("out", STRING, rg__bopts_t, out_path, 0, 0, NULL),
    {"impl", RG_BOPT_CHOICE, offsetof(rg__bopts_t, impl), 0, 0, "auto, messages or shm",
     rg__impls, NULL, -1},
};

static int rg__parse_args(int argc, char **argv, rg__bopts_t *o)
{
    rg_err_t err;
    int      rc;

    memset(o, 0, sizeof(*o));
    if (rg_xport_default_name(o->transport, sizeof(o->transport), &err) != RG_OK) {
        return rg__usage_error("%s", rg_err_message(&err));
    }
    o->iters = 1000;
    o->warmup = 100;
    o->seed = 1;
    o->timeout_s = 60;
    rc = rg_bench_getopt(argc, argv, rg__bopts, sizeof(rg__bopts) / sizeof(rg__bopts[0]), o,
                         "railgauge-bench barrier", rg__usage);
    if (rc != 0) {
        return rc;
    }
    if (o->out_path != NULL) {
        o->json = 1;
    }
    if (o->alg_text == NULL) {
        return rg__usage_error("--algorithm is required (linear, binomial, recdbl, dissem, "
                               "nway --n N, ring, kdissem:K, recexch:K)%s", "");
    }
    if (rg_coll_barrier_parse(o->alg_text, o->n, &o->spec, &err) != RG_OK) {
        return rg__usage_error("%s", rg_err_message(&err));
    }
    if (o->check && !o->skew_given) {
        o->skew_us = 100;
    }
    if (rg_xport_find(o->transport) == NULL) {
        return rg__usage_error("unknown transport '%s'", o->transport);
    }
    return 0;
}

/* Busy-waits for a random time in [0, max_us] microseconds. */
static void rg__skew(unsigned *state, double max_us)
{
    uint64_t until;

    if (max_us <= 0) {
        return;
    }
    until = rg_time_mono_ns() + (uint64_t)(max_us * 1e3 * ((double)rand_r(state) / RAND_MAX));
    while (rg_time_mono_ns() < until) {
    }
}

typedef struct rg__bres {
    rg_stats_t stats;              /* entry to exit, every rank and iteration, us */
    double     release_median_us;  /* last entry to last exit, per iteration (one host) */
    long       violations;         /* iterations where a rank left before the last entered */
    long       first_bad;          /* the first such iteration, -1: none */
    int        bad_early, bad_late;/* its ranks: the one that left, the one that entered */
    double     bad_gap_us;
    int        one_host;
} rg__bres_t;

/* Rank 0: takes every rank's times (its own first) and computes the result. */
static rg_status_t rg__bench_gather(rg_proto_t *p, const rg__bopts_t *o, uint64_t *mine,
                                    uint64_t host, rg__bres_t *res, rg_err_t *err)
{
    int       P = rg_proto_size(p), q;
    long      n = o->iters, i;
    size_t    nbytes = (size_t)n * 2 * sizeof(uint64_t) + sizeof(uint64_t);
    uint64_t *buf = malloc(nbytes);
    uint64_t *max_entry = malloc((size_t)n * sizeof(uint64_t));
    uint64_t *min_exit = malloc((size_t)n * sizeof(uint64_t));
    uint64_t *max_exit = malloc((size_t)n * sizeof(uint64_t));
    int      *late = malloc((size_t)n * sizeof(int));
    int      *early = malloc((size_t)n * sizeof(int));
    double   *samples = malloc((size_t)n * (size_t)P * sizeof(double));
    rg_status_t st = RG_OK;

    if (!buf || !max_entry || !min_exit || !max_exit || !late || !early || !samples) {
        st = rg_err_set(err, RG_ERR_NOMEM, "barrier bench: out of memory for %ld x %d times",
                        n, P);
        goto out;
    }
    res->one_host = 1;
    for (q = 0; q < P; q++) {
        const uint64_t *t = mine;
        if (q > 0) {
            rg_preq_t req;
            st = rg_proto_recv(p, q, RG__TAG_TIMES, buf, nbytes, &req);
            if (st != RG_OK || req.msg_len != nbytes) {
                st = rg_err_set(err, st != RG_OK ? st : RG_ERR_PARSE, "barrier bench: the "
                                "times of rank %d: %s", q, st != RG_OK ? rg_proto_strerror(p) :
                                "wrong length");
                goto out;
            }
            t = buf;
            if (buf[2 * n] != host) {
                res->one_host = 0;
            }
        }
        for (i = 0; i < n; i++) {
            uint64_t in = t[2 * i], outt = t[2 * i + 1];
            samples[(size_t)q * (size_t)n + (size_t)i] = (double)(outt - in) * 1e-3;
            if (q == 0 || in > max_entry[i]) {
                max_entry[i] = in;
                late[i] = q;
            }
            if (q == 0 || outt < min_exit[i]) {
                min_exit[i] = outt;
                early[i] = q;
            }
            if (q == 0 || outt > max_exit[i]) {
                max_exit[i] = outt;
            }
        }
    }
    res->first_bad = -1;
    for (i = 0; i < n; i++) {
        if (min_exit[i] < max_entry[i]) {
            if (res->violations++ == 0) {
                res->first_bad = i;
                res->bad_early = early[i];
                res->bad_late = late[i];
                res->bad_gap_us = (double)(max_entry[i] - min_exit[i]) * 1e-3;
            }
        }
        /* buf (2n + 1 words) is free now: it takes the n release times. */
        ((double *)buf)[i] = (double)(max_exit[i] - max_entry[i]) * 1e-3;
    }
    {
        rg_stats_t rs;
        if (res->one_host && rg_stats_compute((double *)buf, (size_t)n, &rs, err) == RG_OK) {
            res->release_median_us = rs.median;
        } else {
            res->release_median_us = NAN;
        }
    }
    st = rg_stats_compute(samples, (size_t)n * (size_t)P, &res->stats, err);
out:
    free(buf);
    free(max_entry);
    free(min_exit);
    free(max_exit);
    free(late);
    free(early);
    free(samples);
    return st;
}

static int rg__bench_report(const rg__bopts_t *o, rg_proto_t *p, uint32_t rounds,
                            const rg__bres_t *res, const char *impl)
{
    char     name[32];
    char     line[2048];
    rg_json_t js;
    rg_err_t err;
    int      P = rg_proto_size(p);

    rg_coll_barrier_format(&o->spec, name, sizeof(name));
    if (!o->json) {
        printf("barrier %s on %d ranks over %s (%s): %u rounds, %ld iterations (skew %.1f us)\n"
               "  min %.3f us  median %.3f us  p99 %.3f us  mean %.3f us\n",
               name, P, o->transport, impl, rounds, o->iters, o->skew_us, res->stats.min,
               res->stats.median, res->stats.p99, res->stats.mean);
        if (res->one_host) {
            printf("  last entry to last exit: median %.3f us\n", res->release_median_us);
        }
        if (o->check) {
            printf("  check: %s (%ld of %ld iterations with a rank that left early)\n",
                   res->violations ? "FAILED" : "passed", res->violations, o->iters);
        }
        return fflush(stdout) == 0 ? 0 : -1;
    }
    rg_json_init(&js, line, sizeof(line));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "pattern", "barrier");
    rg_json_kv_string(&js, "algorithm", rg_coll_barrier_alg_name(o->spec.alg));
    rg_json_kv_int(&js, "n", o->spec.n);
    rg_json_kv_int(&js, "P", P);
    rg_json_kv_string(&js, "transport", o->transport);
    rg_json_kv_string(&js, "impl", impl);
    rg_json_kv_uint(&js, "rounds", rounds);
    rg_json_kv_int(&js, "iterations", o->iters);
    rg_json_kv_int(&js, "warmup", o->warmup);
    rg_json_kv_double(&js, "skew_us", o->skew_us);
    rg_json_kv_double(&js, "min_us", res->stats.min);
    rg_json_kv_double(&js, "median_us", res->stats.median);
    rg_json_kv_double(&js, "mean_us", res->stats.mean);
    rg_json_kv_double(&js, "p99_us", res->stats.p99);
    rg_json_kv_double(&js, "max_us", res->stats.max);
    rg_json_key(&js, "release_median_us");
    if (res->one_host) {
        rg_json_double(&js, res->release_median_us);
    } else {
        rg_json_null(&js);
    }
    rg_json_key(&js, "check");
    if (o->check) {
        rg_json_string(&js, res->violations ? "failed" : "passed");
    } else {
        rg_json_null(&js);
    }
    rg_json_kv_int(&js, "violations", res->violations);
    if (o->drop_rounds > 0) {
        rg_json_kv_int(&js, "dropped_rounds", o->drop_rounds);
    }
    rg_json_object_end(&js);
    if (o->out_path != NULL) {
        FILE *f = fopen(o->out_path, "w");

        if (f == NULL) {
            fprintf(stderr, "railgauge-bench barrier: cannot open '%s': %s\n", o->out_path,
                    strerror(errno));
            return -1;
        }
        if (rg_json_write_line(&js, f, &err) != RG_OK) {
            fclose(f);
            fprintf(stderr, "railgauge-bench barrier: %s\n", rg_err_message(&err));
            return -1;
        }
        return fclose(f) == 0 ? 0 : -1;
    }
    if (rg_json_write_line(&js, stdout, &err) != RG_OK) {
        fprintf(stderr, "railgauge-bench barrier: %s\n", rg_err_message(&err));
        return -1;
    }
    return 0;
}

int rg_bench_barrier_main(int argc, char **argv)
{
    rg__bopts_t        o;
    rg_boot_t         *boot = NULL;
    rg_proto_t        *proto = NULL;
    rg_coll_barrier_t  bar;
    rg_err_t           err;
    uint64_t          *times = NULL, host = rg_host_id();
    uint64_t           timeout_ns;
    uint32_t           rounds;
    unsigned           rng;
    long               i;
    int                rc, rank = 0, started_bar = 0;
    rg__bres_t         res;

    memset(&bar, 0, sizeof(bar));
    memset(&res, 0, sizeof(res));
    rg_err_clear(&err);
    rc = rg__parse_args(argc, argv, &o);
    if (rc != 0) {
        return rc < 0 ? 0 : rc;
    }
    timeout_ns = (uint64_t)(o.timeout_s * 1e9);
    rc = RG__EXIT_FAIL;
    if (rg_boot_init(&boot, &err) != RG_OK) {
        goto out;
    }
    rank = rg_boot_rank(boot);
    if (rg_proto_open(o.transport, boot, NULL, &proto, &err) != RG_OK) {
        goto out;
    }
    /* As the other patterns: a measured wait never sleeps in the kernel
     * (sched_yield still lets oversubscribed ranks run). RG_XPORT_YIELD_NS,
     * when set, wins. */
    if (!rg_xport_wait_given("YIELD_NS") && rg_proto_xport(proto)->wait.yield_ns < 200e6) {
        rg_proto_xport(proto)->wait.yield_ns = 200e6;
    }
    /* More ranks than CPUs: a rank that waits spins on a core that the rank
     * it waits for needs; it yields at once instead (measured here, 8 ranks
     * on 2 cores: 23 us per dissemination barrier instead of 76). The ranks
     * may be on several hosts; this counts those of this host only roughly
     * (all of them), which errs towards yielding. RG_XPORT_SPIN_NS wins. */
    if (!rg_xport_wait_given("SPIN_NS") &&
        rg_proto_size(proto) > sysconf(_SC_NPROCESSORS_ONLN)) {
        rg_proto_xport(proto)->wait.spin_ns = 0;
    }
    if (rg_coll_barrier_init(&bar, proto, &o.spec, &err) != RG_OK) {
        goto out;
    }
    started_bar = 1;
    /* auto: flags over the shm transport, also where ranks share CPUs (their
     * waits yield the CPU; measured here, dissem on 8 ranks and 2 CPUs: 6.9 us
     * on flags, 14.6 us on the runtime's messages). */
    if (o.impl == 2 || (o.impl == 0 && strcmp(o.transport, "shm") == 0)) {
        rg_status_t us = rg_coll_barrier_use_shm(&bar, &err);

        if (us != RG_OK && (us != RG_ERR_UNSUPPORTED || o.impl == 2)) {
            goto out;
        }
        rg_err_clear(&err);
    }
    rounds = bar.plan.nrounds;
    if ((uint32_t)o.drop_rounds > rounds) {
        rg_err_set(&err, RG_ERR_INVALID, "--drop-rounds %d: the schedule has only %u rounds "
                   "on %d ranks", o.drop_rounds, rounds, rg_proto_size(proto));
        rc = rank == 0 ? RG__EXIT_USAGE : -RG__EXIT_USAGE;
        goto out;
    }
    times = malloc((size_t)o.iters * 2 * sizeof(uint64_t) + sizeof(uint64_t));
    if (times == NULL) {
        rg_err_set(&err, RG_ERR_NOMEM, "out of memory for %ld iterations", o.iters);
        goto out;
    }
    for (i = 0; i < o.warmup; i++) {
        if (rg_coll_barrier_run(&bar, timeout_ns, &err) != RG_OK) {
            goto out;
        }
    }
    rng = o.seed * 2654435761u + (unsigned)rank * 40503u + 1;
    for (i = 0; i < o.iters; i++) {
        rg__skew(&rng, o.skew_us);
        times[2 * i] = rg_time_mono_ns();
        if (rg_coll_barrier_run_rounds(&bar, rounds - (uint32_t)o.drop_rounds, timeout_ns,
                                       &err) != RG_OK) {
            goto out;
        }
        times[2 * i + 1] = rg_time_mono_ns();
    }
    times[2 * o.iters] = host;
    if (rank != 0) {
        if (rg_proto_send(proto, 0, RG__TAG_TIMES, times,
                          (size_t)o.iters * 2 * sizeof(uint64_t) + sizeof(uint64_t)) != RG_OK) {
            rg_err_set(&err, RG_ERR_IO, "sending the times to rank 0: %s",
                       rg_proto_strerror(proto));
            goto out;
        }
        /* Stay until rank 0 has everything: a rank that closes its
         * connections early can look like a dead peer to it. */
        if (rg_boot_barrier(boot, &err) != RG_OK) {
            goto out;
        }
        rc = RG__EXIT_OK;
        goto out;
    }
    if (rg__bench_gather(proto, &o, times, host, &res, &err) != RG_OK) {
        goto out;
    }
    if (rg_boot_barrier(boot, &err) != RG_OK) {
        goto out;
    }
    if (o.check && !res.one_host) {
        rg_err_set(&err, RG_ERR_INVALID, "--check compares times on one clock: it needs all "
                   "ranks on one host");
        rc = RG__EXIT_USAGE;
        goto out;
    }
    if (rg__bench_report(&o, proto, rounds - (uint32_t)o.drop_rounds, &res,
                         bar.shm != NULL ? "shm" : "messages") != 0) {
        goto out;
    }
    rc = RG__EXIT_OK;
    if (o.check && res.violations > 0) {
        rg_err_set(&err, RG_ERR_INVALID, "check failed: in %ld of %ld iterations a rank left "
                   "the barrier before the last one entered (first: iteration %ld, rank %d "
                   "left %.3f us before rank %d entered)", res.violations, o.iters,
                   res.first_bad, res.bad_early, res.bad_gap_us, res.bad_late);
        rc = RG__EXIT_FAIL;
    }
out:
    if (rc > RG__EXIT_OK) {
        fprintf(stderr, "railgauge-bench barrier: rank %d: %s\n", rank, rg_err_message(&err));
    }
    free(times);
    if (started_bar) {
        rg_coll_barrier_fini(&bar);
    }
    rg_proto_close(proto);
    rg_boot_fini(boot);
    return rc < 0 ? -rc : rc;
}
