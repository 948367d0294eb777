/*
 * railgauge-bench flagprtt: PRTT-style round trips of signals over the
 * shared-memory flag engine the barrier runs on where the ranks share a host
 * (coll/flags.c: a signal is a release store of an epoch into the peer's
 * cache line, a receive a spin on one's own line), for the flag model of
 * the barrier (python/railgauge/fit/flags.py, docs/coll.md).
 *
 * Every point is a set of plans of coll/sched.h run by rg_coll_flags_run,
 * exactly as a barrier's rounds run, in one segment that every rank maps:
 *
 *   clock         two clock reads back to back (rank 0): the part of a
 *                 barrier benchmark's entry-to-exit time that is its clock
 *   call          a flag run of no rounds between two clock reads (rank 0):
 *                 what a barrier of no signals measures
 *   prtt n=1      rank 0 signals rank 1 (one round), rank 1 answers:
 *                 PRTT(1,0) = 2 (o_s + L + o_r)
 *   prtt n=N d=0  rank 0 signals N lines of rank 1 in one round (N stores,
 *                 one fence, as a barrier round posts), rank 1 reads them
 *                 in turn and answers: PRTT(N,0) = PRTT(1,0) + (N-1) g
 *   prtt n=N d=D  N rounds of one signal each, rank 0 busy-waiting D between
 *                 them (D = PRTT(1,0)): PRTT(N,D) = PRTT(1,0) + (N-1)(o_s + D)
 *   exchange      ranks 0 and 1 signal each other in one round (the
 *                 dissemination barrier on 2 ranks): both lines at once
 *   orecv k, w=1  rank 0 signals k lines of rank 1 in one round; rank 1 waits
 *                 2 PRTT(1,0) first, so the lines are written, and times its
 *                 reads of the k lines: o_r(k)
 *   orecv k, w=k  (more than 2 ranks) ranks 1..k each signal one line of
 *                 rank 0, which waits as above and times its k reads (the
 *                 linear barrier's root, the n-way rounds), then releases
 *                 them
 *
 * Every iteration is timed alone (two clock reads: the clock point says what
 * they add), prtt points on rank 0, orecv points on the reader; each point's
 * median over its iterations goes out as one JSON line.
 *
 *   railgauge run -n 2 -- railgauge-bench flagprtt --json
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/json.h"
#include "bench.h"
#include "base/stats.h"
#include "base/timer.h"
#include "boot/boot.h"
#include "coll/flags.h"
#include "xport/xport.h"

enum { RG__EXIT_OK = 0, RG__EXIT_FAIL = 1, RG__EXIT_USAGE = 2 };

#define RG__TIMEOUT_NS 10000000000ull  /* a round's wait: a peer 10 s late is gone */

typedef struct rg__fopts {
    int         n;          /* signals of PRTT(n,*) and the largest orecv k */
    long        iters;      /* iterations per batch (orecv: per point) */
    long        warmup;     /* untimed iterations before each point */
    int         max_k;      /* readers' writers up to this (0: ranks - 1) */
    int         json;
    const char *out_path;
} rg__fopts_t;

/* One point: every rank's plan, the layout of this rank's, and the result. */
typedef struct rg__fpoint {
    const char     *kind;      /* "clock", "call", "prtt", "exchange", "orecv" */
    int             n, writers;
    double          d_us;      /* prtt: the sender's delay; orecv: the reader's wait */
    rg_coll_plan_t *plans;     /* P plans */
    rg_coll_flags_t flags;
    int             laid_out;
} rg__fpoint_t;

static void rg__usage(FILE *f)
{
    fprintf(f,
        "usage: railgauge-bench flagprtt [options]   (2 or more ranks on one host)\n"
        "\n"
        "PRTT round trips of signals over the barrier's shared-memory flags\n"
        "(coll/flags.c), for the flag model (docs/coll.md): PRTT(1,0), PRTT(n,0) with\n"
        "n signals in one round, PRTT(n,d) with n rounds d apart, the reading of k\n"
        "written lines from one writer and, with more ranks, from k writers.\n"
        "  --n N            signals of PRTT(n,*), largest k of one writer (default 8)\n"
        "  --iterations N   timed round trips (reads) per point (default 5000)\n"
        "  --warmup N       untimed round trips before each point (default 200)\n"
        "  --max-k K        k writers up to K (default: ranks - 1)\n"
        "  --json           JSON Lines (a header, one line per point, a footer)\n"
        "  --out FILE       write them to FILE instead of standard output\n");
}

