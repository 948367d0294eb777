/*
 * railgauge: the LogGOPS event loop (semantics: docs/sim.md, after LogGOPSim).
 *
 * Events are 16-byte records in the queue of queue.h, ordered by (time,
 * sequence number); an event that finds its resource busy goes back at the
 * time it frees and keeps its sequence number, so ties are always broken by
 * creation order.
 * Matching queues are per-rank singly linked lists whose nodes come from one
 * pool with a free list: nothing is allocated per event.
 */
#include "sim/sim.h"
#include "sim/queue.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EV_READY = 0, EV_ARRIVE = 1 };

/* With the receive window (p->rxwin, docs/sim.md) the events of messages are
 * these instead of EV_ARRIVE; the type's bits above the low three carry the
 * message's sequence number within its (sender, receiver) pair. Runs without
 * the window never see them. */
enum { EV_RX_ARRIVE = 2, EV_RX_HANDLE = 3, EV_RX_RETRY = 4, EV_RX_ACK = 5, EV_RX_NIC = 6 };
/* With rails (p->rails) a message arrives as this instead of EV_ARRIVE; the
 * type's bits above the low three carry its placement record (rl_rec). */
enum { EV_RL_ARRIVE = 7 };
#define RL_SLOT_MAX (UINT32_MAX >> RX_TYPE_BITS)
#define RX_TYPE_BITS 3u
#define RX_SEQ_MAX   (UINT32_MAX >> RX_TYPE_BITS)
/* The window model's entry points stay out of line: runs without it must
 * not pay for them in the hot functions' code. */
#define RX_COLD __attribute__((noinline, cold))
#define RX_HOT  __attribute__((noinline))

typedef struct ev {
    double   t;
    uint64_t seq;
    uint32_t op;
    uint32_t type;
} ev_t;

/* An operation freed by the event being processed (flush_freed). */
typedef struct freed {
    uint64_t key; /* rank, kind, order freed */
    double   t;
    uint32_t op;
    uint16_t cpu, nic; /* the op's (with key's rank and kind: what due() needs) */
} freed_t;

typedef struct qnode {
    uint32_t op, next;
} qnode_t;

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

#define NIL UINT32_MAX

/* A rank's accounts: CPU time in overheads and calc, the union of busy CPU
 * intervals (every interval starts at the current event's time, so they
 * come sorted by start and one running end suffices), and its finish. */
typedef struct racc {
    double ov, calc, busy, busy_end, finish;
} racc_t;

typedef struct eng {
    rg_sim_sched_t        *s;
    const rg_sim_params_t *p;
    rg_simq_t q;
    const rg_sim_trace_t *trace;
    rg_sim_range_t        flat;     /* the scalar parameters as one range */
    uint64_t  seq;
    double   *cpu, *nic_s, *nic_r;
    uint32_t *left;                 /* unmet dependencies per op */
    uint8_t  *state;                /* per op: 0 waiting, 3 queued, 1 started, 2 done */
    uint32_t *posted, *unexp;       /* per rank: head, tail */
    qnode_t  *pool;
    size_t    pool_n, pool_cap;
    uint32_t  pool_free;
    freed_t  *freed;
    size_t    nfreed, freed_cap;
    size_t    ndone;
    int       nomem;
    /* Per rank: its accounts (racc_t), one record per rank rather than an
     * array per figure, so that an event touches one place, not five. */
    struct racc *acc;
    /* LoP (p->lop): o_s(p) and L(p) for p = 0..lop_max (index 0 unused), the
     * end of posting of each rank's current send batch (list mode), and each
     * rank's receives in program order (rcv_off CSR) with the first one not
     * yet done (rcv_ptr), whose batch is the message's receiving batch. */
    const rg_sim_lop_t *lop;
    double   *lop_os, *lop_L, *batch_end;
    size_t    lop_max;
    uint32_t *rcv_off, *rcv, *rcv_ptr;
    /* The receive window (p->rxwin). Lists are head/tail pairs: rq holds
     * per rank and bucket of sources (src & bmask) the posted receives, the
     * unexpected and the parked messages; land and retry per rank. Per pair
     * (src * nranks + dst): the next sequence number to send, to take in
     * turn, and the last message taken in turn (program order check). */
    const rg_sim_rxwin_t *rx;
    rxrank_t *rr;
    uint32_t  nb, bmask;
    uint32_t *rq, *land, *retry;
    rxnode_t *rn;
    size_t    rn_n, rn_cap;
    uint32_t  rn_free;
    uint32_t *sseq, *rseq, *last;
    uint8_t  *dlv;                  /* per op: delivered (a bitmap) */
    rxnicq_t *nicq;                 /* per receiving NIC (rank * nnics + nic) */
    uint64_t  rx_msgs, rx_delivered, rx_ooo, rx_dup;
    char      rx_fail[200];         /* bad input found while running */
    /* Rails (p->rails; docs/sim.md "Rails"). nic_s and nic_r then hold R
     * gaps per NIC, at ((rank * nnics + nic) * R + rail); R is 1 without.
     * A message in flight has a placement record of rl_stride doubles (its
     * send's start, its rail mask with RL_STRIPED, the bytes on each rail),
     * whose index rides in its arrival event's type; records are recycled
     * through a stack of free ones. Adaptive: the shares and the last rates
     * of each (sender, receiver) pair that has learnt, in an open-addressing
     * table keyed by sender * nranks + receiver + 1. */
    const rg_sim_rails_t *rl;
    uint32_t  R;
    double    rl_w0[RG_SIM_RAILS_MAX];   /* the shares before learning (sum 1) */
    uint32_t *rl_rr;                     /* per rank: round-robin's next rail */
    double   *rl_rec;
    size_t    rl_stride, rl_n, rl_cap;
    uint32_t *rl_free;
    size_t    rl_nfree, rl_free_cap;
    uint16_t *rl_mask;                   /* per op (with rendezvous): the send's rails */
    uint64_t *rl_key;
    double   *rl_val;                    /* 2R per slot: shares, then rates */
    size_t    rl_hcap, rl_hn;
    rg_sim_rail_totals_t rl_tot[RG_SIM_RAILS_MAX];
    /* Duplex (p->duplex > 0): per rank the start of its last send, per op
     * the start of a send in flight (NAN: none, or its arrival was seen). */
    double   *dx_last, *dx_sent;
} eng_t;

#define RL_STRIPED 0x10000u /* in a record's mask: the message was striped */

/* The CPU of `rank` is busy for [t, t + dur) with an overhead (is_calc 0) or
 * a computation. */
static void busy(eng_t *e, uint32_t rank, double t, double dur, int is_calc)
{
    double  end = t + dur;
    racc_t *a = &e->acc[rank];

    if (is_calc) {
        a->calc += dur;
    } else {
        a->ov += dur;
    }
    if (t >= a->busy_end) {
        a->busy += dur;
        a->busy_end = end;
    } else if (end > a->busy_end) {
        a->busy += end - a->busy_end;
        a->busy_end = end;
    }
}

static void ev_push(eng_t *e, double t, uint64_t seq, uint32_t op, uint32_t type)
{
    rg_simq_push(&e->q, t, seq, op, type);
}

static void q_append(eng_t *e, uint32_t *ht, uint32_t op)
{
    uint32_t n;

    if (e->pool_free != NIL) {
        n = e->pool_free;
        e->pool_free = e->pool[n].next;
    } else {
        if (e->pool_n == e->pool_cap) {
            size_t   nc = e->pool_cap ? e->pool_cap * 2 : 1024;
            qnode_t *np = realloc(e->pool, nc * sizeof(*np));
            if (np == NULL) {
                e->nomem = 1;
                return;
            }
            e->pool = np;
            e->pool_cap = nc;
        }
        n = (uint32_t)e->pool_n++;
    }
    e->pool[n].op = op;
    e->pool[n].next = NIL;
    if (ht[1] == NIL) {
        ht[0] = n;
    } else {
        e->pool[ht[1]].next = n;
    }
    ht[1] = n;
}

static int matches(const rg_sim_op_t *recv, const rg_sim_op_t *send)
{
    return (recv->peer == RG_SIM_ANY || (uint32_t)recv->peer == send->rank) &&
           (recv->tag == RG_SIM_ANY || send->tag == RG_SIM_ANY || recv->tag == send->tag);
}

/* Removes and returns the first op in the queue that `pred` accepts, or NIL.
 * recv_side: the queue holds receives (compare against `op` as a send). */
static uint32_t q_take(eng_t *e, uint32_t *ht, const rg_sim_op_t *op, int queue_holds_recvs)
{
    uint32_t prev = NIL, n = ht[0];

    while (n != NIL) {
        const rg_sim_op_t q = rg_sim_op_get(e->s, e->pool[n].op);
        if (queue_holds_recvs ? matches(&q, op) : matches(op, &q)) {
            uint32_t found = e->pool[n].op;
            if (prev == NIL) {
                ht[0] = e->pool[n].next;
            } else {
                e->pool[prev].next = e->pool[n].next;
            }
            if (ht[1] == n) {
                ht[1] = prev;
            }
            e->pool[n].next = e->pool_free;
            e->pool_free = n;
            return found;
        }
        prev = n;
        n = e->pool[n].next;
    }
    return NIL;
}

static double due(const eng_t *e, const freed_t *f);

/* Queues op v, freed at t, for flush_freed. */
static inline void freed_add(eng_t *e, uint32_t v, double t)
{
    rg_sim_op_t o = rg_sim_op_get(e->s, v);

    if (e->nfreed == e->freed_cap) {
        size_t   nc = e->freed_cap ? e->freed_cap * 2 : 64;
        freed_t *nf = realloc(e->freed, nc * sizeof(*nf));
        if (nf == NULL) {
            e->nomem = 1;
            return;
        }
        e->freed = nf;
        e->freed_cap = nc;
    }
    e->state[v] = 3; /* queued */
    e->freed[e->nfreed].key = ((uint64_t)o.rank << 34) | ((uint64_t)o.kind << 32) |
                              (uint64_t)e->nfreed;
    e->freed[e->nfreed].op = v;
    e->freed[e->nfreed].t = t;
    e->freed[e->nfreed].cpu = o.cpu;
    e->freed[e->nfreed].nic = o.nic;
    e->nfreed++;
}

