/*
 * The PRTT pattern (Hoefler, Lichei, Rehm, "Low-Overhead LogGP Parameter
 * Assessment for Modern Interconnection Networks", 2007) and the ping-pong.
 *
 * PRTT(n, d, s): rank 0 sends n messages of s bytes, busy-waiting d between
 * two sends, and rank 1 answers with one message of s bytes once it has all n.
 * Under LogGP
 *     PRTT(1,0,s) = 2 (L + 2o + (s-1)G)
 *     PRTT(n,0,s) = PRTT(1,0,s) + (n-1) G_all,       G_all = g + (s-1)G
 *     PRTT(n,d,s) = PRTT(1,0,s) + (n-1) max(o + d, G_all),
 * so o follows from PRTT(n,d,s) with d > G_all. As the paper says, d is
 * PRTT(1,0,s), or PRTT(2,0,s) = PRTT(1,0,s) + G_all where the gap is so large
 * that PRTT(1,0,s) would not exceed it. The fit lives in Python.
 *
 * Each point is repeated in batches until the 95% confidence interval of its
 * median is narrower than --target-rel of the median, or its time budget runs
 * out; the record says which ("stable").
 *
 * Beyond the paper, the receive overhead o_r(s) is measured directly
 * ("orecv" records), as Netgauge does: the sender sends n messages d apart,
 * the receiver waits 2d before each receive, so the message is always there,
 * and times the receive call alone. With it the fit no longer has to assume
 * o_r = o_s, which on shared memory (a cheap receive, a costly send) would
 * push L below zero.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "bench.h"

/* A batch aims at this much time, so control messages cost nothing. */
#define RG_BENCH_BATCH_NS 20e6
/* Fewer repetitions than this never give a median CI worth its name. */
#define RG_BENCH_MIN_BATCH 4

typedef struct rg_bench_point {
    const char *type;      /* "prtt", "orecv" or "pingpong" */
    uint32_t    cmd;       /* RG_BENCH_CMD_PRTT or RG_BENCH_CMD_ORECV */
    int         n;
    double      d_us;
    double      d_actual_us;  /* measured mean length of the busy delays */
    double      spin_us_sum;  /* running sums behind d_actual_us */
    uint64_t    spin_count;
    const char *d_rule;    /* NULL, "prtt1" or "prtt2" */
    size_t      size;
    rg_stats_t  stats;
    double      iqm;       /* interquartile mean: robust, and finer than the timer's grain */
    int         stable;
    /* --passes > 1: the interquartile mean of each pass, and which were kept. */
    int         passes, passes_kept;
    double      pass_iqm[RG_BENCH_MAX_PASSES];
    int         pass_kept[RG_BENCH_MAX_PASSES];
    /* The host's state when each pass was measured: the median of a few
     * PRTT(n,0,1) just before the pass (0: not probed), and just after
     * it. A pass whose two probes differ straddled a change of the host's
     * state: its samples are a mix of the two. */
    double      pass_state[RG_BENCH_MAX_PASSES];
    double      pass_state_after[RG_BENCH_MAX_PASSES];
    /* Whether a kept pass was made in the run's reference state (1 also
     * without a reference state); 0: none was, the point kept its fastest
     * passes from another state. */
    int         in_state;
} rg_bench_point_t;

/* How long one point (or one pass of it) is measured. */
typedef struct rg_bench_limits {
    double target_rel;     /* stop at this relative CI half-width of the median */
    size_t min_reps, max_reps;
    double budget_s;       /* seconds at most */
} rg_bench_limits_t;

/* One point over several passes: its samples, pass after pass. */
typedef struct rg_bench_acc {
    rg_bench_point_t pt;
    double          *samples;
    size_t           count, cap;
    size_t           pass_off[RG_BENCH_MAX_PASSES + 1];  /* samples of pass j: [off j, off j+1) */
} rg_bench_acc_t;

rg_status_t rg_bench_point_stable(double *samples, size_t count, double target_rel,
                                  rg_stats_t *stats, rg_err_t *err, int *stable)
{
    rg_status_t st = rg_stats_compute(samples, count, stats, err);

    if (st == RG_OK) {
        *stable = rg_stats_median_rel_halfwidth(stats) <= target_rel;
    }
    return st;
}

size_t rg_bench_next_batch(size_t count, double per_rep_ns, double batch_ns, size_t min_batch,
                           size_t min_reps, size_t max_reps, double budget_left_s)
{
    size_t want = (size_t)(batch_ns / (per_rep_ns > 1 ? per_rep_ns : 1));

    if (count + want < min_reps) {
        want = min_reps - count;
    }
    if (budget_left_s * 1e9 / per_rep_ns < (double)want) {
        want = (size_t)(budget_left_s * 1e9 / per_rep_ns) + 1;
    }
    if (want < min_batch) {
        want = min_batch;
    }
    if (count + want > max_reps) {
        want = max_reps > count ? max_reps - count : 0;
    }
    return want;
}

double rg_bench_elapsed_s(const rg_bench_t *bench)
{
    return (double)(rg_time_mono_ns() - bench->start_ns) * 1e-9;
}


static rg_status_t rg__bench_alloc(rg_bench_t *bench)
{
    size_t max = 0, i;

    for (i = 0; i < bench->opts.nsizes; i++) {
        if (bench->opts.sizes[i] > max) {
            max = bench->opts.sizes[i];
        }
    }
    bench->buf_size = max > 0 ? max : 1;
    bench->sbuf = malloc(bench->buf_size);
    bench->rbuf = malloc(bench->buf_size);
    bench->samples_cap = (size_t)bench->opts.max_reps + RG_BENCH_MIN_BATCH;
    bench->samples = malloc(bench->samples_cap * sizeof(double));
    if (bench->sbuf == NULL || bench->rbuf == NULL || bench->samples == NULL) {
        return rg_err_set(&bench->err, RG_ERR_NOMEM,
                          "cannot allocate message buffers of %zu bytes", bench->buf_size);
    }
    /* Touch every page now, so page faults never land in a measurement. */
    memset(bench->sbuf, 0xa5, bench->buf_size);
    memset(bench->rbuf, 0, bench->buf_size);
    return RG_OK;
}

static rg_status_t rg__bench_xport_fail(rg_bench_t *bench, rg_status_t st, const char *what)
{
    return rg_err_set(&bench->err, st, "%s failed: %s", what, rg_xport_strerror(bench->xp));
}

static rg_status_t rg__bench_send_ctl(rg_bench_t *bench, int peer, const rg_bench_ctl_t *ctl)
{
    rg_status_t st = rg_xport_send(bench->xp, peer, ctl, sizeof(*ctl));
    return st == RG_OK ? RG_OK : rg__bench_xport_fail(bench, st, "sending a control message");
}

/* One timed repetition on rank 0: n sends with d between them, one receive.
 * For ORECV the sample is the follower's mean receive time, sent after the
 * answer; for PRTT it is the round trip. The busy delays are timed too, so
 * the fit can use the delay that really elapsed rather than the one asked for. */