static const rg_bench_optdef_t rg__fopts[] = {
    RG_BOPT("n", INT, rg__fopts_t, n, 2, 64, NULL),
    RG_BOPT("iterations", LONG, rg__fopts_t, iters, 1, 10000000, NULL),
    RG_BOPT("warmup", LONG, rg__fopts_t, warmup, 0, 10000000, NULL),
    RG_BOPT("max-k", INT, rg__fopts_t, max_k, 1, 4095, NULL),
    RG_BOPT("json", FLAG, rg__fopts_t, json, 0, 0, NULL),
    RG_BOPT("out", STRING, rg__fopts_t, out_path, 0, 0, NULL),
};

static int rg__parse_args(int argc, char **argv, rg__fopts_t *o)
{
    int rc;

    memset(o, 0, sizeof(*o));
    o->n = 8;
    o->iters = 5000;
    o->warmup = 200;
    rc = rg_bench_getopt(argc, argv, rg__fopts, sizeof(rg__fopts) / sizeof(rg__fopts[0]), o,
                         "railgauge-bench flagprtt", rg__usage);
    if (rc == 0 && o->out_path != NULL) {
        o->json = 1;
    }
    return rc;
}

/* ---- plans -------------------------------------------------------------- */

/* Appends a round to pl: ns sends to `to` (each a line of its own), nr
 * receives from each of the nfrom ranks in `from`. */
static rg_status_t rg__round(rg_coll_plan_t *pl, int to, uint32_t ns, const int *from,
                             uint32_t nfrom, uint32_t nr, rg_err_t *err)
{
    rg_coll_round_t *rd;
    uint32_t         need = pl->npeers + ns + nfrom * nr, i, j;

    if (pl->nrounds == pl->rounds_cap) {
        uint32_t         cap = pl->rounds_cap ? 2 * pl->rounds_cap : 8;
        rg_coll_round_t *nrds = realloc(pl->rounds, cap * sizeof(*nrds));
        if (nrds == NULL) {
            return rg_err_set(err, RG_ERR_NOMEM, "flagprtt: no memory for a plan");
        }
        pl->rounds = nrds;
        pl->rounds_cap = cap;
    }
    if (need > pl->peers_cap) {
        uint32_t cap = need < 16 ? 16 : 2 * need;
        int32_t *np = realloc(pl->peers, cap * sizeof(*np));
        if (np == NULL) {
            return rg_err_set(err, RG_ERR_NOMEM, "flagprtt: no memory for a plan");
        }
        pl->peers = np;
        pl->peers_cap = cap;
    }
    rd = &pl->rounds[pl->nrounds++];
    rd->send_off = pl->npeers;
    rd->nsend = ns;
    for (i = 0; i < ns; i++) {
        pl->peers[pl->npeers++] = to;
    }
    rd->recv_off = pl->npeers;
    rd->nrecv = nfrom * nr;
    for (i = 0; i < nfrom; i++) {
        for (j = 0; j < nr; j++) {
            pl->peers[pl->npeers++] = from[i];
        }
    }
    if (rd->nsend + rd->nrecv > pl->max_ops) {
        pl->max_ops = rd->nsend + rd->nrecv;
    }
    return RG_OK;
}

static void rg__plans_free(rg_coll_plan_t *plans, int P)
{
    int q;

    for (q = 0; plans != NULL && q < P; q++) {
        rg_coll_plan_fini(&plans[q]);
    }
    free(plans);
}

