/*
 * railgauge: barrier schedules for the simulator from coll/'s plans
 * (sim/barrier.h).
 */
#include "sim/barrier.h"

#include <string.h>

/* Adds one operation of rank r; its index into *idx. */
static rg_status_t rg__add(rg_sim_sched_t *s, uint8_t kind, uint32_t rank, int32_t peer,
                           int32_t tag, uint32_t *idx, rg_err_t *err)
{
    rg_sim_op_t op;

    memset(&op, 0, sizeof(op));
    op.kind = kind;
    op.rank = rank;
    op.peer = peer;
    op.tag = tag;
    op.amount = 0;
    *idx = (uint32_t)s->nops;
    return rg_sim_sched_add(s, &op, err);
}

rg_status_t rg_sim_barrier_build(rg_sim_sched_t *s, const rg_coll_barrier_spec_t *spec,
                                 uint32_t P, rg_err_t *err)
{
    rg_coll_plan_t plan;
    rg_status_t    st = RG_OK;
    uint32_t       p, r, i, j;

    rg_sim_sched_init(s, P);
    if (P < 1 || P > RG_COLL_P_MAX) {
        return rg_err_set(err, RG_ERR_RANGE, "barrier: P = %u out of range 1..%d", P,
                          RG_COLL_P_MAX);
    }
    if (spec->alg == RG_COLL_BARRIER_DISSEM && P >= RG_SIM_BARRIER_GEN_MIN_P) {
        return rg_sim_barrier_dissemination(s, P, err);
    }
    rg_coll_plan_init(&plan);
    for (p = 0; p < P && st == RG_OK; p++) {
        /* The previous non-empty round's operations: [prev_lo, prev_hi). */
        uint32_t prev_lo = 0, prev_hi = 0;

        st = rg_coll_barrier_plan(&plan, spec, (int)P, (int)p, err);
        for (r = 0; r < plan.nrounds && st == RG_OK; r++) {
            const rg_coll_round_t *rd = &plan.rounds[r];
            uint32_t               nops = rd->nsend + rd->nrecv, lo, idx, before;
            uint32_t               nprev = prev_hi - prev_lo;
            int                    join;

            if (nops == 0) {
                continue;
            }
            if (s->nops + nops + 1 > RG_SIM_BARRIER_MAX_OPS) {
                st = rg_err_set(err, RG_ERR_RANGE, "barrier %s on %u ranks: more than %u "
                                "operations to simulate; use fewer ranks",
                                rg_coll_barrier_alg_name(spec->alg), P,
                                RG_SIM_BARRIER_MAX_OPS);
                break;
            }
            join = nprev > 1 && nops > 1 && (uint64_t)nprev * nops > (uint64_t)nprev + nops;
            before = prev_lo;
            if (join) {
                /* A zero-length calc that requires all of the previous round. */
                rg_sim_op_t op;
                memset(&op, 0, sizeof(op));
                op.kind = RG_SIM_CALC;
                op.rank = p;
                before = (uint32_t)s->nops;
                if ((st = rg_sim_sched_add(s, &op, err)) != RG_OK) {
                    break;
                }
                for (j = prev_lo; j < prev_hi && st == RG_OK; j++) {
                    st = rg_sim_sched_dep(s, before, j, 0, err);
                }
            }
            lo = (uint32_t)s->nops;
            for (i = 0; i < rd->nsend && st == RG_OK; i++) {
                st = rg__add(s, RG_SIM_SEND, p, plan.peers[rd->send_off + i], (int32_t)r, &idx,
                             err);
            }
            for (i = 0; i < rd->nrecv && st == RG_OK; i++) {
                st = rg__add(s, RG_SIM_RECV, p, plan.peers[rd->recv_off + i], (int32_t)r, &idx,
                             err);
            }
            for (idx = lo; idx < lo + nops && st == RG_OK && nprev > 0; idx++) {
                if (join) {
                    st = rg_sim_sched_dep(s, idx, before, 0, err);
                } else {
                    for (j = prev_lo; j < prev_hi && st == RG_OK; j++) {
                        st = rg_sim_sched_dep(s, idx, j, 0, err);
                    }
                }
            }
            prev_lo = lo;
            prev_hi = lo + nops;
        }
    }
    rg_coll_plan_fini(&plan);
    if (st == RG_OK) {
        st = rg_sim_sched_finish(s, err);
    }
    if (st != RG_OK) {
        rg_sim_sched_free(s);
    }
    return st;
}