static rg_status_t rg__bench_rep(rg_bench_t *bench, rg_bench_point_t *pt, uint64_t d_ticks,
                                 double *us_p)
{
    rg_status_t st;
    uint64_t    t0, t1, ts, now, until;
    double      orecv, spin_us, raw_us, excess_us = 0;
    size_t      len;
    int         i;

    t0 = rg_timer_ticks(&bench->timer);
    for (i = 0; i < pt->n; i++) {
        st = rg_xport_send(bench->xp, 1, bench->sbuf, pt->size);
        if (st != RG_OK) {
            return rg__bench_xport_fail(bench, st, "send");
        }
        if (d_ticks > 0 && i + 1 < pt->n) {
            /* The delay keeps the CPU busy: PRTT(n,d,s) charges o + d per message. */
            ts    = rg_timer_ticks(&bench->timer);
            until = ts + d_ticks;
            do {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
                now = rg_timer_ticks(&bench->timer);
            } while (now < until);
            /* The span between two reads misses the cost of one read, which
             * the busy delay spends all the same. */
            spin_us = rg_timer_us(&bench->timer, now - ts) + bench->timer.overhead_ns * 1e-3;
            excess_us += spin_us - pt->d_us;
            pt->spin_us_sum += spin_us;
            pt->spin_count++;
        }
    }
    st = rg_xport_recv(bench->xp, 1, bench->rbuf, bench->buf_size, NULL);
    if (st != RG_OK) {
        return rg__bench_xport_fail(bench, st, "receive");
    }
    t1 = rg_timer_ticks(&bench->timer);
    /* Less the timer's own cost, which the span t0..t1 includes once, and
     * less what the busy delays overshot d (each delay ends at the first
     * timer read past its deadline, and a preempted one ends much later):
     * the sample is PRTT(n,d,s) as if every delay had lasted exactly d. */
    raw_us = rg_timer_us(&bench->timer, t1 - t0);
    *us_p  = raw_us - bench->timer.overhead_ns * 1e-3 - excess_us;
    if (*us_p <= 0) {
        /* A correction larger than the span itself cannot be right (a timer
         * cost measured on a throttled CPU): keep the span as it is. */
        *us_p = raw_us;
    }
    if (pt->cmd == RG_BENCH_CMD_ORECV) {
        st = rg_xport_recv(bench->xp, 1, &orecv, sizeof(orecv), &len);
        if (st != RG_OK) {
            return rg__bench_xport_fail(bench, st, "receiving the receive overhead");
        }
        if (len != sizeof(orecv)) {
            return rg_err_set(&bench->err, RG_ERR_PARSE,
                              "receive-overhead sample of %zu bytes, expected %zu", len,
                              sizeof(orecv));
        }
        *us_p = orecv;
    }
    return RG_OK;
}

/* Runs reps repetitions (rank 1 follows the same batch), appending samples
 * unless record is 0 (warm-up). */
static rg_status_t rg__bench_batch(rg_bench_t *bench, rg_bench_point_t *pt, uint64_t reps,
                                   int record, size_t *count_p)
{
    rg_bench_ctl_t ctl = {pt->cmd, (uint32_t)pt->n, pt->size, reps, 0.0};
    uint64_t       d_ticks = 0;
    rg_status_t    st;
    double         us = 0;
    uint64_t       r;

    if (pt->cmd == RG_BENCH_CMD_ORECV) {
        /* The follower waits twice the sender's delay before each receive, so
         * it never catches up with the sender: every receive it times finds
         * its message already there, as o_r is defined. */
        ctl.d_us = 2 * pt->d_us;
    }
    if (pt->d_us > 0) {
        d_ticks = rg_timer_ticks_from_ns(&bench->timer, pt->d_us * 1e3);
    }
    st = rg__bench_send_ctl(bench, 1, &ctl);
    if (st != RG_OK) {
        return st;
    }
    for (r = 0; r < reps; r++) {
        st = rg__bench_rep(bench, pt, d_ticks, &us);
        if (st != RG_OK) {
            return st;
        }
        if (record && *count_p < bench->samples_cap) {
            bench->samples[(*count_p)++] = us;
        }
    }
    return RG_OK;
}

/* The mean of the middle half of sorted x. Where the clock advances in steps
 * (10 ns on some virtual machines) the median sits on that grid, while the
 * jitter of the samples dithers the interquartile mean below it. */
static double rg__bench_iqm(const double *x, size_t n)
{
    size_t lo = n / 4, hi = n - n / 4, i;
    double sum = 0;

    if (n == 0) {
        return 0.0;
    }
    if (hi <= lo) {
        lo = 0;
        hi = n;
    }
    for (i = lo; i < hi; i++) {
        sum += x[i];
    }
    return sum / (double)(hi - lo);
}

/* Measures one point until it is stable or out of its limits, into
 * bench->samples (its statistics in pt). */
static rg_status_t rg__bench_measure(rg_bench_t *bench, rg_bench_point_t *pt,
                                     const rg_bench_limits_t *lim)
{
    const rg_bench_opts_t *o = &bench->opts;
    uint64_t    t_start = rg_time_mono_ns(), t_first;
    size_t      count = 0;
    uint64_t    reps;
    double      per_rep_ns, spent_s;
    rg_status_t st;

    /* A first batch to learn how long one repetition takes. */
    reps = RG_BENCH_MIN_BATCH;
    st = rg__bench_batch(bench, pt, reps, 1, &count);
    if (st != RG_OK) {
        return st;
    }
    t_first = rg_time_mono_ns();
    per_rep_ns = (double)(t_first - t_start) / (double)reps;
    pt->stable = 0;
    for (;;) {
        size_t want;

        if (count >= lim->min_reps) {
            st = rg_bench_point_stable(bench->samples, count, lim->target_rel, &pt->stats,
                                       &bench->err, &pt->stable);
            if (st != RG_OK) {
                return st;
            }
            if (pt->stable) {
                break;
            }
        }
        spent_s = (double)(rg_time_mono_ns() - t_start) * 1e-9;
        if (spent_s >= lim->budget_s || count >= lim->max_reps) {
            break;
        }
        if (o->budget_s > 0 && rg_bench_elapsed_s(bench) >= o->budget_s) {
            break;
        }
        want = rg_bench_next_batch(count, per_rep_ns, RG_BENCH_BATCH_NS, RG_BENCH_MIN_BATCH,
                                   lim->min_reps, lim->max_reps, lim->budget_s - spent_s);
        if (want == 0) {
            break;
        }
        t_first = rg_time_mono_ns();
        st = rg__bench_batch(bench, pt, want, 1, &count);
        if (st != RG_OK) {
            return st;
        }
        per_rep_ns = (double)(rg_time_mono_ns() - t_first) / (double)want;
    }
    if (count < lim->min_reps || !pt->stable) {
        st = rg_stats_compute(bench->samples, count, &pt->stats, &bench->err);
        if (st != RG_OK) {
            return st;
        }
        pt->stable = rg_stats_median_rel_halfwidth(&pt->stats) <= lim->target_rel;
    }
    pt->d_actual_us = pt->spin_count > 0 ? pt->spin_us_sum / (double)pt->spin_count : 0.0;
    pt->iqm = rg__bench_iqm(bench->samples, count);
    return RG_OK;
}

/* Warm-up before a size: caches, page tables and the peer's wait state. */
static rg_status_t rg__bench_warmup(rg_bench_t *bench, size_t size, double seconds)
{
    uint64_t         until = rg_time_mono_ns() + (uint64_t)(seconds * 1e9);
    size_t           unused = 0;
    rg_bench_point_t warm;
    rg_status_t      st;

    memset(&warm, 0, sizeof(warm));
    warm.cmd  = RG_BENCH_CMD_PRTT;
    warm.n    = 1;
    warm.size = size;
    do {
        st = rg__bench_batch(bench, &warm, 2, 0, &unused);
        if (st != RG_OK) {
            return st;
        }
    } while (rg_time_mono_ns() < until);
    return RG_OK;
}

void rg_bench_header_common(rg_bench_t *bench, rg_json_t *js)
{
    char host[256], info[4096];

    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "unknown");
    }
    host[sizeof(host) - 1] = '\0';
    if (bench->xp->ops->info_json(bench->xp, info, sizeof(info)) != RG_OK) {
        snprintf(info, sizeof(info), "{}");
    }
    rg_json_kv_string(js, "type", "header");
    rg_json_kv_string(js, "tool", "railgauge-bench");
    rg_json_kv_string(js, "version", RG_VERSION);
    rg_json_kv_string(js, "pattern", bench->opts.pattern);
    rg_json_kv_string(js, "transport", bench->xp->attr.name);
    rg_json_key(js, "transport_info");
    rg_json_raw(js, info);
    rg_json_kv_string(js, "host", host);
    rg_json_kv_int(js, "ranks", bench->size);
    /* Who started the ranks: "launcher" (railgauge run) or "mpi" (mpirun/mpiexec). */
    rg_json_kv_string(js, "bootstrap", rg_boot_kind(bench->boot));
    rg_json_key(js, "timer");
    rg_json_object_begin(js);
    rg_json_kv_string(js, "source", bench->timer.source == RG_TIMER_TSC ? "tsc" : "monotonic");
    rg_json_kv_double(js, "resolution_ns", bench->timer.resolution_ns);
    rg_json_kv_double(js, "overhead_ns", bench->timer.overhead_ns);
    rg_json_kv_double(js, "ticks_per_ns", bench->timer.ticks_per_ns);
    rg_json_kv_bool(js, "tsc_invariant", bench->timer.tsc_invariant);
    if (bench->timer.why_fallback[0] != '\0') {
        rg_json_kv_string(js, "why_fallback", bench->timer.why_fallback);
    }
    rg_json_object_end(js);
}

