/*
 * railgauge: the simulator's rails model (params.rails; docs/sim.md "Rails";
 * the runtime's rails/ layer): each rank's NIC becomes nrails rails, each
 * with its own send and receive gaps and parameters, and every message is
 * placed by the policy, whole on one rail or cut into stripes, one per rail.
 * Rails run under LogGOPS, without LoP or the receive window. The rails from
 * text (a G list, a rails.json) are rails.c's.
 */
#include "sim/engine_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NIL RG__SIM_NIL

/* A message with rails arrives as this instead of RG__SIM_EV_ARRIVE; the
 * type's bits above RG__SIM_EV_BITS carry its placement record. */
enum { RL_EV_ARRIVE = RG__SIM_EV_MODEL };
#define RL_SLOT_MAX RG__SIM_EV_NUM_MAX
#define RL_STRIPED  0x10000u /* in a record's mask: the message was striped */

/* The engine's NIC gaps (nic_s, nic_r) hold R gaps per NIC, at ((rank *
 * nnics + nic) * R + rail). A message in flight has a placement record of
 * stride doubles (its send's start, its rail mask with RL_STRIPED, the bytes
 * on each rail), whose index rides in its arrival event's type; records are
 * recycled through a stack of spare ones. Adaptive: the shares and the last
 * rates of each (sender, receiver) pair that has learnt, in an
 * open-addressing table keyed by sender * nranks + receiver + 1. */
typedef struct rl_state {
    const rg_sim_rails_t *rl;
    uint32_t              R;
    double                w0[RG_SIM_RAILS_MAX]; /* the shares before learning (sum 1) */
    uint32_t             *rr;                   /* per rank: round-robin's next rail */
    double               *rec;
    size_t                stride, n, cap;
    uint32_t             *spare;
    size_t                nspare, spare_cap;
    uint16_t             *mask;                 /* per op (with rendezvous): the send's rails */
    uint64_t             *key;
    double               *val;                  /* 2R per slot: shares, then rates */
    size_t                hcap, hn;
    rg_sim_rail_totals_t  tot[RG_SIM_RAILS_MAX];
} rl_state_t;

static const char *const rl_policies[] = {"binding", "round-robin", "even", "weighted",
                                          "adaptive"};

const char *rg_sim_rails_policy_name(int policy)
{
    return policy >= 0 && policy <= RG_SIM_RAILS_ADAPTIVE ? rl_policies[policy] : "?";
}

int rg_sim_rails_policy(const char *name)
{
    int i;

    for (i = 0; i <= RG_SIM_RAILS_ADAPTIVE; i++) {
        if (strcmp(name, rl_policies[i]) == 0) {
            return i;
        }
    }
    return -1;
}

void rg_sim_rails_defaults(rg_sim_rails_t *r)
{
    int i;

    memset(r, 0, sizeof(*r));
    r->nrails = 1;
    r->policy = RG_SIM_RAILS_EVEN;
    for (i = 0; i < RG_SIM_RAILS_MAX; i++) {
        r->rail[i] = (rg_sim_rail_t){NAN, NAN, NAN, NAN};
    }
    r->stripe_min = 262144;
    r->inline_max = 8192;
    r->alpha = 0.3;
    r->floor = 0.05;
}

