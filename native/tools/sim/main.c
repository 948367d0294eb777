/*
 * railgauge-sim: simulates a GOAL schedule or a generated collective under
 * LogGOPS and prints the makespan and each rank's finishing time.
 *
 *   railgauge-sim goal FILE [params] [--calc-unit ns|us|ms|s] [--json] [--per-rank]
 *   railgauge-sim barrier --algorithm A [--n N] -P P [params] [--json] [--per-rank]
 *   railgauge-sim rxwin --pattern P -n N [--window W] [--rnr-timer-ms T] [params] [--json]
 *   ... --trace FILE [--trace-max-ranks N]: every operation's time on each CPU and NIC
 *   as Chrome trace JSON (opens in Perfetto), for runs of at most N ranks (4096).
 *   goal, barrier ... --rails FILE|G0,G1,... [--policy P] [--stripe-min BYTES]
 *   [--weights W0,W1,...] [--adapt-alpha A] [--adapt-floor F]: multirail striping
 *   (docs/sim.md, "Rails").
 *
 * params: --L --o --g (us), --G --O (us per byte), --S (bytes or inf); all
 * default to 0, S to inf (LogP with L = o = g = 0). Or piecewise by message
 * size: --range TO_BYTES,L,o,g,G,O repeated, TO_BYTES increasing. Or LoP:
 * --lop-rtt l1,..,l6 --lop-os a1,a2,a3 [--lop-list] (docs/sim.md). --progress
 * (default: when stderr is a terminal) shows progress on stderr. Exit status: 0 done, 2 bad
 * usage or input (syntax, range, cycle, deadlock), 1 other failures.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "sim/barrier.h"
#include "sim/goal.h"
#include "sim/rails.h"
#include "sim/rxwin_work.h"
#include "sim/sim.h"

#define PER_RANK_DEFAULT_MAX 4096

static void usage(FILE *f)
{
    fprintf(f,
            "usage: railgauge-sim goal FILE [options]\n"
            "       railgauge-sim barrier --algorithm A [--n N] -P P [options]\n"
            "       railgauge-sim rxwin --pattern P -n N [--window W] [options]\n"
            "         (railgauge-sim rxwin --help)\n"
            "         A: linear, binomial, recdbl, dissem (dissemination), nway (with\n"
            "         --n N, or nway:N); the schedules of coll/ (docs/coll.md)\n"
            "options:\n"
            "  --L US --o US --g US       latency, overhead, gap (microseconds; default 0)\n"
            "  --G US --O US              gap and overhead per byte (us/byte; default 0)\n"
            "  --S BYTES|inf              rendezvous above S bytes (default inf)\n"
            "  --range TO,L,o,g,G,O       parameters for messages up to TO bytes (repeat,\n"
            "                             TO increasing; the last applies beyond)\n"
            "  --duplex US                added to a message's latency where its receiver\n"
            "                             sent while it was on its way (the flag model's\n"
            "                             exchange; docs/sim.md \"Duplex\"; default 0)\n"
            "  --lop-rtt l1,l2,l3,l4,l5,l6  LoP instead: RTT(p) lambdas (per peer, us)\n"
            "  --lop-os a1,a2,a3          LoP: o_s(p) = a1 + a2/(a3 + p) (us per request)\n"
            "  --lop-list                 LoP: sends of a batch posted as one list\n"
            "  --calc-unit ns|us|ms|s     unit of `calc` in GOAL files (default ns)\n"
            "  --progress, --no-progress  progress on stderr (default: if a terminal)\n"
            "  --json                     one JSON object on stdout\n"
            "  --per-rank                 finish_us even above %d ranks\n"
            "  --trace FILE               Chrome trace JSON of every operation (Perfetto)\n"
            "  --trace-max-ranks N        refuse --trace above N ranks (default 4096)\n"
            "rails (docs/sim.md, \"Rails\"):\n"
            "  --rails FILE|G0,G1,...     each NIC as rails: a rails.json of `railgauge gauge\n"
            "                             --rails` (per-rail L, o, G and weights) or per-rail\n"
            "                             G (us/byte) over the other parameters\n"
            "  --policy P                 binding, round-robin, even, weighted, adaptive\n"
            "                             (default: the file's, else even)\n"
            "  --stripe-min BYTES         smaller messages go whole (default 262144)\n"
            "  --weights W0,W1,...        weighted/adaptive: one weight per rail (default: the\n"
            "                             file's; weighted 1/G, adaptive equal)\n"
            "  --adapt-alpha A            adaptive: smoothing, 0 < A <= 1 (default 0.3)\n"
            "  --adapt-floor F            adaptive: least share, 0 <= F R < 1 (default 0.05)\n",
            PER_RANK_DEFAULT_MAX);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Chrome trace output: one complete event ("ph":"X") per span; ts and dur
 * are microseconds, as the simulator's times. pid is the rank, tid the
 * resource: CPU c is c, NIC k's send gap 1000 + k, its receive gap 2000 + k. */
typedef struct trace_out {
    FILE *f;
    int   first;
} trace_out_t;

static void trace_span(void *arg, uint32_t rank, const char *resource, uint16_t index,
                       const char *what, double start, double dur, const rg_sim_op_t *op)
{
    trace_out_t *t = arg;
    int          tid = resource[0] == 'c' ? index : resource[4] == 's' ? 1000 + index :
                                                                         2000 + index;

    fprintf(t->f, "%s\n{\"name\":\"%s", t->first ? "" : ",", what);
    if (op->kind == RG_SIM_CALC) {
        fprintf(t->f, "\"");
    } else if (!strcmp(what, "send")) {
        fprintf(t->f, " %.0fb to %d tag %d\"", op->amount, op->peer, op->tag);
    } else {
        fprintf(t->f, " %.0fb from %u tag %d\"", op->amount, op->rank, op->tag);
    }
    fprintf(t->f, ",\"ph\":\"X\",\"ts\":%.17g,\"dur\":%.17g,\"pid\":%u,\"tid\":%d}", start,
            dur, rank, tid);
    t->first = 0;
}