rg_status_t rg_bench_write_header(rg_bench_t *bench, size_t planned_points)
{
    char        buf[16384];
    rg_json_t   js;
    time_t      now = time(NULL);
    struct tm   tm;
    char        when[64];
    size_t      i;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_bench_header_common(bench, &js);
    rg_json_key(&js, "params");
    rg_json_object_begin(&js);
    rg_json_kv_int(&js, "n", bench->opts.n);
    rg_json_kv_double(&js, "target_rel", bench->opts.target_rel);
    rg_json_kv_int(&js, "min_reps", bench->opts.min_reps);
    rg_json_kv_int(&js, "max_reps", bench->opts.max_reps);
    rg_json_kv_double(&js, "point_budget_s", bench->opts.point_budget_s);
    rg_json_kv_double(&js, "budget_s", bench->opts.budget_s);
    if (bench->opts.passes > 1) {
        rg_json_kv_int(&js, "passes", bench->opts.passes);
        rg_json_kv_double(&js, "pass_tol", bench->opts.pass_tol);
        rg_json_kv_uint(&js, "order_seed", bench->opts.order_seed);
        rg_json_kv_int(&js, "confirm", bench->opts.confirm);
        /* What a probe of the host's state measures: "c2c", the cache line
         * between the ranks (one way, reported in us), or "prtt",
         * PRTT(state_probe_n,0,1); and the width of the run's band. */
        rg_json_kv_string(&js, "state_probe", bench->probe == RG_BENCH_PROBE_C2C ? "c2c" : "prtt");
        rg_json_kv_int(&js, "state_probe_n", bench->opts.n);
        rg_json_kv_double(&js, "state_gap", bench->state_gap);
        if (bench->probe_note[0] != '\0') {
            /* Why the probe is not the cache line (--state-probe auto). */
            rg_json_kv_string(&js, "state_probe_note", bench->probe_note);
        }
        if (bench->opts.state_ref_us > 0) {
            /* The reference state given (--state-ref), not chosen by the run. */
            rg_json_kv_double(&js, "state_ref_us", bench->opts.state_ref_us);
        }
    }
    rg_json_key(&js, "sizes");
    rg_json_array_begin(&js);
    for (i = 0; i < bench->opts.nsizes; i++) {
        rg_json_uint(&js, bench->opts.sizes[i]);
    }
    rg_json_array_end(&js);
    rg_json_object_end(&js);
    rg_json_kv_uint(&js, "planned_points", planned_points);
    rg_json_kv_string(&js, "started_utc", when);
    rg_json_object_end(&js);
    return rg_json_write_line(&js, bench->out, &bench->err);
}

rg_status_t rg_bench_write_footer_with(rg_bench_t *bench, size_t points, const char *status,
                                       void (*extra)(rg_json_t *js, void *ctx), void *ctx)
{
    char      buf[8192];
    rg_json_t js;

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "type", "footer");
    rg_json_kv_double(&js, "wall_s", rg_bench_elapsed_s(bench));
    rg_json_kv_uint(&js, "points", points);
    rg_json_kv_string(&js, "status", status);
    if (extra != NULL) {
        extra(&js, ctx);
    }
    rg_json_object_end(&js);
    return rg_json_write_line(&js, bench->out, &bench->err);
}

rg_status_t rg_bench_write_footer(rg_bench_t *bench, size_t points, const char *status)
{
    return rg_bench_write_footer_with(bench, points, status, NULL, NULL);
}

static rg_status_t rg__bench_write_point(rg_bench_t *bench, const rg_bench_point_t *pt)
{
    char      buf[2048];
    rg_json_t js;

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "type", pt->type);
    rg_json_kv_int(&js, "n", pt->n);
    rg_json_kv_double(&js, "d_us", pt->d_us);
    if (pt->d_rule != NULL) {
        rg_json_kv_string(&js, "d_rule", pt->d_rule);
    }
    if (pt->spin_count > 0 && strcmp(pt->type, "prtt") == 0) {
        /* Information only: the samples are already corrected for it. */
        rg_json_kv_double(&js, "delay_excess_us", pt->d_actual_us - pt->d_us);
    }
    rg_json_kv_uint(&js, "s", pt->size);
    rg_json_kv_double(&js, "min_us", pt->stats.min);
    rg_json_kv_double(&js, "median_us", pt->stats.median);
    rg_json_kv_double(&js, "mean_us", pt->stats.mean);
    rg_json_kv_double(&js, "iqm_us", pt->iqm);
    rg_json_kv_double(&js, "p99_us", pt->stats.p99);
    rg_json_kv_double(&js, "max_us", pt->stats.max);
    rg_json_kv_double(&js, "stddev_us", pt->stats.stddev);
    rg_json_kv_uint(&js, "count", pt->stats.count);
    rg_json_key(&js, "ci95_median_us");
    rg_json_array_begin(&js);
    rg_json_double(&js, pt->stats.median_ci_lo);
    rg_json_double(&js, pt->stats.median_ci_hi);
    rg_json_array_end(&js);
    rg_json_kv_bool(&js, "stable", pt->stable);
    if (pt->passes > 1) {
        int j;

        rg_json_kv_int(&js, "passes", pt->passes);
        rg_json_kv_int(&js, "passes_kept", pt->passes_kept);
        rg_json_key(&js, "pass_iqm_us");
        rg_json_array_begin(&js);
        for (j = 0; j < pt->passes; j++) {
            rg_json_double(&js, pt->pass_iqm[j]);
        }
        rg_json_array_end(&js);
        if (pt->pass_state[0] > 0) {
            rg_json_key(&js, "pass_state_us");
            rg_json_array_begin(&js);
            for (j = 0; j < pt->passes; j++) {
                rg_json_double(&js, pt->pass_state[j]);
            }
            rg_json_array_end(&js);
            rg_json_key(&js, "pass_state_after_us");
            rg_json_array_begin(&js);
            for (j = 0; j < pt->passes; j++) {
                rg_json_double(&js, pt->pass_state_after[j]);
            }
            rg_json_array_end(&js);
            if (bench->state_mid_us > 0) {
                /* The run's reference state: passes kept with both probes in it. */
                rg_json_kv_double(&js, "state_mid_us", bench->state_mid_us);
                rg_json_key(&js, "state_band_us");
                rg_json_array_begin(&js);
                rg_json_double(&js, bench->state_lo_us);
                rg_json_double(&js, bench->state_hi_us);
                rg_json_array_end(&js);
                /* false: no pass of the point was made in that state. */
                rg_json_kv_bool(&js, "in_state", pt->in_state);
            }
        }
    }
    if (strcmp(pt->type, "pingpong") == 0 && pt->stats.median > 0) {
        /* bytes per microsecond are MB/s (10^6 bytes per second). */
        rg_json_kv_double(&js, "oneway_us", pt->stats.median / 2);
        rg_json_kv_double(&js, "bw_MBps", (double)pt->size / (pt->stats.median / 2));
    }
    rg_json_object_end(&js);
    return rg_json_write_line(&js, bench->out, &bench->err);
}

/* One repetition on rank 1: receive n messages, answer with one. For ORECV,
 * wait ctl->d_us before each receive after the first and time the receive
 * call alone (less the timer's own cost), then send the mean. */
