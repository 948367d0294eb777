/*
 * railgauge: the simulator's shared receive window (params.rxwin; paper 004;
 * the runtime's proto/rxwin.c, whose semantics docs/rxwin.md states and
 * docs/sim.md maps onto events). Eager messages (at most S and eager_limit
 * bytes, to another rank) land in a posted buffer of their destination's
 * window; with none posted they are refused (RNR) and sent again after the
 * NAK's flight L and the RNR timer. The window runs under LogGOPS, without
 * LoP; every receive names its source.
 */
#include "sim/engine_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIL RG__SIM_NIL

/* The events of messages with the window, instead of RG__SIM_EV_ARRIVE; the
 * type's bits above RG__SIM_EV_BITS carry the message's sequence number
 * within its (sender, receiver) pair. */
enum {
    EV_RX_ARRIVE = RG__SIM_EV_MODEL,
    EV_RX_HANDLE,
    EV_RX_RETRY,
    EV_RX_ACK,
    EV_RX_NIC
};
#define RX_SEQ_MAX RG__SIM_EV_NUM_MAX

/* A node of the window model's lists (posted receives, unexpected and
 * parked messages per rank and bucket of sources; per rank, the messages
 * landed and waiting for the CPU, and those waiting for their retry). */
typedef struct rxnode {
    double   t;      /* retry: when it is due */
    uint32_t op, next;
    uint32_t seq;    /* the message's number in its pair */
    uint32_t src;    /* a message's sender; a receive's source */
    int32_t  tag;
    uint32_t gov;    /* the message uses the window */
} rxnode_t;

/* Arrivals waiting for a busy receiving NIC, a min-heap by event sequence
 * number: served one at a time as the NIC frees, smallest number first,
 * which is the order in which their events, each put back at the NIC's free
 * time, would have won it; but one event per service instead of one per
 * waiter and service (an incast of k messages cost k^2/2 events). */
typedef struct rxwait {
    uint64_t seq;
    uint32_t op, type;
} rxwait_t;

typedef struct rxnicq {
    rxwait_t *h;
    uint32_t  n, cap;
} rxnicq_t;

/* A rank's window (the runtime's rg_rxwin_t, proto/rxwin.c) and accounts. */
typedef struct rxrank {
    int32_t  window, limit, nlimit, alloc, posted, peak, period_peak;
    int32_t  nland;          /* messages landed, waiting for the CPU */
    int32_t  pass_left;      /* handlings left in the current pass (0: none) */
    int32_t  ret_n;          /* buffers handled in the pass, back at ret_t */
    double   ret_t;          /* the pass's end (INFINITY while it runs) */
    double   period_start;   /* < 0: no quiet period started */
    uint64_t pool, unexp, ctrl, hw;
    uint32_t cache[3];
    uint64_t limit_events, shrinks, rnr_sent, rnr_recv, retries, sent, received, parked;
} rxrank_t;

/* The window model's state. Lists are head/tail pairs: rq holds per rank
 * and bucket of sources (src & bmask) the posted receives, the unexpected
 * and the parked messages; land and retry per rank. Per pair (src * nranks
 * + dst): the next sequence number to send, to take in turn, and the last
 * message taken in turn (program order check). */
typedef struct rx_state {
    const rg_sim_rxwin_t *rx;
    rxrank_t             *rr;
    uint32_t              nb, bmask;
    uint32_t             *rq, *land, *retry;
    rxnode_t             *rn;
    size_t                rn_n, rn_cap;
    uint32_t              rn_free;
    uint32_t             *sseq, *rseq, *last;
    uint8_t              *dlv;  /* per op: delivered (a bitmap) */
    rxnicq_t             *nicq; /* per receiving NIC (rank * nnics + nic) */
    size_t                nnicq;
    uint64_t              msgs, delivered, ooo, dup;
} rx_state_t;

/* min(2^nlimit * w_init, w_max), without overflow (rg_rxwin_size). */
int rg_sim_rxwin_size(int w_init, int w_max, int nlimit)
{
    long long w = w_init;
    int       i;

    for (i = 0; i < nlimit && w < w_max; i++) {
        w *= 2;
    }
    return w < w_max ? (int)w : w_max;
}