/* The plans of a point on P ranks (ranks that take no part have none). */
static rg_status_t rg__point_plans(rg__fpoint_t *pt, int P, rg_err_t *err)
{
    rg_status_t st = RG_OK;
    int         zero = 0, one = 1, q, *ws = NULL;
    uint32_t    i;

    pt->plans = calloc((size_t)P, sizeof(*pt->plans));
    if (pt->plans == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "flagprtt: no memory for %d plans", P);
    }
    for (q = 0; q < P; q++) {
        rg_coll_plan_init(&pt->plans[q]);
        pt->plans[q].P = P;
        pt->plans[q].rank = q;
    }
    if (strcmp(pt->kind, "exchange") == 0) {
        /* One round: each of ranks 0 and 1 signals the other and waits. */
        st = rg__round(&pt->plans[0], 1, 1, &one, 1, 1, err);
        if (st == RG_OK) {
            st = rg__round(&pt->plans[1], 0, 1, &zero, 1, 1, err);
        }
    } else if (strcmp(pt->kind, "prtt") == 0 && pt->d_us > 0) {
        /* n rounds of one signal, then the answer. */
        for (i = 0; st == RG_OK && i < (uint32_t)pt->n; i++) {
            st = rg__round(&pt->plans[0], 1, 1, NULL, 0, 0, err);
            if (st == RG_OK) {
                st = rg__round(&pt->plans[1], 0, 0, &zero, 1, 1, err);
            }
        }
        if (st == RG_OK) {
            st = rg__round(&pt->plans[0], 0, 0, &one, 1, 1, err);
        }
        if (st == RG_OK) {
            st = rg__round(&pt->plans[1], 0, 1, NULL, 0, 0, err);
        }
    } else if (strcmp(pt->kind, "prtt") == 0 ||
               (strcmp(pt->kind, "orecv") == 0 && pt->writers == 1)) {
        /* One round of n signals, then the answer. */
        st = rg__round(&pt->plans[0], 1, (uint32_t)pt->n, &one, 0, 0, err);
        if (st == RG_OK) {
            st = rg__round(&pt->plans[1], 0, 0, &zero, 1, (uint32_t)pt->n, err);
        }
        if (st == RG_OK) {
            st = rg__round(&pt->plans[0], 0, 0, &one, 1, 1, err);
        }
        if (st == RG_OK) {
            st = rg__round(&pt->plans[1], 0, 1, NULL, 0, 0, err);
        }
    } else if (strcmp(pt->kind, "orecv") == 0) {
        /* k:1 then 1:k: ranks 1..k signal rank 0, which releases them. */
        ws = malloc((size_t)pt->writers * sizeof(*ws));
        if (ws == NULL) {
            st = rg_err_set(err, RG_ERR_NOMEM, "flagprtt: no memory");
        }
        for (q = 1; st == RG_OK && q <= pt->writers; q++) {
            ws[q - 1] = q;
            st = rg__round(&pt->plans[q], 0, 1, NULL, 0, 0, err);
            if (st == RG_OK) {
                st = rg__round(&pt->plans[q], 0, 0, &zero, 1, 1, err);
            }
        }
        if (st == RG_OK) {
            st = rg__round(&pt->plans[0], 0, 0, ws, (uint32_t)pt->writers, 1, err);
        }
        /* The release: one round of one signal to each writer. */
        if (st == RG_OK) {
            rg_coll_plan_t  *pl = &pt->plans[0];
            rg_coll_round_t *rd;

            st = rg__round(pl, 0, (uint32_t)pt->writers, NULL, 0, 0, err);
            rd = st == RG_OK ? &pl->rounds[pl->nrounds - 1] : NULL;
            for (i = 0; rd != NULL && i < rd->nsend; i++) {
                pl->peers[rd->send_off + i] = ws[i];
            }
        }
        free(ws);
    }
    return st;
}

/* ---- the run ------------------------------------------------------------ */

typedef struct rg__frun {
    const rg__fopts_t *o;
    rg_boot_t         *boot;
    int                rank, P;
    void              *seg;
    size_t             seg_len;
    uint64_t           epoch;       /* the same on every rank */
    double             spin_us;     /* rank 0: the delays' measured length, summed */
    long               nspin;
    double            *samples;
    rg_err_t           err;
} rg__frun_t;

static void rg__spin_us(double us)
{
    uint64_t until = rg_time_mono_ns() + (uint64_t)(us * 1e3);

    while (rg_time_mono_ns() < until) {
    }
}