static rg_status_t rg__bench_follow_rep(rg_bench_t *bench, const rg_bench_ctl_t *ctl)
{
    const int   orecv = ctl->cmd == RG_BENCH_CMD_ORECV;
    uint64_t    d_ticks = orecv ? rg_timer_ticks_from_ns(&bench->timer, ctl->d_us * 1e3) : 0;
    uint64_t    ta, tb, until;
    double      sum_us = 0, mean_us;
    rg_status_t st;
    uint32_t    i;

    for (i = 0; i < ctl->n; i++) {
        if (orecv && i > 0) {
            until = rg_timer_ticks(&bench->timer) + d_ticks;
            while (rg_timer_ticks(&bench->timer) < until) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
        }
        ta = orecv ? rg_timer_ticks(&bench->timer) : 0;
        st = rg_xport_recv(bench->xp, 0, bench->rbuf, bench->buf_size, NULL);
        if (st != RG_OK) {
            return rg__bench_xport_fail(bench, st, "receive");
        }
        if (orecv && i > 0) {
            tb = rg_timer_ticks(&bench->timer);
            sum_us += rg_timer_us(&bench->timer, tb - ta) - bench->timer.overhead_ns * 1e-3;
        }
    }
    st = rg_xport_send(bench->xp, 0, bench->sbuf, ctl->size);
    if (st != RG_OK) {
        return rg__bench_xport_fail(bench, st, "send");
    }
    if (orecv) {
        mean_us = ctl->n > 1 ? sum_us / (double)(ctl->n - 1) : 0.0;
        st = rg_xport_send(bench->xp, 0, &mean_us, sizeof(mean_us));
        if (st != RG_OK) {
            return rg__bench_xport_fail(bench, st, "sending the receive overhead");
        }
    }
    return RG_OK;
}

static rg_status_t rg__bench_recv_ctl(void *ctx, void *ctl, size_t cap, size_t *len)
{
    rg_bench_t *bench = ctx;
    rg_status_t st    = rg_xport_recv(bench->xp, 0, ctl, cap, len);

    if (st != RG_OK) {
        rg__bench_xport_fail(bench, st, "receiving a control message");
    }
    return st;
}

/* One control message: 1 the end, 0 its repetitions answered, -1 failed. */
static int rg__bench_on_ctl(void *ctx, const void *msg)
{
    rg_bench_t           *bench = ctx;
    const rg_bench_ctl_t *ctl   = msg;
    uint64_t              r;

    if (ctl->cmd == RG_BENCH_CMD_END) {
        return 1;
    }
    if (ctl->cmd == RG_BENCH_CMD_C2C) {
        if (bench->cline == NULL || ctl->reps == 0 || ctl->reps > 100000000) {
            rg_err_set(&bench->err, RG_ERR_PARSE, "bad control message (cmd %u, reps %llu)",
                       ctl->cmd, (unsigned long long)ctl->reps);
            return -1;
        }
        /* An exchange rank 0 gave up (or that timed out here) leaves both
         * sides as they were: the next starts from a new value. */
        (void)rg_bench_cline_answer(bench->cline, ctl->size, ctl->reps);
        return 0;
    }
    if ((ctl->cmd != RG_BENCH_CMD_PRTT && ctl->cmd != RG_BENCH_CMD_ORECV) ||
        ctl->size > bench->buf_size || ctl->n == 0 || !(ctl->d_us >= 0 && ctl->d_us < 1e7)) {
        rg_err_set(&bench->err, RG_ERR_PARSE, "bad control message (cmd %u, n %u, size %llu)",
                   ctl->cmd, ctl->n, (unsigned long long)ctl->size);
        return -1;
    }
    for (r = 0; r < ctl->reps; r++) {
        if (rg__bench_follow_rep(bench, ctl) != RG_OK) {
            return -1;
        }
    }
    return 0;
}

/* Followers: rank 1 answers; other ranks wait for the end. */
static int rg__bench_follow(rg_bench_t *bench)
{
    rg_bench_ctl_t ctl;

    return rg_bench_follow(&bench->err, &ctl, sizeof(ctl), rg__bench_recv_ctl,
                           rg__bench_on_ctl, bench);
}

static int rg__bench_end(rg_bench_t *bench, size_t points, const char *status)
{
    rg_bench_ctl_t ctl = {RG_BENCH_CMD_END, 0, 0, 0, 0.0};
    int            peer;

    for (peer = 1; peer < bench->size; peer++) {
        if (rg__bench_send_ctl(bench, peer, &ctl) != RG_OK) {
            return RG_BENCH_EXIT_FAIL;
        }
    }
    if (rg_bench_write_footer(bench, points, status) != RG_OK) {
        return RG_BENCH_EXIT_FAIL;
    }
    return RG_BENCH_EXIT_OK;
}

/* The limits of one point measured in one pass. */
static void rg__bench_limits(const rg_bench_opts_t *o, rg_bench_limits_t *lim)
{
    lim->target_rel = o->target_rel;
    lim->min_reps   = (size_t)o->min_reps;
    lim->max_reps   = (size_t)o->max_reps;
    lim->budget_s   = o->point_budget_s;
}

/* Measures pt and writes its record. */
static int rg__bench_point_do(rg_bench_t *bench, rg_bench_point_t *pt, size_t *points_p)
{
    rg_bench_limits_t lim;

    rg__bench_limits(&bench->opts, &lim);
    if (rg__bench_measure(bench, pt, &lim) != RG_OK || rg__bench_write_point(bench, pt) != RG_OK) {
        return -1;
    }
    (*points_p)++;
    return 0;
}

/* The four points of one size: PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s) and
 * the receive overhead o_r(s). */
enum { RG_BENCH_P1 = 0, RG_BENCH_PN, RG_BENCH_PD, RG_BENCH_PO, RG_BENCH_NKINDS };

/* d must exceed G_all; PRTT(1,0,s) does unless the gap is very large, then
 * PRTT(2,0,s) = PRTT(1,0,s) + G_all does (the paper's fallback). The medians
 * are those of the size's first measurement. */
static rg_status_t rg__bench_choose_d(rg_bench_t *bench, const rg_bench_point_t *p1,
                                      const rg_bench_point_t *pn, rg_bench_point_t *pd)
{
    double gall;

    if (!(p1->stats.median > 0)) {
        return rg_err_set(&bench->err, RG_ERR_RANGE,
                          "PRTT(1,0,%zu) has a median of %g us, not a positive time; the timer "
                          "(%s, %.1f ns per read) cannot measure this transport", p1->size,
                          p1->stats.median,
                          bench->timer.source == RG_TIMER_TSC ? "tsc" : "monotonic",
                          bench->timer.overhead_ns);
    }
    gall = (pn->stats.median - p1->stats.median) / (pn->n - 1);
    if (gall < 0.8 * p1->stats.median) {
        pd->d_us   = p1->stats.median;
        pd->d_rule = "prtt1";
    } else {
        pd->d_us   = p1->stats.median + gall;
        pd->d_rule = "prtt2";
    }
    return RG_OK;
}

/* The four points of size s, set up before their first measurement (pd's d
 * is chosen after p1 and pn are measured). */
static void rg__bench_points_init(rg_bench_point_t pts[RG_BENCH_NKINDS], size_t s, int n)
{
    int k;

    for (k = 0; k < RG_BENCH_NKINDS; k++) {
        memset(&pts[k], 0, sizeof(pts[k]));
        pts[k].type = "prtt";
        pts[k].cmd  = RG_BENCH_CMD_PRTT;
        pts[k].n    = n;
        pts[k].size = s;
    }
    pts[RG_BENCH_P1].n = 1;
    pts[RG_BENCH_PO].type = "orecv";
    pts[RG_BENCH_PO].cmd  = RG_BENCH_CMD_ORECV;
}

/* ---- several passes (--passes P > 1) ---------------------------------------
 * Noise on a busy host comes in bursts: another process takes a core for a
 * while, the clock rate changes. Measured once, in order, a burst slows a run
 * of neighbouring sizes, which then look like a protocol range of their own,
 * and a second run puts it elsewhere. Measured in P passes, each in its own
 * shuffled order and with 1/P of the repetitions, a burst slows one pass of
 * scattered sizes; a point keeps the passes whose interquartile mean is within
 * (1 + pass_tol) of its fastest pass and pools their samples. */