/* release() for a schedule generated by hooks: the dependents are a range. */
static RX_COLD void release_hooks(eng_t *e, uint32_t op, double t, int ireq)
{
    uint32_t first = 0, cnt = e->s->gen_deps(e->s, op, ireq, &first), i;

    for (i = 0; i < cnt; i++) {
        e->left[first + i]--;
    }
    for (i = 0; i < cnt; i++) {
        uint32_t v = first + i;
        if (e->left[v] == 0 && e->state[v] == 0) {
            freed_add(e, v, t);
        }
    }
}

/* Frees the dependents of op over edges of one type (ireq: irequires, at its
 * start; otherwise requires, at its end): sends first, then receives, then
 * computations, each in program order. */
static void release(eng_t *e, uint32_t op, double t, int ireq)
{
    const rg_sim_sched_t *s = e->s;
    const uint32_t *list;
    uint32_t        gen[2], cnt, i;

    if (s->gen == RG_SIM_GEN_NONE) {
        if (ireq && !(s->ops[op].flags & RG_SIM_OPF_IREQ)) {
            return; /* none irequires op (the common case) */
        }
        list = s->deps + s->dep_off[op];
        cnt = s->dep_off[op + 1] - s->dep_off[op];
    } else if (s->gen == RG_SIM_GEN_HOOKS) {
        release_hooks(e, op, t, ireq);
        return;
    } else {
        /* Dissemination: round k+1's send and receive require round k's. */
        uint64_t next = (uint64_t)op - (op & 1) + 2ull * s->nranks;
        if (ireq || next >= s->nops) {
            return;
        }
        gen[0] = (uint32_t)next;
        gen[1] = (uint32_t)next + 1;
        list = gen;
        cnt = 2;
    }
    if (cnt == 0) {
        return;
    }
    for (i = 0; i < cnt; i++) {
        uint32_t d = list[i];
        if (((d & RG_SIM_EDGE_IREQ) != 0) == (ireq != 0)) {
            e->left[d & ~RG_SIM_EDGE_IREQ]--;
        }
    }
    for (i = 0; i < cnt; i++) {
        uint32_t d = list[i], v = d & ~RG_SIM_EDGE_IREQ;
        if (((d & RG_SIM_EDGE_IREQ) != 0) == (ireq != 0) && e->left[v] == 0 &&
            e->state[v] == 0) {
            freed_add(e, v, t);
            if (e->nomem) {
                return;
            }
        }
    }
}

static int freed_cmp(const void *a, const void *b)
{
    uint64_t x = ((const freed_t *)a)->key, y = ((const freed_t *)b)->key;

    return x < y ? -1 : x > y;
}

/* At the end of an event, the operations it freed are queued rank by rank,
 * sends first, then receives, then computations, each in the order they were
 * freed (LogGOPSim collects them per host the same way), and each at the
 * earliest time its resources allow once the event is over. */
static void flush_freed(eng_t *e)
{
    size_t i;

    if (e->nfreed > 16) {
        qsort(e->freed, e->nfreed, sizeof(*e->freed), freed_cmp);
    } else {
        /* Few (usually one or two): insertion sort, keys are distinct. */
        for (i = 1; i < e->nfreed; i++) {
            freed_t x = e->freed[i];
            size_t  j = i;
            while (j > 0 && e->freed[j - 1].key > x.key) {
                e->freed[j] = e->freed[j - 1];
                j--;
            }
            e->freed[j] = x;
        }
    }
    for (i = 0; i < e->nfreed; i++) {
        ev_push(e, due(e, &e->freed[i]), e->seq++, e->freed[i].op, EV_READY);
    }
    e->nfreed = 0;
}

/* When a freed operation can start at the earliest: for a send, the later of
 * its CPU and its NIC send gap; otherwise its CPU; never before it was freed.
 * Checked again when the event comes up, since the resources may be taken by
 * then. (From the freed record: no second look at the operation.) */
static double due(const eng_t *e, const freed_t *f)
{
    uint32_t rank = (uint32_t)(f->key >> 34), kind = (uint32_t)(f->key >> 32) & 3u;
    double   t = f->t, c = e->cpu[(size_t)rank * e->s->ncpus + f->cpu];

    if (c > t) {
        t = c;
    }
    if (kind == RG_SIM_SEND && e->lop == NULL) {
        double n;
        if (e->rl == NULL) {
            n = e->nic_s[(size_t)rank * e->s->nnics + f->nic];
        } else {
            /* Its rails are not chosen yet: the earliest any is free. */
            const double *rs = &e->nic_s[((size_t)rank * e->s->nnics + f->nic) * e->R];
            uint32_t      r;
            n = rs[0];
            for (r = 1; r < e->R; r++) {
                n = rs[r] < n ? rs[r] : n;
            }
        }
        if (n > t) {
            t = n;
        }
    }
    return t;
}

static void start(eng_t *e, uint32_t op, double t)
{
    e->state[op] = 1;
    release(e, op, t, 1);
}

/* Op, of `rank` (the caller has the op at hand), is done at t. */
static void done(eng_t *e, uint32_t op, uint32_t rank, double t)
{
    e->state[op] = 2;
    e->ndone++;
    if (t > e->acc[rank].finish) {
        e->acc[rank].finish = t;
    }
    release(e, op, t, 0);
}

/* The parameters for a message of `size` bytes. */
static const rg_sim_range_t *prm(const eng_t *e, double size)
{
    const rg_sim_params_t *p = e->p;
    size_t                 i;

    if (p->nranges == 0) {
        return &e->flat;
    }
    for (i = 0; i + 1 < p->nranges && size > p->ranges[i].to_bytes; i++) {
    }
    return &p->ranges[i];
}

static double per_byte(double size)
{
    return size > 0 ? size - 1 : 0;
}

/* A rendezvous send is done when its message is matched at t; its CPU and
 * send gap are held until then. */
static void rndv_done(eng_t *e, uint32_t send, double t)
{
    const rg_sim_op_t m = rg_sim_op_get(e->s, send);
    size_t c = (size_t)m.rank * e->s->ncpus + m.cpu;
    size_t n = (size_t)m.rank * e->s->nnics + m.nic;

    if (e->cpu[c] < t) {
        e->cpu[c] = t;
    }
    if (e->rl != NULL) {
        /* The rails the send used (rl_mask, kept where S is finite). */
        uint32_t r;
        for (r = 0; r < e->R; r++) {
            if ((e->rl_mask[send] >> r) & 1u && e->nic_s[n * e->R + r] < t) {
                e->nic_s[n * e->R + r] = t;
            }
        }
    } else if (e->nic_s[n] < t) {
        e->nic_s[n] = t;
    }
    done(e, send, m.rank, t);
}

/* A receive matched a message at t: the receive is done, and so is a
 * rendezvous send. The two ranks' freed operations are queued in rank order,
 * as LogGOPSim does. */
static void complete_match(eng_t *e, uint32_t recv, uint32_t send, double t)
{
    const rg_sim_op_t m = rg_sim_op_get(e->s, send);

    /* The receive is on the message's destination rank. */
    if (!(m.amount > e->p->S)) {
        done(e, recv, (uint32_t)m.peer, t);
    } else if (m.rank < (uint32_t)m.peer) {
        rndv_done(e, send, t);
        done(e, recv, (uint32_t)m.peer, t);
    } else {
        done(e, recv, (uint32_t)m.peer, t);
        rndv_done(e, send, t);
    }
}

/* The batch size of the receive that a message to `dst` will meet: that of
 * dst's first receive, in program order, not yet done (1 when none is left
 * or the schedule is generated). */
static uint32_t lop_recv_batch(eng_t *e, uint32_t dst)
{
    uint32_t i, end;

    if (e->rcv_off == NULL) {
        return 1;
    }
    i = e->rcv_ptr[dst];
    end = e->rcv_off[dst + 1];
    while (i < end && e->state[e->rcv[i]] == 2) {
        i++;
    }
    e->rcv_ptr[dst] = i;
    return i < end ? rg_sim_op_get(e->s, e->rcv[i]).batch : 1;
}

/* A send under LoP at t (docs/sim.md): the CPU posts it for o_s(p), p its
 * batch's size; the NIC takes it once posted (in list mode once the whole
 * batch is posted) and once both the sender's send side and the receiver's
 * receive side are free, and holds both for L(m), m = max(p, q), q the
 * receiving batch's size; the message arrives when that ends. */
static void lop_send(eng_t *e, const ev_t *ev, const rg_sim_op_t *op, double t)
{
    uint32_t dst = (uint32_t)op->peer;
    /* p, q <= lop_max: lop_setup took the largest batch of a stored schedule,
     * and the generated one has batches of 1 (rg_sim_op_get). */
    uint32_t p = op->batch ? op->batch : 1, q = lop_recv_batch(e, dst), m = p > q ? p : q;
    size_t   c = (size_t)op->rank * e->s->ncpus + op->cpu;
    size_t   ns = (size_t)op->rank * e->s->nnics + op->nic;
    size_t   nr = (size_t)dst * e->s->nnics + op->nic;
    double   o = e->lop_os[p], posted = t + o, go, arrive;

    start(e, ev->op, t);
    e->cpu[c] = t + o;
    busy(e, op->rank, t, o, 0);
    if (e->lop->list) {
        if (op->flags & RG_SIM_OPF_FIRST) {
            e->batch_end[op->rank] = t + p * o;
        }
        if (e->batch_end[op->rank] > posted) {
            posted = e->batch_end[op->rank];
        }
    }
    go = posted;
    if (e->nic_s[ns] > go) {
        go = e->nic_s[ns];
    }
    if (e->nic_r[nr] > go) {
        go = e->nic_r[nr];
    }
    arrive = go + e->lop_L[m];
    e->nic_s[ns] = arrive;
    e->nic_r[nr] = arrive;
    if (e->trace != NULL && e->trace->span != NULL) {
        e->trace->span(e->trace->arg, op->rank, "cpu", op->cpu, "send", t, o, op);
        e->trace->span(e->trace->arg, op->rank, "nic-send", op->nic, "send", go, arrive - go,
                       op);
    }
    ev_push(e, arrive, e->seq++, ev->op, EV_ARRIVE);
    done(e, ev->op, op->rank, t);
}

