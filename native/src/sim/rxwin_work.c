/*
 * railgauge: the receive-window workloads as generated simulator schedules,
 * and the runtime's window settings for the simulator (rxwin_work.h).
 */
#include "sim/rxwin_work.h"
#include "base/grid.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const rg__rxwork_names[] = {"alltoall", "halo2d", "halo3d", "incast",
                                               "mix"};

int rg_sim_rxwork_pattern(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < 5; i++) {
        if (strcmp(name, rg__rxwork_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

const char *rg_sim_rxwork_pattern_name(int pattern)
{
    return pattern >= 0 && pattern < 5 ? rg__rxwork_names[pattern] : "?";
}

/* ---- the grid, as railgauge-bench rxwin builds it ------------------------ */

/* The neighbours of rank in the periodic grid, in the benchmark's order:
 * per dimension the lower, then the upper one, without itself or repeats. */
static uint32_t rg__rxwork_neighbours(const int *dims, int nd, int rank, int32_t *nb)
{
    int      c[3] = {0, 0, 0}, d, k, r = rank, peer, j, dup;
    uint32_t n = 0;

    for (d = 0; d < nd; d++) {
        c[d] = r % dims[d];
        r /= dims[d];
    }
    for (d = 0; d < nd; d++) {
        for (k = -1; k <= 1; k += 2) {
            int cc[3] = {c[0], c[1], c[2]};

            cc[d] = (c[d] + k + dims[d]) % dims[d];
            peer  = 0;
            for (j = nd - 1; j >= 0; j--) {
                peer = peer * dims[j] + cc[j];
            }
            for (j = 0, dup = 0; j < (int)n; j++) {
                dup |= nb[j] == peer;
            }
            if (peer != rank && !dup) {
                nb[n++] = peer;
            }
        }
    }
    return n;
}

/* ---- decoding an operation's index ---------------------------------------- */

typedef struct rg__rxpos {
    uint32_t it, slot, rank;
    uint64_t j;     /* the operation's place among its rank's in the phase */
    uint64_t base;  /* the index of the rank's calc of the phase */
    uint32_t nrecv, nsend;
} rg__rxpos_t;

/* a / b by a multiplication with 1/b (inv) and a correction, so exact:
 * decoding runs several times per event, and 64-bit divisions were its
 * largest cost. */
static inline uint64_t rg__rxwork_div(uint64_t a, uint64_t b, double inv)
{
    uint64_t q = (uint64_t)((double)a * inv);

    while (q * b > a) {
        q--;
    }
    while ((q + 1) * b <= a) {
        q++;
    }
    return q;
}

static void rg__rxwork_decode(const rg_sim_rxwork_t *w, uint64_t i, rg__rxpos_t *p)
{
    const rg_sim_rxwork_kind_t *k;
    uint64_t                    ptot = w->pbase[w->period], per, rem, q;
    uint32_t                    slot = 0;

    per = rg__rxwork_div(i, ptot, w->inv_ptot);
    rem = i - per * ptot;
    while (rem >= w->pbase[slot + 1]) {
        slot++;
    }
    rem -= w->pbase[slot];
    k = &w->kinds[slot];
    p->it   = (uint32_t)(per * w->period + slot);
    p->slot = slot;
    if (rem < k->ops0) {
        p->rank  = 0;
        p->j     = rem;
        p->nrecv = k->nrecv0;
        p->nsend = k->nsend0;
    } else {
        q        = rg__rxwork_div(rem - k->ops0, k->ops, w->inv_ops[slot]);
        p->rank  = (uint32_t)(1 + q);
        p->j     = rem - k->ops0 - q * k->ops;
        p->nrecv = k->nrecv;
        p->nsend = k->nsend;
    }
    p->base = i - p->j;
}

/* The index of rank's calc in phase it. */
static uint64_t rg__rxwork_calc(const rg_sim_rxwork_t *w, uint32_t it, uint32_t rank)
{
    uint32_t                    slot = it % w->period;
    const rg_sim_rxwork_kind_t *k    = &w->kinds[slot];

    return (uint64_t)(it / w->period) * w->pbase[w->period] + w->pbase[slot] +
           (rank == 0 ? 0 : k->ops0 + (uint64_t)(rank - 1) * k->ops);
}

static rg_sim_op_t rg__rxwork_op(const rg_sim_sched_t *s, size_t i)
{
    const rg_sim_rxwork_t *w = s->gen_ctx;
    rg__rxpos_t            p;
    rg_sim_op_t            op;
    uint32_t               n = w->spec.nranks, r, x;
    int                    kind;
    uint64_t               k;

    rg__rxwork_decode(w, i, &p);
    r    = p.rank;
    kind = w->kinds[p.slot].kind;
    op   = (rg_sim_op_t){.rank = r, .flags = RG_SIM_OPF_FIRST, .batch = 1,
                         .tag = (int32_t)(p.it * 64u + (uint32_t)kind)};
    if (p.j == 0) {
        op.kind   = RG_SIM_CALC;
        op.tag    = 0;
        op.amount = w->spec.pattern == RG_SIM_RXWORK_MIX
                        ? w->spec.compute_us * (1 + r % 4) / 2 : w->spec.compute_us;
        return op;
    }
    op.amount = w->spec.size;
    if (p.j <= p.nrecv) {
        k       = p.j - 1;
        op.kind = RG_SIM_RECV;
        switch (kind) {
        case RG_SIM_RXWORK_ALLTOALL:
            /* Posted in the order the messages come (rank r - 1 sends to r
             * first); matching is by source and tag, so the order in which
             * receives of different sources are posted changes nothing. */
            x       = r + n - 1 - (uint32_t)k; /* 1 .. 2n - 2 */
            op.peer = (int32_t)(x >= n ? x - n : x);
            break;
        case RG_SIM_RXWORK_HALO2D:
            op.peer = w->nb2[(size_t)r * 6 + k];
            break;
        case RG_SIM_RXWORK_HALO3D:
            op.peer = w->nb3[(size_t)r * 6 + k];
            break;
        default:
            /* Rank 0: message k / (n - 1) of each sender in turn (each
             * sender's receives stay in their order). */
            op.peer = (int32_t)(1 + k - (n - 1) * rg__rxwork_div(k, n - 1, w->inv_n1));
            break;
        }
        return op;
    }
    k       = p.j - 1 - p.nrecv;
    op.kind = RG_SIM_SEND;
    switch (kind) {
    case RG_SIM_RXWORK_ALLTOALL:
        x       = r + 1 + (uint32_t)k; /* each rank starts with another peer */
        op.peer = (int32_t)(x >= n ? x - n : x);
        break;
    case RG_SIM_RXWORK_HALO2D:
        op.peer = w->nb2[(size_t)r * 6 + k];
        break;
    case RG_SIM_RXWORK_HALO3D:
        op.peer = w->nb3[(size_t)r * 6 + k];
        break;
    default:
        op.peer = 0;
        break;
    }
    return op;
}

/* The next phase's calc of the rank at p, as a range of one (or none). */
static uint32_t rg__rxwork_next(const rg_sim_rxwork_t *w, const rg__rxpos_t *p,
                                uint32_t *first_p)
{
    if (p->it + 1 >= w->spec.iters) {
        return 0;
    }
    *first_p = (uint32_t)rg__rxwork_calc(w, p->it + 1, p->rank);
    return 1;
}

static uint32_t rg__rxwork_deps(const rg_sim_sched_t *s, uint32_t op, int ireq,
                                uint32_t *first_p)
{
    const rg_sim_rxwork_t *w = s->gen_ctx;
    rg__rxpos_t            p;

    rg__rxwork_decode(w, op, &p);
    if (p.j == 0) {
        if (ireq) {
            return 0;
        }
        if (p.nrecv + p.nsend == 0) {
            return rg__rxwork_next(w, &p, first_p);
        }
        /* The receives and the first send. */
        *first_p = op + 1;
        return p.nrecv + (p.nsend > 0);
    }
    if (p.j <= p.nrecv) {
        return ireq ? 0 : rg__rxwork_next(w, &p, first_p);
    }
    if (ireq) {
        /* The next send starts once this one started. */
        if (p.j - p.nrecv >= p.nsend) {
            return 0;
        }
        *first_p = op + 1;
        return 1;
    }
    return rg__rxwork_next(w, &p, first_p);
}

static void rg__rxwork_ndeps(const rg_sim_sched_t *s, uint32_t *left)
{
    const rg_sim_rxwork_t *w = s->gen_ctx;
    uint64_t               i = 0, prev0 = 0, prev = 0, j, cnt;
    uint32_t               it, r;

    for (it = 0; it < w->spec.iters; it++) {
        const rg_sim_rxwork_kind_t *k = &w->kinds[it % w->period];
        for (r = 0; r < w->spec.nranks; r++) {
            uint64_t before = r == 0 ? prev0 : prev;
            /* The calc waits for every operation of the rank's previous
             * phase (or for its previous calc where it had none). */
            left[i++] = it == 0 ? 0 : before > 0 ? (uint32_t)before : 1;
            cnt = r == 0 ? k->ops0 : k->ops;
            for (j = 1; j < cnt; j++) {
                left[i++] = 1;
            }
        }
        prev0 = k->ops0 - 1;
        prev  = k->ops - 1;
    }
}

/* ---- building ------------------------------------------------------------- */

static void rg__rxwork_kind(rg_sim_rxwork_t *w, rg_sim_rxwork_kind_t *k, int kind)
{
    uint32_t n = w->spec.nranks;

    memset(k, 0, sizeof(*k));
    k->kind = kind;
    switch (kind) {
    case RG_SIM_RXWORK_ALLTOALL:
        k->nrecv0 = k->nsend0 = k->nrecv = k->nsend = n - 1;
        break;
    case RG_SIM_RXWORK_HALO2D:
        k->nrecv0 = k->nsend0 = k->nrecv = k->nsend = w->nnb2;
        break;
    case RG_SIM_RXWORK_HALO3D:
        k->nrecv0 = k->nsend0 = k->nrecv = k->nsend = w->nnb3;
        break;
    default:
        k->nrecv0 = (n - 1) * w->spec.burst;
        k->nsend  = w->spec.burst;
        break;
    }
    k->ops0  = 1 + (uint64_t)k->nrecv0 + k->nsend0;
    k->ops   = 1 + (uint64_t)k->nrecv + k->nsend;
    k->total = k->ops0 + (uint64_t)(n - 1) * k->ops;
}

static rg_status_t rg__rxwork_grid(rg_sim_rxwork_t *w, int nd, rg_err_t *err)
{
    int32_t **nb = nd == 2 ? &w->nb2 : &w->nb3;
    int      *dims = nd == 2 ? w->dims2 : w->dims3;
    uint32_t  r, cnt = 0;

    *nb = malloc((size_t)w->spec.nranks * 6 * sizeof(int32_t));
    if (*nb == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "rxwin workload: out of memory for %u ranks",
                          w->spec.nranks);
    }
    rg_grid_dims((int)w->spec.nranks, nd, dims);
    for (r = 0; r < w->spec.nranks; r++) {
        uint32_t c = rg__rxwork_neighbours(dims, nd, (int)r, *nb + (size_t)r * 6);
        if (r > 0 && c != cnt) {
            return rg_err_set(err, RG_ERR_INVALID, "rxwin workload: halo%dd: ranks have "
                              "different numbers of neighbours", nd);
        }
        cnt = c;
    }
    *(nd == 2 ? &w->nnb2 : &w->nnb3) = cnt;
    return RG_OK;
}

rg_status_t rg_sim_rxwork_build(rg_sim_rxwork_t *w, rg_sim_sched_t *s,
                                const rg_sim_rxwork_spec_t *spec, rg_err_t *err)
{
    rg_status_t st;
    uint64_t    nops = 0, msgs = 0;
    uint32_t    it, i;
    int         kinds[3];

    memset(w, 0, sizeof(*w));
    rg_sim_sched_init(s, spec->nranks);
    if (spec->pattern < 0 || spec->pattern > RG_SIM_RXWORK_MIX) {
        return rg_err_set(err, RG_ERR_INVALID, "rxwin workload: unknown pattern (known: "
                          "alltoall, halo2d, halo3d, incast, mix)");
    }
    if (spec->nranks < 2 || spec->nranks > RG_SIM_RXWIN_MAX_RANKS) {
        return rg_err_set(err, RG_ERR_RANGE, "rxwin workload: -n %u: the workloads need 2 to "
                          "%d ranks", spec->nranks, RG_SIM_RXWIN_MAX_RANKS);
    }
    if (spec->iters < 1 || spec->iters > 1000000 || spec->burst < 1 ||
        spec->burst > 1000000) {
        return rg_err_set(err, RG_ERR_RANGE, "rxwin workload: --iters %u, --burst %u: each "
                          "must be 1 to 1000000", spec->iters, spec->burst);
    }
    if (!(spec->size >= 24 && spec->size <= (double)(1 << 26)) ||
        spec->size != floor(spec->size)) {
        return rg_err_set(err, RG_ERR_RANGE, "rxwin workload: --size %g: must be a whole "
                          "number of bytes from 24 to 64 MiB", spec->size);
    }
    if (!(spec->compute_us <= 1e7) || isnan(spec->compute_us)) {
        return rg_err_set(err, RG_ERR_RANGE, "rxwin workload: --compute-us %g: must be 0 to "
                          "1e7", spec->compute_us);
    }
    w->spec = *spec;
    if (w->spec.compute_us < 0) {
        w->spec.compute_us = spec->pattern == RG_SIM_RXWORK_MIX ? 200.0 : 0.0;
    }
    if ((st = rg__rxwork_grid(w, 2, err)) != RG_OK ||
        (st = rg__rxwork_grid(w, 3, err)) != RG_OK) {
        rg_sim_rxwork_fini(w);
        return st;
    }
    if (spec->pattern == RG_SIM_RXWORK_MIX) {
        w->period = 3;
        kinds[0]  = RG_SIM_RXWORK_ALLTOALL;
        kinds[1]  = RG_SIM_RXWORK_HALO2D;
        kinds[2]  = RG_SIM_RXWORK_INCAST;
    } else {
        w->period = 1;
        kinds[0]  = spec->pattern;
    }
    for (i = 0; i < w->period; i++) {
        rg__rxwork_kind(w, &w->kinds[i], kinds[i]);
        w->pbase[i + 1] = w->pbase[i] + w->kinds[i].total;
        w->inv_ops[i]   = 1.0 / (double)w->kinds[i].ops;
    }
    w->inv_ptot = 1.0 / (double)w->pbase[w->period];
    w->inv_n1   = 1.0 / (double)(spec->nranks - 1);
    for (it = 0; it < spec->iters; it++) {
        const rg_sim_rxwork_kind_t *k = &w->kinds[it % w->period];
        nops += k->total;
        msgs += k->nsend0 + (uint64_t)(spec->nranks - 1) * k->nsend;
    }
    if (nops >= UINT32_MAX / 2) {
        rg_sim_rxwork_fini(w);
        return rg_err_set(err, RG_ERR_RANGE, "rxwin workload: %s on %u ranks for %u phases "
                          "is %llu operations, more than %u to simulate; use fewer phases "
                          "(--iters) or ranks", rg__rxwork_names[spec->pattern], spec->nranks,
                          spec->iters, (unsigned long long)nops, UINT32_MAX / 2);
    }
    w->messages  = msgs;
    s->gen       = RG_SIM_GEN_HOOKS;
    s->nops      = (size_t)nops;
    s->gen_ctx   = w;
    s->gen_op    = rg__rxwork_op;
    s->gen_deps  = rg__rxwork_deps;
    s->gen_ndeps = rg__rxwork_ndeps;
    return RG_OK;
}

void rg_sim_rxwork_fini(rg_sim_rxwork_t *w)
{
    free(w->nb2);
    free(w->nb3);
    w->nb2 = w->nb3 = NULL;
}

/* ---- the runtime's settings ----------------------------------------------- */

/* A count of buffers (1 .. RG_SIM_RXWIN_MAX) at s up to ':' or the end. */
static rg_status_t rg__rxwin_count(const char *text, const char *s, const char *what,
                                   int *n_p, const char **end_p, rg_err_t *err)
{
    char *end;
    long  v;

    if (*s < '0' || *s > '9') {
        return rg_err_set(err, RG_ERR_INVALID, "--window '%s': %s must be a number of "
                          "buffers", text, what);
    }
    errno = 0;
    v     = strtol(s, &end, 10);
    if (errno != 0 || (*end != '\0' && *end != ':') || v < 1 || v > RG_SIM_RXWIN_MAX) {
        return rg_err_set(err, RG_ERR_INVALID, "--window '%s': %s must be 1 to %d buffers",
                          text, what, RG_SIM_RXWIN_MAX);
    }
    *n_p   = (int)v;
    *end_p = end;
    return RG_OK;
}

rg_status_t rg_sim_rxwin_parse(const char *text, rg_sim_rxwin_t *w, double eager_limit,
                               rg_err_t *err)
{
    rg_sim_rxwin_t x;
    const char    *p;
    rg_status_t    st;

    memset(&x, 0, sizeof(x));
    if (text == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "--window is missing (fixed:N or "
                          "adaptive:W_init:W_max[:reclaim])");
    }
    if (strncmp(text, "fixed:", 6) == 0) {
        x.mode = RG_SIM_RXWIN_FIXED;
        if ((st = rg__rxwin_count(text, text + 6, "N of fixed:N", &x.w_init, &p, err)) !=
            RG_OK) {
            return st;
        }
        if (*p != '\0') {
            return rg_err_set(err, RG_ERR_INVALID, "--window '%s': fixed takes one number "
                              "(fixed:N)", text);
        }
        x.w_max = x.w_init;
    } else if (strncmp(text, "adaptive:", 9) == 0) {
        x.mode = RG_SIM_RXWIN_ADAPTIVE;
        st     = rg__rxwin_count(text, text + 9, "W_init", &x.w_init, &p, err);
        if (st == RG_OK && *p != ':') {
            return rg_err_set(err, RG_ERR_INVALID, "--window '%s': adaptive needs W_init and "
                              "W_max (adaptive:W_init:W_max[:reclaim])", text);
        }
        if (st == RG_OK) {
            st = rg__rxwin_count(text, p + 1, "W_max", &x.w_max, &p, err);
        }
        if (st != RG_OK) {
            return st;
        }
        if (*p == ':') {
            if (strcmp(p + 1, "reclaim") != 0) {
                return rg_err_set(err, RG_ERR_INVALID, "--window '%s': unknown option '%s' "
                                  "after W_max (known: reclaim)", text, p + 1);
            }
            x.reclaim = 1;
        }
        if (x.w_init > x.w_max) {
            return rg_err_set(err, RG_ERR_INVALID, "--window '%s': W_init %d is above W_max "
                              "%d", text, x.w_init, x.w_max);
        }
    } else {
        return rg_err_set(err, RG_ERR_INVALID, "--window '%s': must be fixed:N or "
                          "adaptive:W_init:W_max[:reclaim]", text);
    }
    if (!(eager_limit >= 0 && eager_limit <= (double)(1 << 30))) {
        return rg_err_set(err, RG_ERR_RANGE, "--eager-limit %g: must be 0 to 1 GiB",
                          eager_limit);
    }
    x.first_limit  = x.w_init / 2 > 0 ? x.w_init / 2 : 1;
    x.quiet_us     = 100000.0;  /* RG_PROTO_RXWIN_QUIET_NS: 100 ms */
    x.rnr_timer_us = 1000.0;    /* RG_PROTO_RNR_TIMER_MS: 1 */
    x.eager_limit  = eager_limit;
    /* What the runtime counts (proto/, LP64): a window buffer is its
     * descriptor (rg_xreq_t, 88 bytes, and the pool's 24) + the 56-byte
     * header + the eager limit; an unexpected message its 96-byte record +
     * the payload; a staging copy its 160-byte descriptor + the capacity of
     * its class (56 + 256, 56 + 4096, 56 + eager limit) for a 16-byte eager
     * header + payload; 64 free copies per class stay cached. */
    x.buf_bytes    = 88 + 24 + 56 + (uint64_t)eager_limit;
    x.uxm_bytes    = 96;
    x.stage_desc   = 160;
    x.stage_hdr    = 16;
    x.stage_cap[0] = 56 + 256;
    x.stage_cap[1] = 56 + 4096;
    x.stage_cap[2] = 56 + (uint64_t)eager_limit;
    x.stage_cache  = 64;
    *w = x;
    return RG_OK;
}
