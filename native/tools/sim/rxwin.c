/*
 * railgauge-sim rxwin: the workloads of `railgauge-bench rxwin` under the
 * simulator's shared receive window (docs/sim.md, docs/rxwin.md); the
 * options are rxwin_usage's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "sim/rxwin_work.h"
#include "sim/sim.h"
#include "simtool.h"

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
    if (rg_simtool_parse_double(opt, text, v) != 0) {
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

/* railgauge-sim rxwin's options (rxwin_usage). */
typedef struct rxwin_opts {
    rg_sim_params_t      prm;
    rg_sim_range_t       ranges[RG_SIM_MAX_RANGES];
    rg_sim_rxwork_spec_t spec;
    const char          *window;
    double               timer_ms, limit, quiet_us, eager;
    int                  as_json, per_rank, progress, scalar;
} rxwin_opts_t;

/* Reads rxwin's command line into o: -1 to go on, else the exit status
 * (0 after --help, 2 after saying what is wrong). */
static int rxwin_parse(int argc, char **argv, rxwin_opts_t *o)
{
    double v;
    int    i;

    for (i = 2; i < argc; i++) {
        const char *a = argv[i];
        double     *dst = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            rxwin_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json") || !strcmp(a, "--per-rank")) {
            *(a[2] == 'j' ? &o->as_json : &o->per_rank) = 1;
            continue;
        }
        if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
            o->progress = a[2] == 'p';
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "railgauge-sim: error: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--pattern")) {
            o->spec.pattern = rg_sim_rxwork_pattern(argv[++i]);
            if (o->spec.pattern < 0) {
                fprintf(stderr, "railgauge-sim: error: --pattern '%s': unknown (known: "
                        "alltoall, halo2d, halo3d, incast, mix)\n", argv[i]);
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--window")) {
            o->window = argv[++i];
            continue;
        }
        if (!strcmp(a, "-n") || !strcmp(a, "--n")) {
            if (rxwin_integer(a, argv[++i], 2, RG_SIM_RXWIN_MAX_RANKS, &v) != 0) {
                return 2;
            }
            o->spec.nranks = (uint32_t)v;
            continue;
        }
        if (!strcmp(a, "--iters") || !strcmp(a, "--burst")) {
            if (rxwin_integer(a, argv[++i], 1, 1000000, &v) != 0) {
                return 2;
            }
            *(a[2] == 'i' ? &o->spec.iters : &o->spec.burst) = (uint32_t)v;
            continue;
        }
        if (!strcmp(a, "--size")) {
            if (rxwin_integer(a, argv[++i], 24, (double)(1 << 26), &o->spec.size) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--compute-us")) {
            if (rxwin_number(a, argv[++i], 0, 1e7, &o->spec.compute_us) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--rnr-timer-ms")) {
            if (rxwin_number(a, argv[++i], 0.01, 655.36, &o->timer_ms) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--limit")) {
            if (rxwin_integer(a, argv[++i], 1, RG_SIM_RXWIN_MAX, &o->limit) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--quiet-us")) {
            if (rxwin_number(a, argv[++i], 1e-3, 1e12, &o->quiet_us) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--eager-limit")) {
            if (rxwin_integer(a, argv[++i], 0, (double)(1 << 30), &o->eager) != 0) {
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--range")) {
            if (rg_simtool_parse_range(argv[++i], &o->prm, o->ranges) != 0) {
                return 2;
            }
            continue;
        }
        if ((dst = rg_simtool_loggops_field(a, &o->prm)) == NULL) {
            fprintf(stderr, "railgauge-sim: error: rxwin: unknown option '%s'\n", a);
            return 2;
        }
        if (rg_simtool_parse_double(a, argv[++i], dst) != 0) {
            return 2;
        }
        o->scalar |= dst != &o->prm.S;
    }
    return -1;
}

/* The window model from the options, checked with the parameters: 0, or 2
 * after saying what is wrong. */
static int rxwin_model(rxwin_opts_t *o, rg_sim_rxwin_t *win)
{
    rg_err_t err;

    rg_err_clear(&err);
    if (o->spec.pattern < 0) {
        fprintf(stderr, "railgauge-sim: error: rxwin: --pattern is missing (alltoall, halo2d, "
                "halo3d, incast, mix)\n");
        return 2;
    }
    if (o->spec.nranks == 0) {
        fprintf(stderr, "railgauge-sim: error: rxwin: -n is missing (2 .. %d ranks)\n",
                RG_SIM_RXWIN_MAX_RANKS);
        return 2;
    }
    if (o->scalar && o->prm.nranges > 0) {
        fprintf(stderr, "railgauge-sim: error: --range replaces --L --o --g --G --O: give one "
                "or the other\n");
        return 2;
    }
    if (rg_sim_rxwin_parse(o->window, win, o->eager, &err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return 2;
    }
    if (o->limit > 0) {
        win->first_limit = (int)o->limit;
    }
    win->rnr_timer_us = o->timer_ms * 1e3;
    win->quiet_us = o->quiet_us;
    o->prm.rxwin = win;
    if (rg_sim_params_check(&o->prm, &err) != RG_OK || rg_sim_rxwin_check(win, &err) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return 2;
    }
    return 0;
}

/* Each rank's figures of a window run into the JSON output. */
static void rxwin_json_ranks(rg_json_t *js, const rg_sim_rxwin_rank_t *per,
                             const rg_sim_result_t *res, uint32_t nranks)
{
    uint32_t r;

    rg_json_key(js, "per_rank");
    rg_json_array_begin(js);
    for (r = 0; r < nranks; r++) {
        const rg_sim_rxwin_rank_t *x = &per[r];
        rg_json_object_begin(js);
        rg_json_kv_uint(js, "rank", r);
        rg_json_kv_uint(js, "mem_high_water", x->high_water);
        rg_json_kv_uint(js, "mem_pool", x->pool);
        rg_json_kv_uint(js, "mem_unexpected", x->unexpected);
        rg_json_kv_uint(js, "mem_control", x->control);
        rg_json_kv_int(js, "window", x->window);
        rg_json_kv_int(js, "window_peak", x->window_peak);
        rg_json_kv_uint(js, "limit_events", x->limit_events);
        rg_json_kv_uint(js, "rnr_sent", x->rnr_sent);
        rg_json_kv_uint(js, "rnr_recv", x->rnr_recv);
        rg_json_kv_uint(js, "retries", x->retries);
        rg_json_kv_uint(js, "shrinks", x->shrinks);
        rg_json_kv_uint(js, "sent", x->sent);
        rg_json_kv_uint(js, "received", x->received);
        rg_json_kv_uint(js, "parked", x->parked);
        rg_json_kv_double(js, "finish_us", res->finish[r]);
        rg_json_object_end(js);
    }
    rg_json_array_end(js);
}

/* A window run as one JSON object on stdout: 0, or 1 where it could not be
 * written. */
static int rxwin_json(const rxwin_opts_t *o, const rg_sim_rxwin_t *win,
                      const rg_sim_rxwork_t *work, const rg_sim_rxwin_rank_t *per,
                      const rg_sim_result_t *res, double wall)
{
    size_t    cap = 4096 + (o->per_rank ? (size_t)o->spec.nranks * 512 : 0);
    rg_json_t js;

    if (rg_simtool_json_begin(&js, cap) != 0) {
        return 1;
    }
    rg_json_kv_double(&js, "time_s", res->makespan * 1e-6);
    rg_json_key(&js, "mem_bytes");
    rg_json_object_begin(&js);
    rg_json_kv_uint(&js, "min", res->rx.mem_min);
    rg_json_kv_double(&js, "mean", res->rx.mem_mean);
    rg_json_kv_uint(&js, "max", res->rx.mem_max);
    rg_json_object_end(&js);
    rg_json_kv_uint(&js, "limit_events", res->rx.limit_events);
    rg_json_kv_uint(&js, "rnr", res->rx.rnr);
    rg_json_kv_uint(&js, "retries", res->rx.retries);
    rg_json_kv_uint(&js, "messages", res->rx.messages);
    rg_json_kv_bool(&js, "verified", res->rx.verified);
    rg_json_kv_string(&js, "pattern", rg_sim_rxwork_pattern_name(o->spec.pattern));
    rg_json_kv_uint(&js, "ranks", o->spec.nranks);
    rg_json_kv_uint(&js, "iters", o->spec.iters);
    rg_json_kv_double(&js, "size", o->spec.size);
    rg_json_kv_uint(&js, "burst", o->spec.burst);
    rg_json_kv_double(&js, "compute_us", work->spec.compute_us);
    rg_json_kv_string(&js, "window", o->window);
    rg_json_kv_double(&js, "rnr_timer_ms", o->timer_ms);
    rg_json_kv_int(&js, "limit", win->first_limit);
    rg_json_kv_double(&js, "quiet_us", win->quiet_us);
    rg_json_kv_double(&js, "eager_limit", win->eager_limit);
    rg_json_kv_uint(&js, "pool_buf_bytes", win->buf_bytes);
    rg_json_kv_double(&js, "makespan_us", res->makespan);
    rg_json_kv_uint(&js, "delivered", res->rx.delivered);
    rg_json_kv_uint(&js, "out_of_order", res->rx.out_of_order);
    rg_json_kv_uint(&js, "duplicates", res->rx.duplicates);
    rg_json_kv_uint(&js, "shrinks", res->rx.shrinks);
    rg_json_kv_uint(&js, "events", res->events);
    rg_json_kv_double(&js, "wall_s", wall);
    if (o->per_rank) {
        rxwin_json_ranks(&js, per, res, o->spec.nranks);
    }
    return rg_simtool_json_end(&js);
}

static void rxwin_text(const rxwin_opts_t *o, const rg_sim_result_t *res, double wall)
{
    printf("%s on %u ranks, window %s, RNR timer %g ms\n"
           "time       %.9f s\nmemory     min %llu  mean %.0f  max %llu bytes\n"
           "limit events %llu  rnr %llu  retries %llu  messages %llu  %s\n"
           "events     %llu\nwall       %.3f s\n",
           rg_sim_rxwork_pattern_name(o->spec.pattern), o->spec.nranks, o->window, o->timer_ms,
           res->makespan * 1e-6, (unsigned long long)res->rx.mem_min, res->rx.mem_mean,
           (unsigned long long)res->rx.mem_max, (unsigned long long)res->rx.limit_events,
           (unsigned long long)res->rx.rnr, (unsigned long long)res->rx.retries,
           (unsigned long long)res->rx.messages,
           res->rx.verified ? "verified" : "NOT verified", (unsigned long long)res->events,
           wall);
}

/* railgauge-sim rxwin: the workloads of `railgauge-bench rxwin` under the
 * shared receive window (rxwin_usage). */
int rg_simtool_rxwin_main(int argc, char **argv)
{
    rxwin_opts_t          o = {.prm = {.S = INFINITY},
                               .spec = {.pattern = -1, .nranks = 0, .iters = 50, .burst = 32,
                                        .size = 512, .compute_us = -1},
                               .window = "adaptive:8:4096", .timer_ms = 1.0, .limit = 0,
                               .quiet_us = 100000, .eager = 16384, .progress = -1};
    rg_sim_rxwork_t       work;
    rg_sim_rxwin_t        win;
    rg_sim_rxwin_rank_t  *per = NULL;
    rg_sim_sched_t        sched;
    rg_sim_result_t       res;
    rg_sim_trace_t        trace = {NULL, NULL, NULL, NULL};
    rg_simtool_progress_t prog = {0, 0, 0};
    rg_err_t              err;
    rg_status_t           st;
    double                t0, wall;
    int                   rc;

    rg_err_clear(&err);
    if ((rc = rxwin_parse(argc, argv, &o)) >= 0 || (rc = rxwin_model(&o, &win)) != 0) {
        return rc;
    }
    t0 = rg_simtool_progress_start(&prog, o.progress, &trace);
    if ((st = rg_sim_rxwork_build(&work, &sched, &o.spec, &err)) != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        return st == RG_ERR_NOMEM ? 1 : 2;
    }
    per = calloc(o.spec.nranks, sizeof(*per));
    if (per == NULL) {
        fprintf(stderr, "railgauge-sim: error: out of memory for %u ranks\n", o.spec.nranks);
        rg_sim_rxwork_fini(&work);
        return 1;
    }
    win.per_rank = per;
    st = rg_sim_run_traced(&sched, &o.prm, &trace, &res, stderr, &err);
    rg_simtool_progress_end(&prog);
    wall = rg_simtool_now_s() - t0;
    if (st != RG_OK) {
        fprintf(stderr, "railgauge-sim: error: %s\n", rg_err_message(&err));
        free(per);
        rg_sim_rxwork_fini(&work);
        return st == RG_ERR_NOMEM || st == RG_ERR_IO ? 1 : 2;
    }
    if (o.as_json) {
        rc = rxwin_json(&o, &win, &work, per, &res, wall);
    } else {
        rxwin_text(&o, &res, wall);
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