static uint64_t rg__bench_rand(uint64_t *state)
{
    /* xorshift64* (Vigna): small, seedable, enough for a shuffle. */
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static void rg__bench_shuffle(size_t *order, size_t n, uint64_t *state)
{
    size_t i, j, t;

    for (i = 0; i < n; i++) {
        order[i] = i;
    }
    for (i = n; i > 1; i--) {
        j            = (size_t)(rg__bench_rand(state) % i);
        t            = order[i - 1];
        order[i - 1] = order[j];
        order[j]     = t;
    }
}

/* Appends the samples of the pass just measured (bench->samples) to acc, with
 * the probe made before it (bench->state_us); rg__bench_probe_after adds the
 * probe after it. */
static rg_status_t rg__bench_acc_add(rg_bench_t *bench, rg_bench_acc_t *acc, size_t count)
{
    rg_bench_point_t *pt = &acc->pt;
    double           *grown;
    size_t            cap;

    if (acc->count + count > acc->cap) {
        cap   = acc->cap > 0 ? acc->cap : 256;
        while (cap < acc->count + count) {
            cap *= 2;
        }
        grown = realloc(acc->samples, cap * sizeof(double));
        if (grown == NULL) {
            return rg_err_set(&bench->err, RG_ERR_NOMEM, "cannot keep %zu samples", cap);
        }
        acc->samples = grown;
        acc->cap     = cap;
    }
    memcpy(acc->samples + acc->count, bench->samples, count * sizeof(double));
    acc->count += count;
    pt->pass_iqm[pt->passes] = pt->iqm;
    pt->pass_state[pt->passes] = bench->state_us;
    pt->pass_state_after[pt->passes] = 0.0;
    pt->passes++;
    acc->pass_off[pt->passes] = acc->count;
    return RG_OK;
}

/* Whether pass j of a point was made in the band [lo, hi] of probes: its
 * probes before and after it both lie in it (no probe, 0, counts). A pass
 * between a probe in one state and one in another straddled the change (the
 * host's states alternate in streaks of 0.1 s to minutes): over MPICH, such
 * passes of PRTT(16,0,s) sat 35% above the same size's passes in one state,
 * were kept as the point, and made a step in the sweep that hid a real
 * protocol change. */
static int rg__bench_pass_in(const rg_bench_point_t *pt, int j, double lo, double hi)
{
    double b = pt->pass_state[j], a = pt->pass_state_after[j];

    return (b <= 0 || (b >= lo && b <= hi)) && (a <= 0 || (a >= lo && a <= hi));
}

/* Whether pass j of a point was made in the run's reference state: in its
 * band (every pass while there is none). The band is 1.25x wide, so that a
 * pass in a state 1.25x or more from the reference never counts: over MPICH
 * the host showed three states, PRTT(16,0,1) at 2.3, 3.2 and 6.5-7.5 us, with
 * PRTT(16,0,s) 1.4x and 3x as long as in the fastest at every size; on the
 * development host's two vCPUs over shm a rarer one, probes of 0.12-0.13 us
 * beside 0.19-0.24 us, with PRTT(16,0,s) three times faster. */
static int rg__bench_in_ref(const rg_bench_t *bench, const rg_bench_point_t *pt, int j)
{
    return bench->state_mid_us <= 0 ||
           rg__bench_pass_in(pt, j, bench->state_lo_us, bench->state_hi_us);
}

/* The fastest pass of a point among those made in the reference state (all of
 * its passes where none was): its interquartile mean, and whether any was. */
static double rg__bench_best_pass(const rg_bench_t *bench, const rg_bench_point_t *pt,
                                  int *any_ref)
{
    double best = 0;
    int    j, ref, seen = 0;

    *any_ref = 0;
    for (j = 0; j < pt->passes; j++) {
        *any_ref |= rg__bench_in_ref(bench, pt, j);
    }
    for (j = 0; j < pt->passes; j++) {
        ref = !*any_ref || rg__bench_in_ref(bench, pt, j);
        if (ref && (!seen || pt->pass_iqm[j] < best)) {
            best = pt->pass_iqm[j];
            seen = 1;
        }
    }
    return best;
}

/* Whether a point is confirmed: two of its passes made in the run's reference
 * state (docs/fit.md, section 1: the host's states) within (1 + pass_tol) of
 * the fastest of them. A point not measured yet (the budget ran out) or with
 * no room for another pass counts as confirmed: nothing more can be done. */
static int rg__bench_acc_confirmed(const rg_bench_t *bench, const rg_bench_acc_t *acc)
{
    const rg_bench_point_t *pt = &acc->pt;
    double                  best;
    int                     j, near = 0, any_ref;

    if (pt->passes == 0 || pt->passes >= RG_BENCH_MAX_PASSES) {
        return 1;
    }
    best = rg__bench_best_pass(bench, pt, &any_ref);
    if (!any_ref) {
        return 0;
    }
    for (j = 0; j < pt->passes; j++) {
        near += rg__bench_in_ref(bench, pt, j) &&
                pt->pass_iqm[j] <= best * (1.0 + bench->opts.pass_tol);
    }
    return near >= 2;
}

/* The point's record from its passes: the samples of the passes kept, pooled:
 * those made in the run's reference state within (1 + pass_tol) of the
 * fastest of them, so that every point of a run describes one state of the
 * host; a point with no pass in that state keeps its fastest passes. */
static rg_status_t rg__bench_acc_finish(rg_bench_t *bench, rg_bench_acc_t *acc)
{
    rg_bench_point_t *pt = &acc->pt;
    double            best;
    size_t            n = 0, off, len;
    int               j, any_ref;

    best = rg__bench_best_pass(bench, pt, &any_ref);
    pt->in_state    = any_ref;
    pt->passes_kept = 0;
    for (j = 0; j < pt->passes; j++) {
        pt->pass_kept[j] = (!any_ref || rg__bench_in_ref(bench, pt, j)) &&
                           pt->pass_iqm[j] <= best * (1.0 + bench->opts.pass_tol);
        if (!pt->pass_kept[j]) {
            continue;
        }
        off = acc->pass_off[j];
        len = acc->pass_off[j + 1] - off;
        memmove(acc->samples + n, acc->samples + off, len * sizeof(double));
        n += len;
        pt->passes_kept++;
    }
    acc->count = n;
    if (n == 0) {
        return rg_err_set(&bench->err, RG_ERR_RANGE, "no samples of size %zu", pt->size);
    }
    if (rg_stats_compute(acc->samples, n, &pt->stats, &bench->err) != RG_OK) {
        return RG_ERR_RANGE;
    }
    pt->iqm    = rg__bench_iqm(acc->samples, n);
    pt->stable = rg_stats_median_rel_halfwidth(&pt->stats) <= bench->opts.target_rel;
    pt->d_actual_us = pt->spin_count > 0 ? pt->spin_us_sum / (double)pt->spin_count : 0.0;
    return RG_OK;
}

static rg_status_t rg__bench_write_progress(rg_bench_t *bench, int pass, size_t visits,
                                            size_t of, size_t s)
{
    char      buf[256];
    rg_json_t js;

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "type", "progress");
    rg_json_kv_int(&js, "pass", pass + 1);
    rg_json_kv_int(&js, "passes", bench->opts.passes);
    rg_json_kv_uint(&js, "visits", visits);
    rg_json_kv_uint(&js, "of", of);
    rg_json_kv_uint(&js, "s", s);
    rg_json_object_end(&js);
    return rg_json_write_line(&js, bench->out, &bench->err);
}

/* PRTT in several passes: rank 0's side. */
/* The state of a run of passes over every size and kind of point. */
typedef struct rg__bench_passes {
    rg_bench_t       *bench;
    rg_bench_acc_t   *acc;     /* ns * RG_BENCH_NKINDS accumulators */
    size_t           *order;   /* the sizes' order in the pass */
    size_t            ns, visits;
    rg_bench_limits_t lim;     /* one pass's limits of a point */
    uint64_t          rng;
    double            planned_s; /* the planned passes' share of the run budget */
    double           *probes;    /* every probe of the host's state, in order */
    size_t            nprobes, probes_cap;
} rg__bench_passes_t;

/* Each pass gets 1/P of the point's repetitions and budget, and a target
 * sqrt(P) wider: P passes pooled reach about the target of one. */
static void rg__bench_pass_limits(const rg_bench_opts_t *o, rg_bench_limits_t *lim)
{
    rg__bench_limits(o, lim);
    lim->target_rel *= sqrt((double)o->passes);
    lim->min_reps = (lim->min_reps + (size_t)o->passes - 1) / (size_t)o->passes;
    if (lim->min_reps < 2 * RG_BENCH_MIN_BATCH) {
        lim->min_reps = 2 * RG_BENCH_MIN_BATCH;
    }
    lim->max_reps /= (size_t)o->passes;
    if (lim->max_reps < lim->min_reps) {
        lim->max_reps = lim->min_reps;
    }
    lim->budget_s /= o->passes;
}

/* A point's budget within what is left: no more than left spread over the
 * measurements still to make (each still takes its minimum of repetitions). */