rg_status_t rg_sim_rails_check(const rg_sim_rails_t *r, rg_err_t *err)
{
    static const char *const nm[4] = {"L", "o", "g", "G"};
    int                      i, j, nw = 0;

    if (r->nrails < 1 || r->nrails > RG_SIM_RAILS_MAX) {
        return rg_err_set(err, RG_ERR_RANGE, "rails: %d rails (1 to %d)", r->nrails,
                          RG_SIM_RAILS_MAX);
    }
    if (r->policy < 0 || r->policy > RG_SIM_RAILS_ADAPTIVE) {
        return rg_err_set(err, RG_ERR_INVALID, "rails: unknown policy %d", r->policy);
    }
    for (i = 0; i < r->nrails; i++) {
        const double v[4] = {r->rail[i].L, r->rail[i].o, r->rail[i].g, r->rail[i].G};
        for (j = 0; j < 4; j++) {
            if (!isnan(v[j]) && !(isfinite(v[j]) && v[j] >= 0)) {
                return rg_err_set(err, RG_ERR_RANGE, "rail %d: %s = %g: must be finite and "
                                  ">= 0", i, nm[j], v[j]);
            }
        }
        if (r->weights[i] != 0) {
            if (!(r->weights[i] > 0) || !isfinite(r->weights[i])) {
                return rg_err_set(err, RG_ERR_RANGE, "rail %d: weight %g: must be above 0",
                                  i, r->weights[i]);
            }
            nw++;
        }
    }
    if (nw != 0 && nw != r->nrails) {
        return rg_err_set(err, RG_ERR_INVALID, "rails: %d weights for %d rails", nw,
                          r->nrails);
    }
    if (isnan(r->stripe_min) || r->stripe_min < 0 || isnan(r->inline_max) ||
        r->inline_max < 0) {
        return rg_err_set(err, RG_ERR_RANGE, "rails: stripe size %g, inline size %g: must be "
                          ">= 0", r->stripe_min, r->inline_max);
    }
    if (!(r->alpha > 0 && r->alpha <= 1)) {
        return rg_err_set(err, RG_ERR_RANGE, "rails: adapt alpha %g is outside (0, 1]",
                          r->alpha);
    }
    if (!(r->floor >= 0 && r->floor * r->nrails < 1)) {
        return rg_err_set(err, RG_ERR_RANGE, "rails: adapt floor %g: the floor times the %d "
                          "rails must be below 1", r->floor, r->nrails);
    }
    return RG_OK;
}

/* A rail's parameter, or the message's own where the rail has none. */
static inline double rl_par(double rail, double own)
{
    return isnan(rail) ? own : rail;
}

/* Adaptive: the table slot of pair (src, dst), or NIL where it has not
 * learnt yet. */
static uint32_t rl_find(const rg__sim_eng_t *e, uint64_t key)
{
    const rl_state_t *ra = e->ms;
    size_t            i;

    if (ra->hcap == 0) {
        return NIL;
    }
    for (i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (ra->hcap - 1); ra->key[i] != 0;
         i = (i + 1) & (ra->hcap - 1)) {
        if (ra->key[i] == key) {
            return (uint32_t)i;
        }
    }
    return NIL;
}

/* The shares (sum 1) that a message from src to dst is cut by. */
static const double *rl_shares(const rg__sim_eng_t *e, uint32_t src, uint32_t dst)
{
    const rl_state_t *ra = e->ms;

    if (ra->rl->policy == RG_SIM_RAILS_ADAPTIVE) {
        uint32_t k = rl_find(e, (uint64_t)src * e->s->nranks + dst + 1);
        if (k != NIL) {
            return &ra->val[(size_t)k * 2 * ra->R];
        }
    }
    return ra->w0;
}

/* Places a message of s bytes from rank to peer as rails/policy.c does:
 * binding on rail (rank + peer) mod R; round-robin on the rank's next rail
 * (peeked: the send advances it once it starts); the others whole on the
 * best-shared rail (the first of equal ones) up to the inline size and below
 * the stripe size, above in stripes in proportion to the shares, whole 4 KiB
 * pages but the last, the rounding to the last rail with a share. cut[r]:
 * the bytes on rail r; returns the rails' mask, with RL_STRIPED if cut. */
