/*
 * railgauge-sim: simulates a GOAL schedule or a generated collective under
 * LogGOPS and prints the makespan and each rank's finishing time.
 *
 *   railgauge-sim goal FILE [params] [--calc-unit ns|us|ms|s] [--json] [--per-rank]
 *   railgauge-sim barrier --algorithm A [--n N] -P P [params] [--json] [--per-rank]
 *   ... --trace FILE [--trace-max-ranks N]: every operation's time on each CPU and NIC
 *   as Chrome trace JSON (opens in Perfetto), for runs of at most N ranks (4096).
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
#include "sim/sim.h"

#define PER_RANK_DEFAULT_MAX 4096

static void usage(FILE *f)
{
    fprintf(f,
            "usage: railgauge-sim goal FILE [options]\n"
            "       railgauge-sim barrier --algorithm A [--n N] -P P [options]\n"
            "         A: linear, binomial, recdbl, dissem (dissemination), nway (with\n"
            "         --n N, or nway:N); the schedules of coll/ (docs/coll.md)\n"
            "options:\n"
            "  --L US --o US --g US       latency, overhead, gap (microseconds; default 0)\n"
            "  --G US --O US              gap and overhead per byte (us/byte; default 0)\n"
            "  --S BYTES|inf              rendezvous above S bytes (default inf)\n"
            "  --range TO,L,o,g,G,O       parameters for messages up to TO bytes (repeat,\n"
            "                             TO increasing; the last applies beyond)\n"
            "  --lop-rtt l1,l2,l3,l4,l5,l6  LoP instead: RTT(p) lambdas (per peer, us)\n"
            "  --lop-os a1,a2,a3          LoP: o_s(p) = a1 + a2/(a3 + p) (us per request)\n"
            "  --lop-list                 LoP: sends of a batch posted as one list\n"
            "  --calc-unit ns|us|ms|s     unit of `calc` in GOAL files (default ns)\n"
            "  --progress, --no-progress  progress on stderr (default: if a terminal)\n"
            "  --json                     one JSON object on stdout\n"
            "  --per-rank                 finish_us even above %d ranks\n"
            "  --trace FILE               Chrome trace JSON of every operation (Perfetto)\n"
            "  --trace-max-ranks N        refuse --trace above N ranks (default 4096)\n",
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

static int trace_finish(trace_out_t *t, const rg_sim_sched_t *s)
{
    uint32_t r, i;

    for (r = 0; r < s->nranks; r++) {
        fprintf(t->f, "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,"
                "\"args\":{\"name\":\"rank %u\"}}", t->first ? "" : ",", r, r);
        t->first = 0;
        for (i = 0; i < s->ncpus; i++) {
            fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                    "\"args\":{\"name\":\"cpu %u\"}}", r, i, i);
        }
        for (i = 0; i < s->nnics; i++) {
            fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                    "\"args\":{\"name\":\"nic %u send\"}}", r, 1000 + i, i);
            fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                    "\"args\":{\"name\":\"nic %u recv\"}}", r, 2000 + i, i);
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

    rg_err_clear(&err);
    memset(&sched, 0, sizeof(sched));
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    mode = argv[1];
    if (strcmp(mode, "goal") != 0 && strcmp(mode, "barrier") != 0) {
        fprintf(stderr, "railgauge-sim: error: unknown command '%s' (goal, barrier)\n", mode);
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
        if (!strcmp(a, "--L")) {
            dst = &prm.L;
        } else if (!strcmp(a, "--o")) {
            dst = &prm.o;
        } else if (!strcmp(a, "--g")) {
            dst = &prm.g;
        } else if (!strcmp(a, "--G")) {
            dst = &prm.G;
        } else if (!strcmp(a, "--O")) {
            dst = &prm.O;
        } else if (!strcmp(a, "--S")) {
            dst = &prm.S;
        } else if (!strcmp(a, "-P") || !strcmp(a, "--P")) {
            dst = &P;
        } else if (!strcmp(a, "--range")) {
            rg_sim_range_t *r = &ranges[prm.nranges];
            char           *end;
            const char     *text = argv[++i];
            if (prm.nranges == RG_SIM_MAX_RANGES) {
                fprintf(stderr, "railgauge-sim: error: more than %d --range\n",
                        RG_SIM_MAX_RANGES);
                return 2;
            }
            errno = 0;
            r->to_bytes = strtod(text, &end);
            if (*end++ != ',' || (r->L = strtod(end, &end), *end++ != ',') ||
                (r->o = strtod(end, &end), *end++ != ',') ||
                (r->g = strtod(end, &end), *end++ != ',') ||
                (r->G = strtod(end, &end), *end++ != ',') ||
                (r->O = strtod(end, &end), *end != '\0') || errno != 0) {
                fprintf(stderr, "railgauge-sim: error: --range '%s': expected "
                        "TO_BYTES,L,o,g,G,O\n", text);
                return 2;
            }
            prm.nranges++;
            prm.ranges = ranges;
            continue;
        } else if (!strcmp(a, "--lop-rtt") || !strcmp(a, "--lop-os")) {
            int is_rtt = a[6] == 'r';
            if (parse_list(a, argv[++i], is_rtt ? lop.rtt : lop.os, is_rtt ? 6 : 3) != 0) {
                return 2;
            }
            *(is_rtt ? &lop_rtt : &lop_os) = 1;
            continue;
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
        int bad = st == RG_OK ? trace_finish(&tout, &sched) : 0;
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
        size_t    cap = 1024 + (per_rank ? (size_t)sched.nranks * 4 * 26 : 0);
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