static void rg__bench_cap_budget(rg_bench_limits_t *vlim, double left, double still)
{
    double per = left / still;

    if (per < vlim->budget_s) {
        vlim->budget_s = per > 1e-4 ? per : 1e-4;
    }
}

/* Adds the probe just made (bench->state_us, when positive) to the run's. */
static rg_status_t rg__bench_keep_probe(rg__bench_passes_t *ps)
{
    rg_bench_t *bench = ps->bench;

    if (bench->state_us > 0) {
        if (ps->nprobes == ps->probes_cap) {
            size_t  cap   = ps->probes_cap > 0 ? 2 * ps->probes_cap : 256;
            double *grown = realloc(ps->probes, cap * sizeof(double));

            if (grown == NULL) {
                return rg_err_set(&bench->err, RG_ERR_NOMEM, "cannot keep %zu probes", cap);
            }
            ps->probes     = grown;
            ps->probes_cap = cap;
        }
        ps->probes[ps->nprobes++] = bench->state_us;
    }
    return RG_OK;
}

/* The cache line's one-way time between the two ranks, in us, into
 * bench->state_us: the median of RG_BENCH_C2C_CHUNKS chunks' means, after one
 * chunk that waits for rank 1 to take the control message. 0 (no probe) when
 * an exchange is given up (a rank that did not answer within a second). It
 * separates the placements of the two vCPUs where PRTT(16,0,1) cannot: over
 * libfabric's tcp provider the probe of the fast placement (114-147 us)
 * overlapped the slow one's (142-187 us) while PRTT(16,0,65536) took 1.9x as
 * long in the slow one (docs/fit.md, section 1). */
static rg_status_t rg__bench_probe_c2c(rg_bench_t *bench)
{
    const long     chunks = RG_BENCH_C2C_CHUNKS + 1, trips = RG_BENCH_C2C_ROUND_TRIPS;
    double         chunk_ns[RG_BENCH_C2C_CHUNKS + 1];
    uint64_t       base = bench->cline_base;
    rg_bench_ctl_t ctl  = {RG_BENCH_CMD_C2C, 0, base, (uint64_t)(chunks * trips), 0.0};
    rg_stats_t     stats;
    rg_status_t    st;

    /* The next exchange starts above every value this one can write. */
    bench->cline_base = base + 2 * (uint64_t)(chunks * trips) + 2;
    bench->state_us   = 0;
    st                = rg__bench_send_ctl(bench, 1, &ctl);
    if (st != RG_OK) {
        return st;
    }
    if (rg_bench_cline_lead(bench->cline, base, trips, chunks, &bench->timer, chunk_ns) != RG_OK) {
        rg_bench_cline_give_up(bench->cline, base);
        return RG_OK;
    }
    /* rg_stats_compute sorts the chunks after the first in place. */
    st = rg_stats_compute(chunk_ns + 1, (size_t)(chunks - 1), &stats, &bench->err);
    if (st == RG_OK) {
        bench->state_us = stats.median * 1e-3;
    }
    return st;
}

/* Probes the host's state before a size's visit and after each pass of its
 * kinds, into bench->state_us and the run's list of probes: where the two
 * ranks share a host the cache line between them (rg__bench_probe_c2c), else
 * the median of a few PRTT(n,0,1), n 1-byte messages and the answer. The
 * train of n, not a single round trip: over MPICH a state of the host in which PRTT(16,0,s) took
 * 1.4-1.6x as long at every size moved PRTT(1,0,1) by only 1.19x (0.41 against
 * 0.49 us), inside the spread of one state, and PRTT(16,0,1) by 1.48x. On the
 * two-core virtual machine of the benchmarks the probe takes two or three
 * values 1.4-4x apart for seconds to minutes at a time (docs/fit.md, section
 * 1); it tells a pass made in one state from one made in another, so that a
 * point measured only in another state than the run's reference is measured
 * again. */
static rg_status_t rg__bench_probe_state(rg__bench_passes_t *ps)
{
    rg_bench_t      *bench = ps->bench;
    rg_bench_point_t pts[RG_BENCH_NKINDS];
    rg_stats_t       stats;
    size_t           count = 0, reps = RG_BENCH_STATE_REPS;
    rg_status_t      st;

    if (bench->probe == RG_BENCH_PROBE_C2C) {
        st = rg__bench_probe_c2c(bench);
        return st == RG_OK ? rg__bench_keep_probe(ps) : st;
    }
    /* Five probes a visit: on a slow path they stay a small share of it. */
    if (bench->state_us > 0 && (double)reps * bench->state_us > RG_BENCH_STATE_PROBE_US) {
        reps = (size_t)(RG_BENCH_STATE_PROBE_US / bench->state_us);
        if (reps < RG_BENCH_STATE_MIN_REPS) {
            reps = RG_BENCH_STATE_MIN_REPS;
        }
    }
    if (reps > bench->samples_cap) {
        reps = bench->samples_cap;
    }
    rg__bench_points_init(pts, 1, bench->opts.n);
    st = rg__bench_batch(bench, &pts[RG_BENCH_PN], reps, 1, &count);
    if (st != RG_OK) {
        return st;
    }
    /* bench->samples is scratch until the point's own measurement. */
    st = rg_stats_compute(bench->samples, count, &stats, &bench->err);
    if (st != RG_OK) {
        return st;
    }
    bench->state_us = stats.median;
    return rg__bench_keep_probe(ps);
}

/* Probes the host's state after a pass of a point (its samples already in its
 * accumulator: the probe overwrites bench->samples), into the pass's record;
 * the probe is the next pass's probe before, too. */
static rg_status_t rg__bench_probe_after(rg__bench_passes_t *ps, rg_bench_point_t *pt)
{
    rg_status_t st = rg__bench_probe_state(ps);

    if (st == RG_OK && pt->passes > 0) {
        pt->pass_state_after[pt->passes - 1] = ps->bench->state_us;
    }
    return st;
}

static int rg__bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* How near to confirmed the points are in the band [lo, hi]: each point counts
 * its passes with both probes in the band, at most two. *covered (when not
 * NULL) gets the count of points with at least one such pass, *measured that
 * of points with a pass at all (the budget may end a run before a size's
 * first pass). */
static size_t rg__bench_in_band(const rg__bench_passes_t *ps, double lo, double hi,
                                size_t *covered, size_t *measured)
{
    size_t i, score = 0, cov = 0, meas = 0;
    int    j, k;

    for (i = 0; i < ps->ns * RG_BENCH_NKINDS; i++) {
        const rg_bench_point_t *pt = &ps->acc[i].pt;

        for (j = 0, k = 0; j < pt->passes && k < 2; j++) {
            k += rg__bench_pass_in(pt, j, lo, hi);
        }
        score += (size_t)k;
        cov  += k > 0;
        meas += pt->passes > 0;
    }
    if (covered != NULL) {
        *covered = cov;
    }
    if (measured != NULL) {
        *measured = meas;
    }
    return score;
}

/* Whether a band with a pass of cov of the meas points measured covers the run:
 * all but 2% of them (railgauge.hoststate.COVER_SHARE). A point left out keeps
 * its fastest passes, says in_state: false, and the fit leaves its size out. */
#define RG__BENCH_COVERS(cov, meas) (50 * (cov) >= 49 * (meas))

/* The run's reference state as its probes choose it, of the bands
 * RG_BENCH_STATE_GAP wide about each probe of the run (from p / sqrt(GAP) to
 * p sqrt(GAP)):
 *
 * - The fastest state in which the points have a pass (both its probes in the
 *   band), all but 2% of them (RG__BENCH_COVERS), when there is one: of the
 *   bands that cover the points so, about the probes from the fastest such
 *   band's up to sqrt(GAP) above it (one state), the one in which the points
 *   have the most passes, counting at most two a point (two confirm a point).
 *   A run through two states that measured its points in the faster one
 *   describes that one: on the two-vCPU development host (2026-11-30) four of
 *   forty runs with every point measured with the cache line at 29-37 ns had
 *   kept the state of 145-167 ns, in which more of their passes fell, and
 *   described another host than the runs around them; a fifth, of 304 points,
 *   kept it for one point whose only fast pass straddled the two fast
 *   placements (15 ns before it, 31 after). The slower states are the ones
 *   that vary (145-177 ns), and a busy host only ever slows a pass.
 * - Else, as before 2026-11-30, the band with the most such passes of all; the
 *   fastest of equals. Counting points with a pass would favour any state that
 *   held for one whole pass: over MPICH a run whose first pass was slow and
 *   whose others were mostly fast kept the slow pass alone at most sizes. A
 *   run in three states keeps the one that most of its points saw (over MPICH,
 *   a run whose probes showed 2.3, 3.2 and 7 us kept 52 of 316 points in the
 *   fastest state by a cut between two states, and the 264 others from their
 *   fastest passes, in the other states).
 *
 * The confirmation passes measure the other points again, and each point
 * keeps its passes in the band. Returns the middle of that band; 0 without
 * probes or memory (then every pass counts, as before probes). The same rule
 * in Python: railgauge.hoststate.state_band. */