static uint32_t rl_place(const rg__sim_eng_t *e, uint32_t rank, uint32_t peer, double s,
                         double *cut)
{
    const rl_state_t     *ra = e->ms;
    const rg_sim_rails_t *rl = ra->rl;
    const double         *w;
    uint32_t              R = ra->R, r, best = 0, mask = 0;

    for (r = 0; r < R; r++) {
        cut[r] = 0;
    }
    if (R == 1) {
        cut[0] = s;
        return 1;
    }
    if (rl->policy == RG_SIM_RAILS_BINDING) {
        best = (uint32_t)(((uint64_t)rank + peer) % R);
    } else if (rl->policy == RG_SIM_RAILS_RR) {
        best = ra->rr[rank] % R;
    } else {
        w = rl_shares(e, rank, peer);
        if (!(s <= rl->inline_max) && !(s < rl->stripe_min) && s < 9007199254740992.0) {
            uint64_t len = (uint64_t)s, off = 0, part;
            for (r = 0; r < R; r++) {
                part = (uint64_t)floor((double)len * w[r]) & ~(uint64_t)4095;
                part = off + part > len ? len - off : part;
                cut[r] = (double)part;
                off += part;
            }
            for (r = R; r-- > 0 && off < len;) {
                if (w[r] > 0) {
                    cut[r] += (double)(len - off);
                    off = len;
                }
            }
            cut[R - 1] += s - (double)len; /* a fraction of a byte (not from GOAL) */
            for (r = 0; r < R; r++) {
                mask |= cut[r] > 0 ? 1u << r : 0;
            }
            if (mask != 0) {
                return mask | RL_STRIPED;
            }
        }
        for (r = 1; r < R; r++) {
            best = w[r] > w[best] ? r : best;
        }
        for (r = 0; r < R; r++) {
            cut[r] = 0; /* a message too small to cut into pages */
        }
    }
    cut[best] = s;
    return 1u << best;
}

static double *rl_record(const rg__sim_eng_t *e, uint32_t slot)
{
    const rl_state_t *ra = e->ms;

    return &ra->rec[(size_t)slot * ra->stride];
}

static uint32_t rl_new(rg__sim_eng_t *e)
{
    rl_state_t *ra = e->ms;

    if (ra->nspare > 0) {
        return ra->spare[--ra->nspare];
    }
    if (ra->n == ra->cap) {
        size_t  nc = ra->cap ? ra->cap * 2 : 1024;
        double *np = nc <= RL_SLOT_MAX ? realloc(ra->rec, nc * ra->stride * sizeof(*np))
                                       : NULL;
        if (np == NULL) {
            e->nomem = 1;
            return NIL;
        }
        ra->rec = np;
        ra->cap = nc;
    }
    return (uint32_t)ra->n++;
}

static void rl_put(rg__sim_eng_t *e, uint32_t slot)
{
    rl_state_t *ra = e->ms;

    if (ra->nspare == ra->spare_cap) {
        size_t    nc = ra->spare_cap ? ra->spare_cap * 2 : 1024;
        uint32_t *np = realloc(ra->spare, nc * sizeof(*np));
        if (np == NULL) {
            return; /* the record is not reused */
        }
        ra->spare = np;
        ra->spare_cap = nc;
    }
    ra->spare[ra->nspare++] = slot;
}

/* A send with rails at ev->t (docs/sim.md): due when its CPU and every rail
 * its placement uses are free; the CPU for o + (s-1)O, each rail's send gap
 * for g_r + (s_r-1)G_r; the message arrives o + L after the start, with o
 * and L the largest of its rails'. With one rail, LogGOPS's send to the
 * bit. */