rg_status_t rg_sim_rxwin_check(const rg_sim_rxwin_t *w, rg_err_t *err)
{
    if (w->mode != RG_SIM_RXWIN_FIXED && w->mode != RG_SIM_RXWIN_ADAPTIVE) {
        return rg_err_set(err, RG_ERR_INVALID, "receive window: unknown mode %d", w->mode);
    }
    if (w->w_init < 1 || w->w_max > RG_SIM_RXWIN_MAX || w->w_init > w->w_max ||
        (w->mode == RG_SIM_RXWIN_FIXED && w->w_init != w->w_max)) {
        return rg_err_set(err, RG_ERR_INVALID, "receive window of %d to %d buffers: out of "
                          "range (1 <= W_init <= W_max <= %d)", w->w_init, w->w_max,
                          RG_SIM_RXWIN_MAX);
    }
    if (w->first_limit < 1 || w->first_limit > w->w_init) {
        return rg_err_set(err, RG_ERR_INVALID, "receive window: a limit of %d is out of range "
                          "(1 to W_init %d): a limit event fires when fewer buffers than the "
                          "limit are posted", w->first_limit, w->w_init);
    }
    if (!(w->rnr_timer_us >= 10.0 - 1e-9 && w->rnr_timer_us <= 655360.0 + 1e-6)) {
        return rg_err_set(err, RG_ERR_RANGE, "RNR timer %g ms: must be 0.01 to 655.36 ms "
                          "(InfiniBand's RNR NAK timer range)", w->rnr_timer_us * 1e-3);
    }
    if (w->reclaim && (w->mode != RG_SIM_RXWIN_ADAPTIVE || !(w->quiet_us > 0) ||
                       !isfinite(w->quiet_us))) {
        return rg_err_set(err, RG_ERR_INVALID, "receive window: reclaiming needs an adaptive "
                          "window and a quiet period above 0");
    }
    if (!(w->eager_limit >= 0) || !isfinite(w->eager_limit)) {
        return rg_err_set(err, RG_ERR_RANGE, "receive window: eager limit %g: not a size",
                          w->eager_limit);
    }
    return RG_OK;
}

static uint32_t rn_new(rg__sim_eng_t *e)
{
    rx_state_t *rw = e->ms;
    uint32_t    n;

    if (rw->rn_free != NIL) {
        n = rw->rn_free;
        rw->rn_free = rw->rn[n].next;
        return n;
    }
    if (rw->rn_n == rw->rn_cap) {
        size_t    nc = rw->rn_cap ? rw->rn_cap * 2 : 4096;
        rxnode_t *np = nc < NIL ? realloc(rw->rn, nc * sizeof(*np)) : NULL;
        if (np == NULL) {
            e->nomem = 1;
            return NIL;
        }
        rw->rn = np;
        rw->rn_cap = nc;
    }
    return (uint32_t)rw->rn_n++;
}

static void rn_put(rg__sim_eng_t *e, uint32_t n)
{
    rx_state_t *rw = e->ms;

    rw->rn[n].next = rw->rn_free;
    rw->rn_free = n;
}

static void rn_append(rg__sim_eng_t *e, uint32_t *ht, uint32_t n)
{
    rx_state_t *rw = e->ms;

    rw->rn[n].next = NIL;
    if (ht[1] == NIL) {
        ht[0] = n;
    } else {
        rw->rn[ht[1]].next = n;
    }
    ht[1] = n;
}

static uint32_t rn_pop(rg__sim_eng_t *e, uint32_t *ht)
{
    rx_state_t *rw = e->ms;
    uint32_t    n = ht[0];

    ht[0] = rw->rn[n].next;
    if (ht[0] == NIL) {
        ht[1] = NIL;
    }
    return n;
}

static void rn_unlink(rg__sim_eng_t *e, uint32_t *ht, uint32_t prev, uint32_t n)
{
    rx_state_t *rw = e->ms;

    if (prev == NIL) {
        ht[0] = rw->rn[n].next;
    } else {
        rw->rn[prev].next = rw->rn[n].next;
    }
    if (ht[1] == n) {
        ht[1] = prev;
    }
}

/* Takes the first node from src whose tag matches tag (RG_SIM_ANY on either
 * side matches any), or with want_seq != NIL the one numbered want_seq. */
static uint32_t rn_take(rg__sim_eng_t *e, uint32_t *ht, uint32_t src, int32_t tag,
                        uint32_t want_seq)
{
    rx_state_t *rw = e->ms;
    uint32_t    prev = NIL, n = ht[0];

    while (n != NIL) {
        const rxnode_t *x = &rw->rn[n];
        if (x->src == src &&
            (want_seq != NIL ? x->seq == want_seq
                             : (x->tag == tag || x->tag == RG_SIM_ANY || tag == RG_SIM_ANY))) {
            rn_unlink(e, ht, prev, n);
            return n;
        }
        prev = n;
        n = x->next;
    }
    return NIL;
}

/* The posted (0), unexpected (1) or parked (2) list of rank d for src. */
static uint32_t *rq_list(rg__sim_eng_t *e, uint32_t d, uint32_t src, int which)
{
    rx_state_t *rw = e->ms;

    return &rw->rq[((size_t)d * rw->nb + (src & rw->bmask)) * 6 + 2 * (size_t)which];
}

