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
} freed_t;

typedef struct qnode {
    uint32_t op, next;
} qnode_t;

#define NIL UINT32_MAX

typedef struct eng {
    rg_sim_sched_t        *s;
    const rg_sim_params_t *p;
    rg_simq_t q;
    const rg_sim_trace_t *trace;
    rg_sim_range_t        flat;     /* the scalar parameters as one range */
    uint64_t  seq;
    double   *cpu, *nic_s, *nic_r, *finish;
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
    /* Per rank: CPU time in overheads and calc, and the union of busy CPU
     * intervals (every interval starts at the current event's time, so they
     * come sorted by start and one running end suffices). */
    double   *ov, *calc, *busy, *busy_end;
    /* LoP (p->lop): o_s(p) and L(p) for p = 0..lop_max (index 0 unused), the
     * end of posting of each rank's current send batch (list mode), and each
     * rank's receives in program order (rcv_off CSR) with the first one not
     * yet done (rcv_ptr), whose batch is the message's receiving batch. */
    const rg_sim_lop_t *lop;
    double   *lop_os, *lop_L, *batch_end;
    size_t    lop_max;
    uint32_t *rcv_off, *rcv, *rcv_ptr;
} eng_t;

/* The CPU of `rank` is busy for [t, t + dur) with an overhead (is_calc 0) or
 * a computation. */