static void rl_send(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *op, size_t c)
{
    rl_state_t           *ra = e->ms;
    const rg_sim_rails_t *rl = ra->rl;
    double                cut[RG_SIM_RAILS_MAX], t = ev->t, when = e->cpu[c], o = 0, L = 0;
    double               *rec;
    size_t                base = ((size_t)op->rank * e->s->nnics + op->nic) * ra->R;
    uint32_t              mask, r, slot;
    const rg_sim_range_t *b;

    mask = rl_place(e, op->rank, (uint32_t)op->peer, op->amount, cut);
    for (r = 0; r < ra->R; r++) {
        if ((mask >> r) & 1u && e->nic_s[base + r] > when) {
            when = e->nic_s[base + r];
        }
    }
    if (when > t) {
        rg__sim_push(e, when, ev->seq, ev->op, RG__SIM_EV_READY);
        return;
    }
    if ((slot = rl_new(e)) == NIL) {
        return;
    }
    b = rg__sim_prm(e, op->amount);
    for (r = 0; r < ra->R; r++) {
        if ((mask >> r) & 1u) {
            double ro = rl_par(rl->rail[r].o, b->o), rL = rl_par(rl->rail[r].L, b->L);
            o = ro > o ? ro : o;
            L = rL > L ? rL : L;
        }
    }
    if (rl->policy == RG_SIM_RAILS_RR) {
        ra->rr[op->rank]++;
    }
    rec = rl_record(e, slot);
    rec[0] = t;
    rec[1] = (double)mask;
    memcpy(rec + 2, cut, ra->R * sizeof(double));
    if (ra->mask != NULL) {
        ra->mask[ev->op] = (uint16_t)mask;
    }
    rg__sim_start(e, ev->op, t);
    e->cpu[c] = t + o + rg__sim_per_byte(op->amount) * b->O;
    rg__sim_busy(e, op->rank, t, e->cpu[c] - t, 0);
    if (rg__sim_tracing(e)) {
        e->trace->span(e->trace->arg, op->rank, "cpu", op->cpu, "send", t, e->cpu[c] - t, op);
    }
    for (r = 0; r < ra->R; r++) {
        if ((mask >> r) & 1u) {
            double gap;
            /* (t + g) + (s-1)G, in LogGOPS's order of additions */
            e->nic_s[base + r] = t + rl_par(rl->rail[r].g, b->g) +
                                 rg__sim_per_byte(cut[r]) * rl_par(rl->rail[r].G, b->G);
            gap = e->nic_s[base + r] - t;
            ra->tot[r].bytes += cut[r];
            ra->tot[r].pieces++;
            ra->tot[r].send_busy_us += gap;
            if (rg__sim_tracing(e)) {
                e->trace->span(e->trace->arg, op->rank, "nic-send",
                               (uint16_t)(op->nic * ra->R + r), "send", t, gap, op);
            }
        }
    }
    rg__sim_push(e, t + o + L, e->seq++, ev->op, RL_EV_ARRIVE | (slot << RG__SIM_EV_BITS));
    if (op->amount <= e->p->S) {
        rg__sim_done(e, ev->op, op->rank, t);
    }
}

/* Adaptive, a striped message handled at t: the rate each rail delivered
 * its piece at (bytes / (the piece's bytes in - the send's start)) becomes
 * the pair's new shares as rails/feedback.c's rg__rails_take_rates does: share
 * = rate / sum, w = alpha share + (1 - alpha) w, at least the floor, then
 * normalised. A rail without a piece this time keeps its last rate; while
 * one has none yet the shares stay. */
static void rl_learn(rg__sim_eng_t *e, uint32_t src, uint32_t dst, const double *rec, double t,
                     const rg_sim_range_t *b)
{
    rl_state_t           *ra = e->ms;
    const rg_sim_rails_t *rl = ra->rl;
    uint64_t              key = (uint64_t)src * e->s->nranks + dst + 1;
    uint32_t              k = rl_find(e, key), R = ra->R, r;
    double               *w, *rate, sum = 0, tot = 0;

    if (k == NIL) {
        size_t i;
        if (2 * (ra->hn + 1) > ra->hcap) {
            size_t    nc = ra->hcap ? 2 * ra->hcap : 1024, j;
            uint64_t *nk = calloc(nc, sizeof(*nk));
            double   *nv = malloc(nc * 2 * R * sizeof(*nv));
            if (nk == NULL || nv == NULL) {
                free(nk);
                free(nv);
                e->nomem = 1;
                return;
            }
            for (j = 0; j < ra->hcap; j++) {
                if (ra->key[j] != 0) {
                    for (i = (size_t)(ra->key[j] * 0x9e3779b97f4a7c15ull >> 20) & (nc - 1);
                         nk[i] != 0; i = (i + 1) & (nc - 1)) {
                    }
                    nk[i] = ra->key[j];
                    memcpy(&nv[i * 2 * R], &ra->val[j * 2 * R], 2 * R * sizeof(double));
                }
            }
            free(ra->key);
            free(ra->val);
            ra->key = nk;
            ra->val = nv;
            ra->hcap = nc;
        }
        for (i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (ra->hcap - 1);
             ra->key[i] != 0; i = (i + 1) & (ra->hcap - 1)) {
        }
        ra->key[i] = key;
        memcpy(&ra->val[i * 2 * R], ra->w0, R * sizeof(double));
        memset(&ra->val[i * 2 * R + R], 0, R * sizeof(double));
        ra->hn++;
        k = (uint32_t)i;
    }
    w = &ra->val[(size_t)k * 2 * R];
    rate = w + R;
    for (r = 0; r < R; r++) {
        double c = rec[2 + r], dt;
        if (c > 0) {
            dt = t + rg__sim_per_byte(c) * rl_par(rl->rail[r].G, b->G) - rec[0];
            if (dt > 0) {
                rate[r] = c / dt;
            }
        }
    }
    for (r = 0; r < R; r++) {
        if (!(rate[r] > 0) || !isfinite(rate[r])) {
            return; /* a rail not measured yet: keep the shares */
        }
        sum += rate[r];
    }
    for (r = 0; r < R; r++) {
        w[r] = rl->alpha * (rate[r] / sum) + (1.0 - rl->alpha) * w[r];
        if (w[r] < rl->floor) {
            w[r] = rl->floor;
        }
        tot += w[r];
    }
    for (r = 0; r < R; r++) {
        w[r] /= tot;
    }
}