static void rx_mem(rg__sim_eng_t *e, uint32_t r, uint64_t *what, int64_t delta)
{
    rx_state_t *rw = e->ms;
    rxrank_t   *w = &rw->rr[r];
    uint64_t    total;

    *what = (uint64_t)((int64_t)*what + delta);
    total = w->pool + w->unexp + w->ctrl;
    if (total > w->hw) {
        w->hw = total;
    }
}

/* A message uses the window: eager (at most S and the eager limit), to
 * another rank. */
static int rx_governed(const rg__sim_eng_t *e, const rg_sim_op_t *m)
{
    const rx_state_t *rw = e->ms;

    return m->amount <= e->p->S && m->amount <= rw->rx->eager_limit &&
           (uint32_t)m->peer != m->rank;
}

static int rx_stage_class(const rg__sim_eng_t *e, double amount)
{
    const rx_state_t *rw = e->ms;
    uint64_t          b = rw->rx->stage_hdr + (uint64_t)amount;

    return b <= rw->rx->stage_cap[0] ? 0 : b <= rw->rx->stage_cap[1] ? 1 : 2;
}

/* A staging copy of an eager send, kept until its ACK (with RNR every eager
 * message is), from the rank's cache of free copies or newly allocated. */
static void rx_stage(rg__sim_eng_t *e, uint32_t r, double amount, int get)
{
    rx_state_t *rw = e->ms;
    rxrank_t   *w = &rw->rr[r];
    int         k = rx_stage_class(e, amount);
    int64_t     bytes = (int64_t)(rw->rx->stage_desc + rw->rx->stage_cap[k]);

    if (get) {
        if (w->cache[k] > 0) {
            w->cache[k]--;
        } else {
            rx_mem(e, r, &w->ctrl, bytes);
        }
    } else if (w->cache[k] < rw->rx->stage_cache) {
        w->cache[k]++;
    } else {
        rx_mem(e, r, &w->ctrl, -bytes);
    }
}

/* The limit for the window's size: the first limit at W_init, else W/2. */
static int32_t rx_limit_for(const rg__sim_eng_t *e, const rxrank_t *w)
{
    const rx_state_t *rw = e->ms;

    if (w->nlimit == 0) {
        return rw->rx->first_limit;
    }
    return w->window / 2 > 0 ? w->window / 2 : 1;
}

/* The end of rank d's pass at ret_t (docs/sim.md): the progress engine's
 * check of the window at the pass's low point, before any buffer goes back
 * (rg_rxwin_check and rg_rxwin_reclaim of the runtime); then the pass's
 * buffers are posted again (or freed where the window shrank below what is
 * allocated) and new ones are allocated and posted up to the window. Done
 * when the rank's window is next looked at, at t >= ret_t. */
static void rx_settle(rg__sim_eng_t *e, uint32_t d, double t)
{
    rx_state_t           *rw = e->ms;
    const rg_sim_rxwin_t *x = rw->rx;
    rxrank_t             *w = &rw->rr[d];
    int32_t               add, in_use;
    double                when = w->ret_t;

    if (w->ret_n == 0 || t < when) {
        return;
    }
    in_use = w->alloc - w->posted;
    if (w->posted < w->limit) {
        w->limit_events++;
        w->period_start = -1; /* activity: a quiet period starts over */
        if (x->mode == RG_SIM_RXWIN_ADAPTIVE && w->window < x->w_max) {
            w->nlimit++;
            w->window = rg_sim_rxwin_size(x->w_init, x->w_max, w->nlimit);
            w->limit = rx_limit_for(e, w);
        }
    }
    if (x->reclaim) {
        if (w->period_start < 0) {
            w->period_start = when;
            w->period_peak = in_use;
        } else {
            if (in_use > w->period_peak) {
                w->period_peak = in_use;
            }
            if (when - w->period_start >= x->quiet_us) {
                if (w->nlimit > 0 && w->window > x->w_init && w->period_peak * 4 <= w->window) {
                    w->nlimit--;
                    while (w->nlimit > 0 &&
                           rg_sim_rxwin_size(x->w_init, x->w_max, w->nlimit) >= w->window) {
                        w->nlimit--;
                    }
                    w->window = rg_sim_rxwin_size(x->w_init, x->w_max, w->nlimit);
                    w->limit = rx_limit_for(e, w);
                    w->shrinks++;
                }
                w->period_start = when;
                w->period_peak = in_use;
            }
        }
    }
    if (w->window > w->peak) {
        w->peak = w->window;
    }
    for (; w->ret_n > 0; w->ret_n--) {
        if (w->alloc > w->window) {
            w->alloc--;
            rx_mem(e, d, &w->pool, -(int64_t)x->buf_bytes);
        } else {
            w->posted++;
        }
    }
    if (w->alloc < w->window) {
        add = w->window - w->alloc;
        w->alloc += add;
        w->posted += add;
        rx_mem(e, d, &w->pool, (int64_t)add * (int64_t)x->buf_bytes);
    }
}

