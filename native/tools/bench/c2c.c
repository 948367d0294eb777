/*
 * railgauge-bench c2c: the time a cache line takes from one CPU to another,
 * one way, by two threads of one process pinned to two CPUs that bounce one
 * line (a release store of a counter, a spin on the answer).
 *
 * On a machine of its own this is a fixed property of the two CPUs: the same
 * core's two hardware threads, two cores under one L3, two chiplets or two
 * sockets. On a virtual machine it is where the hypervisor runs the two
 * vCPUs right now, and that changes while the guest runs: measured on the
 * two-vCPU development host (AMD EPYC, KVM) on 2026-11-29, 13, 31 or 155 ns
 * one way from one second to the next, and the shared-memory round trip
 * PRTT(1,0,1) 0.12, 0.19 or 0.72 us with it (docs/fit.md, section 1: the
 * host's states). railgauge gauge runs it before and after its measurements,
 * so that a run says which placement it measured.
 *
 *   railgauge-bench c2c [--cpus A,B] [--round-trips N] [--chunks K] [--out FILE]
 *
 * One JSON line: {"type": "c2c", "cpus": [A, B], "one_way_ns": median of the
 * chunks' means, "min_ns", "max_ns", "chunks", "round_trips", ...}. No ranks,
 * no transport: it runs as a plain program. Exit 2 on a bad option or fewer
 * than two CPUs to run on, 1 when the CPUs cannot be pinned or one does not
 * answer within a second.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/stats.h"
#include "base/timer.h"
#include "bench.h"

enum { RG__C2C_OK = 0, RG__C2C_FAIL = 1, RG__C2C_USAGE = 2 };

#define RG__C2C_MAX_CHUNKS 1000

typedef struct rg__c2c {
    rg_bench_cline_t cl;      /* the bounced line (cline.c); one exchange from 0 */
    _Alignas(64) int cpu[2];
    long        round_trips, chunks;
    const char *out_path;
    rg_timer_t  timer;
    int         pin_errno;    /* of the answering thread's pinning, 0: pinned */
    rg_err_t    err;
} rg__c2c_t;

static int rg__c2c_pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The answering thread: on cpu[1], answers every odd value with the next. */
static void *rg__c2c_answer(void *arg)
{
    rg__c2c_t *c = arg;

    c->pin_errno = rg__c2c_pin(c->cpu[1]);
    if (c->pin_errno != 0) {
        rg_bench_cline_give_up(&c->cl, 0);
        return NULL;
    }
    rg_bench_cline_answer(&c->cl, 0, (uint64_t)c->round_trips * (uint64_t)c->chunks);
    return NULL;
}

static int rg__c2c_usage(const char *what)
{
    fprintf(stderr, "railgauge-bench c2c: %s\n"
                    "usage: railgauge-bench c2c [--cpus A,B] [--round-trips N] [--chunks K] "
                    "[--out FILE]\n", what);
    return RG__C2C_USAGE;
}

static int rg__c2c_long(const char *s, long lo, long hi, long *v)
{
    char *end;

    errno = 0;
    *v    = strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && *v >= lo && *v <= hi;
}

static int rg__c2c_args(int argc, char **argv, rg__c2c_t *c)
{
    cpu_set_t set;
    long      a, b;
    int       i, k, given = 0;
    char     *comma;

    for (i = 2; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
            printf("railgauge-bench c2c: a cache line's one-way time between two CPUs (the\n"
                   "first two this process may run on, or --cpus A,B), the median of --chunks\n"
                   "(default 25) means of --round-trips (default 2000) round trips; one JSON\n"
                   "line to stdout or --out FILE\n");
            return -1;
        }
        if (i + 1 >= argc) {
            return rg__c2c_usage("an option without its value, or an unknown option");
        }
        if (strcmp(opt, "--cpus") == 0) {
            comma = strchr(argv[i + 1], ',');
            if (comma == NULL) {
                return rg__c2c_usage("--cpus takes two CPU numbers A,B");
            }
            *comma = '\0';
            k      = rg__c2c_long(argv[i + 1], 0, CPU_SETSIZE - 1, &a) &&
                rg__c2c_long(comma + 1, 0, CPU_SETSIZE - 1, &b);
            *comma = ',';
            if (!k || a == b) {
                return rg__c2c_usage("--cpus takes two different CPU numbers A,B");
            }
            c->cpu[0] = (int)a;
            c->cpu[1] = (int)b;
            given     = 1;
        } else if (strcmp(opt, "--round-trips") == 0) {
            if (!rg__c2c_long(argv[i + 1], 10, 10000000, &c->round_trips)) {
                return rg__c2c_usage("--round-trips must be an integer 10..10000000");
            }
        } else if (strcmp(opt, "--chunks") == 0) {
            if (!rg__c2c_long(argv[i + 1], 1, RG__C2C_MAX_CHUNKS, &c->chunks)) {
                return rg__c2c_usage("--chunks must be an integer 1..1000");
            }
        } else if (strcmp(opt, "--out") == 0) {
            c->out_path = argv[i + 1];
        } else {
            return rg__c2c_usage("unknown option");
        }
        i++;
    }
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return rg__c2c_usage("cannot read the CPUs this process may run on");
    }
    if (given) {
        if (!CPU_ISSET(c->cpu[0], &set) || !CPU_ISSET(c->cpu[1], &set)) {
            return rg__c2c_usage("--cpus names a CPU this process may not run on");
        }
        return 0;
    }
    /* The first two CPUs of the process's mask: those `railgauge run` pins
     * ranks 0 and 1 to. */
    for (k = 0, i = 0; i < CPU_SETSIZE && k < 2; i++) {
        if (CPU_ISSET(i, &set)) {
            c->cpu[k++] = i;
        }
    }
    if (k < 2) {
        return rg__c2c_usage("needs two CPUs to run on; this process may run on one");
    }
    return 0;
}