static int trace_finish(trace_out_t *t, const rg_sim_sched_t *s, uint32_t nrails)
{
    uint32_t r, i, nnics = s->nnics * nrails;

    for (r = 0; r < s->nranks; r++) {
        fprintf(t->f, "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,"
                "\"args\":{\"name\":\"rank %u\"}}", t->first ? "" : ",", r, r);
        t->first = 0;
        for (i = 0; i < s->ncpus; i++) {
            fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                    "\"args\":{\"name\":\"cpu %u\"}}", r, i, i);
        }
        for (i = 0; i < nnics; i++) {
            /* With rails, track i is rail i % R of NIC i / R. */
            char nm[48];
            if (nrails > 1) {
                snprintf(nm, sizeof(nm), "nic %u rail %u", i / nrails, i % nrails);
            } else {
                snprintf(nm, sizeof(nm), "nic %u", i);
            }
            fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                    "\"args\":{\"name\":\"%s send\"}}", r, 1000 + i, nm);
            fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                    "\"args\":{\"name\":\"%s recv\"}}", r, 2000 + i, nm);
        }
    }
    fprintf(t->f, "\n],\"displayTimeUnit\":\"ns\"}\n");
    return ferror(t->f) ? -1 : 0;
}

/* Progress on stderr, at most twice a second, from the engine's hook. */
typedef struct progress {
    double t0, last;
    int    shown;
} progress_t;

static void progress_cb(void *arg, uint64_t events, size_t done, size_t total, double now)
{
    progress_t *pr = arg;
    double      t = now_s();

    if (t - pr->last < 0.5) {
        return;
    }
    pr->last = t;
    pr->shown = 1;
    fprintf(stderr, "\rrailgauge-sim: %5.1f%% of %zu operations, %.1f M events, simulated "
            "%.6g us, %.1f s\033[K", total ? 100.0 * (double)done / (double)total : 100.0, total,
            (double)events * 1e-6, now, t - pr->t0);
    fflush(stderr);
}

static void progress_end(progress_t *pr)
{
    if (pr->shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}

/* A comma-separated list of exactly n numbers. */
static int parse_list(const char *opt, const char *text, double *v, int n)
{
    const char *q = text;
    char       *end;
    int         i;

    for (i = 0; i < n; i++) {
        errno = 0;
        v[i] = strtod(q, &end);
        if (end == q || errno != 0 || !isfinite(v[i]) ||
            (i + 1 < n ? *end != ',' : *end != '\0')) {
            fprintf(stderr, "railgauge-sim: error: %s '%s': expected %d comma-separated "
                    "numbers\n", opt, text, n);
            return -1;
        }
        q = end + 1;
    }
    return 0;
}

/* min, mean and max of v[0..n) as a JSON object under key. */
static void json_summary(rg_json_t *js, const char *key, const double *v, size_t n)
{
    double lo = n ? v[0] : 0, hi = lo, sum = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
        sum += v[i];
    }
    rg_json_key(js, key);
    rg_json_object_begin(js);
    rg_json_kv_double(js, "min", lo);
    rg_json_kv_double(js, "mean", n ? sum / (double)n : 0);
    rg_json_kv_double(js, "max", hi);
    rg_json_object_end(js);
}

static void summary_line(const char *name, const double *v, size_t n)
{
    double lo = n ? v[0] : 0, hi = lo, sum = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
        sum += v[i];
    }
    printf("%-10s min %.6g  mean %.6g  max %.6g us\n", name, lo, n ? sum / (double)n : 0, hi);
}

static void json_array(rg_json_t *js, const char *key, const double *v, size_t n)
{
    size_t i;

    rg_json_key(js, key);
    rg_json_array_begin(js);
    for (i = 0; i < n; i++) {
        rg_json_double(js, v[i]);
    }
    rg_json_array_end(js);
}

static int parse_double(const char *opt, const char *text, double *v)
{
    char *end;

    errno = 0;
    *v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || isnan(*v)) {
        fprintf(stderr, "railgauge-sim: error: %s: not a number: '%s'\n", opt, text);
        return -1;
    }
    return 0;
}

/* ---- railgauge-sim rxwin --------------------------------------------------- */

/* The parameter that option a (--L, --o, --g, --G, --O, --S) sets, or NULL. */
static double *loggops_field(const char *a, rg_sim_params_t *prm)
{
    static const char *const names[] = {"--L", "--o", "--g", "--G", "--O", "--S"};
    double *const            fields[] = {&prm->L, &prm->o, &prm->g, &prm->G, &prm->O, &prm->S};
    size_t                   i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(a, names[i]) == 0) {
            return fields[i];
        }
    }
    return NULL;
}

/* --range TO_BYTES,L,o,g,G,O: one more protocol range into ranges (prm's
 * table); 0, or 2 after saying what is wrong. */