static rg_status_t rg__run(rg__frun_t *fr, rg__fpoint_t *pt, uint32_t first, uint32_t end)
{
    uint32_t round = 0;
    int      peer = -1;

    if (rg_coll_flags_run_range(&pt->flags, &pt->plans[fr->rank], first, end, fr->epoch,
                                RG__TIMEOUT_NS, &round, &peer) != RG_OK) {
        return rg_err_set(&fr->err, RG_ERR_TIMEOUT, "flagprtt %s n=%d, rank %d, round %u: "
                          "rank %d did not signal within 10 s", pt->kind, pt->n, fr->rank,
                          round, peer);
    }
    return RG_OK;
}

/* One round trip of a prtt point (every rank; idle ones return at once). */
static rg_status_t rg__prtt_once(rg__frun_t *fr, rg__fpoint_t *pt)
{
    const rg_coll_plan_t *pl = &pt->plans[fr->rank];
    rg_status_t           st = RG_OK;
    uint32_t              r;

    if (pt->d_us > 0 && fr->rank == 0) {
        for (r = 0; r < pl->nrounds && st == RG_OK; r++) {
            if (r > 0 && r < (uint32_t)pt->n) {
                uint64_t t0 = rg_time_mono_ns();

                rg__spin_us(pt->d_us);
                fr->spin_us += (double)(rg_time_mono_ns() - t0) * 1e-3;
                fr->nspin++;
            }
            st = rg__run(fr, pt, r, r + 1);
        }
        return st;
    }
    return rg__run(fr, pt, 0, pl->nrounds);
}

/* A prtt point: rank 0's median over iterations, each timed alone (a
 * median shrugs off the iterations that the scheduler interrupts, where a
 * mean over a batch would not). */
static rg_status_t rg__prtt_point(rg__frun_t *fr, rg__fpoint_t *pt, double *median_us,
                                  double *min_us)
{
    rg_stats_t s;
    long       i;
    uint64_t   t0;

    if (pt->plans[fr->rank].nrounds == 0) {
        /* Not in this point: off the CPUs (to the next boot barrier). */
        fr->epoch += (uint64_t)(fr->o->warmup + fr->o->iters);
        *median_us = *min_us = NAN;
        return RG_OK;
    }
    for (i = 0; i < fr->o->warmup; i++) {
        fr->epoch++;
        if (rg__prtt_once(fr, pt) != RG_OK) {
            return RG_ERR_TIMEOUT;
        }
    }
    for (i = 0; i < fr->o->iters; i++) {
        fr->epoch++;
        t0 = rg_time_mono_ns();
        if (rg__prtt_once(fr, pt) != RG_OK) {
            return RG_ERR_TIMEOUT;
        }
        fr->samples[i] = (double)(rg_time_mono_ns() - t0) * 1e-3;
    }
    if (fr->rank != 0) {
        *median_us = *min_us = NAN;
        return RG_OK;
    }
    if (rg_stats_compute(fr->samples, (size_t)fr->o->iters, &s, &fr->err) != RG_OK) {
        return RG_ERR_INVALID;
    }
    *median_us = s.median;
    *min_us = s.min;
    return RG_OK;
}

/* An orecv point: the reader (rank 1 with one writer, else rank 0) waits
 * wait_us, so every line is written, then times its reads; its median goes to
 * every rank. */
static rg_status_t rg__orecv_point(rg__frun_t *fr, rg__fpoint_t *pt, double *median_us,
                                   double *min_us)
{
    const rg_coll_plan_t *pl = &pt->plans[fr->rank];
    const int             reader = pt->writers == 1 ? 1 : 0;
    double                mine[2] = {NAN, NAN}, *all = NULL;
    rg_stats_t            s;
    rg_status_t           st = RG_OK;
    long                  i, n = fr->o->warmup / 4 + fr->o->iters;
    uint64_t              ta, tb;

    if (pl->nrounds == 0) {
        fr->epoch += (uint64_t)n;
        n = 0;
    }
    for (i = 0; i < n && st == RG_OK; i++) {
        fr->epoch++;
        if (fr->rank != reader) {
            st = rg__run(fr, pt, 0, pl->nrounds);
            continue;
        }
        /* The reader's receives are its round 0 (with one writer) or 0 (k
         * writers); its answer or release the round after. */
        rg__spin_us(pt->d_us);
        ta = rg_time_mono_ns();
        st = rg__run(fr, pt, 0, 1);
        tb = rg_time_mono_ns();
        if (st == RG_OK) {
            st = rg__run(fr, pt, 1, pl->nrounds);
        }
        if (i >= fr->o->warmup / 4) {
            fr->samples[i - fr->o->warmup / 4] = (double)(tb - ta) * 1e-3;
        }
    }
    if (st != RG_OK) {
        return st;
    }
    if (fr->rank == reader &&
        rg_stats_compute(fr->samples, (size_t)fr->o->iters, &s, &fr->err) == RG_OK) {
        mine[0] = s.median;
        mine[1] = s.min;
    }
    all = malloc((size_t)fr->P * sizeof(mine));
    if (all == NULL) {
        return rg_err_set(&fr->err, RG_ERR_NOMEM, "flagprtt: no memory");
    }
    st = rg_boot_allgather(fr->boot, mine, sizeof(mine), all, &fr->err);
    *median_us = all[2 * reader];
    *min_us = all[2 * reader + 1];
    free(all);
    return st;
}

