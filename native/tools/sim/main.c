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
 *
 * This file holds goal, barrier and the table of subcommands; rxwin.c holds
 * rxwin.
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
#include "sim/sim.h"
#include "simtool.h"

#define PER_RANK_DEFAULT_MAX 4096

/* The subcommands, argv[1]: each its handler (argv as given, argv[1] its
 * name) and its one-line help (usage's synopsis), as railgauge-bench's
 * patterns. */
static int goal_main(int argc, char **argv);
static int barrier_main(int argc, char **argv);

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *synopsis;
} subcommands[] = {
    {"goal", goal_main, "FILE [options]"},
    {"barrier", barrier_main, "--algorithm A [--n N] -P P [options]"},
    {"rxwin", rg_simtool_rxwin_main, "--pattern P -n N [--window W] [options]"},
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
    size_t i;

    for (i = 0; i < NSUBCOMMANDS; i++) {
        fprintf(f, "%s railgauge-sim %s %s\n", i == 0 ? "usage:" : "      ", subcommands[i].name,
                subcommands[i].synopsis);
    }
    fprintf(f,
            "         (railgauge-sim rxwin --help)\n"
            "         A: linear, binomial, recdbl, dissem (dissemination), nway (with\n"
            "         --n N, or nway:N), and the stacks' own: ring (Open MPI's double\n"
            "         ring), kdissem:K, recexch:K (MPICH's; K also as --n K); the\n"
            "         schedules of coll/ (docs/coll.md)\n"
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

double rg_simtool_now_s(void)
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
static void progress_cb(void *arg, uint64_t events, size_t done, size_t total, double now)
{
    rg_simtool_progress_t *pr = arg;
    double                 t = rg_simtool_now_s();

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

double rg_simtool_progress_start(rg_simtool_progress_t *pr, int want, rg_sim_trace_t *trace)
{
    if (want < 0) {
        want = isatty(STDERR_FILENO);
    }
    if (want) {
        trace->progress = progress_cb;
        trace->progress_arg = pr;
    }
    pr->t0 = pr->last = rg_simtool_now_s();
    return pr->t0;
}

void rg_simtool_progress_end(rg_simtool_progress_t *pr)
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

int rg_simtool_json_begin(rg_json_t *js, size_t cap)
{
    char *buf = malloc(cap);

    if (buf == NULL) {
        fprintf(stderr, "railgauge-sim: error: out of memory for the output\n");
        return 1;
    }
    rg_json_init(js, buf, cap);
    rg_json_object_begin(js);
    return 0;
}

int rg_simtool_json_end(rg_json_t *js)
{
    rg_err_t err;
    int      rc = 0;

    rg_err_clear(&err);
    rg_json_object_end(js);
    if (rg_json_write_line(js, stdout, &err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        rc = 1;
    }
    free(js->buf);
    return rc;
}

int rg_simtool_parse_double(const char *opt, const char *text, double *v)
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

/* The parameter that option a (--L, --o, --g, --G, --O, --S) sets, or NULL. */
double *rg_simtool_loggops_field(const char *a, rg_sim_params_t *prm)
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
int rg_simtool_parse_range(const char *text, rg_sim_params_t *prm, rg_sim_range_t *ranges)
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

/* ---- railgauge-sim goal, barrier ---------------------------------------------- */

/* The options of goal and barrier (usage). */
typedef struct sim_opts {
    rg_sim_params_t prm;
    rg_sim_range_t  ranges[RG_SIM_MAX_RANGES];
    int             scalar_given;
    const char     *file, *algo, *trace_path;
    double          bar_n; /* barrier --n */
    double          calc_unit, P, trace_max;
    int             as_json, per_rank, progress;
    rg_sim_lop_t    lop;
    int             lop_rtt, lop_os, lop_list;
    rails_opts_t    ropt;
    rg_sim_rails_t  rails;
} sim_opts_t;

/* One option of goal or barrier that takes a value, argv[*i] (a) with its
 * value next: -1 to go on, else the exit status (2 after saying what is
 * wrong). */
static int sim_option(char **argv, int *i, sim_opts_t *o)
{
    const char *a = argv[*i];
    double     *dst = NULL;

    if (rg_simtool_loggops_field(a, &o->prm) != NULL) {
        dst = rg_simtool_loggops_field(a, &o->prm);
    } else if (!strcmp(a, "-P") || !strcmp(a, "--P")) {
        dst = &o->P;
    } else if (!strcmp(a, "--duplex")) {
        dst = &o->prm.duplex;
    } else if (!strcmp(a, "--range")) {
        return rg_simtool_parse_range(argv[++*i], &o->prm, o->ranges) != 0 ? 2 : -1;
    } else if (!strcmp(a, "--lop-rtt") || !strcmp(a, "--lop-os")) {
        int is_rtt = a[6] == 'r';
        if (parse_list(a, argv[++*i], is_rtt ? o->lop.rtt : o->lop.os, is_rtt ? 6 : 3) != 0) {
            return 2;
        }
        *(is_rtt ? &o->lop_rtt : &o->lop_os) = 1;
        return -1;
    } else if (!strcmp(a, "--rails") || !strcmp(a, "--policy") ||
               !strcmp(a, "--weights")) {
        *(a[2] == 'r' ? &o->ropt.rails : a[2] == 'p' ? &o->ropt.policy : &o->ropt.weights) =
            argv[++*i];
        return -1;
    } else if (!strcmp(a, "--stripe-min")) {
        dst = &o->ropt.stripe_min;
    } else if (!strcmp(a, "--adapt-alpha")) {
        dst = &o->ropt.alpha;
    } else if (!strcmp(a, "--adapt-floor")) {
        dst = &o->ropt.floor;
    } else if (!strcmp(a, "--trace-max-ranks")) {
        dst = &o->trace_max;
    } else if (!strcmp(a, "--trace")) {
        o->trace_path = argv[++*i];
        return -1;
    } else if (!strcmp(a, "--algorithm")) {
        o->algo = argv[++*i];
        return -1;
    } else if (!strcmp(a, "--n")) {
        dst = &o->bar_n;
    } else if (!strcmp(a, "--calc-unit")) {
        const char *u = argv[++*i];
        o->calc_unit = !strcmp(u, "ns") ? 1e-3 : !strcmp(u, "us") ? 1.0 :
                       !strcmp(u, "ms") ? 1e3 : !strcmp(u, "s") ? 1e6 : -1;
        if (o->calc_unit < 0) {
            fprintf(stderr, "railgauge-sim: error: --calc-unit: '%s' (ns, us, ms, s)\n", u);
            return 2;
        }
        return -1;
    } else {
        fprintf(stderr, "railgauge-sim: error: unknown option '%s'\n", a);
        return 2;
    }
    if (rg_simtool_parse_double(a, argv[++*i], dst) != 0) {
        return 2;
    }
    o->scalar_given |= dst == &o->prm.L || dst == &o->prm.o || dst == &o->prm.g ||
                       dst == &o->prm.G || dst == &o->prm.O;
    return -1;
}

/* Reads the command line of goal (takes_file: its FILE) or barrier into o:
 * -1 to go on, else the exit status (0 after --help, 2 after saying what is
 * wrong). */
static int sim_parse(int argc, char **argv, int takes_file, sim_opts_t *o)
{
    int i, rc;

    for (i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o->as_json = 1;
            continue;
        }
        if (!strcmp(a, "--per-rank")) {
            o->per_rank = 1;
            continue;
        }
        if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
            o->progress = a[2] == 'p';
            continue;
        }
        if (!strcmp(a, "--lop-list")) {
            o->lop_list = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0') { /* "-": standard input */
            if (o->file != NULL || !takes_file) {
                fprintf(stderr, "railgauge-sim: error: unexpected argument '%s'\n", a);
                return 2;
            }
            o->file = a;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "railgauge-sim: error: %s needs a value\n", a);
            return 2;
        }
        if ((rc = sim_option(argv, &i, o)) >= 0) {
            return rc;
        }
    }
    return -1;
}

/* The parameters' models from the options (LoP, rails), checked: 0, or 2
 * after saying what is wrong. */
static int sim_models(sim_opts_t *o)
{
    rg_err_t err;

    rg_err_clear(&err);
    if (o->scalar_given && o->prm.nranges > 0) {
        fprintf(stderr, "railgauge-sim: error: --range replaces --L --o --g --G --O: give one "
                "or the other\n");
        return 2;
    }
    if (o->lop_rtt || o->lop_os || o->lop_list) {
        if (!o->lop_rtt || !o->lop_os) {
            fprintf(stderr, "railgauge-sim: error: LoP needs both --lop-rtt and --lop-os\n");
            return 2;
        }
        if (o->scalar_given || o->prm.nranges > 0) {
            fprintf(stderr, "railgauge-sim: error: --lop-rtt/--lop-os replace --L --o --g --G "
                    "--O and --range: give one or the other\n");
            return 2;
        }
        o->lop.list = o->lop_list;
        o->prm.lop = &o->lop;
    }
    if (o->ropt.rails == NULL && (o->ropt.policy != NULL || o->ropt.weights != NULL ||
                                  !isnan(o->ropt.stripe_min) || !isnan(o->ropt.alpha) ||
                                  !isnan(o->ropt.floor))) {
        fprintf(stderr, "railgauge-sim: error: --policy, --weights, --stripe-min, --adapt-alpha "
                "and --adapt-floor need --rails\n");
        return 2;
    }
    if (o->ropt.rails != NULL) {
        if (o->prm.lop != NULL) {
            fprintf(stderr, "railgauge-sim: error: --rails runs under LogGOPS, not LoP\n");
            return 2;
        }
        if (rails_build(&o->ropt, &o->rails) != 0) {
            return 2;
        }
        o->prm.rails = &o->rails;
    }
    if (rg_sim_params_check(&o->prm, &err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return 2;
    }
    return 0;
}

/* How goal and barrier build their schedule: 0 with *st the outcome (its
 * message in err), or an exit status after saying what is wrong. */
typedef int (*sim_build_fn)(const sim_opts_t *o, rg_sim_sched_t *sched, rg_status_t *st,
                            rg_err_t *err);

/* goal: the schedule of a GOAL file ("-": standard input). */
static int goal_build(const sim_opts_t *o, rg_sim_sched_t *sched, rg_status_t *st,
                      rg_err_t *err)
{
    FILE *f;

    if (o->file == NULL) {
        fprintf(stderr, "railgauge-sim: error: goal needs a FILE\n");
        return 2;
    }
    f = !strcmp(o->file, "-") ? stdin : fopen(o->file, "r");
    if (f == NULL) {
        fprintf(stderr, "railgauge-sim: error: %s: %s\n", o->file, strerror(errno));
        return 2;
    }
    *st = rg_sim_goal_parse(f, o->file, o->calc_unit, sched, err);
    if (f != stdin) {
        fclose(f);
    }
    return 0;
}

/* barrier: the schedule of one of coll/'s barriers on P ranks. */
static int barrier_build(const sim_opts_t *o, rg_sim_sched_t *sched, rg_status_t *st,
                         rg_err_t *err)
{
    rg_coll_barrier_spec_t spec;

    if (!(o->bar_n >= 0 && o->bar_n <= RG_COLL_K_MAX && o->bar_n == floor(o->bar_n))) {
        fprintf(stderr, "railgauge-sim: error: --n: %g is not an integer in 1..%d\n", o->bar_n,
                RG_COLL_K_MAX);
        return 2;
    }
    if (rg_coll_barrier_parse(o->algo, (int)o->bar_n, &spec, err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: barrier --algorithm: %s\n",
                o->algo == NULL ? "missing (linear, binomial, recdbl, dissem, nway --n N, ring, "
                                  "kdissem:K, recexch:K)"
                                : rg_err_message(err));
        return 2;
    }
    if (!(o->P >= 1 && o->P <= (1 << 26) && o->P == floor(o->P))) {
        fprintf(stderr, "railgauge-sim: error: -P: %g is not an integer in 1..2^26\n", o->P);
        return 2;
    }
    *st = rg_sim_barrier_build(sched, &spec, (uint32_t)o->P, err);
    return 0;
}

/* Opens --trace's file and starts its JSON: 0, or 2 (the schedule freed)
 * after saying what is wrong. */
static int trace_open(const sim_opts_t *o, rg_sim_sched_t *sched, trace_out_t *tout)
{
    if (sched->nranks > o->trace_max) {
        fprintf(stderr, "railgauge-sim: error: --trace: %u ranks, more than "
                "--trace-max-ranks %.0f\n", sched->nranks, o->trace_max);
        rg_sim_sched_free(sched);
        return 2;
    }
    tout->f = fopen(o->trace_path, "w");
    if (tout->f == NULL) {
        fprintf(stderr, "railgauge-sim: error: --trace %s: %s\n", o->trace_path,
                strerror(errno));
        rg_sim_sched_free(sched);
        return 2;
    }
    fprintf(tout->f, "{\"traceEvents\":[");
    return 0;
}

/* Ends --trace's file after a run that ended with st; a failed run leaves
 * none. 0, or 1 where it could not be written (then res and sched are
 * freed). */
static int trace_close(const sim_opts_t *o, trace_out_t *tout, rg_sim_sched_t *sched,
                       rg_sim_result_t *res, rg_status_t st)
{
    int bad = st == RG_OK ? trace_finish(tout, sched, o->prm.rails ? (uint32_t)o->rails.nrails
                                                                   : 1)
                          : 0;

    bad |= fclose(tout->f) != 0;
    if (st != RG_OK) {
        remove(o->trace_path); /* no half-written trace */
    } else if (bad) {
        fprintf(stderr, "railgauge-sim: error: --trace %s: write failed\n", o->trace_path);
        rg_sim_result_free(res);
        rg_sim_sched_free(sched);
        return 1;
    }
    return 0;
}

/* Runs the schedule; the list of waiting operations of a deadlock goes to
 * stderr after the progress line is cleared. */
static rg_status_t sim_run(rg_sim_sched_t *sched, const rg_sim_params_t *prm,
                           const rg_sim_trace_t *trace, rg_simtool_progress_t *prog,
                           rg_sim_result_t *res, rg_err_t *err)
{
    char       *rep_buf = NULL;
    size_t      rep_len = 0;
    FILE       *rep = open_memstream(&rep_buf, &rep_len);
    rg_status_t st = rg_sim_run_traced(sched, prm, trace, res, rep != NULL ? rep : stderr, err);

    rg_simtool_progress_end(prog);
    if (rep != NULL) {
        fclose(rep);
        fwrite(rep_buf, 1, rep_len, stderr);
        free(rep_buf);
    }
    return st;
}

/* A run as one JSON object on stdout: 0, or 1 where it could not be
 * written. */
static int sim_json(const sim_opts_t *o, const rg_sim_sched_t *sched, const rg_sim_result_t *res,
                    double wall, double read_s)
{
    size_t    cap = 1024 + RG_SIM_RAILS_MAX * 200 +
                    (o->per_rank ? (size_t)sched->nranks * 4 * 26 : 0);
    rg_json_t js;

    if (rg_simtool_json_begin(&js, cap) != 0) {
        return 1;
    }
    rg_json_kv_double(&js, "makespan_us", res->makespan);
    if (o->per_rank) {
        json_array(&js, "finish_us", res->finish, sched->nranks);
    }
    rg_json_kv_uint(&js, "events", res->events);
    rg_json_kv_double(&js, "wall_s", wall);
    rg_json_kv_double(&js, "read_s", read_s);
    rg_json_key(&js, "stats");
    rg_json_object_begin(&js);
    json_summary(&js, "overhead_us", res->overhead, sched->nranks);
    json_summary(&js, "wait_us", res->wait, sched->nranks);
    json_summary(&js, "calc_us", res->calc, sched->nranks);
    rg_json_object_end(&js);
    if (o->per_rank) {
        json_array(&js, "overhead_us", res->overhead, sched->nranks);
        json_array(&js, "wait_us", res->wait, sched->nranks);
        json_array(&js, "calc_us", res->calc, sched->nranks);
    }
    if (o->prm.rails != NULL) {
        rails_json(&js, &o->rails, res);
    }
    return rg_simtool_json_end(&js);
}

static void sim_text(const sim_opts_t *o, const rg_sim_sched_t *sched, const rg_sim_result_t *res,
                     double wall)
{
    int i;

    printf("ranks      %u\nmakespan   %.6f us\nevents     %llu\nwall       %.3f s\n",
           sched->nranks, res->makespan, (unsigned long long)res->events, wall);
    summary_line("overhead", res->overhead, sched->nranks);
    summary_line("wait", res->wait, sched->nranks);
    summary_line("calc", res->calc, sched->nranks);
    if (o->prm.rails != NULL) {
        printf("rails      %d, %s, stripes from %.0f bytes\n", o->rails.nrails,
               rg_sim_rails_policy_name(o->rails.policy), o->rails.stripe_min);
        for (i = 0; i < o->rails.nrails; i++) {
            printf("rail %d     %.0f bytes in %llu pieces, busy %.6g us sending, %.6g us "
                   "receiving\n", i, res->rails[i].bytes,
                   (unsigned long long)res->rails[i].pieces, res->rails[i].send_busy_us,
                   res->rails[i].recv_busy_us);
        }
    }
    if (o->per_rank) {
        uint32_t r;
        for (r = 0; r < sched->nranks; r++) {
            printf("rank %u finish %.6f overhead %.6f wait %.6f calc %.6f us\n", r,
                   res->finish[r], res->overhead[r], res->wait[r], res->calc[r]);
        }
    }
}

/* goal and barrier: their options, their schedule (build), the run, its
 * trace and its results. */
static int sim_main(int argc, char **argv, int takes_file, sim_build_fn build)
{
    sim_opts_t            o = {.prm = {.S = INFINITY}, .calc_unit = 0.001, .trace_max = 4096,
                               .progress = -1, .ropt = {NULL, NULL, NULL, NAN, NAN, NAN}};
    rg_sim_sched_t        sched;
    rg_sim_result_t       res;
    rg_err_t              err;
    rg_status_t           st = RG_OK;
    trace_out_t           tout = {NULL, 1};
    rg_sim_trace_t        trace = {trace_span, &tout, NULL, NULL};
    rg_simtool_progress_t prog = {0, 0, 0};
    double                t0, wall, read_s;
    int                   rc;

    rg_err_clear(&err);
    memset(&sched, 0, sizeof(sched));
    if ((rc = sim_parse(argc, argv, takes_file, &o)) >= 0 || (rc = sim_models(&o)) != 0) {
        return rc;
    }
    t0 = rg_simtool_progress_start(&prog, o.progress, &trace);
    if ((rc = build(&o, &sched, &st, &err)) != 0) {
        return rc;
    }
    read_s = rg_simtool_now_s() - t0;
    if (st == RG_OK && o.trace_path != NULL && (rc = trace_open(&o, &sched, &tout)) != 0) {
        return rc;
    }
    if (st == RG_OK) {
        if (o.trace_path == NULL) {
            trace.span = NULL;
        }
        st = sim_run(&sched, &o.prm, &trace, &prog, &res, &err);
    }
    if (tout.f != NULL && (rc = trace_close(&o, &tout, &sched, &res, st)) != 0) {
        return rc;
    }
    wall = rg_simtool_now_s() - t0;
    if (st != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        rg_sim_sched_free(&sched);
        return st == RG_ERR_NOMEM || st == RG_ERR_IO ? 1 : 2;
    }
    if (sched.nranks <= PER_RANK_DEFAULT_MAX) {
        o.per_rank = 1;
    }
    rc = 0;
    if (o.as_json) {
        rc = sim_json(&o, &sched, &res, wall, read_s);
    } else {
        sim_text(&o, &sched, &res, wall);
    }
    rg_sim_result_free(&res);
    rg_sim_sched_free(&sched);
    return rc;
}

static int goal_main(int argc, char **argv)
{
    return sim_main(argc, argv, 1, goal_build);
}

static int barrier_main(int argc, char **argv)
{
    return sim_main(argc, argv, 0, barrier_build);
}

int main(int argc, char **argv)
{
    size_t i;

    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (i = 0; i < NSUBCOMMANDS; i++) {
        if (!strcmp(argv[1], subcommands[i].name)) {
            return subcommands[i].main(argc, argv);
        }
    }
    fprintf(stderr, "railgauge-sim: error: unknown command '%s' (", argv[1]);
    for (i = 0; i < NSUBCOMMANDS; i++) {
        fprintf(stderr, "%s%s", i ? ", " : "", subcommands[i].name);
    }
    fprintf(stderr, ")\n");
    return 2;
}