static int parse_range(const char *text, rg_sim_params_t *prm, rg_sim_range_t *ranges)
{
    rg_sim_range_t *r = &ranges[prm->nranges];
    char           *end;

    if (prm->nranges == RG_SIM_MAX_RANGES) {
        fprintf(stderr, "railgauge-sim: error: more than %d --range\n", RG_SIM_MAX_RANGES);
        return 2;
    }
    errno = 0;
    r->to_bytes = strtod(text, &end);
    if (*end++ != ',' || (r->L = strtod(end, &end), *end++ != ',') ||
        (r->o = strtod(end, &end), *end++ != ',') ||
        (r->g = strtod(end, &end), *end++ != ',') ||
        (r->G = strtod(end, &end), *end++ != ',') ||
        (r->O = strtod(end, &end), *end != '\0') || errno != 0) {
        fprintf(stderr, "railgauge-sim: error: --range '%s': expected TO_BYTES,L,o,g,G,O\n",
                text);
        return 2;
    }
    prm->nranges++;
    prm->ranges = ranges;
    return 0;
}

static void rxwin_usage(FILE *f)
{
    fprintf(f,
            "usage: railgauge-sim rxwin --pattern P -n N [options]\n"
            "  The workloads of `railgauge-bench rxwin` under the shared receive window\n"
            "  (docs/rxwin.md, docs/sim.md): eager messages land in posted buffers of\n"
            "  their receiver's window, or are refused (RNR) and sent again after the\n"
            "  RNR timer.\n"
            "  --pattern P            alltoall, halo2d, halo3d, incast, mix\n"
            "  -n N                   ranks, 2 .. %d\n"
            "  --window W             fixed:N or adaptive:W_init:W_max[:reclaim]\n"
            "                         (default adaptive:8:4096)\n"
            "  --rnr-timer-ms T       RNR retry timer, 0.01 .. 655.36 ms (default 1)\n"
            "  --limit N              the first limit, 1 .. W_init (default W_init/2)\n"
            "  --quiet-us US          reclaim's quiet period (default 100000)\n"
            "  --eager-limit BYTES    larger messages bypass the window (default 16384,\n"
            "                         the runtime's over shm)\n"
            "  --iters N --size BYTES --burst K --compute-us US\n"
            "                         as railgauge-bench rxwin (50, 512, 32; compute 0,\n"
            "                         mix 200 with rank r computing US (1 + r %% 4) / 2)\n"
            "  --L --o --g --G --O --S, --range TO,L,o,g,G,O   LogGOPS parameters\n"
            "  --per-rank             each rank's figures in the JSON\n"
            "  --json                 one JSON object on stdout\n",
            RG_SIM_RXWIN_MAX_RANKS);
}

static int rxwin_number(const char *opt, const char *text, double lo, double hi, double *v)
{
    if (parse_double(opt, text, v) != 0) {
        return -1;
    }
    if (!(*v >= lo && *v <= hi)) {
        fprintf(stderr, "railgauge-sim: error: %s %s: must be %g to %g\n", opt, text, lo, hi);
        return -1;
    }
    return 0;
}

static int rxwin_integer(const char *opt, const char *text, double lo, double hi, double *v)
{
    if (rxwin_number(opt, text, lo, hi, v) != 0) {
        return -1;
    }
    if (*v != floor(*v)) {
        fprintf(stderr, "railgauge-sim: error: %s %s: must be a whole number\n", opt, text);
        return -1;
    }
    return 0;
}

