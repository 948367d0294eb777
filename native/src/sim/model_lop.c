/*
 * railgauge: the simulator's LoP model (params.lop; docs/sim.md for how it
 * maps onto events, docs/lop.md for its functions, which lop.c computes):
 * a send's CPU posts it for o_s(p) and its NIC holds both ends for L(m); the
 * receiver handles a message for o_s(1). LoP has no rendezvous and runs
 * alone.
 */
#include "sim/engine_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* o_s(p) and L(p) for p = 0..max (index 0 unused), the end of posting of
 * each rank's current send batch (list mode), and each rank's receives in
 * program order (rcv_off CSR) with the first one not yet done (rcv_ptr),
 * whose batch is the message's receiving batch. */
typedef struct lop_state {
    const rg_sim_lop_t *lop;
    double             *os, *L, *batch_end;
    size_t              max;
    uint32_t           *rcv_off, *rcv, *rcv_ptr;
} lop_state_t;

static int lop_active(const rg_sim_params_t *p)
{
    return p->lop != NULL;
}

/* Every rank's receives in program order (a stored schedule's). */
static rg_status_t lop_receives(lop_state_t *m, const rg_sim_sched_t *s, rg_err_t *err)
{
    size_t i, k;

    m->rcv_off = calloc((size_t)s->nranks + 1, sizeof(uint32_t));
    m->rcv_ptr = malloc((s->nranks ? s->nranks : 1) * sizeof(uint32_t));
    if (!m->rcv_off || !m->rcv_ptr) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %u ranks", s->nranks);
    }
    for (i = 0; i < s->nops; i++) {
        if (s->ops[i].kind == RG_SIM_RECV) {
            m->rcv_off[s->ops[i].rank + 1]++;
        }
    }
    for (i = 0; i < s->nranks; i++) {
        m->rcv_off[i + 1] += m->rcv_off[i];
    }
    m->rcv = malloc((m->rcv_off[s->nranks] ? m->rcv_off[s->nranks] : 1) * sizeof(uint32_t));
    if (m->rcv == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for the receives");
    }
    memcpy(m->rcv_ptr, m->rcv_off, (size_t)s->nranks * sizeof(uint32_t));
    for (k = 0; k < s->nops; k++) {
        /* In program order: the order added (sched_finish may renumber). */
        size_t j = s->added != NULL ? s->added[k] : k;
        if (s->ops[j].kind == RG_SIM_RECV) {
            m->rcv[m->rcv_ptr[s->ops[j].rank]++] = (uint32_t)j;
        }
    }
    memcpy(m->rcv_ptr, m->rcv_off, (size_t)s->nranks * sizeof(uint32_t));
    return RG_OK;
}

/* The tables of o_s(p) and L(p) up to the largest batch, checked (L(p) < 0
 * is outside the model: the posting overheads exceed half the round trip),
 * and for a stored schedule every rank's receives in program order. */
static rg_status_t lop_setup(rg__sim_eng_t *e, void **state_p, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    lop_state_t          *m = calloc(1, sizeof(*m));
    size_t                i, maxb = 1;

    if ((*state_p = m) == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for the LoP tables");
    }
    m->lop = e->p->lop;
    if (s->gen == RG_SIM_GEN_NONE) {
        for (i = 0; i < s->nops; i++) {
            if (s->ops[i].batch > maxb) {
                maxb = s->ops[i].batch;
            }
        }
    }
    m->max = maxb;
    m->os = malloc((maxb + 1) * sizeof(double));
    m->L = malloc((maxb + 1) * sizeof(double));
    m->batch_end = calloc(s->nranks ? s->nranks : 1, sizeof(double));
    if (!m->os || !m->L || !m->batch_end) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for the LoP tables");
    }
    m->os[0] = m->L[0] = 0;
    for (i = 1; i <= maxb; i++) {
        m->os[i] = rg_sim_lop_os(m->lop, (double)i);
        m->L[i] = rg_sim_lop_latency(m->lop, (double)i);
        if (!isfinite(m->os[i]) || m->os[i] < 0) {
            return rg_err_set(err, RG_ERR_RANGE, "LoP: o_s(%zu) = %g us is not a time >= 0",
                              i, m->os[i]);
        }
        if (!isfinite(m->L[i]) || m->L[i] < 0) {
            return rg_err_set(err, RG_ERR_RANGE, "LoP: %s(%zu) = %g us is negative (the "
                              "posting overheads exceed half the round trip: outside the "
                              "model)", m->lop->list ? "L_list" : "L", i, m->L[i]);
        }
    }
    if (s->gen != RG_SIM_GEN_NONE) {
        return RG_OK;
    }
    return lop_receives(m, s, err);
}