/* Bad input found while running: the run ends with it. */
static void rx_fail(rg__sim_eng_t *e, const char *what, const rg_sim_op_t *op)
{
    if (e->fail[0] == '\0') {
        snprintf(e->fail, sizeof(e->fail), "%s (rank %u, peer %d, tag %d)", what, op->rank,
                 op->peer, op->tag);
    }
    e->nomem = 2;
}

/* A send started at t whose message arrives at `arrive`: it gets the next
 * number of its pair; an eager one is staged until its ACK, which makes it
 * done; others are done as without the window. */
static void rx_sent(rg__sim_eng_t *e, uint32_t m, const rg_sim_op_t *op, double t,
                    double arrive)
{
    rx_state_t *rw = e->ms;
    size_t      pair;
    uint32_t    seq;

    if (op->peer < 0 || (uint32_t)op->peer >= e->s->nranks) {
        rx_fail(e, "a send to no rank", op);
        return;
    }
    pair = (size_t)op->rank * e->s->nranks + (uint32_t)op->peer;
    seq = rw->sseq[pair]++;
    if (seq >= RX_SEQ_MAX) {
        rx_fail(e, "the receive-window model counts at most 2^29 messages per pair", op);
        return;
    }
    rw->rr[op->rank].sent++;
    rw->msgs++;
    rg__sim_push(e, arrive, e->seq++, m, EV_RX_ARRIVE | (seq << RG__SIM_EV_BITS));
    if (rx_governed(e, op)) {
        rx_stage(e, op->rank, op->amount, 1);
    } else if (op->amount <= e->p->S) {
        rg__sim_done(e, m, op->rank, t);
    }
}

/* A receive posted at t: the first unexpected message from its source with
 * a matching tag, else it waits among the posted receives. */
static void rx_post_recv(rg__sim_eng_t *e, uint32_t v, const rg_sim_op_t *op, double t)
{
    rx_state_t *rw = e->ms;
    uint32_t    n, src;

    if (op->peer < 0 || (uint32_t)op->peer >= e->s->nranks) {
        rx_fail(e, "the receive-window model needs every receive to name its source", op);
        return;
    }
    src = (uint32_t)op->peer;
    n = rn_take(e, rq_list(e, op->rank, src, 1), src, op->tag, NIL);
    if (n == NIL) {
        n = rn_new(e);
        if (n == NIL) {
            return;
        }
        rw->rn[n].op = v;
        rw->rn[n].src = src;
        rw->rn[n].tag = op->tag;
        rn_append(e, rq_list(e, op->rank, src, 0), n);
        return;
    }
    {
        uint32_t    send = rw->rn[n].op;
        rg_sim_op_t m = rg_sim_op_get(e->s, send);
        rx_mem(e, op->rank, &rw->rr[op->rank].unexp,
               -(int64_t)(rw->rx->uxm_bytes + (uint64_t)m.amount));
        rn_put(e, n);
        rg__sim_complete_match(e, v, send, t);
    }
}

/* Message node n is in its turn at rank d at t: checked (once, in its
 * sender's program order), acknowledged at ack_t where it used the window,
 * and matched or kept as unexpected. */
static void rx_deliver(rg__sim_eng_t *e, uint32_t n, uint32_t d, double t, double ack_t)
{
    rx_state_t  *rw = e->ms;
    rxnode_t    *x = &rw->rn[n];
    uint32_t     m = x->op, src = x->src, recv;
    size_t       pair = (size_t)src * e->s->nranks + d;
    rg_sim_op_t  mo;

    if (rw->dlv[m >> 3] & (1u << (m & 7))) {
        rw->dup++;
    }
    rw->dlv[m >> 3] |= (uint8_t)(1u << (m & 7));
    if (rw->last[pair] != NIL && m <= rw->last[pair]) {
        rw->ooo++;
    }
    rw->last[pair] = m;
    rw->rseq[pair]++;
    rw->delivered++;
    rw->rr[d].received++;
    if (x->gov) {
        rg__sim_push(e, ack_t, e->seq++, m, EV_RX_ACK);
    }
    recv = rn_take(e, rq_list(e, d, src, 0), src, x->tag, NIL);
    if (recv != NIL) {
        uint32_t r = rw->rn[recv].op;
        rn_put(e, recv);
        rn_put(e, n);
        rg__sim_complete_match(e, r, m, t);
        return;
    }
    mo = rg_sim_op_get(e->s, m);
    rx_mem(e, d, &rw->rr[d].unexp, (int64_t)(rw->rx->uxm_bytes + (uint64_t)mo.amount));
    rn_append(e, rq_list(e, d, src, 1), n);
}