static RX_COLD void rx_sent(eng_t *e, uint32_t m, const rg_sim_op_t *op, double t,
                            double arrive);
static RX_COLD void rx_post_recv(eng_t *e, uint32_t v, const rg_sim_op_t *op, double t);
static RX_HOT void rx_event(eng_t *e, const ev_t *ev);
static RX_HOT void rl_send(eng_t *e, const ev_t *ev, const rg_sim_op_t *op, size_t c, double t);

static void on_ready(eng_t *e, const ev_t *ev)
{
    const rg_sim_params_t *p = e->p;
    const rg_sim_op_t opv = rg_sim_op_get(e->s, ev->op);
    const rg_sim_op_t *op = &opv;
    size_t       c = (size_t)op->rank * e->s->ncpus + op->cpu;
    double       t = ev->t, when = e->cpu[c];

    if (op->kind == RG_SIM_SEND && e->lop != NULL) {
        if (when > t) {
            ev_push(e, when, ev->seq, ev->op, EV_READY);
            return;
        }
        lop_send(e, ev, op, t);
        return;
    }
    if (op->kind == RG_SIM_SEND && e->rl != NULL) {
        rl_send(e, ev, op, c, t);
        return;
    }
    if (op->kind == RG_SIM_SEND) {
        size_t n = (size_t)op->rank * e->s->nnics + op->nic;
        if (e->nic_s[n] > when) {
            when = e->nic_s[n];
        }
        if (when > t) {
            ev_push(e, when, ev->seq, ev->op, EV_READY);
            return;
        }
        const rg_sim_range_t *r = prm(e, op->amount);
        start(e, ev->op, t);
        if (e->dx_last != NULL) {
            e->dx_last[op->rank] = t;
            e->dx_sent[ev->op] = t;
        }
        e->cpu[c] = t + r->o + per_byte(op->amount) * r->O;
        e->nic_s[n] = t + r->g + per_byte(op->amount) * r->G;
        busy(e, op->rank, t, e->cpu[c] - t, 0);
        if (e->trace != NULL && e->trace->span != NULL) {
            e->trace->span(e->trace->arg, op->rank, "cpu", op->cpu, "send", t, e->cpu[c] - t,
                           op);
            e->trace->span(e->trace->arg, op->rank, "nic-send", op->nic, "send", t,
                           e->nic_s[n] - t, op);
        }
        if (e->rx != NULL) {
            rx_sent(e, ev->op, op, t, t + r->o + r->L);
            return;
        }
        ev_push(e, t + r->o + r->L, e->seq++, ev->op, EV_ARRIVE);
        if (op->amount <= p->S) {
            done(e, ev->op, op->rank, t);
        }
        return;
    }
    /* A receive was due when its CPU was free; posting it costs nothing, so
     * it is not held back if the CPU has been taken since (LogGOPSim). */
    if (when > t && op->kind == RG_SIM_CALC) {
        ev_push(e, when, ev->seq, ev->op, EV_READY);
        return;
    }
    start(e, ev->op, t);
    if (op->kind == RG_SIM_CALC) {
        e->cpu[c] = t + op->amount;
        busy(e, op->rank, t, op->amount, 1);
        if (e->trace != NULL && e->trace->span != NULL) {
            e->trace->span(e->trace->arg, op->rank, "cpu", op->cpu, "calc", t, op->amount, op);
        }
        done(e, ev->op, op->rank, t);
        return;
    }
    if (e->rx != NULL) {
        rx_post_recv(e, ev->op, op, t);
        return;
    }
    {
        uint32_t send = q_take(e, &e->unexp[2 * (size_t)op->rank], op, 0);
        if (send == NIL) {
            q_append(e, &e->posted[2 * (size_t)op->rank], ev->op);
            return;
        }
        complete_match(e, ev->op, send, t);
    }
}

static void on_arrive(eng_t *e, const ev_t *ev)
{
    const rg_sim_op_t mv = rg_sim_op_get(e->s, ev->op);
    const rg_sim_op_t *m = &mv;
    uint32_t dst = (uint32_t)m->peer, recv;
    const rg_sim_range_t *r;
    size_t   c = (size_t)dst * e->s->ncpus + m->cpu;
    size_t   n = (size_t)dst * e->s->nnics + m->nic;
    double   t = ev->t, when = e->cpu[c] > e->nic_r[n] ? e->cpu[c] : e->nic_r[n];

    if (e->lop != NULL) {
        /* LoP: the NIC's share is in the message's arrival time already. */
        if (e->cpu[c] > t) {
            ev_push(e, e->cpu[c], ev->seq, ev->op, EV_ARRIVE);
            return;
        }
        e->cpu[c] = t + e->lop_os[1];
        busy(e, dst, t, e->lop_os[1], 0);
        if (e->trace != NULL && e->trace->span != NULL) {
            e->trace->span(e->trace->arg, dst, "cpu", m->cpu, "recv", t, e->lop_os[1], m);
        }
    } else {
        /* Duplex: the receiver sent while this message was on its way. */
        if (e->dx_sent != NULL && !isnan(e->dx_sent[ev->op])) {
            const double sent = e->dx_sent[ev->op];
            e->dx_sent[ev->op] = NAN;
            if (e->dx_last[dst] >= sent) {
                ev_push(e, t + e->p->duplex, ev->seq, ev->op, EV_ARRIVE);
                return;
            }
        }
        if (when > t) {
            ev_push(e, when, ev->seq, ev->op, EV_ARRIVE);
            return;
        }
        r = prm(e, m->amount);
        e->cpu[c] = t + r->o + per_byte(m->amount) * (r->O > r->G ? r->O : r->G);
        e->nic_r[n] = t + r->g + per_byte(m->amount) * r->G;
        busy(e, dst, t, e->cpu[c] - t, 0);
        if (e->trace != NULL && e->trace->span != NULL) {
            e->trace->span(e->trace->arg, dst, "cpu", m->cpu, "recv", t, e->cpu[c] - t, m);
            e->trace->span(e->trace->arg, dst, "nic-recv", m->nic, "recv", t,
                           e->nic_r[n] - t, m);
        }
    }
    recv = q_take(e, &e->posted[2 * (size_t)dst], m, 1);
    if (recv == NIL) {
        q_append(e, &e->unexp[2 * (size_t)dst], ev->op);
        return;
    }
    complete_match(e, recv, ev->op, t);
}

/* ---- rails (p->rails; docs/sim.md "Rails") -------------------------------- */

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
static uint32_t rl_find(const eng_t *e, uint64_t key)
{
    size_t i;

    if (e->rl_hcap == 0) {
        return NIL;
    }
    for (i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (e->rl_hcap - 1); e->rl_key[i] != 0;
         i = (i + 1) & (e->rl_hcap - 1)) {
        if (e->rl_key[i] == key) {
            return (uint32_t)i;
        }
    }
    return NIL;
}

/* The shares (sum 1) that a message from src to dst is cut by. */
static const double *rl_shares(const eng_t *e, uint32_t src, uint32_t dst)
{
    if (e->rl->policy == RG_SIM_RAILS_ADAPTIVE) {
        uint32_t k = rl_find(e, (uint64_t)src * e->s->nranks + dst + 1);
        if (k != NIL) {
            return &e->rl_val[(size_t)k * 2 * e->R];
        }
    }
    return e->rl_w0;
}

/* Places a message of s bytes from rank to peer as xport/rails.c does:
 * binding on rail (rank + peer) mod R; round-robin on the rank's next rail
 * (peeked: the send advances it once it starts); the others whole on the
 * best-shared rail (the first of equal ones) up to the inline size and below
 * the stripe size, above in stripes in proportion to the shares, whole 4 KiB
 * pages but the last, the rounding to the last rail with a share. cut[r]:
 * the bytes on rail r; returns the rails' mask, with RL_STRIPED if cut. */