/* A message with rails, once all its pieces have arrived (the event's time):
 * handled when the receiving CPU and the receive gap of every rail it came
 * on are free; the CPU for o + max((s-1)O, the slowest piece's (s_r-1)G_r),
 * each rail's receive gap for g_r + (s_r-1)G_r (LogGOPS's o + (s-1)max(O,
 * G) and g + (s-1)G, to the bit with one rail); then matched as LogGOPS's. */
static void rl_arrive(rg__sim_eng_t *e, const rg__sim_ev_t *ev)
{
    rl_state_t           *ra = e->ms;
    const rg_sim_rails_t *rl = ra->rl;
    const rg_sim_op_t     mv = rg_sim_op_get(e->s, ev->op);
    const rg_sim_op_t    *m = &mv;
    uint32_t              dst = (uint32_t)m->peer, slot = ev->type >> RG__SIM_EV_BITS, mask, r;
    const double         *rec = rl_record(e, slot);
    const rg_sim_range_t *b;
    size_t                c = (size_t)dst * e->s->ncpus + m->cpu;
    size_t                base = ((size_t)dst * e->s->nnics + m->nic) * ra->R;
    double                t = ev->t, when = e->cpu[c], o = 0, stream, gap[RG_SIM_RAILS_MAX];

    mask = (uint32_t)rec[1];
    for (r = 0; r < ra->R; r++) {
        if ((mask >> r) & 1u && e->nic_r[base + r] > when) {
            when = e->nic_r[base + r];
        }
    }
    if (when > t) {
        rg__sim_push(e, when, ev->seq, ev->op, ev->type);
        return;
    }
    b = rg__sim_prm(e, m->amount);
    stream = rg__sim_per_byte(m->amount) * b->O;
    for (r = 0; r < ra->R; r++) {
        if ((mask >> r) & 1u) {
            double ro = rl_par(rl->rail[r].o, b->o), G = rl_par(rl->rail[r].G, b->G);
            double x = rg__sim_per_byte(rec[2 + r]) * G;
            o = ro > o ? ro : o;
            stream = x > stream ? x : stream;
            e->nic_r[base + r] = t + rl_par(rl->rail[r].g, b->g) + x;
            gap[r] = e->nic_r[base + r] - t;
            ra->tot[r].recv_busy_us += gap[r];
        }
    }
    e->cpu[c] = t + o + stream;
    rg__sim_busy(e, dst, t, e->cpu[c] - t, 0);
    if (rg__sim_tracing(e)) {
        e->trace->span(e->trace->arg, dst, "cpu", m->cpu, "recv", t, e->cpu[c] - t, m);
        for (r = 0; r < ra->R; r++) {
            if ((mask >> r) & 1u) {
                e->trace->span(e->trace->arg, dst, "nic-recv", (uint16_t)(m->nic * ra->R + r),
                               "recv", t, gap[r], m);
            }
        }
    }
    if ((mask & RL_STRIPED) && rl->policy == RG_SIM_RAILS_ADAPTIVE) {
        rl_learn(e, m->rank, dst, rec, t, b);
    }
    rl_put(e, slot);
    rg__sim_match_arrival(e, ev->op, m, t);
}