static void busy(eng_t *e, uint32_t rank, double t, double dur, int is_calc)
{
    double end = t + dur;

    if (is_calc) {
        e->calc[rank] += dur;
    } else {
        e->ov[rank] += dur;
    }
    if (t >= e->busy_end[rank]) {
        e->busy[rank] += dur;
        e->busy_end[rank] = end;
    } else if (end > e->busy_end[rank]) {
        e->busy[rank] += end - e->busy_end[rank];
        e->busy_end[rank] = end;
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

static double due(const eng_t *e, uint32_t v, double t);

/* Frees the dependents of op over edges of one type (ireq: irequires, at its
 * start; otherwise requires, at its end): sends first, then receives, then
 * computations, each in program order. */
static void release(eng_t *e, uint32_t op, double t, int ireq)
{
    const rg_sim_sched_t *s = e->s;
    const uint32_t *list;
    uint32_t        gen[2], cnt, i;

    if (s->gen == RG_SIM_GEN_NONE) {
        list = s->deps + s->dep_off[op];
        cnt = s->dep_off[op + 1] - s->dep_off[op];
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
            rg_sim_op_t o = rg_sim_op_get(s, v);
            if (e->nfreed == e->freed_cap) {
                size_t  nc = e->freed_cap ? e->freed_cap * 2 : 64;
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
            e->nfreed++;
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
        ev_push(e, due(e, e->freed[i].op, e->freed[i].t), e->seq++, e->freed[i].op, EV_READY);
    }
    e->nfreed = 0;
}

/* When a freed operation can start at the earliest: for a send, the later of
 * its CPU and its NIC send gap; otherwise its CPU; never before t. Checked
 * again when the event comes up, since the resources may be taken by then. */
static double due(const eng_t *e, uint32_t v, double t)
{
    const rg_sim_op_t op = rg_sim_op_get(e->s, v);
    double c = e->cpu[(size_t)op.rank * e->s->ncpus + op.cpu];

    if (c > t) {
        t = c;
    }
    if (op.kind == RG_SIM_SEND && e->lop == NULL) {
        double n = e->nic_s[(size_t)op.rank * e->s->nnics + op.nic];
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

static void done(eng_t *e, uint32_t op, double t)
{
    uint32_t rank = rg_sim_op_get(e->s, op).rank;

    e->state[op] = 2;
    e->ndone++;
    if (t > e->finish[rank]) {
        e->finish[rank] = t;
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
    if (e->nic_s[n] < t) {
        e->nic_s[n] = t;
    }
    done(e, send, t);
}

/* A receive matched a message at t: the receive is done, and so is a
 * rendezvous send. The two ranks' freed operations are queued in rank order,
 * as LogGOPSim does. */
static void complete_match(eng_t *e, uint32_t recv, uint32_t send, double t)
{
    const rg_sim_op_t m = rg_sim_op_get(e->s, send);

    if (!(m.amount > e->p->S)) {
        done(e, recv, t);
    } else if (m.rank < (uint32_t)m.peer) {
        rndv_done(e, send, t);
        done(e, recv, t);
    } else {
        done(e, recv, t);
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
    done(e, ev->op, t);
}

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
        e->cpu[c] = t + r->o + per_byte(op->amount) * r->O;
        e->nic_s[n] = t + r->g + per_byte(op->amount) * r->G;
        busy(e, op->rank, t, e->cpu[c] - t, 0);
        if (e->trace != NULL && e->trace->span != NULL) {
            e->trace->span(e->trace->arg, op->rank, "cpu", op->cpu, "send", t, e->cpu[c] - t,
                           op);
            e->trace->span(e->trace->arg, op->rank, "nic-send", op->nic, "send", t,
                           e->nic_s[n] - t, op);
        }
        ev_push(e, t + r->o + r->L, e->seq++, ev->op, EV_ARRIVE);
        if (op->amount <= p->S) {
            done(e, ev->op, t);
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
        done(e, ev->op, t);
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

static const char *const kind_name[] = {"send", "recv", "calc"};

static rg_status_t deadlock(eng_t *e, FILE *report, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    char   msg[RG_ERR_MSG_MAX];
    size_t len, i, shown = 0, waiting = s->nops - e->ndone;

    len = (size_t)snprintf(msg, sizeof(msg), "deadlock: %zu operation(s) never done:", waiting);
    for (i = 0; i < s->nops; i++) {
        const rg_sim_op_t opv = rg_sim_op_get(s, i);
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
    size_t                i, maxb = 1;

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
    for (i = 0; i < s->nops; i++) {
        if (s->ops[i].kind == RG_SIM_RECV) {
            e->rcv[e->rcv_ptr[s->ops[i].rank]++] = (uint32_t)i;
        }
    }
    memcpy(e->rcv_ptr, e->rcv_off, (size_t)s->nranks * sizeof(uint32_t));
    return RG_OK;
}

/* Queues the operations free at the start as LogGOPSim does: rank by rank,
 * and within a rank its sends, then its receives, then its computations, each
 * in program order (the order decides ties between events at one time). A
 * generated schedule's first round is already in that order; a stored one is
 * sorted by a counting sort on the rank, fed kind by kind. */
static rg_status_t queue_initial(eng_t *e, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    uint32_t             *cnt, *out;
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
    for (i = 0; i < s->nops; i++) {
        nfree += e->left[i] == 0;
    }
    cnt = calloc((size_t)s->nranks + 1, sizeof(*cnt));
    out = malloc((nfree ? nfree : 1) * sizeof(*out));
    if (cnt == NULL || out == NULL) {
        free(cnt);
        free(out);
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %zu operations",
                          nfree);
    }
    for (i = 0; i < s->nops; i++) {
        if (e->left[i] == 0) {
            cnt[s->ops[i].rank + 1]++;
        }
    }
    for (i = 0; i < s->nranks; i++) {
        cnt[i + 1] += cnt[i];
    }
    for (kind = RG_SIM_SEND; kind <= RG_SIM_CALC; kind++) {
        for (i = 0; i < s->nops; i++) {
            if (e->left[i] == 0 && s->ops[i].kind == kind) {
                out[cnt[s->ops[i].rank]++] = (uint32_t)i;
            }
        }
    }
    for (i = 0; i < nfree; i++) {
        e->state[out[i]] = 3;
        ev_push(e, 0.0, e->seq++, out[i], EV_READY);
    }
    free(cnt);
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
    uint64_t    events = 0;
    rg_status_t st = RG_OK;

    memset(res, 0, sizeof(*res));
    if ((st = rg_sim_params_check(p, err)) != RG_OK) {
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
    e.nic_s = calloc(nnic ? nnic : 1, sizeof(double));
    e.nic_r = calloc(nnic ? nnic : 1, sizeof(double));
    e.finish = calloc(s->nranks ? s->nranks : 1, sizeof(double));
    e.left = malloc((s->nops ? s->nops : 1) * sizeof(uint32_t));
    e.state = calloc(s->nops ? s->nops : 1, 1);
    e.posted = malloc((s->nranks ? s->nranks : 1) * 2 * sizeof(uint32_t));
    e.unexp = malloc((s->nranks ? s->nranks : 1) * 2 * sizeof(uint32_t));
    if (!e.cpu || !e.nic_s || !e.nic_r || !e.finish || !e.left || !e.state || !e.posted ||
        !e.unexp) {
        st = rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
        goto out;
    }
    e.ov = calloc(s->nranks ? s->nranks : 1, sizeof(double));
    e.calc = calloc(s->nranks ? s->nranks : 1, sizeof(double));
    e.busy = calloc(s->nranks ? s->nranks : 1, sizeof(double));
    e.busy_end = calloc(s->nranks ? s->nranks : 1, sizeof(double));
    if (!e.ov || !e.calc || !e.busy || !e.busy_end) {
        st = rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
        goto out;
    }
    if (p->lop != NULL && (st = lop_setup(&e, err)) != RG_OK) {
        goto out;
    }
    memset(e.posted, 0xff, (size_t)s->nranks * 2 * sizeof(uint32_t));
    memset(e.unexp, 0xff, (size_t)s->nranks * 2 * sizeof(uint32_t));
    if (s->gen != RG_SIM_GEN_NONE) {
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
        } else {
            on_arrive(&e, &ev);
        }
        flush_freed(&e);
        if ((events & (RG_SIM_PROGRESS_EVENTS - 1)) == 0 && trace != NULL &&
            trace->progress != NULL) {
            trace->progress(trace->progress_arg, events, e.ndone, s->nops, ev.t);
        }
    }
    if (e.nomem || e.q.nomem) {
        st = rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for events");
        goto out;
    }
    if (e.ndone != s->nops) {
        st = deadlock(&e, report, err);
        goto out;
    }
    for (i = 0; i < ncpu; i++) {
        uint32_t r = (uint32_t)(i / s->ncpus);
        if (e.cpu[i] > e.finish[r]) {
            e.finish[r] = e.cpu[i];
        }
    }
    res->makespan = 0;
    for (i = 0; i < s->nranks; i++) {
        if (e.finish[i] > res->makespan) {
            res->makespan = e.finish[i];
        }
    }
    for (i = 0; i < s->nranks; i++) {
        e.busy[i] = e.finish[i] - e.busy[i];
        if (e.busy[i] < 0) {
            e.busy[i] = 0; /* rounding */
        }
    }
    res->finish = e.finish;
    res->overhead = e.ov;
    res->calc = e.calc;
    res->wait = e.busy;
    res->events = events;
    e.finish = e.ov = e.calc = e.busy = NULL;
out:
    rg_simq_free(&e.q);
    free(e.freed);
    free(e.cpu);
    free(e.nic_s);
    free(e.nic_r);
    free(e.finish);
    free(e.left);
    free(e.state);
    free(e.posted);
    free(e.unexp);
    free(e.pool);
    free(e.ov);
    free(e.calc);
    free(e.busy);
    free(e.busy_end);
    free(e.lop_os);
    free(e.lop_L);
    free(e.batch_end);
    free(e.rcv_off);
    free(e.rcv);
    free(e.rcv_ptr);
    return st;
}