static void rx_land(rg__sim_eng_t *e, uint32_t op, uint32_t type, double t);

static int nicq_push(rg__sim_eng_t *e, rxnicq_t *q, uint64_t seq, uint32_t op, uint32_t type)
{
    uint32_t i;

    if (q->n == q->cap) {
        uint32_t  nc = q->cap ? q->cap * 2 : 16;
        rxwait_t *nh = nc > q->cap ? realloc(q->h, (size_t)nc * sizeof(*nh)) : NULL;
        if (nh == NULL) {
            e->nomem = 1;
            return -1;
        }
        q->h = nh;
        q->cap = nc;
    }
    for (i = q->n++; i > 0 && seq < q->h[(i - 1) / 2].seq; i = (i - 1) / 2) {
        q->h[i] = q->h[(i - 1) / 2];
    }
    q->h[i] = (rxwait_t){seq, op, type};
    return 0;
}

static rxwait_t nicq_pop(rxnicq_t *q)
{
    rxwait_t top = q->h[0], last = q->h[--q->n];
    uint32_t i = 0, c;

    while ((c = 2 * i + 1) < q->n) {
        if (c + 1 < q->n && q->h[c + 1].seq < q->h[c].seq) {
            c++;
        }
        if (!(q->h[c].seq < last.seq)) {
            break;
        }
        q->h[i] = q->h[c];
        i = c;
    }
    if (q->n > 0) {
        q->h[i] = last;
    }
    return top;
}

/* A message reaches its receiver's NIC at t: it takes the NIC if the NIC is
 * free and nothing waits for it, else it waits (rxnicq_t). */
static void rx_arrive(rg__sim_eng_t *e, const rg__sim_ev_t *ev)
{
    rx_state_t        *rw = e->ms;
    const rg_sim_op_t  m = rg_sim_op_get(e->s, ev->op);
    size_t             nic = (size_t)(uint32_t)m.peer * e->s->nnics + m.nic;
    rxnicq_t          *q = &rw->nicq[nic];

    if (e->nic_r[nic] > ev->t || q->n > 0) {
        int newmin = q->n == 0 || ev->seq < q->h[0].seq;
        if (nicq_push(e, q, ev->seq, ev->op, ev->type) != 0) {
            return;
        }
        if (newmin) {
            /* The service event carries the smallest waiting number: at the
             * NIC's free time it is ordered among other events as that
             * waiter's own event would be. */
            rg__sim_push(e, e->nic_r[nic] > ev->t ? e->nic_r[nic] : ev->t, ev->seq, (uint32_t)nic,
                    EV_RX_NIC);
        }
        return;
    }
    rx_land(e, ev->op, ev->type, ev->t);
}

/* The receiving NIC `nic` may be free at t: it serves its first waiter. */
static void rx_nic(rg__sim_eng_t *e, const rg__sim_ev_t *ev)
{
    rx_state_t *rw = e->ms;
    rxnicq_t   *q = &rw->nicq[ev->op];
    rxwait_t    w;

    if (q->n == 0 || e->nic_r[ev->op] > ev->t) {
        return; /* served already by another service event at this time */
    }
    w = nicq_pop(q);
    rx_land(e, w.op, w.type, ev->t);
    if (q->n > 0) {
        rg__sim_push(e, e->nic_r[ev->op] > ev->t ? e->nic_r[ev->op] : ev->t, q->h[0].seq, ev->op,
                EV_RX_NIC);
    }
}

/* Message op (event type `type`) takes its receiver's NIC at t: once it is
 * through the NIC it lands in a posted buffer (taken in posting order) and
 * waits for the CPU, or, with none posted, is refused: the NAK flies back (L)
 * and the sender retries after the RNR timer. */
static void rx_land(rg__sim_eng_t *e, uint32_t op, uint32_t type, double t)
{
    rx_state_t           *rw = e->ms;
    const rg_sim_op_t     m = rg_sim_op_get(e->s, op);
    uint32_t              d = (uint32_t)m.peer, n;
    size_t                c, nic = (size_t)d * e->s->nnics + m.nic;
    const rg_sim_range_t *r;
    double                when;
    int                   gov = rx_governed(e, &m);

    r = rg__sim_prm(e, m.amount);
    e->nic_r[nic] = t + r->g + rg__sim_per_byte(m.amount) * r->G;
    if (rg__sim_tracing(e)) {
        e->trace->span(e->trace->arg, d, "nic-recv", m.nic, "recv", t, e->nic_r[nic] - t, &m);
    }
    n = rn_new(e);
    if (n == NIL) {
        return;
    }
    rw->rn[n].op = op;
    rw->rn[n].seq = type >> RG__SIM_EV_BITS;
    rw->rn[n].src = m.rank;
    rw->rn[n].tag = m.tag;
    rw->rn[n].gov = (uint32_t)gov;
    if (gov) {
        rx_settle(e, d, t);
        if (rw->rr[d].posted == 0) {
            uint32_t *q = &rw->retry[2 * (size_t)m.rank];
            rw->rr[d].rnr_sent++;
            rw->rr[m.rank].rnr_recv++;
            rw->rn[n].t = t + r->L + rw->rx->rnr_timer_us;
            rn_append(e, q, n);
            if (q[0] == n) {
                rg__sim_push(e, rw->rn[n].t, e->seq++, m.rank, EV_RX_RETRY);
            }
            return;
        }
        rw->rr[d].posted--;
    }
    rn_append(e, &rw->land[2 * (size_t)d], n);
    rw->rr[d].nland++;
    if (rw->land[2 * (size_t)d] == n) {
        c = (size_t)d * e->s->ncpus + m.cpu;
        when = e->cpu[c] > t ? e->cpu[c] : t;
        rg__sim_push(e, when, e->seq++, d, EV_RX_HANDLE);
    }
}