static double rg__bench_choose_band(const rg__bench_passes_t *ps)
{
    const double w = sqrt(ps->bench->state_gap);
    double      *x, mid = 0.0, full = 0.0;
    size_t       i, n = ps->nprobes, best = 0, c, cov, meas;

    if (n == 0 || (x = malloc(n * sizeof(double))) == NULL) {
        return 0.0;
    }
    memcpy(x, ps->probes, n * sizeof(double));
    qsort(x, n, sizeof(double), rg__bench_cmp_double);
    for (i = 0; i < n && full == 0.0; i++) {
        (void)rg__bench_in_band(ps, x[i] / w, x[i] * w, &cov, &meas);
        if (meas > 0 && RG__BENCH_COVERS(cov, meas)) {
            full = x[i];
        }
    }
    for (i = 0; i < n; i++) {
        if ((i > 0 && x[i] == x[i - 1]) || (full > 0.0 && (x[i] < full || x[i] > full * w))) {
            continue;
        }
        c = rg__bench_in_band(ps, x[i] / w, x[i] * w, &cov, &meas);
        if (full > 0.0 && !RG__BENCH_COVERS(cov, meas)) {
            continue;   /* in the fastest full state, only bands that cover the run */
        }
        if (c > best) {
            best = c;
            mid  = x[i];
        }
    }
    free(x);
    return mid;
}

/* Sets the run's reference state: given by --state-ref, or chosen. Given, a
 * refinement keeps the state of the sweep it refines. Chosen by its own
 * probes, a refinement made while the host was in another state chose that
 * one: over loopback TCP three sizes between 512 and 609 B measured 1.3x the
 * sweep's PRTT(16,0,s) (their probes 92-98 us against the sweep's 82) and
 * formed a protocol range of their own. Given, such passes lie out of the
 * band, the confirmation passes measure them again, and a point none of whose
 * passes came back into it says in_state: false. */
static void rg__bench_state_band(rg__bench_passes_t *ps)
{
    const double w   = sqrt(ps->bench->state_gap);
    double       mid = ps->bench->opts.state_ref_us;

    if (mid <= 0) {
        mid = rg__bench_choose_band(ps);
    }
    ps->bench->state_mid_us = mid;
    ps->bench->state_lo_us  = mid > 0 ? mid / w : 0.0;
    ps->bench->state_hi_us  = mid > 0 ? mid * w : 0.0;
}

/* One planned pass over every size, in a shuffled order: RG_OK, or
 * RG_ERR_TIMEOUT when the run budget ran out (the run's status "budget"),
 * else the error. */
static rg_status_t rg__bench_planned_pass(rg__bench_passes_t *ps, int pass)
{
    rg_bench_t            *bench = ps->bench;
    const rg_bench_opts_t *o     = &bench->opts;
    rg_bench_limits_t      vlim;
    size_t                 v;
    int                    k;

    rg__bench_shuffle(ps->order, ps->ns, &ps->rng);
    for (v = 0; v < ps->ns; v++) {
        rg_bench_acc_t *a = &ps->acc[ps->order[v] * RG_BENCH_NKINDS];

        if (o->budget_s > 0 && rg_bench_elapsed_s(bench) >= o->budget_s) {
            return RG_ERR_TIMEOUT;
        }
        /* The probe before the warm-up, which leaves the size's buffers warm. */
        if (rg__bench_probe_state(ps) != RG_OK ||
            rg__bench_warmup(bench, a[0].pt.size,
                             ps->visits == 0 ? o->warmup_s + 0.05 : o->warmup_s) != RG_OK) {
            return RG_ERR_IO;
        }
        /* With a run budget, every pass gets its share of it, so that the last
         * passes are not cut off. */
        vlim = ps->lim;
        if (o->budget_s > 0) {
            rg__bench_cap_budget(&vlim, ps->planned_s * (double)(pass + 1) / o->passes -
                                 rg_bench_elapsed_s(bench),
                                 (double)(ps->ns - v) * RG_BENCH_NKINDS);
        }
        for (k = 0; k < RG_BENCH_NKINDS; k++) {
            if (k == RG_BENCH_PD && pass == 0) {
                if (rg__bench_choose_d(bench, &a[RG_BENCH_P1].pt, &a[RG_BENCH_PN].pt,
                                       &a[RG_BENCH_PD].pt) != RG_OK) {
                    return RG_ERR_IO;
                }
                a[RG_BENCH_PO].pt.d_us = a[RG_BENCH_PD].pt.d_us;
                a[RG_BENCH_PO].pt.d_rule = a[RG_BENCH_PD].pt.d_rule;
            }
            if (rg__bench_measure(bench, &a[k].pt, &vlim) != RG_OK ||
                rg__bench_acc_add(bench, &a[k], a[k].pt.stats.count) != RG_OK ||
                rg__bench_probe_after(ps, &a[k].pt) != RG_OK) {
                return RG_ERR_IO;
            }
        }
        ps->visits++;
        if (rg__bench_write_progress(bench, pass, ps->visits, ps->ns * (size_t)o->passes,
                                     a[0].pt.size) != RG_OK) {
            return RG_ERR_IO;
        }
    }
    return RG_OK;
}

/* Confirmation passes (--confirm K). A slow phase of the host (measured here:
 * minutes at 3-4x the round trip of the phases around it, the two vCPUs moved
 * apart) can cover all but one pass of a point, and then the one kept pass may
 * be half in it too. So a point whose fastest pass no other pass confirms
 * within pass_tol is measured again, in up to K more passes over just those
 * points (each in its own shuffled order), in the budget's last share; a
 * confirmed point is left alone. No progress records: the count of visits
 * stays that of the planned passes. RG_OK also when the budget ends them (the
 * planned passes are complete: the run is "ok"), else the error. */
static rg_status_t rg__bench_confirm_passes(rg__bench_passes_t *ps)
{
    rg_bench_t            *bench = ps->bench;
    const rg_bench_opts_t *o     = &bench->opts;
    rg_bench_limits_t      vlim;
    size_t                 i, v, want;
    int                    pass, k, need;

    for (pass = 0; pass < o->confirm; pass++) {
        rg__bench_state_band(ps);
        want = 0;
        for (i = 0; i < ps->ns * RG_BENCH_NKINDS; i++) {
            want += !rg__bench_acc_confirmed(bench, &ps->acc[i]);
        }
        if (want == 0) {
            break;
        }
        rg__bench_shuffle(ps->order, ps->ns, &ps->rng);
        for (v = 0; v < ps->ns && want > 0; v++) {
            rg_bench_acc_t *a = &ps->acc[ps->order[v] * RG_BENCH_NKINDS];

            for (k = 0, need = 0; k < RG_BENCH_NKINDS; k++) {
                need += !rg__bench_acc_confirmed(bench, &a[k]);
            }
            if (need == 0) {
                continue;
            }
            if (o->budget_s > 0 && rg_bench_elapsed_s(bench) >= o->budget_s) {
                return RG_OK;
            }
            if (rg__bench_probe_state(ps) != RG_OK ||
                rg__bench_warmup(bench, a[0].pt.size, o->warmup_s) != RG_OK) {
                return RG_ERR_IO;
            }
            vlim = ps->lim;
            if (o->budget_s > 0) {
                rg__bench_cap_budget(&vlim, o->budget_s - rg_bench_elapsed_s(bench),
                                     (double)want);
            }
            for (k = 0; k < RG_BENCH_NKINDS; k++) {
                if (rg__bench_acc_confirmed(bench, &a[k])) {
                    continue;
                }
                want--;
                if (rg__bench_measure(bench, &a[k].pt, &vlim) != RG_OK ||
                    rg__bench_acc_add(bench, &a[k], a[k].pt.stats.count) != RG_OK ||
                    rg__bench_probe_after(ps, &a[k].pt) != RG_OK) {
                    return RG_ERR_IO;
                }
            }
        }
    }
    return RG_OK;
}

