/*
 * railgauge: the simulator's duplex model (params.duplex > 0; docs/sim.md
 * "Duplex"): a message whose receiver started a send of its own while the
 * message was in flight (at or after its send's start) arrives params.duplex
 * us later, both ends signalling at once. Otherwise LogGOPS, to the bit; it
 * runs alone (rg_sim_params_check refuses it with the other models).
 */
#include "sim/engine_int.h"

#include <math.h>
#include <stdlib.h>

/* Per rank the start of its last send; per op the start of a send in
 * flight (NAN: none, or its arrival was seen). */
typedef struct dx_state {
    double *last, *sent;
} dx_state_t;

static int dx_active(const rg_sim_params_t *p)
{
    return p->duplex > 0;
}

static rg_status_t dx_setup(rg__sim_eng_t *e, void **state_p, rg_err_t *err)
{
    const rg_sim_sched_t *s = e->s;
    dx_state_t           *d = calloc(1, sizeof(*d));
    size_t                i;

    if ((*state_p = d) != NULL) {
        d->last = malloc((s->nranks ? s->nranks : 1) * sizeof(double));
        d->sent = malloc((s->nops ? s->nops : 1) * sizeof(double));
    }
    if (d == NULL || d->last == NULL || d->sent == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "simulate: out of memory for %zu operations",
                          s->nops);
    }
    for (i = 0; i < s->nranks; i++) {
        d->last[i] = -INFINITY;
    }
    for (i = 0; i < s->nops; i++) {
        d->sent[i] = NAN;
    }
    return RG_OK;
}

static void dx_fini(rg__sim_eng_t *e, void *state)
{
    dx_state_t *d = state;

    (void)e;
    if (d != NULL) {
        free(d->last);
        free(d->sent);
        free(d);
    }
}

/* LogGOPS's send, its start remembered. */
static void dx_send(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *op, size_t c)
{
    dx_state_t           *d = e->ms;
    const rg_sim_range_t *r = rg__sim_send_begin(e, ev, op, c);

    if (r == NULL) {
        return;
    }
    d->last[op->rank] = ev->t;
    d->sent[ev->op] = ev->t;
    rg__sim_send_end(e, ev, op, r);
}

/* A message arriving, seen for the first time: later by duplex where its
 * receiver sent since it was sent; then as LogGOPS. */
static int dx_arrive(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *m)
{
    dx_state_t *d = e->ms;

    if (!isnan(d->sent[ev->op])) {
        const double sent = d->sent[ev->op];
        d->sent[ev->op] = NAN;
        if (d->last[(uint32_t)m->peer] >= sent) {
            rg__sim_push(e, ev->t + e->p->duplex, ev->seq, ev->op, RG__SIM_EV_ARRIVE);
            return 0;
        }
    }
    return rg__sim_arrive_begin(e, ev, m);
}

const rg__sim_model_t rg__sim_model_duplex = {
    .name = "duplex",
    .active = dx_active,
    .setup = dx_setup,
    .fini = dx_fini,
    .send = dx_send,
    .arrive = dx_arrive,
};