/* Rank d's CPU handles the first message landed (o + (s-1) max(O, G)): the
 * window is checked and the buffer goes back at the end; the message is
 * taken in its pair's turn, or parked until its predecessors came. */
static void rx_handle(rg__sim_eng_t *e, const rg__sim_ev_t *ev)
{
    rx_state_t           *rw = e->ms;
    uint32_t              d = ev->op, *fifo = &rw->land[2 * (size_t)d], n = fifo[0], want;
    const rg_sim_op_t     m = rg_sim_op_get(e->s, rw->rn[n].op);
    size_t                c = (size_t)d * e->s->ncpus + m.cpu, pair;
    const rg_sim_range_t *r;
    double                t = ev->t, end, ack;

    if (e->cpu[c] > t) {
        rg__sim_push(e, e->cpu[c], ev->seq, ev->op, ev->type);
        return;
    }
    rn_pop(e, fifo);
    r = rg__sim_prm(e, m.amount);
    end = t + r->o + rg__sim_per_byte(m.amount) * (r->O > r->G ? r->O : r->G);
    e->cpu[c] = end;
    rg__sim_busy(e, d, t, end - t, 0);
    if (rg__sim_tracing(e)) {
        e->trace->span(e->trace->arg, d, "cpu", m.cpu, "recv", t, end - t, &m);
    }
    /* A pass handles the messages landed when it starts; their buffers go
     * back at its end. */
    {
        rxrank_t *w = &rw->rr[d];
        rx_settle(e, d, t);
        if (w->pass_left == 0) {
            w->pass_left = w->nland;
            w->ret_t = INFINITY;
        }
        w->nland--;
        w->ret_n += (int32_t)rw->rn[n].gov;
        if (--w->pass_left == 0) {
            w->ret_t = end;
        }
    }
    ack = end + r->L;
    pair = (size_t)m.rank * e->s->nranks + d;
    if (rw->rn[n].seq != rw->rseq[pair]) {
        rw->rr[d].parked++;
        rx_mem(e, d, &rw->rr[d].unexp, (int64_t)(rw->rx->uxm_bytes + (uint64_t)m.amount));
        rn_append(e, rq_list(e, d, m.rank, 2), n);
    } else {
        rx_deliver(e, n, d, t, ack);
        /* Parked successors from the same sender, now in their turn. */
        while ((want = rw->rseq[pair], n = rn_take(e, rq_list(e, d, m.rank, 2), m.rank, 0,
                                                  want)) != NIL) {
            rg_sim_op_t p = rg_sim_op_get(e->s, rw->rn[n].op);
            rx_mem(e, d, &rw->rr[d].unexp, -(int64_t)(rw->rx->uxm_bytes + (uint64_t)p.amount));
            rx_deliver(e, n, d, t, ack);
        }
    }
    if (fifo[0] != NIL) {
        const rg_sim_op_t nx = rg_sim_op_get(e->s, rw->rn[fifo[0]].op);
        size_t            c2 = (size_t)d * e->s->ncpus + nx.cpu;
        rg__sim_push(e, e->cpu[c2] > t ? e->cpu[c2] : t, e->seq++, d, EV_RX_HANDLE);
    }
}

/* A refused message of rank s is sent again once its timer ran out and the
 * sender's CPU and NIC are free (o + (s-1)O, g + (s-1)G, as a send). */