/* A freed send's rails are not chosen yet: the earliest any is free. */
static double rl_send_nic(const rg__sim_eng_t *e, uint32_t rank, uint16_t nic)
{
    const rl_state_t *ra = e->ms;
    const double     *rs = &e->nic_s[((size_t)rank * e->s->nnics + nic) * ra->R];
    uint32_t          r;
    double            n = rs[0];

    for (r = 1; r < ra->R; r++) {
        n = rs[r] < n ? rs[r] : n;
    }
    return n;
}

/* A rendezvous send done at t holds the rails it used (mask, kept where S
 * is finite). */
static void rl_rndv_done(rg__sim_eng_t *e, uint32_t send, size_t n, double t)
{
    const rl_state_t *ra = e->ms;
    uint32_t          r;

    for (r = 0; r < ra->R; r++) {
        if ((ra->mask[send] >> r) & 1u && e->nic_s[n * ra->R + r] < t) {
            e->nic_s[n * ra->R + r] = t;
        }
    }
}

static void rl_result(rg__sim_eng_t *e, rg_sim_result_t *res)
{
    const rl_state_t *ra = e->ms;

    memcpy(res->rails, ra->tot, ra->R * sizeof(ra->tot[0]));
}

static int rl_active(const rg_sim_params_t *p)
{
    return p->rails != NULL;
}

static rg_status_t rl_check(const rg_sim_params_t *p, rg_err_t *err)
{
    return rg_sim_rails_check(p->rails, err);
}

/* The rails' state: R gaps per NIC, the shares before learning,
 * round-robin's counters, and with rendezvous each send's rails. */
static rg_status_t rl_setup(rg__sim_eng_t *e, void **state_p, rg_err_t *err)
{
    const rg_sim_rails_t *rl = e->p->rails;
    const rg_sim_sched_t *s = e->s;
    size_t                nnic = (size_t)s->nranks * s->nnics;
    rl_state_t           *ra;
    double                sum = 0;
    int                   r;

    if ((e->p->lop != NULL || e->p->rxwin != NULL)) {
        return rg_err_set(err, RG_ERR_INVALID, "rails run under LogGOPS, without %s",
                          e->p->lop != NULL ? "LoP" : "the receive-window model");
    }
    if ((*state_p = ra = calloc(1, sizeof(*ra))) == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
    }
    ra->rl = rl;
    ra->R = (uint32_t)rl->nrails;
    ra->stride = 2 + ra->R;
    for (r = 0; r < rl->nrails; r++) {
        ra->w0[r] = rl->policy == RG_SIM_RAILS_EVEN || rl->weights[0] == 0 ? 1.0
                                                                           : rl->weights[r];
        sum += ra->w0[r];
    }
    for (r = 0; r < rl->nrails; r++) {
        ra->w0[r] /= sum;
    }
    /* The engine's one gap per NIC becomes R, all free. */
    free(e->nic_s);
    free(e->nic_r);
    e->nic_s = calloc(nnic ? nnic * ra->R : 1, sizeof(double));
    e->nic_r = calloc(nnic ? nnic * ra->R : 1, sizeof(double));
    ra->rr = calloc(s->nranks ? s->nranks : 1, sizeof(uint32_t));
    if (e->nic_s == NULL || e->nic_r == NULL || ra->rr == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
    }
    if (isfinite(e->p->S)) {
        ra->mask = calloc(s->nops ? s->nops : 1, sizeof(uint16_t));
        if (ra->mask == NULL) {
            return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %zu operations",
                              s->nops);
        }
    }
    return RG_OK;
}

static void rl_fini(rg__sim_eng_t *e, void *state)
{
    rl_state_t *ra = state;

    (void)e;
    if (ra != NULL) {
        free(ra->rr);
        free(ra->rec);
        free(ra->spare);
        free(ra->mask);
        free(ra->key);
        free(ra->val);
        free(ra);
    }
}

const rg__sim_model_t rg__sim_model_rails = {
    .name = "rails",
    .active = rl_active,
    .check = rl_check,
    .setup = rl_setup,
    .fini = rl_fini,
    .send = rl_send,
    .send_nic = rl_send_nic,
    .event = rl_arrive,
    .rndv_done = rl_rndv_done,
    .result = rl_result,
};