/* clock and call: rank 0 alone. */
static rg_status_t rg__local_point(rg__frun_t *fr, rg__fpoint_t *pt, double *median_us,
                                   double *min_us)
{
    rg_stats_t s;
    long       i;
    uint64_t   ta, tb;

    *median_us = *min_us = NAN;
    if (fr->rank != 0) {
        return RG_OK;
    }
    for (i = 0; i < fr->o->iters; i++) {
        ta = rg_time_mono_ns();
        if (strcmp(pt->kind, "call") == 0) {
            rg__run(fr, pt, 0, 0);
        }
        tb = rg_time_mono_ns();
        fr->samples[i] = (double)(tb - ta) * 1e-3;
    }
    if (rg_stats_compute(fr->samples, (size_t)fr->o->iters, &s, &fr->err) != RG_OK) {
        return RG_ERR_INVALID;
    }
    *median_us = s.median;
    *min_us = s.min;
    return RG_OK;
}

static rg_status_t rg__segment(rg__frun_t *fr, size_t len)
{
    rg_status_t st = rg_bench_segment_map(fr->boot, fr->rank, fr->P, "flagprtt", len, &fr->seg,
                                          &fr->err);

    if (st == RG_OK) {
        fr->seg_len = len;
    }
    return st;
}

static void rg__write_point(FILE *out, const rg__fpoint_t *pt, const rg__fopts_t *o,
                            double median_us, double min_us, double d_actual_us)
{
    char      line[512];
    rg_json_t js;
    rg_err_t  err;

    rg_json_init(&js, line, sizeof(line));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "type", "flag");
    rg_json_kv_string(&js, "kind", pt->kind);
    rg_json_kv_int(&js, "n", pt->n);
    rg_json_kv_int(&js, "writers", pt->writers);
    rg_json_kv_double(&js, "d_us", pt->d_us);
    rg_json_kv_double(&js, "d_actual_us", d_actual_us);
    rg_json_kv_int(&js, "iterations", o->iters);
    rg_json_kv_double(&js, "median_us", median_us);
    rg_json_kv_double(&js, "min_us", min_us);
    rg_json_object_end(&js);
    if (rg_json_write_line(&js, out, &err) != RG_OK) {
        fprintf(stderr, "railgauge-bench flagprtt: %s\n", rg_err_message(&err));
    }
}

/* The points, in the order they run (d is filled in from PRTT(1,0) as
 * they run), each with its plans and its flags laid out; *len_p grows to
 * the largest segment a point needs. */