/* Runs the chunks; chunk_ns[j] is chunk j's mean one-way time. */
static rg_status_t rg__c2c_run(rg__c2c_t *c, double *chunk_ns)
{
    pthread_t   th;
    rg_status_t st;
    int         rc;

    rc = rg__c2c_pin(c->cpu[0]);
    if (rc != 0) {
        return rg_err_set_errno(&c->err, RG_ERR_SYSTEM, rc, "cannot pin a thread to CPU %d",
                                c->cpu[0]);
    }
    rc = pthread_create(&th, NULL, rg__c2c_answer, c);
    if (rc != 0) {
        return rg_err_set_errno(&c->err, RG_ERR_SYSTEM, rc, "cannot start the second thread");
    }
    st = rg_bench_cline_lead(&c->cl, 0, c->round_trips, c->chunks, &c->timer, chunk_ns);
    if (st != RG_OK) {
        rg_bench_cline_give_up(&c->cl, 0);
    }
    pthread_join(th, NULL);
    if (c->pin_errno != 0) {
        return rg_err_set_errno(&c->err, RG_ERR_SYSTEM, c->pin_errno,
                                "cannot pin a thread to CPU %d", c->cpu[1]);
    }
    if (st != RG_OK) {
        return rg_err_set(&c->err, RG_ERR_TIMEOUT,
                          "CPU %d did not answer within 1 s (is something else running there "
                          "at a higher priority?)", c->cpu[1]);
    }
    return RG_OK;
}

int rg_bench_c2c_main(int argc, char **argv)
{
    static rg__c2c_t c;  /* static: its alignment, and off the stack */
    double           chunk_ns[RG__C2C_MAX_CHUNKS];
    char             buf[1024];
    rg_json_t        js;
    rg_stats_t       st;
    FILE            *out = stdout;
    int              rc;

    memset(&c, 0, sizeof(c));
    c.round_trips = 2000;
    c.chunks      = 25;
    rc            = rg__c2c_args(argc, argv, &c);
    if (rc != 0) {
        return rc < 0 ? RG__C2C_OK : rc;  /* -1: --help */
    }
    /* rg_stats_compute sorts chunk_ns in place. */
    if (rg_timer_init(&c.timer, 0, &c.err) != RG_OK || rg__c2c_run(&c, chunk_ns) != RG_OK ||
        rg_stats_compute(chunk_ns, (size_t)c.chunks, &st, &c.err) != RG_OK) {
        fprintf(stderr, "railgauge-bench c2c: %s\n", rg_err_message(&c.err));
        return RG__C2C_FAIL;
    }
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "type", "c2c");
    rg_json_key(&js, "cpus");
    rg_json_array_begin(&js);
    rg_json_int(&js, c.cpu[0]);
    rg_json_int(&js, c.cpu[1]);
    rg_json_array_end(&js);
    rg_json_kv_double(&js, "one_way_ns",
                      rg_stats_quantile_sorted(chunk_ns, (size_t)c.chunks, 0.5));
    rg_json_kv_double(&js, "min_ns", chunk_ns[0]);
    rg_json_kv_double(&js, "max_ns", chunk_ns[c.chunks - 1]);
    rg_json_kv_int(&js, "chunks", (int)c.chunks);
    rg_json_kv_int(&js, "round_trips", (int)c.round_trips);
    rg_json_kv_string(&js, "timer", c.timer.source == RG_TIMER_TSC ? "tsc" : "monotonic");
    rg_json_object_end(&js);
    if (c.out_path != NULL && (out = fopen(c.out_path, "w")) == NULL) {
        fprintf(stderr, "railgauge-bench c2c: cannot open '%s' for writing: %s\n", c.out_path,
                strerror(errno));
        return RG__C2C_FAIL;
    }
    rc = rg_json_write_line(&js, out, &c.err) == RG_OK ? RG__C2C_OK : RG__C2C_FAIL;
    if (rc != RG__C2C_OK) {
        fprintf(stderr, "railgauge-bench c2c: %s\n", rg_err_message(&c.err));
    }
    if (out != stdout && fclose(out) != 0 && rc == RG__C2C_OK) {
        fprintf(stderr, "railgauge-bench c2c: writing '%s' failed: %s\n", c.out_path,
                strerror(errno));
        rc = RG__C2C_FAIL;
    }
    return rc;
}