static int rxwin_main(int argc, char **argv)
{
    rg_sim_params_t      prm = {.S = INFINITY};
    rg_sim_range_t       ranges[RG_SIM_MAX_RANGES];
    rg_sim_rxwork_spec_t spec = {.pattern = -1, .nranks = 0, .iters = 50, .burst = 32,
                                 .size = 512, .compute_us = -1};
    rg_sim_rxwork_t      work;
    rg_sim_rxwin_t       win;
    rg_sim_rxwin_rank_t *per = NULL;
    rg_sim_sched_t       sched;
    rg_sim_result_t      res;
    rg_sim_trace_t       trace = {NULL, NULL, NULL, NULL};
    progress_t           prog = {0, 0, 0};
    rg_err_t             err;
    rg_status_t          st;
    const char          *window = "adaptive:8:4096";
    double               v, timer_ms = 1.0, limit = 0, quiet_us = 100000, eager = 16384;
    double               t0, wall;
    int                  i, as_json = 0, per_rank = 0, progress = -1, scalar = 0, rc = 0;

    rg_err_clear(&err);
    for (i = 2; i < argc; i++) {
        const char *a = argv[i];
        double     *dst = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            rxwin_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json") || !strcmp(a, "--per-rank")) {
            *(a[2] == 'j' ? &as_json : &per_rank) = 1;
            continue;
        }
        if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
            progress = a[2] == 'p';
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "railgauge-sim: error: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--pattern")) {
            spec.pattern = rg_sim_rxwork_pattern(argv[++i]);
            if (spec.pattern < 0) {
                fprintf(stderr, "railgauge-sim: error: --pattern '%s': unknown (known: "
                        "alltoall, halo2d, halo3d, incast, mix)\n", argv[i]);
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--window")) {
            window = argv[++i];
            continue;
        }
        if (!strcmp(a, "-n") || !strcmp(a, "--n")) {
            if (rxwin_integer(a, argv[++i], 2, RG_SIM_RXWIN_MAX_RANKS, &v) != 0) {
                return 2;
            }
            spec.nranks = (uint32_t)v;
            continue;
        }
        if (!strcmp(a, "--iters") || !strcmp(a, "--burst")) {
            if (rxwin_integer(a, argv[++i], 1, 1000000, &v) != 0) {
                return 2;
            }
            *(a[2] == 'i' ? &spec.iters : &spec.burst) = (uint32_t)v;
            continue;
        }
        if (!strcmp(a, "--size")) {
            if (rxwin_integer(a, argv[++i], 24, (double)(1 << 26), &spec.size) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--compute-us")) {
            if (rxwin_number(a, argv[++i], 0, 1e7, &spec.compute_us) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--rnr-timer-ms")) {
            if (rxwin_number(a, argv[++i], 0.01, 655.36, &timer_ms) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--limit")) {
            if (rxwin_integer(a, argv[++i], 1, RG_SIM_RXWIN_MAX, &limit) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--quiet-us")) {
            if (rxwin_number(a, argv[++i], 1e-3, 1e12, &quiet_us) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--eager-limit")) {
            if (rxwin_integer(a, argv[++i], 0, (double)(1 << 30), &eager) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--range")) {
            if (parse_range(argv[++i], &prm, ranges) != 0) {
                return 2;
            }
            continue;
        }
        if ((dst = loggops_field(a, &prm)) == NULL) {
            fprintf(stderr, "railgauge-sim: error: rxwin: unknown option '%s'\n", a);
            return 2;
        }
        if (parse_double(a, argv[++i], dst) != 0) {
            return 2;
        }
        scalar |= dst != &prm.S;
    }
    if (spec.pattern < 0) {
        fprintf(stderr, "railgauge-sim: error: rxwin: --pattern is missing (alltoall, halo2d, "
                "halo3d, incast, mix)\n");
        return 2;
    }
    if (spec.nranks == 0) {
        fprintf(stderr, "railgauge-sim: error: rxwin: -n is missing (2 .. %d ranks)\n",
                RG_SIM_RXWIN_MAX_RANKS);
        return 2;
    }
    if (scalar && prm.nranges > 0) {
        fprintf(stderr, "railgauge-sim: error: --range replaces --L --o --g --G --O: give one "
                "or the other\n");
        return 2;
    }
    if (rg_sim_rxwin_parse(window, &win, eager, &err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return 2;
    }
    if (limit > 0) {
        win.first_limit = (int)limit;
    }
    win.rnr_timer_us = timer_ms * 1e3;
    win.quiet_us = quiet_us;
    prm.rxwin = &win;
    if (rg_sim_params_check(&prm, &err) != RG_OK || rg_sim_rxwin_check(&win, &err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return 2;
    }
    if (progress < 0) {
        progress = isatty(STDERR_FILENO);
    }
    if (progress) {
        trace.progress = progress_cb;
        trace.progress_arg = &prog;
    }
    t0 = now_s();
    prog.t0 = prog.last = t0;
    if ((st = rg_sim_rxwork_build(&work, &sched, &spec, &err)) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return st == RG_ERR_NOMEM ? 1 : 2;
    }
    per = calloc(spec.nranks, sizeof(*per));
    if (per == NULL) {
        fprintf(stderr, "railgauge-sim: error: out of memory for %u ranks\n", spec.nranks);
        rg_sim_rxwork_fini(&work);
        return 1;
    }
    win.per_rank = per;
    st = rg_sim_run_traced(&sched, &prm, &trace, &res, stderr, &err);
    progress_end(&prog);
    wall = now_s() - t0;
    if (st != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        free(per);
        rg_sim_rxwork_fini(&work);
        return st == RG_ERR_NOMEM || st == RG_ERR_IO ? 1 : 2;
    }
    if (as_json) {
        size_t    cap = 4096 + (per_rank ? (size_t)spec.nranks * 512 : 0);
        char     *buf = malloc(cap);
        rg_json_t js;
        if (buf == NULL) {
            fprintf(stderr, "railgauge-sim: error: out of memory for the output\n");
            rc = 1;
        } else {
            rg_json_init(&js, buf, cap);
            rg_json_object_begin(&js);
            rg_json_kv_double(&js, "time_s", res.makespan * 1e-6);
            rg_json_key(&js, "mem_bytes");
            rg_json_object_begin(&js);
            rg_json_kv_uint(&js, "min", res.rx.mem_min);
            rg_json_kv_double(&js, "mean", res.rx.mem_mean);
            rg_json_kv_uint(&js, "max", res.rx.mem_max);
            rg_json_object_end(&js);
            rg_json_kv_uint(&js, "limit_events", res.rx.limit_events);
            rg_json_kv_uint(&js, "rnr", res.rx.rnr);
            rg_json_kv_uint(&js, "retries", res.rx.retries);
            rg_json_kv_uint(&js, "messages", res.rx.messages);
            rg_json_kv_bool(&js, "verified", res.rx.verified);
            rg_json_kv_string(&js, "pattern", rg_sim_rxwork_pattern_name(spec.pattern));
            rg_json_kv_uint(&js, "ranks", spec.nranks);
            rg_json_kv_uint(&js, "iters", spec.iters);
            rg_json_kv_double(&js, "size", spec.size);
            rg_json_kv_uint(&js, "burst", spec.burst);
            rg_json_kv_double(&js, "compute_us", work.spec.compute_us);
            rg_json_kv_string(&js, "window", window);
            rg_json_kv_double(&js, "rnr_timer_ms", timer_ms);
            rg_json_kv_int(&js, "limit", win.first_limit);
            rg_json_kv_double(&js, "quiet_us", win.quiet_us);
            rg_json_kv_double(&js, "eager_limit", win.eager_limit);
            rg_json_kv_uint(&js, "pool_buf_bytes", win.buf_bytes);
            rg_json_kv_double(&js, "makespan_us", res.makespan);
            rg_json_kv_uint(&js, "delivered", res.rx.delivered);
            rg_json_kv_uint(&js, "out_of_order", res.rx.out_of_order);
            rg_json_kv_uint(&js, "duplicates", res.rx.duplicates);
            rg_json_kv_uint(&js, "shrinks", res.rx.shrinks);
            rg_json_kv_uint(&js, "events", res.events);
            rg_json_kv_double(&js, "wall_s", wall);
            if (per_rank) {
                uint32_t r;
                rg_json_key(&js, "per_rank");
                rg_json_array_begin(&js);
                for (r = 0; r < spec.nranks; r++) {
                    const rg_sim_rxwin_rank_t *x = &per[r];
                    rg_json_object_begin(&js);
                    rg_json_kv_uint(&js, "rank", r);
                    rg_json_kv_uint(&js, "mem_high_water", x->high_water);
                    rg_json_kv_uint(&js, "mem_pool", x->pool);
                    rg_json_kv_uint(&js, "mem_unexpected", x->unexpected);
                    rg_json_kv_uint(&js, "mem_control", x->control);
                    rg_json_kv_int(&js, "window", x->window);
                    rg_json_kv_int(&js, "window_peak", x->window_peak);
                    rg_json_kv_uint(&js, "limit_events", x->limit_events);
                    rg_json_kv_uint(&js, "rnr_sent", x->rnr_sent);
                    rg_json_kv_uint(&js, "rnr_recv", x->rnr_recv);
                    rg_json_kv_uint(&js, "retries", x->retries);
                    rg_json_kv_uint(&js, "shrinks", x->shrinks);
                    rg_json_kv_uint(&js, "sent", x->sent);
                    rg_json_kv_uint(&js, "received", x->received);
                    rg_json_kv_uint(&js, "parked", x->parked);
                    rg_json_kv_double(&js, "finish_us", res.finish[r]);
                    rg_json_object_end(&js);
                }
                rg_json_array_end(&js);
            }
            rg_json_object_end(&js);
            if (rg_json_write_line(&js, stdout, &err) != RG_OK) {
                fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
                rc = 1;
            }
            free(buf);
        }
    } else {
        printf("%s on %u ranks, window %s, RNR timer %g ms\n"
               "time       %.9f s\nmemory     min %llu  mean %.0f  max %llu bytes\n"
               "limit events %llu  rnr %llu  retries %llu  messages %llu  %s\n"
               "events     %llu\nwall       %.3f s\n",
               rg_sim_rxwork_pattern_name(spec.pattern), spec.nranks, window, timer_ms,
               res.makespan * 1e-6, (unsigned long long)res.rx.mem_min, res.rx.mem_mean,
               (unsigned long long)res.rx.mem_max, (unsigned long long)res.rx.limit_events,
               (unsigned long long)res.rx.rnr, (unsigned long long)res.rx.retries,
               (unsigned long long)res.rx.messages,
               res.rx.verified ? "verified" : "NOT verified", (unsigned long long)res.events,
               wall);
    }
    if (rc == 0 && !res.rx.verified) {
        fprintf(stderr, "railgauge-sim: error: rxwin: %llu of %llu messages delivered, %llu "
                "out of order, %llu twice\n", (unsigned long long)res.rx.delivered,
                (unsigned long long)res.rx.messages, (unsigned long long)res.rx.out_of_order,
                (unsigned long long)res.rx.duplicates);
        rc = 1;
    }
    rg_sim_result_free(&res);
    free(per);
    rg_sim_rxwork_fini(&work);
    return rc;
}

/* ---- rails ------------------------------------------------------------------ */

/* The rails options as given (NULL, NAN: not given). */
typedef struct rails_opts {
    const char *rails, *policy, *weights;
    double      stripe_min, alpha, floor;
} rails_opts_t;

/* Reads a whole file into a new buffer (*text, *len); 0 or -1 (errno). */
static int read_all(const char *path, char **text, size_t *len)
{
    FILE  *f = fopen(path, "r");
    char  *buf = NULL;
    size_t n = 0, cap = 0, got;

    if (f == NULL) {
        return -1;
    }
    do {
        if (n + 4096 > cap) {
            char *nb = realloc(buf, cap = 2 * cap + 4096);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return -1;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    if (ferror(f)) {
        free(buf);
        fclose(f);
        errno = EIO;
        return -1;
    }
    fclose(f);
    *text = buf;
    *len = n;
    return 0;
}

/* Builds the rails model from the options (docs/sim.md "Rails"): 0, or 2
 * after saying what is wrong. */
static int rails_build(const rails_opts_t *o, rg_sim_rails_t *r)
{
    rg_err_t    err;
    double      fw[RG_SIM_RAILS_MAX];
    int         fpolicy = -1, nfw = 0, i, list = 1;
    const char *q;

    rg_err_clear(&err);
    rg_sim_rails_defaults(r);
    for (q = o->rails; *q != '\0'; q++) {
        list &= strchr("0123456789.,eE+-", *q) != NULL;
    }
    if (list && o->rails[0] != '\0') {
        if (rg_sim_rails_parse_g(o->rails, r, &err) != RG_OK) {
            fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
            return 2;
        }
    } else {
        char  *text;
        size_t len;
        if (read_all(o->rails, &text, &len) != 0) {
            fprintf(stderr, "railgauge-sim: error: --rails %s: %s (give a rails.json or "
                    "per-rail G values separated by commas)\n", o->rails, strerror(errno));
            return 2;
        }
        if (rg_sim_rails_parse_json(text, len, o->rails, r, &fpolicy, fw, &nfw, &err) !=
            RG_OK) {
            fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
            free(text);
            return 2;
        }
        free(text);
    }
    if (o->policy != NULL) {
        if ((r->policy = rg_sim_rails_policy(o->policy)) < 0) {
            fprintf(stderr, "railgauge-sim: error: --policy '%s': not a policy (binding, "
                    "round-robin, even, weighted, adaptive)\n", o->policy);
            return 2;
        }
    } else if (fpolicy >= 0) {
        r->policy = fpolicy;
    }
    if (o->weights != NULL) {
        const char *w = o->weights;
        char       *end;
        for (i = 0;; i++) {
            double v;
            errno = 0;
            v = strtod(w, &end);
            if (end == w || errno != 0 || (*end != ',' && *end != '\0') || !(v > 0) ||
                !isfinite(v)) {
                fprintf(stderr, "railgauge-sim: error: --weights '%s': expected one weight "
                        "above 0 per rail, separated by commas\n", o->weights);
                return 2;
            }
            if (i < RG_SIM_RAILS_MAX) {
                r->weights[i] = v;
            }
            if (*end == '\0') {
                break;
            }
            w = end + 1;
        }
        if (i + 1 != r->nrails) {
            fprintf(stderr, "railgauge-sim: error: --weights '%s': %d weights for %d rails\n",
                    o->weights, i + 1, r->nrails);
            return 2;
        }
    } else if (nfw > 0) {
        memcpy(r->weights, fw, (size_t)nfw * sizeof(double));
    } else if (r->policy == RG_SIM_RAILS_WEIGHTED) {
        for (i = 0; i < r->nrails; i++) {
            r->weights[i] = 1.0 / r->rail[i].G; /* the rails' bandwidths */
        }
    }
    if (!isnan(o->stripe_min)) {
        r->stripe_min = o->stripe_min;
    }
    if (!isnan(o->alpha)) {
        r->alpha = o->alpha;
    }
    if (!isnan(o->floor)) {
        r->floor = o->floor;
    }
    if (rg_sim_rails_check(r, &err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return 2;
    }
    return 0;
}

/* The rails' figures of a run into the JSON output. */
static void rails_json(rg_json_t *js, const rg_sim_rails_t *r, const rg_sim_result_t *res)
{
    int i;

    rg_json_key(js, "rails");
    rg_json_object_begin(js);
    rg_json_kv_string(js, "policy", rg_sim_rails_policy_name(r->policy));
    rg_json_kv_int(js, "nrails", r->nrails);
    rg_json_kv_double(js, "stripe_min", r->stripe_min);
    if (r->policy == RG_SIM_RAILS_ADAPTIVE) {
        rg_json_kv_double(js, "adapt_alpha", r->alpha);
        rg_json_kv_double(js, "adapt_floor", r->floor);
    }
    rg_json_key(js, "per_rail");
    rg_json_array_begin(js);
    for (i = 0; i < r->nrails; i++) {
        const rg_sim_rail_totals_t *t = &res->rails[i];
        rg_json_object_begin(js);
        rg_json_kv_int(js, "rail", i);
        rg_json_key(js, "G_us_per_byte");
        if (isnan(r->rail[i].G)) {
            rg_json_null(js);
        } else {
            rg_json_double(js, r->rail[i].G);
        }
        if (r->weights[i] > 0) {
            rg_json_kv_double(js, "weight", r->weights[i]);
        }
        rg_json_kv_double(js, "bytes", t->bytes);
        rg_json_kv_uint(js, "pieces", t->pieces);
        rg_json_kv_double(js, "send_busy_us", t->send_busy_us);
        rg_json_kv_double(js, "recv_busy_us", t->recv_busy_us);
        rg_json_object_end(js);
    }
    rg_json_array_end(js);
    rg_json_object_end(js);
}

int main(int argc, char **argv)
{
    rg_sim_params_t prm = {.S = INFINITY};
    rg_sim_range_t  ranges[RG_SIM_MAX_RANGES];
    int             scalar_given = 0;
    rg_sim_sched_t  sched;
    rg_sim_result_t res;
    rg_err_t        err;
    rg_status_t     st;
    const char     *mode, *file = NULL, *algo = NULL;
    double          bar_n = 0; /* barrier --n */
    double          calc_unit = 0.001, P = 0, t0, wall, read_s, trace_max = 4096;
    const char     *trace_path = NULL;
    trace_out_t     tout = {NULL, 1};
    rg_sim_trace_t  trace = {trace_span, &tout, NULL, NULL};
    int             as_json = 0, per_rank = 0, i, rc;
    rg_sim_lop_t    lop;
    int             lop_rtt = 0, lop_os = 0, lop_list = 0, progress = -1;
    progress_t      prog = {0, 0, 0};
    rails_opts_t    ropt = {NULL, NULL, NULL, NAN, NAN, NAN};
    rg_sim_rails_t  rails;

    rg_err_clear(&err);
    memset(&sched, 0, sizeof(sched));
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    mode = argv[1];
    if (!strcmp(mode, "rxwin")) {
        return rxwin_main(argc, argv);
    }
    if (strcmp(mode, "goal") != 0 && strcmp(mode, "barrier") != 0) {
        fprintf(stderr, "railgauge-sim: error: unknown command '%s' (goal, barrier, rxwin)\n",
                mode);
        return 2;
    }
    for (i = 2; i < argc; i++) {
        const char *a = argv[i];
        double     *dst = NULL;
        if (!strcmp(a, "--json")) {
            as_json = 1;
            continue;
        }
        if (!strcmp(a, "--per-rank")) {
            per_rank = 1;
            continue;
        }
        if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
            progress = a[2] == 'p';
            continue;
        }
        if (!strcmp(a, "--lop-list")) {
            lop_list = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0') { /* "-": standard input */
            if (file != NULL || strcmp(mode, "goal") != 0) {
                fprintf(stderr, "railgauge-sim: error: unexpected argument '%s'\n", a);
                return 2;
            }
            file = a;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "railgauge-sim: error: %s needs a value\n", a);
            return 2;
        }
        if (loggops_field(a, &prm) != NULL) {
            dst = loggops_field(a, &prm);
        } else if (!strcmp(a, "-P") || !strcmp(a, "--P")) {
            dst = &P;
        } else if (!strcmp(a, "--duplex")) {
            dst = &prm.duplex;
        } else if (!strcmp(a, "--range")) {
            if (parse_range(argv[++i], &prm, ranges) != 0) {
                return 2;
            }
            continue;
        } else if (!strcmp(a, "--lop-rtt") || !strcmp(a, "--lop-os")) {
            int is_rtt = a[6] == 'r';
            if (parse_list(a, argv[++i], is_rtt ? lop.rtt : lop.os, is_rtt ? 6 : 3) != 0) {
                return 2;
            }
            *(is_rtt ? &lop_rtt : &lop_os) = 1;
            continue;
        } else if (!strcmp(a, "--rails") || !strcmp(a, "--policy") ||
                   !strcmp(a, "--weights")) {
            *(a[2] == 'r' ? &ropt.rails : a[2] == 'p' ? &ropt.policy : &ropt.weights) = argv[++i];
            continue;
        } else if (!strcmp(a, "--stripe-min")) {
            dst = &ropt.stripe_min;
        } else if (!strcmp(a, "--adapt-alpha")) {
            dst = &ropt.alpha;
        } else if (!strcmp(a, "--adapt-floor")) {
            dst = &ropt.floor;
        } else if (!strcmp(a, "--trace-max-ranks")) {
            dst = &trace_max;
        } else if (!strcmp(a, "--trace")) {
            trace_path = argv[++i];
            continue;
        } else if (!strcmp(a, "--algorithm")) {
            algo = argv[++i];
            continue;
        } else if (!strcmp(a, "--n")) {
            dst = &bar_n;
        } else if (!strcmp(a, "--calc-unit")) {
            const char *u = argv[++i];
            calc_unit = !strcmp(u, "ns") ? 1e-3 : !strcmp(u, "us") ? 1.0 :
                        !strcmp(u, "ms") ? 1e3 : !strcmp(u, "s") ? 1e6 : -1;
            if (calc_unit < 0) {
                fprintf(stderr, "railgauge-sim: error: --calc-unit: '%s' (ns, us, ms, s)\n", u);
                return 2;
            }
            continue;
        } else {
            fprintf(stderr, "railgauge-sim: error: unknown option '%s'\n", a);
            return 2;
        }
        if (parse_double(a, argv[++i], dst) != 0) {
            return 2;
        }
        scalar_given |= dst == &prm.L || dst == &prm.o || dst == &prm.g || dst == &prm.G ||
                        dst == &prm.O;
    }
    if (scalar_given && prm.nranges > 0) {
        fprintf(stderr, "railgauge-sim: error: --range replaces --L --o --g --G --O: give one "
                "or the other\n");
        return 2;
    }
    if (lop_rtt || lop_os || lop_list) {
        if (!lop_rtt || !lop_os) {
            fprintf(stderr, "railgauge-sim: error: LoP needs both --lop-rtt and --lop-os\n");
            return 2;
        }
        if (scalar_given || prm.nranges > 0) {
            fprintf(stderr, "railgauge-sim: error: --lop-rtt/--lop-os replace --L --o --g --G "
                    "--O and --range: give one or the other\n");
            return 2;
        }
        lop.list = lop_list;
        prm.lop = &lop;
    }
    if (ropt.rails == NULL && (ropt.policy != NULL || ropt.weights != NULL ||
                               !isnan(ropt.stripe_min) || !isnan(ropt.alpha) ||
                               !isnan(ropt.floor))) {
        fprintf(stderr, "railgauge-sim: error: --policy, --weights, --stripe-min, --adapt-alpha "
                "and --adapt-floor need --rails\n");
        return 2;
    }
    if (ropt.rails != NULL) {
        if (prm.lop != NULL) {
            fprintf(stderr, "railgauge-sim: error: --rails runs under LogGOPS, not LoP\n");
            return 2;
        }
        if (rails_build(&ropt, &rails) != 0) {
            return 2;
        }
        prm.rails = &rails;
    }
    if (progress < 0) {
        progress = isatty(STDERR_FILENO);
    }
    if (progress) {
        trace.progress = progress_cb;
        trace.progress_arg = &prog;
    }
    if ((st = rg_sim_params_check(&prm, &err)) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return 2;
    }
    t0 = now_s();
    prog.t0 = prog.last = t0;
    if (!strcmp(mode, "goal")) {
        FILE *f;
        if (file == NULL) {
            fprintf(stderr, "railgauge-sim: error: goal needs a FILE\n");
            return 2;
        }
        f = !strcmp(file, "-") ? stdin : fopen(file, "r");
        if (f == NULL) {
            fprintf(stderr, "railgauge-sim: error: %s: %s\n", file, strerror(errno));
            return 2;
        }
        st = rg_sim_goal_parse(f, file, calc_unit, &sched, &err);
        if (f != stdin) {
            fclose(f);
        }
    } else {
        rg_coll_barrier_spec_t spec;
        if (!(bar_n >= 0 && bar_n <= RG_COLL_NWAY_MAX && bar_n == floor(bar_n))) {
            fprintf(stderr, "railgauge-sim: error: --n: %g is not an integer in 1..%d\n", bar_n,
                    RG_COLL_NWAY_MAX);
            return 2;
        }
        if (rg_coll_barrier_parse(algo, (int)bar_n, &spec, &err) != RG_OK) {
            fprintf(stderr, "railgauge-sim: error: barrier --algorithm: %s\n",
                    algo == NULL ? "missing (linear, binomial, recdbl, dissem, nway --n N)"
                                 : rg_err_message(&err));
            return 2;
        }
        if (!(P >= 1 && P <= (1 << 26) && P == floor(P))) {
            fprintf(stderr, "railgauge-sim: error: -P: %g is not an integer in 1..2^26\n", P);
            return 2;
        }
        st = rg_sim_barrier_build(&sched, &spec, (uint32_t)P, &err);
    }
    read_s = now_s() - t0;
    if (st == RG_OK && trace_path != NULL) {
        if (sched.nranks > trace_max) {
            fprintf(stderr, "railgauge-sim: error: --trace: %u ranks, more than "
                    "--trace-max-ranks %.0f\n", sched.nranks, trace_max);
            rg_sim_sched_free(&sched);
            return 2;
        }
        tout.f = fopen(trace_path, "w");
        if (tout.f == NULL) {
            fprintf(stderr, "railgauge-sim: error: --trace %s: %s\n", trace_path,
                    strerror(errno));
            rg_sim_sched_free(&sched);
            return 2;
        }
        fprintf(tout.f, "{\"traceEvents\":[");
    }
    if (st == RG_OK) {
        if (trace_path == NULL) {
            trace.span = NULL;
        }
        /* The list of waiting operations of a deadlock goes to stderr after the
         * progress line is cleared. */
        char  *rep_buf = NULL;
        size_t rep_len = 0;
        FILE  *rep = open_memstream(&rep_buf, &rep_len);
        st = rg_sim_run_traced(&sched, &prm, &trace, &res, rep != NULL ? rep : stderr, &err);
        progress_end(&prog);
        if (rep != NULL) {
            fclose(rep);
            fwrite(rep_buf, 1, rep_len, stderr);
            free(rep_buf);
        }
    }
    if (tout.f != NULL) {
        int bad = st == RG_OK ? trace_finish(&tout, &sched, prm.rails ? (uint32_t)rails.nrails : 1) : 0;
        bad |= fclose(tout.f) != 0;
        if (st != RG_OK) {
            remove(trace_path); /* no half-written trace */
        } else if (bad) {
            fprintf(stderr, "railgauge-sim: error: --trace %s: write failed\n", trace_path);
            if (st == RG_OK) {
                rg_sim_result_free(&res);
            }
            rg_sim_sched_free(&sched);
            return 1;
        }
    }
    wall = now_s() - t0;
    if (st != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        rg_sim_sched_free(&sched);
        return st == RG_ERR_NOMEM || st == RG_ERR_IO ? 1 : 2;
    }
    if (sched.nranks <= PER_RANK_DEFAULT_MAX) {
        per_rank = 1;
    }
    rc = 0;
    if (as_json) {
        size_t    cap = 1024 + RG_SIM_RAILS_MAX * 200 +
                        (per_rank ? (size_t)sched.nranks * 4 * 26 : 0);
        char     *buf = malloc(cap);
        rg_json_t js;
        if (buf == NULL) {
            fprintf(stderr, "railgauge-sim: error: out of memory for the output\n");
            rc = 1;
        } else {
            rg_json_init(&js, buf, cap);
            rg_json_object_begin(&js);
            rg_json_kv_double(&js, "makespan_us", res.makespan);
            if (per_rank) {
                uint32_t r;
                rg_json_key(&js, "finish_us");
                rg_json_array_begin(&js);
                for (r = 0; r < sched.nranks; r++) {
                    rg_json_double(&js, res.finish[r]);
                }
                rg_json_array_end(&js);
            }
            rg_json_kv_uint(&js, "events", res.events);
            rg_json_kv_double(&js, "wall_s", wall);
            rg_json_kv_double(&js, "read_s", read_s);
            rg_json_key(&js, "stats");
            rg_json_object_begin(&js);
            json_summary(&js, "overhead_us", res.overhead, sched.nranks);
            json_summary(&js, "wait_us", res.wait, sched.nranks);
            json_summary(&js, "calc_us", res.calc, sched.nranks);
            rg_json_object_end(&js);
            if (per_rank) {
                json_array(&js, "overhead_us", res.overhead, sched.nranks);
                json_array(&js, "wait_us", res.wait, sched.nranks);
                json_array(&js, "calc_us", res.calc, sched.nranks);
            }
            if (prm.rails != NULL) {
                rails_json(&js, &rails, &res);
            }
            rg_json_object_end(&js);
            if (rg_json_write_line(&js, stdout, &err) != RG_OK) {
                fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
                rc = 1;
            }
            free(buf);
        }
    } else {
        printf("ranks      %u\nmakespan   %.6f us\nevents     %llu\nwall       %.3f s\n",
               sched.nranks, res.makespan, (unsigned long long)res.events, wall);
        summary_line("overhead", res.overhead, sched.nranks);
        summary_line("wait", res.wait, sched.nranks);
        summary_line("calc", res.calc, sched.nranks);
        if (prm.rails != NULL) {
            printf("rails      %d, %s, stripes from %.0f bytes\n", rails.nrails,
                   rg_sim_rails_policy_name(rails.policy), rails.stripe_min);
            for (i = 0; i < rails.nrails; i++) {
                printf("rail %d     %.0f bytes in %llu pieces, busy %.6g us sending, %.6g us "
                       "receiving\n", i, res.rails[i].bytes,
                       (unsigned long long)res.rails[i].pieces, res.rails[i].send_busy_us,
                       res.rails[i].recv_busy_us);
            }
        }
        if (per_rank) {
            uint32_t r;
            for (r = 0; r < sched.nranks; r++) {
                printf("rank %u finish %.6f overhead %.6f wait %.6f calc %.6f us\n", r,
                       res.finish[r], res.overhead[r], res.wait[r], res.calc[r]);
            }
        }
    }
    rg_sim_result_free(&res);
    rg_sim_sched_free(&sched);
    return rc;
}