static rg_status_t rg__make_points(rg__frun_t *fr, int max_k, rg__fpoint_t **pts_p,
                                   size_t *npts_p, size_t *len_p)
{
    const rg__fopts_t *o = fr->o;
    rg__fpoint_t      *pts;
    size_t             n = 0, i;
    int                k;

    pts = calloc((size_t)(6 + o->n + max_k), sizeof(*pts));
    if (pts == NULL) {
        rg_err_set(&fr->err, RG_ERR_NOMEM, "flagprtt: no memory for %d points", 5 + o->n + max_k);
        return RG_ERR_NOMEM;
    }
    pts[n++] = (rg__fpoint_t){.kind = "clock", .n = 0, .writers = 0};
    pts[n++] = (rg__fpoint_t){.kind = "call", .n = 0, .writers = 0};
    pts[n++] = (rg__fpoint_t){.kind = "prtt", .n = 1, .writers = 1};
    pts[n++] = (rg__fpoint_t){.kind = "prtt", .n = o->n, .writers = 1};
    pts[n++] = (rg__fpoint_t){.kind = "exchange", .n = 1, .writers = 1};
    pts[n++] = (rg__fpoint_t){.kind = "prtt", .n = o->n, .writers = 1, .d_us = 1};
    for (k = 1; k <= o->n; k++) {
        pts[n++] = (rg__fpoint_t){.kind = "orecv", .n = k, .writers = 1, .d_us = 1};
    }
    for (k = 2; k <= max_k; k++) {
        pts[n++] = (rg__fpoint_t){.kind = "orecv", .n = 1, .writers = k, .d_us = 1};
    }
    *pts_p  = pts;  /* the caller frees them, laid out or not */
    *npts_p = n;
    for (i = 0; i < n; i++) {
        rg_status_t st = rg__point_plans(&pts[i], fr->P, &fr->err);

        if (st == RG_OK) {
            st = rg_coll_flags_layout_plans(&pts[i].flags, pts[i].plans, fr->rank, &fr->err);
        }
        if (st != RG_OK) {
            return st;
        }
        pts[i].laid_out = 1;
        if (rg_coll_flags_bytes(&pts[i].flags, fr->P) > *len_p) {
            *len_p = rg_coll_flags_bytes(&pts[i].flags, fr->P);
        }
    }
    return RG_OK;
}

/* Runs one point on every rank and writes its line (rank 0); the point
 * PRTT(1,0) sets *prtt1 on every rank to rank 0's median. */
static rg_status_t rg__run_point(rg__frun_t *fr, rg__fpoint_t *pt, double *prtt1, FILE *out)
{
    const rg__fopts_t *o = fr->o;
    double             med = NAN, mn = NAN;
    rg_status_t        st;

    /* The engine spins as a barrier of the ranks that take part would
     * (the others sleep in the boot barrier meanwhile). */
    rg_coll_flags_attach(&pt->flags, fr->seg, pt->writers + 1);
    /* d: PRTT(1,0) for the sender's delay (the paper's choice), twice
     * that for the reader's wait; every rank learns rank 0's. */
    if (pt->d_us > 0) {
        pt->d_us = strcmp(pt->kind, "prtt") == 0 ? *prtt1 : 2 * *prtt1;
    }
    st = rg_boot_barrier(fr->boot, &fr->err);
    if (st != RG_OK) {
        return st;
    }
    fr->spin_us = 0;
    fr->nspin = 0;
    if (strcmp(pt->kind, "prtt") == 0 || strcmp(pt->kind, "exchange") == 0) {
        st = rg__prtt_point(fr, pt, &med, &mn);
    } else if (strcmp(pt->kind, "orecv") == 0) {
        st = rg__orecv_point(fr, pt, &med, &mn);
    } else {
        st = rg__local_point(fr, pt, &med, &mn);
    }
    if (st != RG_OK) {
        return st;
    }
    if (strcmp(pt->kind, "prtt") == 0 && pt->n == 1) {
        double all_m[2] = {med, 0}, *got = malloc((size_t)fr->P * sizeof(all_m));

        if (got == NULL) {
            return rg_err_set(&fr->err, RG_ERR_NOMEM, "flagprtt: no memory to share PRTT(1,0)");
        }
        st = rg_boot_allgather(fr->boot, all_m, sizeof(all_m), got, &fr->err);
        if (st != RG_OK) {
            free(got);
            return st;
        }
        *prtt1 = got[0];
        free(got);
    }
    if (fr->rank == 0) {
        if (o->json) {
            rg__write_point(out, pt, o, med, mn,
                            fr->nspin > 0 ? fr->spin_us / (double)fr->nspin : 0.0);
        } else {
            printf("%-6s n=%-3d writers=%-3d d=%8.3f us  median %8.4f us  min %8.4f us\n",
                   pt->kind, pt->n, pt->writers, pt->d_us, med, mn);
        }
    }
    return RG_OK;
}