static void lop_fini(rg__sim_eng_t *e, void *state)
{
    lop_state_t *m = state;

    (void)e;
    if (m == NULL) {
        return;
    }
    free(m->os);
    free(m->L);
    free(m->batch_end);
    free(m->rcv_off);
    free(m->rcv);
    free(m->rcv_ptr);
    free(m);
}

/* The batch size of the receive that a message to `dst` will meet: that of
 * dst's first receive, in program order, not yet done (1 when none is left
 * or the schedule is generated). */
static uint32_t lop_recv_batch(rg__sim_eng_t *e, lop_state_t *m, uint32_t dst)
{
    uint32_t i, end;

    if (m->rcv_off == NULL) {
        return 1;
    }
    i = m->rcv_ptr[dst];
    end = m->rcv_off[dst + 1];
    while (i < end && e->state[m->rcv[i]] == 2) {
        i++;
    }
    m->rcv_ptr[dst] = i;
    return i < end ? rg_sim_op_get(e->s, m->rcv[i]).batch : 1;
}

/* A send under LoP, due once its CPU is free (its NIC's share comes after
 * the posting): the CPU posts it for o_s(p), p its batch's size; the NIC
 * takes it once posted (in list mode once the whole batch is posted) and
 * once both the sender's send side and the receiver's receive side are free,
 * and holds both for L(m), m = max(p, q), q the receiving batch's size; the
 * message arrives when that ends. */
static void lop_send(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *op, size_t c)
{
    lop_state_t *lm = e->ms;
    uint32_t     dst = (uint32_t)op->peer, p, q, m;
    size_t       ns = (size_t)op->rank * e->s->nnics + op->nic;
    size_t       nr = (size_t)dst * e->s->nnics + op->nic;
    double       t = ev->t, o, posted, go, arrive;

    if (e->cpu[c] > t) {
        rg__sim_push(e, e->cpu[c], ev->seq, ev->op, RG__SIM_EV_READY);
        return;
    }
    /* p, q <= max: lop_setup took the largest batch of a stored schedule,
     * and the generated one has batches of 1 (rg_sim_op_get). */
    p = op->batch ? op->batch : 1;
    q = lop_recv_batch(e, lm, dst);
    m = p > q ? p : q;
    o = lm->os[p];
    posted = t + o;
    rg__sim_start(e, ev->op, t);
    e->cpu[c] = t + o;
    rg__sim_busy(e, op->rank, t, o, 0);
    if (lm->lop->list) {
        if (op->flags & RG_SIM_OPF_FIRST) {
            lm->batch_end[op->rank] = t + p * o;
        }
        if (lm->batch_end[op->rank] > posted) {
            posted = lm->batch_end[op->rank];
        }
    }
    go = posted;
    if (e->nic_s[ns] > go) {
        go = e->nic_s[ns];
    }
    if (e->nic_r[nr] > go) {
        go = e->nic_r[nr];
    }
    arrive = go + lm->L[m];
    e->nic_s[ns] = arrive;
    e->nic_r[nr] = arrive;
    if (rg__sim_tracing(e)) {
        e->trace->span(e->trace->arg, op->rank, "cpu", op->cpu, "send", t, o, op);
        e->trace->span(e->trace->arg, op->rank, "nic-send", op->nic, "send", go, arrive - go,
                       op);
    }
    rg__sim_push(e, arrive, e->seq++, ev->op, RG__SIM_EV_ARRIVE);
    rg__sim_done(e, ev->op, op->rank, t);
}

/* A freed send waits for its CPU only. */
static double lop_send_nic(const rg__sim_eng_t *e, uint32_t rank, uint16_t nic)
{
    (void)e;
    (void)rank;
    (void)nic;
    return -INFINITY;
}

/* A message arriving: the NIC's share is in its arrival time already; the
 * receiving CPU handles it for o_s(1) once free. */
static int lop_arrive(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *m)
{
    const lop_state_t *lm = e->ms;
    uint32_t           dst = (uint32_t)m->peer;
    size_t             c = (size_t)dst * e->s->ncpus + m->cpu;
    double             t = ev->t;

    if (e->cpu[c] > t) {
        rg__sim_push(e, e->cpu[c], ev->seq, ev->op, RG__SIM_EV_ARRIVE);
        return 0;
    }
    e->cpu[c] = t + lm->os[1];
    rg__sim_busy(e, dst, t, lm->os[1], 0);
    if (rg__sim_tracing(e)) {
        e->trace->span(e->trace->arg, dst, "cpu", m->cpu, "recv", t, lm->os[1], m);
    }
    return 1;
}

const rg__sim_model_t rg__sim_model_lop = {
    .name = "lop",
    .active = lop_active,
    .setup = lop_setup,
    .fini = lop_fini,
    .send = lop_send,
    .send_nic = lop_send_nic,
    .arrive = lop_arrive,
};