static void rx_retry(rg__sim_eng_t *e, const rg__sim_ev_t *ev)
{
    rx_state_t           *rw = e->ms;
    uint32_t              s = ev->op, *fifo = &rw->retry[2 * (size_t)s], n = fifo[0];
    uint32_t              m = rw->rn[n].op, seq = rw->rn[n].seq;
    const rg_sim_op_t     op = rg_sim_op_get(e->s, m);
    size_t                c = (size_t)s * e->s->ncpus + op.cpu;
    size_t                nic = (size_t)s * e->s->nnics + op.nic;
    const rg_sim_range_t *r;
    double                t = ev->t, when = e->cpu[c] > e->nic_s[nic] ? e->cpu[c] : e->nic_s[nic];

    if (when > t) {
        rg__sim_push(e, when, ev->seq, ev->op, ev->type);
        return;
    }
    rn_pop(e, fifo);
    rn_put(e, n);
    r = rg__sim_prm(e, op.amount);
    e->cpu[c] = t + r->o + rg__sim_per_byte(op.amount) * r->O;
    e->nic_s[nic] = t + r->g + rg__sim_per_byte(op.amount) * r->G;
    rg__sim_busy(e, s, t, e->cpu[c] - t, 0);
    if (rg__sim_tracing(e)) {
        e->trace->span(e->trace->arg, s, "cpu", op.cpu, "send", t, e->cpu[c] - t, &op);
        e->trace->span(e->trace->arg, s, "nic-send", op.nic, "send", t, e->nic_s[nic] - t, &op);
    }
    rw->rr[s].retries++;
    rg__sim_push(e, t + r->o + r->L, e->seq++, m, EV_RX_ARRIVE | (seq << RG__SIM_EV_BITS));
    if (fifo[0] != NIL) {
        rg__sim_push(e, rw->rn[fifo[0]].t > t ? rw->rn[fifo[0]].t : t, e->seq++, s, EV_RX_RETRY);
    }
}

/* The receiver's ACK reaches the sender: the staging copy goes back and the
 * eager send is done (as a send on a reliable connection). */
static void rx_ack(rg__sim_eng_t *e, const rg__sim_ev_t *ev)
{
    const rg_sim_op_t m = rg_sim_op_get(e->s, ev->op);

    rx_stage(e, m.rank, m.amount, 0);
    rg__sim_done(e, ev->op, m.rank, ev->t);
}

static void rx_event(rg__sim_eng_t *e, const rg__sim_ev_t *ev)
{
    switch (ev->type & ((1u << RG__SIM_EV_BITS) - 1)) {
    case EV_RX_ARRIVE:
        rx_arrive(e, ev);
        break;
    case EV_RX_HANDLE:
        rx_handle(e, ev);
        break;
    case EV_RX_RETRY:
        rx_retry(e, ev);
        break;
    case EV_RX_NIC:
        rx_nic(e, ev);
        break;
    default:
        rx_ack(e, ev);
        break;
    }
}

/* The window model's state: every rank starts with W_init buffers posted
 * and the refusal buffer (counted, as the runtime's). */
static rg_status_t rx_setup(rg__sim_eng_t *e, void **state_p, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    size_t                n = s->nranks, i, pairs = n * n;
    uint32_t              b = 1;
    rx_state_t           *rw = calloc(1, sizeof(*rw));

    if ((*state_p = rw) == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "the receive-window model: out of memory for %zu "
                          "ranks", n);
    }
    rw->rx = e->p->rxwin;
    if (e->p->lop != NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "the receive-window model runs under "
                          "LogGOPS, not LoP");
    }
    if (n > RG_SIM_RXWIN_MAX_RANKS) {
        return rg_err_set(err, RG_ERR_RANGE, "the receive-window model: %zu ranks, more than "
                          "%d", n, RG_SIM_RXWIN_MAX_RANKS);
    }
    if (s->gen == RG_SIM_GEN_NONE) {
        for (i = 0; i < s->nops; i++) {
            const rg_sim_op_t *o = &s->ops[s->added ? s->added[i] : i];
            if (o->kind == RG_SIM_RECV && o->peer == RG_SIM_ANY) {
                return rg_err_set(err, RG_ERR_INVALID, "the receive-window model needs every "
                                  "receive to name its source (rank %u receives from any)",
                                  o->rank);
            }
        }
    }
    /* Buckets of sources per rank: as many as ranks where that stays within
     * 2^20 lists of each kind. */
    while (b < n && (uint64_t)n * b * 2 <= (1u << 20)) {
        b *= 2;
    }
    rw->nb = b;
    rw->bmask = b - 1;
    rw->rn_free = NIL;
    rw->rr = calloc(n ? n : 1, sizeof(*rw->rr));
    rw->rq = malloc(n * b * 6 * sizeof(uint32_t) + 1);
    rw->land = malloc(n * 2 * sizeof(uint32_t) + 1);
    rw->retry = malloc(n * 2 * sizeof(uint32_t) + 1);
    rw->sseq = calloc(pairs ? pairs : 1, sizeof(uint32_t));
    rw->rseq = calloc(pairs ? pairs : 1, sizeof(uint32_t));
    rw->last = malloc(pairs * sizeof(uint32_t) + 1);
    rw->dlv = calloc(s->nops / 8 + 1, 1);
    rw->nicq = calloc(n * s->nnics + 1, sizeof(*rw->nicq));
    rw->nnicq = n * s->nnics;
    if (!rw->rr || !rw->rq || !rw->land || !rw->retry || !rw->sseq || !rw->rseq || !rw->last ||
        !rw->dlv || !rw->nicq) {
        return rg_err_set(err, RG_ERR_NOMEM, "the receive-window model: out of memory for %zu "
                          "ranks", n);
    }
    memset(rw->rq, 0xff, n * b * 6 * sizeof(uint32_t));
    memset(rw->land, 0xff, n * 2 * sizeof(uint32_t));
    memset(rw->retry, 0xff, n * 2 * sizeof(uint32_t));
    memset(rw->last, 0xff, pairs * sizeof(uint32_t));
    for (i = 0; i < n; i++) {
        rxrank_t *w = &rw->rr[i];
        w->window = w->alloc = w->posted = w->peak = rw->rx->w_init;
        w->limit = rw->rx->first_limit;
        w->period_start = -1;
        w->pool = w->hw = (uint64_t)(w->alloc + 1) * rw->rx->buf_bytes;
    }
    return RG_OK;
}