int rg_bench_flagprtt_main(int argc, char **argv)
{
    rg__fopts_t   o;
    rg__frun_t    fr;
    rg__fpoint_t *pts = NULL;
    FILE         *out = stdout;
    size_t        npts = 0, i, len = 64;
    double        prtt1 = NAN;
    int           rc, max_k;
    long          cap;

    memset(&fr, 0, sizeof(fr));
    rc = rg__parse_args(argc, argv, &o);
    if (rc != 0) {
        return rc < 0 ? 0 : rc;
    }
    fr.o = &o;
    rc = RG__EXIT_FAIL;
    if (rg_boot_init(&fr.boot, &fr.err) != RG_OK) {
        goto out;
    }
    fr.rank = rg_boot_rank(fr.boot);
    fr.P = rg_boot_size(fr.boot);
    if (fr.P < 2) {
        rg_err_set(&fr.err, RG_ERR_INVALID, "flagprtt needs at least 2 ranks on one host: "
                   "railgauge run -n 2 -- railgauge-bench flagprtt");
        rc = RG__EXIT_USAGE;
        goto out;
    }
    max_k = o.max_k > 0 ? o.max_k : fr.P - 1;
    if (max_k > fr.P - 1) {
        rg_err_set(&fr.err, RG_ERR_INVALID, "--max-k %d: only %d ranks besides rank 0", max_k,
                   fr.P - 1);
        rc = fr.rank == 0 ? RG__EXIT_USAGE : -RG__EXIT_USAGE;
        goto out;
    }
    if (rg__make_points(&fr, max_k, &pts, &npts, &len) != RG_OK) {
        goto out;
    }
    cap = o.iters;
    fr.samples = malloc((size_t)cap * sizeof(double));
    if (fr.samples == NULL) {
        rg_err_set(&fr.err, RG_ERR_NOMEM, "flagprtt: no memory for %ld samples", cap);
        goto out;
    }
    if (rg__segment(&fr, len) != RG_OK) {
        goto out;
    }
    if (fr.rank == 0 && o.out_path != NULL && (out = fopen(o.out_path, "w")) == NULL) {
        rg_err_set_errno(&fr.err, RG_ERR_IO, errno, "cannot open '%s' for writing",
                         o.out_path);
        out = stdout;
        goto out;
    }
    if (fr.rank == 0 && o.json) {
        fprintf(out, "{\"type\":\"header\",\"pattern\":\"flagprtt\",\"engine\":\"flags\","
                "\"P\":%d,\"cpus\":%ld,\"n\":%d,\"iterations\":%ld,\"warmup\":%ld}\n",
                fr.P, sysconf(_SC_NPROCESSORS_ONLN), o.n, o.iters, o.warmup);
    }
    for (i = 0; i < npts; i++) {
        if (rg__run_point(&fr, &pts[i], &prtt1, out) != RG_OK) {
            goto out;
        }
    }
    if (rg_boot_barrier(fr.boot, &fr.err) != RG_OK) {
        goto out;
    }
    if (fr.rank == 0 && o.json) {
        fprintf(out, "{\"type\":\"footer\",\"status\":\"complete\",\"points\":%zu}\n", npts);
    }
    rc = RG__EXIT_OK;
    if (fr.rank == 0 && (fflush(out) != 0 || ferror(out))) {
        rg_err_set(&fr.err, RG_ERR_IO, "flagprtt: writing the output failed");
        rc = RG__EXIT_FAIL;
    }
out:
    if (rc > RG__EXIT_OK) {
        fprintf(stderr, "railgauge-bench flagprtt: rank %d: %s\n", fr.rank,
                rg_err_message(&fr.err));
    }
    if (out != stdout) {
        fclose(out);
    }
    for (i = 0; pts != NULL && i < npts; i++) {
        if (pts[i].laid_out) {
            rg_coll_flags_fini(&pts[i].flags);
        }
        rg__plans_free(pts[i].plans, fr.P);
    }
    if (fr.seg != NULL) {
        munmap(fr.seg, fr.seg_len);
    }
    free(pts);
    free(fr.samples);
    rg_boot_fini(fr.boot);
    return rc < 0 ? -rc : rc;
}