static uint32_t rl_place(const eng_t *e, uint32_t rank, uint32_t peer, double s, double *cut)
{
    const rg_sim_rails_t *rl = e->rl;
    const double         *w;
    uint32_t              R = e->R, r, best = 0, mask = 0;

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
        best = e->rl_rr[rank] % R;
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

static double *rl_record(const eng_t *e, uint32_t slot)
{
    return &e->rl_rec[(size_t)slot * e->rl_stride];
}

static uint32_t rl_new(eng_t *e)
{
    if (e->rl_nfree > 0) {
        return e->rl_free[--e->rl_nfree];
    }
    if (e->rl_n == e->rl_cap) {
        size_t  nc = e->rl_cap ? e->rl_cap * 2 : 1024;
        double *np = nc <= RL_SLOT_MAX ? realloc(e->rl_rec, nc * e->rl_stride * sizeof(*np))
                                       : NULL;
        if (np == NULL) {
            e->nomem = 1;
            return NIL;
        }
        e->rl_rec = np;
        e->rl_cap = nc;
    }
    return (uint32_t)e->rl_n++;
}

static void rl_put(eng_t *e, uint32_t slot)
{
    if (e->rl_nfree == e->rl_free_cap) {
        size_t    nc = e->rl_free_cap ? e->rl_free_cap * 2 : 1024;
        uint32_t *np = realloc(e->rl_free, nc * sizeof(*np));
        if (np == NULL) {
            return; /* the record is not reused */
        }
        e->rl_free = np;
        e->rl_free_cap = nc;
    }
    e->rl_free[e->rl_nfree++] = slot;
}

/* A send with rails at t (on_ready's send, docs/sim.md): due when its CPU
 * and every rail its placement uses are free; the CPU for o + (s-1)O, each
 * rail's send gap for g_r + (s_r-1)G_r; the message arrives o + L after the
 * start, with o and L the largest of its rails'. With one rail, on_ready's
 * own send to the bit. */
static RX_HOT void rl_send(eng_t *e, const ev_t *ev, const rg_sim_op_t *op, size_t c, double t)
{
    const rg_sim_rails_t *rl = e->rl;
    double                cut[RG_SIM_RAILS_MAX], when = e->cpu[c], o = 0, L = 0, *rec;
    size_t                base = ((size_t)op->rank * e->s->nnics + op->nic) * e->R;
    uint32_t mask = rl_place(e, op->rank, (uint32_t)op->peer, op->amount, cut), r, slot;
    const rg_sim_range_t *b;

    for (r = 0; r < e->R; r++) {
        if ((mask >> r) & 1u && e->nic_s[base + r] > when) {
            when = e->nic_s[base + r];
        }
    }
    if (when > t) {
        ev_push(e, when, ev->seq, ev->op, EV_READY);
        return;
    }
    if ((slot = rl_new(e)) == NIL) {
        return;
    }
    b = prm(e, op->amount);
    for (r = 0; r < e->R; r++) {
        if ((mask >> r) & 1u) {
            double ro = rl_par(rl->rail[r].o, b->o), rL = rl_par(rl->rail[r].L, b->L);
            o = ro > o ? ro : o;
            L = rL > L ? rL : L;
        }
    }
    if (rl->policy == RG_SIM_RAILS_RR) {
        e->rl_rr[op->rank]++;
    }
    rec = rl_record(e, slot);
    rec[0] = t;
    rec[1] = (double)mask;
    memcpy(rec + 2, cut, e->R * sizeof(double));
    if (e->rl_mask != NULL) {
        e->rl_mask[ev->op] = (uint16_t)mask;
    }
    start(e, ev->op, t);
    e->cpu[c] = t + o + per_byte(op->amount) * b->O;
    busy(e, op->rank, t, e->cpu[c] - t, 0);
    if (e->trace != NULL && e->trace->span != NULL) {
        e->trace->span(e->trace->arg, op->rank, "cpu", op->cpu, "send", t, e->cpu[c] - t, op);
    }
    for (r = 0; r < e->R; r++) {
        if ((mask >> r) & 1u) {
            double gap;
            /* (t + g) + (s-1)G, in on_ready's order of additions */
            e->nic_s[base + r] = t + rl_par(rl->rail[r].g, b->g) +
                                 per_byte(cut[r]) * rl_par(rl->rail[r].G, b->G);
            gap = e->nic_s[base + r] - t;
            e->rl_tot[r].bytes += cut[r];
            e->rl_tot[r].pieces++;
            e->rl_tot[r].send_busy_us += gap;
            if (e->trace != NULL && e->trace->span != NULL) {
                e->trace->span(e->trace->arg, op->rank, "nic-send",
                               (uint16_t)(op->nic * e->R + r), "send", t, gap, op);
            }
        }
    }
    ev_push(e, t + o + L, e->seq++, ev->op, EV_RL_ARRIVE | (slot << RX_TYPE_BITS));
    if (op->amount <= e->p->S) {
        done(e, ev->op, op->rank, t);
    }
}

/* Adaptive, a striped message handled at t: the rate each rail delivered
 * its piece at (bytes / (the piece's bytes in - the send's start)) becomes
 * the pair's new shares as xport/rails.c's rg__rails_take_rates does: share
 * = rate / sum, w = alpha share + (1 - alpha) w, at least the floor, then
 * normalised. A rail without a piece this time keeps its last rate; while
 * one has none yet the shares stay. */
static void rl_learn(eng_t *e, uint32_t src, uint32_t dst, const double *rec, double t,
                     const rg_sim_range_t *b)
{
    const rg_sim_rails_t *rl = e->rl;
    uint64_t              key = (uint64_t)src * e->s->nranks + dst + 1;
    uint32_t              k = rl_find(e, key), R = e->R, r;
    double               *w, *rate, sum = 0, tot = 0;

    if (k == NIL) {
        size_t i;
        if (2 * (e->rl_hn + 1) > e->rl_hcap) {
            size_t    nc = e->rl_hcap ? 2 * e->rl_hcap : 1024, j;
            uint64_t *nk = calloc(nc, sizeof(*nk));
            double   *nv = malloc(nc * 2 * R * sizeof(*nv));
            if (nk == NULL || nv == NULL) {
                free(nk);
                free(nv);
                e->nomem = 1;
                return;
            }
            for (j = 0; j < e->rl_hcap; j++) {
                if (e->rl_key[j] != 0) {
                    for (i = (size_t)(e->rl_key[j] * 0x9e3779b97f4a7c15ull >> 20) & (nc - 1);
                         nk[i] != 0; i = (i + 1) & (nc - 1)) {
                    }
                    nk[i] = e->rl_key[j];
                    memcpy(&nv[i * 2 * R], &e->rl_val[j * 2 * R], 2 * R * sizeof(double));
                }
            }
            free(e->rl_key);
            free(e->rl_val);
            e->rl_key = nk;
            e->rl_val = nv;
            e->rl_hcap = nc;
        }
        for (i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (e->rl_hcap - 1);
             e->rl_key[i] != 0; i = (i + 1) & (e->rl_hcap - 1)) {
        }
        e->rl_key[i] = key;
        memcpy(&e->rl_val[i * 2 * R], e->rl_w0, R * sizeof(double));
        memset(&e->rl_val[i * 2 * R + R], 0, R * sizeof(double));
        e->rl_hn++;
        k = (uint32_t)i;
    }
    w = &e->rl_val[(size_t)k * 2 * R];
    rate = w + R;
    for (r = 0; r < R; r++) {
        double c = rec[2 + r], dt;
        if (c > 0) {
            dt = t + per_byte(c) * rl_par(rl->rail[r].G, b->G) - rec[0];
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
 * G) and g + (s-1)G, to the bit with one rail); then matched as on_arrive. */
static void rl_arrive(eng_t *e, const ev_t *ev)
{
    const rg_sim_rails_t *rl = e->rl;
    const rg_sim_op_t     mv = rg_sim_op_get(e->s, ev->op);
    const rg_sim_op_t    *m = &mv;
    uint32_t              dst = (uint32_t)m->peer, slot = ev->type >> RX_TYPE_BITS, mask, r;
    uint32_t              recv;
    const double         *rec = rl_record(e, slot);
    const rg_sim_range_t *b;
    size_t                c = (size_t)dst * e->s->ncpus + m->cpu;
    size_t                base = ((size_t)dst * e->s->nnics + m->nic) * e->R;
    double                t = ev->t, when = e->cpu[c], o = 0, stream, gap[RG_SIM_RAILS_MAX];

    mask = (uint32_t)rec[1];
    for (r = 0; r < e->R; r++) {
        if ((mask >> r) & 1u && e->nic_r[base + r] > when) {
            when = e->nic_r[base + r];
        }
    }
    if (when > t) {
        ev_push(e, when, ev->seq, ev->op, ev->type);
        return;
    }
    b = prm(e, m->amount);
    stream = per_byte(m->amount) * b->O;
    for (r = 0; r < e->R; r++) {
        if ((mask >> r) & 1u) {
            double ro = rl_par(rl->rail[r].o, b->o), G = rl_par(rl->rail[r].G, b->G);
            double x = per_byte(rec[2 + r]) * G;
            o = ro > o ? ro : o;
            stream = x > stream ? x : stream;
            e->nic_r[base + r] = t + rl_par(rl->rail[r].g, b->g) + x;
            gap[r] = e->nic_r[base + r] - t;
            e->rl_tot[r].recv_busy_us += gap[r];
        }
    }
    e->cpu[c] = t + o + stream;
    busy(e, dst, t, e->cpu[c] - t, 0);
    if (e->trace != NULL && e->trace->span != NULL) {
        e->trace->span(e->trace->arg, dst, "cpu", m->cpu, "recv", t, e->cpu[c] - t, m);
        for (r = 0; r < e->R; r++) {
            if ((mask >> r) & 1u) {
                e->trace->span(e->trace->arg, dst, "nic-recv", (uint16_t)(m->nic * e->R + r),
                               "recv", t, gap[r], m);
            }
        }
    }
    if ((mask & RL_STRIPED) && rl->policy == RG_SIM_RAILS_ADAPTIVE) {
        rl_learn(e, m->rank, dst, rec, t, b);
    }
    rl_put(e, slot);
    recv = q_take(e, &e->posted[2 * (size_t)dst], m, 1);
    if (recv == NIL) {
        q_append(e, &e->unexp[2 * (size_t)dst], ev->op);
        return;
    }
    complete_match(e, recv, ev->op, t);
}

/* The rails' state: the shares before learning, round-robin's counters,
 * and with rendezvous each send's rails. */
static rg_status_t rl_setup(eng_t *e, rg_err_t *err)
{
    const rg_sim_rails_t *rl = e->p->rails;
    const rg_sim_sched_t *s = e->s;
    double                sum = 0;
    int                   r;

    if ((e->p->lop != NULL || e->p->rxwin != NULL)) {
        return rg_err_set(err, RG_ERR_INVALID, "rails run under LogGOPS, without %s",
                          e->p->lop != NULL ? "LoP" : "the receive-window model");
    }
    e->rl = rl;
    e->R = (uint32_t)rl->nrails;
    e->rl_stride = 2 + e->R;
    for (r = 0; r < rl->nrails; r++) {
        e->rl_w0[r] = rl->policy == RG_SIM_RAILS_EVEN || rl->weights[0] == 0 ? 1.0
                                                                              : rl->weights[r];
        sum += e->rl_w0[r];
    }
    for (r = 0; r < rl->nrails; r++) {
        e->rl_w0[r] /= sum;
    }
    e->rl_rr = calloc(s->nranks ? s->nranks : 1, sizeof(uint32_t));
    if (e->rl_rr == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
    }
    if (isfinite(e->p->S)) {
        e->rl_mask = calloc(s->nops ? s->nops : 1, sizeof(uint16_t));
        if (e->rl_mask == NULL) {
            return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %zu operations",
                              s->nops);
        }
    }
    return RG_OK;
}

/* ---- the shared receive window (p->rxwin; docs/sim.md) -------------------- */

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

static uint32_t rn_new(eng_t *e)
{
    uint32_t n;

    if (e->rn_free != NIL) {
        n = e->rn_free;
        e->rn_free = e->rn[n].next;
        return n;
    }
    if (e->rn_n == e->rn_cap) {
        size_t    nc = e->rn_cap ? e->rn_cap * 2 : 4096;
        rxnode_t *np = nc < NIL ? realloc(e->rn, nc * sizeof(*np)) : NULL;
        if (np == NULL) {
            e->nomem = 1;
            return NIL;
        }
        e->rn = np;
        e->rn_cap = nc;
    }
    return (uint32_t)e->rn_n++;
}

static void rn_put(eng_t *e, uint32_t n)
{
    e->rn[n].next = e->rn_free;
    e->rn_free = n;
}

static void rl_append(eng_t *e, uint32_t *ht, uint32_t n)
{
    e->rn[n].next = NIL;
    if (ht[1] == NIL) {
        ht[0] = n;
    } else {
        e->rn[ht[1]].next = n;
    }
    ht[1] = n;
}

static uint32_t rl_pop(eng_t *e, uint32_t *ht)
{
    uint32_t n = ht[0];

    ht[0] = e->rn[n].next;
    if (ht[0] == NIL) {
        ht[1] = NIL;
    }
    return n;
}

static void rl_unlink(eng_t *e, uint32_t *ht, uint32_t prev, uint32_t n)
{
    if (prev == NIL) {
        ht[0] = e->rn[n].next;
    } else {
        e->rn[prev].next = e->rn[n].next;
    }
    if (ht[1] == n) {
        ht[1] = prev;
    }
}

/* Takes the first node from src whose tag matches tag (RG_SIM_ANY on either
 * side matches any), or with want_seq != NIL the one numbered want_seq. */
static uint32_t rl_take(eng_t *e, uint32_t *ht, uint32_t src, int32_t tag, uint32_t want_seq)
{
    uint32_t prev = NIL, n = ht[0];

    while (n != NIL) {
        const rxnode_t *x = &e->rn[n];
        if (x->src == src &&
            (want_seq != NIL ? x->seq == want_seq
                             : (x->tag == tag || x->tag == RG_SIM_ANY || tag == RG_SIM_ANY))) {
            rl_unlink(e, ht, prev, n);
            return n;
        }
        prev = n;
        n = x->next;
    }
    return NIL;
}

/* The posted (0), unexpected (1) or parked (2) list of rank d for src. */
static uint32_t *rq_list(eng_t *e, uint32_t d, uint32_t src, int which)
{
    return &e->rq[((size_t)d * e->nb + (src & e->bmask)) * 6 + 2 * (size_t)which];
}

static void rx_mem(eng_t *e, uint32_t r, uint64_t *what, int64_t delta)
{
    rxrank_t *w = &e->rr[r];
    uint64_t  total;

    *what = (uint64_t)((int64_t)*what + delta);
    total = w->pool + w->unexp + w->ctrl;
    if (total > w->hw) {
        w->hw = total;
    }
}

/* A message uses the window: eager (at most S and the eager limit), to
 * another rank. */
static int rx_governed(const eng_t *e, const rg_sim_op_t *m)
{
    return m->amount <= e->p->S && m->amount <= e->rx->eager_limit &&
           (uint32_t)m->peer != m->rank;
}

static int rx_stage_class(const eng_t *e, double amount)
{
    uint64_t b = e->rx->stage_hdr + (uint64_t)amount;

    return b <= e->rx->stage_cap[0] ? 0 : b <= e->rx->stage_cap[1] ? 1 : 2;
}

/* A staging copy of an eager send, kept until its ACK (with RNR every eager
 * message is), from the rank's cache of free copies or newly allocated. */
static void rx_stage(eng_t *e, uint32_t r, double amount, int get)
{
    rxrank_t *w = &e->rr[r];
    int       k = rx_stage_class(e, amount);
    int64_t   bytes = (int64_t)(e->rx->stage_desc + e->rx->stage_cap[k]);

    if (get) {
        if (w->cache[k] > 0) {
            w->cache[k]--;
        } else {
            rx_mem(e, r, &w->ctrl, bytes);
        }
    } else if (w->cache[k] < e->rx->stage_cache) {
        w->cache[k]++;
    } else {
        rx_mem(e, r, &w->ctrl, -bytes);
    }
}

/* The limit for the window's size: the first limit at W_init, else W/2. */
static int32_t rx_limit_for(const eng_t *e, const rxrank_t *w)
{
    if (w->nlimit == 0) {
        return e->rx->first_limit;
    }
    return w->window / 2 > 0 ? w->window / 2 : 1;
}

/* The end of rank d's pass at ret_t (docs/sim.md): the progress engine's
 * check of the window at the pass's low point, before any buffer goes back
 * (rg_rxwin_check and rg_rxwin_reclaim of the runtime); then the pass's
 * buffers are posted again (or freed where the window shrank below what is
 * allocated) and new ones are allocated and posted up to the window. Done
 * when the rank's window is next looked at, at t >= ret_t. */
static void rx_settle(eng_t *e, uint32_t d, double t)
{
    const rg_sim_rxwin_t *x = e->rx;
    rxrank_t             *w = &e->rr[d];
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

static void rx_fail(eng_t *e, const char *what, const rg_sim_op_t *op)
{
    if (e->rx_fail[0] == '\0') {
        snprintf(e->rx_fail, sizeof(e->rx_fail), "%s (rank %u, peer %d, tag %d)", what,
                 op->rank, op->peer, op->tag);
    }
    e->nomem = 2;
}

/* A send started at t whose message arrives at `arrive`: it gets the next
 * number of its pair; an eager one is staged until its ACK, which makes it
 * done; others are done as without the window. */
static RX_COLD void rx_sent(eng_t *e, uint32_t m, const rg_sim_op_t *op, double t,
                            double arrive)
{
    size_t   pair;
    uint32_t seq;

    if (op->peer < 0 || (uint32_t)op->peer >= e->s->nranks) {
        rx_fail(e, "a send to no rank", op);
        return;
    }
    pair = (size_t)op->rank * e->s->nranks + (uint32_t)op->peer;
    seq = e->sseq[pair]++;
    if (seq >= RX_SEQ_MAX) {
        rx_fail(e, "the receive-window model counts at most 2^29 messages per pair", op);
        return;
    }
    e->rr[op->rank].sent++;
    e->rx_msgs++;
    ev_push(e, arrive, e->seq++, m, EV_RX_ARRIVE | (seq << RX_TYPE_BITS));
    if (rx_governed(e, op)) {
        rx_stage(e, op->rank, op->amount, 1);
    } else if (op->amount <= e->p->S) {
        done(e, m, op->rank, t);
    }
}

/* A receive posted at t: the first unexpected message from its source with
 * a matching tag, else it waits among the posted receives. */
static RX_COLD void rx_post_recv(eng_t *e, uint32_t v, const rg_sim_op_t *op, double t)
{
    uint32_t n, src;

    if (op->peer < 0 || (uint32_t)op->peer >= e->s->nranks) {
        rx_fail(e, "the receive-window model needs every receive to name its source", op);
        return;
    }
    src = (uint32_t)op->peer;
    n = rl_take(e, rq_list(e, op->rank, src, 1), src, op->tag, NIL);
    if (n == NIL) {
        n = rn_new(e);
        if (n == NIL) {
            return;
        }
        e->rn[n].op = v;
        e->rn[n].src = src;
        e->rn[n].tag = op->tag;
        rl_append(e, rq_list(e, op->rank, src, 0), n);
        return;
    }
    {
        uint32_t    send = e->rn[n].op;
        rg_sim_op_t m = rg_sim_op_get(e->s, send);
        rx_mem(e, op->rank, &e->rr[op->rank].unexp,
               -(int64_t)(e->rx->uxm_bytes + (uint64_t)m.amount));
        rn_put(e, n);
        complete_match(e, v, send, t);
    }
}

/* Message node n is in its turn at rank d at t: checked (once, in its
 * sender's program order), acknowledged at ack_t where it used the window,
 * and matched or kept as unexpected. */
static void rx_deliver(eng_t *e, uint32_t n, uint32_t d, double t, double ack_t)
{
    rxnode_t   *x = &e->rn[n];
    uint32_t    m = x->op, src = x->src, recv;
    size_t      pair = (size_t)src * e->s->nranks + d;
    rg_sim_op_t mo;

    if (e->dlv[m >> 3] & (1u << (m & 7))) {
        e->rx_dup++;
    }
    e->dlv[m >> 3] |= (uint8_t)(1u << (m & 7));
    if (e->last[pair] != NIL && m <= e->last[pair]) {
        e->rx_ooo++;
    }
    e->last[pair] = m;
    e->rseq[pair]++;
    e->rx_delivered++;
    e->rr[d].received++;
    if (x->gov) {
        ev_push(e, ack_t, e->seq++, m, EV_RX_ACK);
    }
    recv = rl_take(e, rq_list(e, d, src, 0), src, x->tag, NIL);
    if (recv != NIL) {
        uint32_t r = e->rn[recv].op;
        rn_put(e, recv);
        rn_put(e, n);
        complete_match(e, r, m, t);
        return;
    }
    mo = rg_sim_op_get(e->s, m);
    rx_mem(e, d, &e->rr[d].unexp, (int64_t)(e->rx->uxm_bytes + (uint64_t)mo.amount));
    rl_append(e, rq_list(e, d, src, 1), n);
}

static void rx_land(eng_t *e, uint32_t op, uint32_t type, double t);

static int nicq_push(eng_t *e, rxnicq_t *q, uint64_t seq, uint32_t op, uint32_t type)
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
static void rx_arrive(eng_t *e, const ev_t *ev)
{
    const rg_sim_op_t m = rg_sim_op_get(e->s, ev->op);
    size_t            nic = (size_t)(uint32_t)m.peer * e->s->nnics + m.nic;
    rxnicq_t         *q = &e->nicq[nic];

    if (e->nic_r[nic] > ev->t || q->n > 0) {
        int newmin = q->n == 0 || ev->seq < q->h[0].seq;
        if (nicq_push(e, q, ev->seq, ev->op, ev->type) != 0) {
            return;
        }
        if (newmin) {
            /* The service event carries the smallest waiting number: at the
             * NIC's free time it is ordered among other events as that
             * waiter's own event would be. */
            ev_push(e, e->nic_r[nic] > ev->t ? e->nic_r[nic] : ev->t, ev->seq, (uint32_t)nic,
                    EV_RX_NIC);
        }
        return;
    }
    rx_land(e, ev->op, ev->type, ev->t);
}

/* The receiving NIC `nic` may be free at t: it serves its first waiter. */
static void rx_nic(eng_t *e, const ev_t *ev)
{
    rxnicq_t *q = &e->nicq[ev->op];
    rxwait_t  w;

    if (q->n == 0 || e->nic_r[ev->op] > ev->t) {
        return; /* served already by another service event at this time */
    }
    w = nicq_pop(q);
    rx_land(e, w.op, w.type, ev->t);
    if (q->n > 0) {
        ev_push(e, e->nic_r[ev->op] > ev->t ? e->nic_r[ev->op] : ev->t, q->h[0].seq, ev->op,
                EV_RX_NIC);
    }
}

/* Message op (event type `type`) takes its receiver's NIC at t: once it is
 * through the NIC it lands in a posted buffer (taken in posting order) and
 * waits for the CPU, or, with none posted, is refused: the NAK flies back (L)
 * and the sender retries after the RNR timer. */
static void rx_land(eng_t *e, uint32_t op, uint32_t type, double t)
{
    const rg_sim_op_t m = rg_sim_op_get(e->s, op);
    uint32_t          d = (uint32_t)m.peer, n;
    size_t            c, nic = (size_t)d * e->s->nnics + m.nic;
    const rg_sim_range_t *r;
    double            when;
    int               gov = rx_governed(e, &m);

    r = prm(e, m.amount);
    e->nic_r[nic] = t + r->g + per_byte(m.amount) * r->G;
    if (e->trace != NULL && e->trace->span != NULL) {
        e->trace->span(e->trace->arg, d, "nic-recv", m.nic, "recv", t, e->nic_r[nic] - t, &m);
    }
    n = rn_new(e);
    if (n == NIL) {
        return;
    }
    e->rn[n].op = op;
    e->rn[n].seq = type >> RX_TYPE_BITS;
    e->rn[n].src = m.rank;
    e->rn[n].tag = m.tag;
    e->rn[n].gov = (uint32_t)gov;
    if (gov) {
        rx_settle(e, d, t);
        if (e->rr[d].posted == 0) {
            uint32_t *q = &e->retry[2 * (size_t)m.rank];
            e->rr[d].rnr_sent++;
            e->rr[m.rank].rnr_recv++;
            e->rn[n].t = t + r->L + e->rx->rnr_timer_us;
            rl_append(e, q, n);
            if (q[0] == n) {
                ev_push(e, e->rn[n].t, e->seq++, m.rank, EV_RX_RETRY);
            }
            return;
        }
        e->rr[d].posted--;
    }
    rl_append(e, &e->land[2 * (size_t)d], n);
    e->rr[d].nland++;
    if (e->land[2 * (size_t)d] == n) {
        c = (size_t)d * e->s->ncpus + m.cpu;
        when = e->cpu[c] > t ? e->cpu[c] : t;
        ev_push(e, when, e->seq++, d, EV_RX_HANDLE);
    }
}

/* Rank d's CPU handles the first message landed (o + (s-1) max(O, G)): the
 * window is checked and the buffer goes back at the end; the message is
 * taken in its pair's turn, or parked until its predecessors came. */
static void rx_handle(eng_t *e, const ev_t *ev)
{
    uint32_t          d = ev->op, *fifo = &e->land[2 * (size_t)d], n = fifo[0], want;
    const rg_sim_op_t m = rg_sim_op_get(e->s, e->rn[n].op);
    size_t            c = (size_t)d * e->s->ncpus + m.cpu, pair;
    const rg_sim_range_t *r;
    double            t = ev->t, end, ack;

    if (e->cpu[c] > t) {
        ev_push(e, e->cpu[c], ev->seq, ev->op, ev->type);
        return;
    }
    rl_pop(e, fifo);
    r = prm(e, m.amount);
    end = t + r->o + per_byte(m.amount) * (r->O > r->G ? r->O : r->G);
    e->cpu[c] = end;
    busy(e, d, t, end - t, 0);
    if (e->trace != NULL && e->trace->span != NULL) {
        e->trace->span(e->trace->arg, d, "cpu", m.cpu, "recv", t, end - t, &m);
    }
    /* A pass handles the messages landed when it starts; their buffers go
     * back at its end. */
    {
        rxrank_t *w = &e->rr[d];
        rx_settle(e, d, t);
        if (w->pass_left == 0) {
            w->pass_left = w->nland;
            w->ret_t = INFINITY;
        }
        w->nland--;
        w->ret_n += (int32_t)e->rn[n].gov;
        if (--w->pass_left == 0) {
            w->ret_t = end;
        }
    }
    ack = end + r->L;
    pair = (size_t)m.rank * e->s->nranks + d;
    if (e->rn[n].seq != e->rseq[pair]) {
        e->rr[d].parked++;
        rx_mem(e, d, &e->rr[d].unexp, (int64_t)(e->rx->uxm_bytes + (uint64_t)m.amount));
        rl_append(e, rq_list(e, d, m.rank, 2), n);
    } else {
        rx_deliver(e, n, d, t, ack);
        /* Parked successors from the same sender, now in their turn. */
        while ((want = e->rseq[pair], n = rl_take(e, rq_list(e, d, m.rank, 2), m.rank, 0,
                                                  want)) != NIL) {
            rg_sim_op_t p = rg_sim_op_get(e->s, e->rn[n].op);
            rx_mem(e, d, &e->rr[d].unexp, -(int64_t)(e->rx->uxm_bytes + (uint64_t)p.amount));
            rx_deliver(e, n, d, t, ack);
        }
    }
    if (fifo[0] != NIL) {
        const rg_sim_op_t nx = rg_sim_op_get(e->s, e->rn[fifo[0]].op);
        size_t            c2 = (size_t)d * e->s->ncpus + nx.cpu;
        ev_push(e, e->cpu[c2] > t ? e->cpu[c2] : t, e->seq++, d, EV_RX_HANDLE);
    }
}

/* A refused message of rank s is sent again once its timer ran out and the
 * sender's CPU and NIC are free (o + (s-1)O, g + (s-1)G, as a send). */
static void rx_retry(eng_t *e, const ev_t *ev)
{
    uint32_t          s = ev->op, *fifo = &e->retry[2 * (size_t)s], n = fifo[0];
    uint32_t          m = e->rn[n].op, seq = e->rn[n].seq;
    const rg_sim_op_t op = rg_sim_op_get(e->s, m);
    size_t            c = (size_t)s * e->s->ncpus + op.cpu;
    size_t            nic = (size_t)s * e->s->nnics + op.nic;
    const rg_sim_range_t *r;
    double            t = ev->t, when = e->cpu[c] > e->nic_s[nic] ? e->cpu[c] : e->nic_s[nic];

    if (when > t) {
        ev_push(e, when, ev->seq, ev->op, ev->type);
        return;
    }
    rl_pop(e, fifo);
    rn_put(e, n);
    r = prm(e, op.amount);
    e->cpu[c] = t + r->o + per_byte(op.amount) * r->O;
    e->nic_s[nic] = t + r->g + per_byte(op.amount) * r->G;
    busy(e, s, t, e->cpu[c] - t, 0);
    if (e->trace != NULL && e->trace->span != NULL) {
        e->trace->span(e->trace->arg, s, "cpu", op.cpu, "send", t, e->cpu[c] - t, &op);
        e->trace->span(e->trace->arg, s, "nic-send", op.nic, "send", t, e->nic_s[nic] - t, &op);
    }
    e->rr[s].retries++;
    ev_push(e, t + r->o + r->L, e->seq++, m, EV_RX_ARRIVE | (seq << RX_TYPE_BITS));
    if (fifo[0] != NIL) {
        ev_push(e, e->rn[fifo[0]].t > t ? e->rn[fifo[0]].t : t, e->seq++, s, EV_RX_RETRY);
    }
}

/* The receiver's ACK reaches the sender: the staging copy goes back and the
 * eager send is done (as a send on a reliable connection). */
static void rx_ack(eng_t *e, const ev_t *ev)
{
    const rg_sim_op_t m = rg_sim_op_get(e->s, ev->op);

    rx_stage(e, m.rank, m.amount, 0);
    done(e, ev->op, m.rank, ev->t);
}

static RX_HOT void rx_event(eng_t *e, const ev_t *ev)
{
    switch (ev->type & ((1u << RX_TYPE_BITS) - 1)) {
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
    case EV_RL_ARRIVE:
        rl_arrive(e, ev);
        break;
    default:
        rx_ack(e, ev);
        break;
    }
}

/* The window model's state: every rank starts with W_init buffers posted
 * and the refusal buffer (counted, as the runtime's). */
static rg_status_t rx_setup(eng_t *e, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    size_t                n = s->nranks, i, pairs = n * n;
    uint32_t              b = 1;

    e->rx = e->p->rxwin;
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
    e->nb = b;
    e->bmask = b - 1;
    e->rn_free = NIL;
    e->rr = calloc(n ? n : 1, sizeof(*e->rr));
    e->rq = malloc(n * b * 6 * sizeof(uint32_t) + 1);
    e->land = malloc(n * 2 * sizeof(uint32_t) + 1);
    e->retry = malloc(n * 2 * sizeof(uint32_t) + 1);
    e->sseq = calloc(pairs ? pairs : 1, sizeof(uint32_t));
    e->rseq = calloc(pairs ? pairs : 1, sizeof(uint32_t));
    e->last = malloc(pairs * sizeof(uint32_t) + 1);
    e->dlv = calloc(s->nops / 8 + 1, 1);
    e->nicq = calloc(n * s->nnics + 1, sizeof(*e->nicq));
    if (!e->rr || !e->rq || !e->land || !e->retry || !e->sseq || !e->rseq || !e->last ||
        !e->dlv || !e->nicq) {
        return rg_err_set(err, RG_ERR_NOMEM, "the receive-window model: out of memory for %zu "
                          "ranks", n);
    }
    memset(e->rq, 0xff, n * b * 6 * sizeof(uint32_t));
    memset(e->land, 0xff, n * 2 * sizeof(uint32_t));
    memset(e->retry, 0xff, n * 2 * sizeof(uint32_t));
    memset(e->last, 0xff, pairs * sizeof(uint32_t));
    for (i = 0; i < n; i++) {
        rxrank_t *w = &e->rr[i];
        w->window = w->alloc = w->posted = w->peak = e->rx->w_init;
        w->limit = e->rx->first_limit;
        w->period_start = -1;
        w->pool = w->hw = (uint64_t)(w->alloc + 1) * e->rx->buf_bytes;
    }
    return RG_OK;
}

/* Totals and per-rank figures of the window model into res. */
static void rx_finish(eng_t *e, rg_sim_result_t *res)
{
    rg_sim_rxwin_totals_t *x = &res->rx;
    size_t                 i, n = e->s->nranks;
    double                 sum = 0;

    memset(x, 0, sizeof(*x));
    x->messages = e->rx_msgs;
    x->delivered = e->rx_delivered;
    x->out_of_order = e->rx_ooo;
    x->duplicates = e->rx_dup;
    x->mem_min = UINT64_MAX;
    for (i = 0; i < n; i++) {
        rx_settle(e, (uint32_t)i, INFINITY); /* the last pass's end */
    }
    for (i = 0; i < n; i++) {
        const rxrank_t *w = &e->rr[i];
        x->limit_events += w->limit_events;
        x->rnr += w->rnr_sent;
        x->retries += w->retries;
        x->shrinks += w->shrinks;
        x->mem_min = w->hw < x->mem_min ? w->hw : x->mem_min;
        x->mem_max = w->hw > x->mem_max ? w->hw : x->mem_max;
        sum += (double)w->hw;
        if (e->rx->per_rank != NULL) {
            rg_sim_rxwin_rank_t *o = &e->rx->per_rank[i];
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

static const char *const kind_name[] = {"send", "recv", "calc"};

static rg_status_t deadlock(eng_t *e, FILE *report, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    char   msg[RG_ERR_MSG_MAX];
    size_t len, k, shown = 0, waiting = s->nops - e->ndone;

    len = (size_t)snprintf(msg, sizeof(msg), "deadlock: %zu operation(s) never done:", waiting);
    for (k = 0; k < s->nops; k++) {
        /* In the order added (sched_finish may have renumbered). */
        size_t             i = s->added != NULL ? s->added[k] : k;
        const rg_sim_op_t  opv = rg_sim_op_get(s, i);
        const rg_sim_op_t *op = &opv;
        char one[160];
        if (e->state[i] == 2) {
            continue;
        }
        snprintf(one, sizeof(one), " rank %u %s %.0fb %s %d tag %d%s", op->rank,
                 kind_name[op->kind], op->amount, op->kind == RG_SIM_SEND ? "to" : "from",
                 op->peer, op->tag,
                 e->state[i] == 0 ? " (dependencies not met)" :
                 op->kind == RG_SIM_SEND ? " (rendezvous, unmatched)" : " (unmatched)");
        if (op->line) {
            size_t l = strlen(one);
            snprintf(one + l, sizeof(one) - l, " line %u", op->line);
        }
        if (report != NULL) {
            fprintf(report, "waiting:%s\n", one);
        }
        if (shown < 8 && len < sizeof(msg)) {
            len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s;", one);
            shown++;
        }
    }
    if (shown < waiting && len < sizeof(msg)) {
        snprintf(msg + len, sizeof(msg) - len, " ...");
    }
    return rg_err_set(err, RG_ERR_INVALID, "%s", msg);
}

/* LoP: the tables of o_s(p) and L(p) up to the largest batch, checked
 * (L(p) < 0 is outside the model: the posting overheads exceed half the
 * round trip), and for a stored schedule every rank's receives in program
 * order. */
static rg_status_t lop_setup(eng_t *e, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    size_t                i, k, maxb = 1;

    e->lop = e->p->lop;
    if (s->gen == RG_SIM_GEN_NONE) {
        for (i = 0; i < s->nops; i++) {
            if (s->ops[i].batch > maxb) {
                maxb = s->ops[i].batch;
            }
        }
    }
    e->lop_max = maxb;
    e->lop_os = malloc((maxb + 1) * sizeof(double));
    e->lop_L = malloc((maxb + 1) * sizeof(double));
    e->batch_end = calloc(s->nranks ? s->nranks : 1, sizeof(double));
    if (!e->lop_os || !e->lop_L || !e->batch_end) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for the LoP tables");
    }
    e->lop_os[0] = e->lop_L[0] = 0;
    for (i = 1; i <= maxb; i++) {
        e->lop_os[i] = rg_sim_lop_os(e->lop, (double)i);
        e->lop_L[i] = rg_sim_lop_latency(e->lop, (double)i);
        if (!isfinite(e->lop_os[i]) || e->lop_os[i] < 0) {
            return rg_err_set(err, RG_ERR_RANGE, "LoP: o_s(%zu) = %g us is not a time >= 0",
                              i, e->lop_os[i]);
        }
        if (!isfinite(e->lop_L[i]) || e->lop_L[i] < 0) {
            return rg_err_set(err, RG_ERR_RANGE, "LoP: %s(%zu) = %g us is negative (the "
                              "posting overheads exceed half the round trip: outside the "
                              "model)", e->lop->list ? "L_list" : "L", i, e->lop_L[i]);
        }
    }
    if (s->gen != RG_SIM_GEN_NONE) {
        return RG_OK;
    }
    e->rcv_off = calloc((size_t)s->nranks + 1, sizeof(uint32_t));
    e->rcv_ptr = malloc((s->nranks ? s->nranks : 1) * sizeof(uint32_t));
    if (!e->rcv_off || !e->rcv_ptr) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
    }
    for (i = 0; i < s->nops; i++) {
        if (s->ops[i].kind == RG_SIM_RECV) {
            e->rcv_off[s->ops[i].rank + 1]++;
        }
    }
    for (i = 0; i < s->nranks; i++) {
        e->rcv_off[i + 1] += e->rcv_off[i];
    }
    e->rcv = malloc((e->rcv_off[s->nranks] ? e->rcv_off[s->nranks] : 1) * sizeof(uint32_t));
    if (e->rcv == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for the receives");
    }
    memcpy(e->rcv_ptr, e->rcv_off, (size_t)s->nranks * sizeof(uint32_t));
    for (k = 0; k < s->nops; k++) {
        /* In program order: the order added (sched_finish may renumber). */
        size_t j = s->added != NULL ? s->added[k] : k;
        if (s->ops[j].kind == RG_SIM_RECV) {
            e->rcv[e->rcv_ptr[s->ops[j].rank]++] = (uint32_t)j;
        }
    }
    memcpy(e->rcv_ptr, e->rcv_off, (size_t)s->nranks * sizeof(uint32_t));
    return RG_OK;
}

/* Queues the operations free at the start as LogGOPSim does: rank by rank,
 * and within a rank its sends, then its receives, then its computations, each
 * in program order (the order decides ties between events at one time). A
 * generated schedule's first round is already in that order; a stored one is
 * sorted by a counting sort on the rank, fed kind by kind. (Where
 * sched_finish renumbered, the operations free at the start, those of depth
 * 0, kept the order they were added in.) */
static rg_status_t queue_initial(eng_t *e, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    uint32_t             *cnt, *idx, *out;
    size_t                i, nfree = 0;
    int                   kind;

    if (s->gen != RG_SIM_GEN_NONE) {
        for (i = 0; i < s->nops; i++) {
            if (e->left[i] == 0) {
                e->state[i] = 3;
                ev_push(e, 0.0, e->seq++, (uint32_t)i, EV_READY);
            }
        }
        return RG_OK;
    }
    /* One pass over the counters collects the free operations in index order
     * (idx: sized for all, only its used part is touched); the sort then
     * reads those alone. */
    cnt = calloc((size_t)s->nranks + 1, sizeof(*cnt));
    idx = malloc((s->nops ? s->nops : 1) * sizeof(*idx));
    if (cnt == NULL || idx == NULL) {
        free(cnt);
        free(idx);
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %zu operations",
                          s->nops);
    }
    for (i = 0; i < s->nops; i++) {
        if (e->left[i] == 0) {
            idx[nfree++] = (uint32_t)i;
        }
    }
    out = malloc((nfree ? nfree : 1) * sizeof(*out));
    if (out == NULL) {
        free(cnt);
        free(idx);
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %zu operations",
                          nfree);
    }
    for (i = 0; i < nfree; i++) {
        cnt[s->ops[idx[i]].rank + 1]++;
    }
    for (i = 0; i < s->nranks; i++) {
        cnt[i + 1] += cnt[i];
    }
    for (kind = RG_SIM_SEND; kind <= RG_SIM_CALC; kind++) {
        for (i = 0; i < nfree; i++) {
            const rg_sim_op_t *o = &s->ops[idx[i]];
            if (o->kind == kind) {
                out[cnt[o->rank]++] = idx[i];
            }
        }
    }
    for (i = 0; i < nfree; i++) {
        e->state[out[i]] = 3;
        ev_push(e, 0.0, e->seq++, out[i], EV_READY);
    }
    free(cnt);
    free(idx);
    free(out);
    return RG_OK;
}

rg_status_t rg_sim_run(rg_sim_sched_t *s, const rg_sim_params_t *p,
                       rg_sim_result_t *res, FILE *report, rg_err_t *err)
{
    return rg_sim_run_traced(s, p, NULL, res, report, err);
}

rg_status_t rg_sim_run_traced(rg_sim_sched_t *s, const rg_sim_params_t *p,
                              const rg_sim_trace_t *trace, rg_sim_result_t *res,
                              FILE *report, rg_err_t *err)
{
    eng_t       e;
    size_t      i, ncpu = (size_t)s->nranks * s->ncpus, nnic = (size_t)s->nranks * s->nnics;
    size_t      nrail = p->rails != NULL && p->rails->nrails > 0 ? (size_t)p->rails->nrails : 1;
    uint64_t    events = 0;
    rg_status_t st = RG_OK;

    memset(res, 0, sizeof(*res));
    if ((st = rg_sim_params_check(p, err)) != RG_OK) {
        return st;
    }
    if (p->rxwin != NULL && (st = rg_sim_rxwin_check(p->rxwin, err)) != RG_OK) {
        return st;
    }
    if (p->rails != NULL && (st = rg_sim_rails_check(p->rails, err)) != RG_OK) {
        return st;
    }
    if (s->gen == RG_SIM_GEN_NONE && s->dep_off == NULL && s->nops > 0) {
        return rg_err_set(err, RG_ERR_INVALID, "simulate: schedule not finished");
    }
    memset(&e, 0, sizeof(e));
    e.s = s;
    e.p = p;
    e.pool_free = NIL;
    rg_simq_init(&e.q);
    e.trace = trace;
    e.flat = (rg_sim_range_t){INFINITY, p->L, p->o, p->g, p->G, p->O};
    e.cpu = calloc(ncpu ? ncpu : 1, sizeof(double));
    e.R = 1;
    e.nic_s = calloc(nnic ? nnic * nrail : 1, sizeof(double));
    e.nic_r = calloc(nnic ? nnic * nrail : 1, sizeof(double));
    e.acc = calloc(s->nranks ? s->nranks : 1, sizeof(*e.acc));
    e.left = malloc((s->nops ? s->nops : 1) * sizeof(uint32_t));
    e.state = calloc(s->nops ? s->nops : 1, 1);
    e.posted = malloc((s->nranks ? s->nranks : 1) * 2 * sizeof(uint32_t));
    e.unexp = malloc((s->nranks ? s->nranks : 1) * 2 * sizeof(uint32_t));
    if (!e.cpu || !e.nic_s || !e.nic_r || !e.acc || !e.left || !e.state || !e.posted ||
        !e.unexp) {
        st = rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
        goto out;
    }
    if (p->lop != NULL && (st = lop_setup(&e, err)) != RG_OK) {
        goto out;
    }
    if (p->rxwin != NULL && (st = rx_setup(&e, err)) != RG_OK) {
        goto out;
    }
    if (p->rails != NULL && (st = rl_setup(&e, err)) != RG_OK) {
        goto out;
    }
    if (p->duplex > 0) {
        e.dx_last = malloc((s->nranks ? s->nranks : 1) * sizeof(double));
        e.dx_sent = malloc((s->nops ? s->nops : 1) * sizeof(double));
        if (e.dx_last == NULL || e.dx_sent == NULL) {
            st = rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %zu operations",
                            s->nops);
            goto out;
        }
        for (i = 0; i < s->nranks; i++) {
            e.dx_last[i] = -INFINITY;
        }
        for (i = 0; i < s->nops; i++) {
            e.dx_sent[i] = NAN;
        }
    }
    memset(e.posted, 0xff, (size_t)s->nranks * 2 * sizeof(uint32_t));
    memset(e.unexp, 0xff, (size_t)s->nranks * 2 * sizeof(uint32_t));
    if (s->gen == RG_SIM_GEN_HOOKS) {
        s->gen_ndeps(s, e.left);
    } else if (s->gen != RG_SIM_GEN_NONE) {
        for (i = 0; i < s->nops; i++) {
            e.left[i] = i < 2 * (size_t)s->nranks ? 0 : 2;
        }
    } else if (s->nops) {
        memcpy(e.left, s->ndeps, s->nops * sizeof(uint32_t));
    }
    if ((st = queue_initial(&e, err)) != RG_OK) {
        goto out;
    }
    while (e.q.count > 0 && !e.nomem && !e.q.nomem) {
        rg_simq_ev_t qe;
        ev_t         ev;
        rg_simq_pop(&e.q, &ev.t, &qe);
        ev.seq = qe.seq;
        ev.op = qe.op;
        ev.type = qe.type;
        events++;
        if (ev.type == EV_READY) {
            on_ready(&e, &ev);
        } else if (ev.type == EV_ARRIVE) {
            on_arrive(&e, &ev);
        } else {
            rx_event(&e, &ev);
        }
        flush_freed(&e);
        if ((events & (RG_SIM_PROGRESS_EVENTS - 1)) == 0 && trace != NULL &&
            trace->progress != NULL) {
            trace->progress(trace->progress_arg, events, e.ndone, s->nops, ev.t);
        }
    }
    if (e.nomem == 2) {
        st = rg_err_set(err, RG_ERR_INVALID, "simulate: %s", e.rx_fail);
        goto out;
    }
    if (e.nomem || e.q.nomem) {
        st = rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for events");
        goto out;
    }
    if (e.ndone != s->nops) {
        st = deadlock(&e, report, err);
        goto out;
    }
    /* The per-operation state is done with: give it back before the
     * results take their memory, so that the two do not add up. */
    free(e.left);
    free(e.state);
    e.left = NULL;
    e.state = NULL;
    rg_simq_free(&e.q);
    res->finish = malloc((s->nranks ? s->nranks : 1) * sizeof(double));
    res->overhead = malloc((s->nranks ? s->nranks : 1) * sizeof(double));
    res->calc = malloc((s->nranks ? s->nranks : 1) * sizeof(double));
    res->wait = malloc((s->nranks ? s->nranks : 1) * sizeof(double));
    if (!res->finish || !res->overhead || !res->calc || !res->wait) {
        st = rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
        goto out;
    }
    for (i = 0; i < ncpu; i++) {
        uint32_t r = (uint32_t)(i / s->ncpus);
        if (e.cpu[i] > e.acc[r].finish) {
            e.acc[r].finish = e.cpu[i];
        }
    }
    res->makespan = 0;
    for (i = 0; i < s->nranks; i++) {
        const racc_t *a = &e.acc[i];
        if (a->finish > res->makespan) {
            res->makespan = a->finish;
        }
        res->finish[i] = a->finish;
        res->overhead[i] = a->ov;
        res->calc[i] = a->calc;
        res->wait[i] = a->finish - a->busy;
        if (res->wait[i] < 0) {
            res->wait[i] = 0; /* rounding */
        }
    }
    res->events = events;
    if (e.rx != NULL) {
        rx_finish(&e, res);
    }
    if (e.rl != NULL) {
        memcpy(res->rails, e.rl_tot, e.R * sizeof(e.rl_tot[0]));
    }
out:
    if (st != RG_OK) {
        rg_sim_result_free(res);
    }
    rg_simq_free(&e.q);
    free(e.freed);
    free(e.cpu);
    free(e.nic_s);
    free(e.nic_r);
    free(e.acc);
    free(e.left);
    free(e.state);
    free(e.posted);
    free(e.unexp);
    free(e.pool);
    free(e.lop_os);
    free(e.lop_L);
    free(e.batch_end);
    free(e.rcv_off);
    free(e.rcv);
    free(e.rcv_ptr);
    free(e.rr);
    free(e.rq);
    free(e.land);
    free(e.retry);
    free(e.rn);
    free(e.sseq);
    free(e.rseq);
    free(e.last);
    free(e.dlv);
    free(e.rl_rr);
    free(e.rl_rec);
    free(e.rl_free);
    free(e.rl_mask);
    free(e.rl_key);
    free(e.rl_val);
    free(e.dx_last);
    free(e.dx_sent);
    if (e.nicq != NULL) {
        for (i = 0; i < (size_t)s->nranks * s->nnics; i++) {
            free(e.nicq[i].h);
        }
        free(e.nicq);
    }
    return st;
}