/* Totals and per-rank figures of the window model into res. */
static void rx_result(rg__sim_eng_t *e, rg_sim_result_t *res)
{
    rx_state_t            *rw = e->ms;
    rg_sim_rxwin_totals_t *x = &res->rx;
    size_t                 i, n = e->s->nranks;
    double                 sum = 0;

    memset(x, 0, sizeof(*x));
    x->messages = rw->msgs;
    x->delivered = rw->delivered;
    x->out_of_order = rw->ooo;
    x->duplicates = rw->dup;
    x->mem_min = UINT64_MAX;
    for (i = 0; i < n; i++) {
        rx_settle(e, (uint32_t)i, INFINITY); /* the last pass's end */
    }
    for (i = 0; i < n; i++) {
        const rxrank_t *w = &rw->rr[i];
        x->limit_events += w->limit_events;
        x->rnr += w->rnr_sent;
        x->retries += w->retries;
        x->shrinks += w->shrinks;
        x->mem_min = w->hw < x->mem_min ? w->hw : x->mem_min;
        x->mem_max = w->hw > x->mem_max ? w->hw : x->mem_max;
        sum += (double)w->hw;
        if (rw->rx->per_rank != NULL) {
            rg_sim_rxwin_rank_t *o = &rw->rx->per_rank[i];
            o->high_water = w->hw;
            o->pool = w->pool;
            o->unexpected = w->unexp;
            o->control = w->ctrl;
            o->window = w->window;
            o->window_peak = w->peak;
            o->limit_events = w->limit_events;
            o->shrinks = w->shrinks;
            o->rnr_sent = w->rnr_sent;
            o->rnr_recv = w->rnr_recv;
            o->retries = w->retries;
            o->sent = w->sent;
            o->received = w->received;
            o->parked = w->parked;
        }
    }
    x->mem_mean = n ? sum / (double)n : 0;
    if (n == 0) {
        x->mem_min = 0;
    }
    x->verified = x->out_of_order == 0 && x->duplicates == 0 && x->delivered == x->messages;
}

static void rx_fini(rg__sim_eng_t *e, void *state)
{
    rx_state_t *rw = state;
    size_t      i;

    (void)e;
    if (rw == NULL) {
        return;
    }
    free(rw->rr);
    free(rw->rq);
    free(rw->land);
    free(rw->retry);
    free(rw->rn);
    free(rw->sseq);
    free(rw->rseq);
    free(rw->last);
    free(rw->dlv);
    if (rw->nicq != NULL) {
        for (i = 0; i < rw->nnicq; i++) {
            free(rw->nicq[i].h);
        }
        free(rw->nicq);
    }
    free(rw);
}

static int rx_active(const rg_sim_params_t *p)
{
    return p->rxwin != NULL;
}

static rg_status_t rx_check(const rg_sim_params_t *p, rg_err_t *err)
{
    return rg_sim_rxwin_check(p->rxwin, err);
}

/* LogGOPS's send, its message numbered in its pair and staged. */
static void rx_send(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *op, size_t c)
{
    const rg_sim_range_t *r = rg__sim_send_begin(e, ev, op, c);

    if (r != NULL) {
        rx_sent(e, ev->op, op, ev->t, ev->t + r->o + r->L);
    }
}

const rg__sim_model_t rg__sim_model_rxwin = {
    .name = "rxwin",
    .active = rx_active,
    .check = rx_check,
    .setup = rx_setup,
    .fini = rx_fini,
    .send = rx_send,
    .recv = rx_post_recv,
    .event = rx_event,
    .result = rx_result,
};