static int rg__bench_drive_passes(rg_bench_t *bench)
{
    const rg_bench_opts_t *o = &bench->opts;
    rg__bench_passes_t     ps;
    size_t                 i, points = 0;
    int                    pass, k, rc = RG_BENCH_EXIT_FAIL;
    const char            *status = "ok";
    rg_status_t            st = RG_OK;

    memset(&ps, 0, sizeof(ps));
    ps.bench = bench;
    ps.ns    = o->nsizes;
    ps.acc   = calloc(ps.ns * RG_BENCH_NKINDS, sizeof(*ps.acc));
    ps.order = calloc(ps.ns, sizeof(*ps.order));
    if (ps.acc == NULL || ps.order == NULL) {
        rg_err_set(&bench->err, RG_ERR_NOMEM, "cannot allocate the state of %zu sizes", ps.ns);
        goto out;
    }
    for (i = 0; i < ps.ns; i++) {
        rg_bench_point_t pts[RG_BENCH_NKINDS];

        rg__bench_points_init(pts, o->sizes[i], o->n);
        for (k = 0; k < RG_BENCH_NKINDS; k++) {
            ps.acc[i * RG_BENCH_NKINDS + k].pt = pts[k];
        }
    }
    rg__bench_pass_limits(o, &ps.lim);
    ps.planned_s = o->budget_s * (o->confirm > 0 ? 1.0 - RG_BENCH_CONFIRM_SHARE : 1.0);
    ps.rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)o->order_seed * 0xD1B54A32D192ED03ULL);
    if (ps.rng == 0) {
        ps.rng = 1;
    }
    for (pass = 0; pass < o->passes && st == RG_OK; pass++) {
        st = rg__bench_planned_pass(&ps, pass);
    }
    if (st == RG_OK) {
        st = rg__bench_confirm_passes(&ps);
    } else if (st == RG_ERR_TIMEOUT) {
        status = "budget";
        st     = RG_OK;
    }
    if (st != RG_OK) {
        goto out;
    }
    /* Every point kept from the state that all of the run's probes show. */
    rg__bench_state_band(&ps);
    for (i = 0; i < ps.ns * RG_BENCH_NKINDS; i++) {
        rg_bench_acc_t *a = &ps.acc[i];

        if (a->pt.passes == 0) {
            continue;  /* the budget ran out before this size's first pass */
        }
        if (rg__bench_acc_finish(bench, a) != RG_OK ||
            rg__bench_write_point(bench, &a->pt) != RG_OK) {
            goto out;
        }
        points++;
    }
    rc = rg__bench_end(bench, points, status);
out:
    if (ps.acc != NULL) {
        for (i = 0; i < ps.ns * RG_BENCH_NKINDS; i++) {
            free(ps.acc[i].samples);
        }
    }
    free(ps.acc);
    free(ps.order);
    free(ps.probes);
    return rc;
}

/* Chooses prtt's probe of the host's state (collective: every rank calls it
 * alike): the cache line between ranks 0 and 1 in a segment they share when
 * they are on one host and --state-probe is auto or c2c, else PRTT(n,0,1).
 * Under auto a run whose ranks cannot share a segment says why in its header
 * and probes with PRTT(n,0,1); asked for c2c, it fails. */
static rg_status_t rg__bench_probe_setup(rg_bench_t *bench)
{
    void       *seg = NULL;
    rg_status_t st;

    bench->probe     = RG_BENCH_PROBE_PRTT;
    bench->state_gap = RG_BENCH_STATE_GAP;
    if (bench->opts.state_probe == RG_BENCH_PROBE_PRTT) {
        return RG_OK;
    }
    st = rg_bench_segment_map(bench->boot, bench->rank, bench->size, "prtt-state",
                              sizeof(rg_bench_cline_t), &seg, &bench->err);
    if (st != RG_OK) {
        if (bench->opts.state_probe == RG_BENCH_PROBE_C2C) {
            return st;
        }
        snprintf(bench->probe_note, sizeof(bench->probe_note), "%s",
                 rg_err_message(&bench->err));
        rg_err_clear(&bench->err);
        return RG_OK;
    }
    bench->cline = seg;
    if (bench->rank == 0) {
        atomic_init(&bench->cline->line, 0);
        atomic_init(&bench->cline->abort, 0);
    }
    bench->cline_base = 2;
    bench->probe      = RG_BENCH_PROBE_C2C;
    bench->state_gap  = RG_BENCH_C2C_GAP;
    /* Rank 1 answers only after rank 0 has set the line up. */
    return rg_boot_barrier(bench->boot, &bench->err);
}

static void rg__bench_probe_teardown(rg_bench_t *bench)
{
    if (bench->cline != NULL) {
        munmap(bench->cline, sizeof(rg_bench_cline_t));
        bench->cline = NULL;
    }
}

/* The driver of both patterns. For prtt, each size gets PRTT(1,0,s),
 * PRTT(n,0,s), PRTT(n,d,s) and the receive overhead o_r(s) ("orecv"). */
static int rg__bench_drive(rg_bench_t *bench, int prtt)
{
    const rg_bench_opts_t *o = &bench->opts;
    rg_bench_point_t pts[RG_BENCH_NKINDS];
    const char *status = "ok";
    size_t      i, points = 0;
    int         k;

    if (rg__bench_alloc(bench) != RG_OK) {
        return RG_BENCH_EXIT_FAIL;
    }
    if (bench->rank != 0) {
        return rg__bench_follow(bench);
    }
    bench->start_ns = rg_time_mono_ns();
    if (rg_bench_write_header(bench, o->nsizes * (prtt ? 4 : 1)) != RG_OK) {
        return RG_BENCH_EXIT_FAIL;
    }
    if (prtt && o->passes > 1) {
        return rg__bench_drive_passes(bench);
    }
    for (i = 0; i < o->nsizes; i++) {
        size_t s = o->sizes[i];

        if (o->budget_s > 0 && rg_bench_elapsed_s(bench) >= o->budget_s) {
            status = "budget";
            break;
        }
        /* The first size warms up longer: the peer may still be starting, and
         * the CPUs may still be in a low-power state. */
        if (rg__bench_warmup(bench, s, i == 0 ? o->warmup_s + 0.05 : o->warmup_s) != RG_OK) {
            return RG_BENCH_EXIT_FAIL;
        }
        rg__bench_points_init(pts, s, o->n);
        if (!prtt) {
            pts[RG_BENCH_P1].type = "pingpong";
            if (rg__bench_point_do(bench, &pts[RG_BENCH_P1], &points) != 0) {
                return RG_BENCH_EXIT_FAIL;
            }
            continue;
        }
        for (k = 0; k < RG_BENCH_NKINDS; k++) {
            if (k == RG_BENCH_PD) {
                if (rg__bench_choose_d(bench, &pts[RG_BENCH_P1], &pts[RG_BENCH_PN],
                                       &pts[RG_BENCH_PD]) != RG_OK) {
                    return RG_BENCH_EXIT_FAIL;
                }
                pts[RG_BENCH_PO].d_us   = pts[RG_BENCH_PD].d_us;
                pts[RG_BENCH_PO].d_rule = pts[RG_BENCH_PD].d_rule;
            }
            if (rg__bench_point_do(bench, &pts[k], &points) != 0) {
                return RG_BENCH_EXIT_FAIL;
            }
        }
    }
    return rg__bench_end(bench, points, status);
}

int rg_bench_prtt_run(rg_bench_t *bench)
{
    int rc;

    if (bench->opts.passes > 1 && rg__bench_probe_setup(bench) != RG_OK) {
        return RG_BENCH_EXIT_FAIL;
    }
    rc = rg__bench_drive(bench, 1);
    rg__bench_probe_teardown(bench);
    return rc;
}

int rg_bench_pingpong_run(rg_bench_t *bench)
{
    return rg__bench_drive(bench, 0);
}
