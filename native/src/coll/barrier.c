/*
 * railgauge: the runtime barrier over proto (coll/barrier.h).
 */
#include "coll/barrier.h"

#include <stdlib.h>
#include <string.h>

rg_status_t rg_coll_barrier_init(rg_coll_barrier_t *b, rg_proto_t *proto,
                                 const rg_coll_barrier_spec_t *spec, rg_err_t *err)
{
    rg_status_t st;

    memset(b, 0, sizeof(*b));
    rg_coll_plan_init(&b->plan);
    st = rg_coll_barrier_plan(&b->plan, spec, rg_proto_size(proto), rg_proto_rank(proto), err);
    if (st != RG_OK) {
        return st;
    }
    b->reqs = calloc(b->plan.max_ops ? b->plan.max_ops : 1, sizeof(*b->reqs));
    if (b->reqs == NULL) {
        rg_coll_plan_fini(&b->plan);
        return rg_err_set(err, RG_ERR_NOMEM, "barrier: out of memory for %u requests",
                          b->plan.max_ops);
    }
    b->proto = proto;
    return RG_OK;
}

void rg_coll_barrier_fini(rg_coll_barrier_t *b)
{
    if (b == NULL) {
        return;
    }
    free(b->reqs);
    rg_coll_plan_fini(&b->plan);
    memset(b, 0, sizeof(*b));
}

/* Names the request that failed (its peer) with the runtime's message. */
static rg_status_t rg__barrier_fail(rg_coll_barrier_t *b, rg_status_t st, uint32_t round,
                                    const rg_preq_t *req, rg_err_t *err)
{
    char name[32];

    rg_coll_barrier_format(&b->plan.spec, name, sizeof(name));
    return rg_err_set(err, st, "barrier %s on %d ranks, rank %d, round %u: %s rank %d: %s",
                      name, b->plan.P, b->plan.rank, round,
                      req != NULL && req->kind == RG_PREQ_SEND ? "send to" : "receive from",
                      req != NULL ? req->peer : -1,
                      st == RG_ERR_TIMEOUT ? "timed out" : rg_proto_strerror(b->proto));
}

rg_status_t rg_coll_barrier_run_rounds(rg_coll_barrier_t *b, uint32_t rounds,
                                       uint64_t timeout_ns, rg_err_t *err)
{
    const rg_coll_plan_t *pl = &b->plan;
    uint32_t              r, i, k;
    rg_status_t           st;

    if (rounds > pl->nrounds) {
        rounds = pl->nrounds;
    }
    for (r = 0; r < rounds; r++) {
        const rg_coll_round_t *rd = &pl->rounds[r];
        k = 0;
        /* Receives first, so that a message that comes while the sends are
         * posted lands in its receive, not in the unexpected queue. */
        for (i = 0; i < rd->nrecv; i++, k++) {
            st = rg_proto_irecv(b->proto, pl->peers[rd->recv_off + i], RG_COLL_TAG_BARRIER,
                                &b->token, 0, &b->reqs[k]);
            if (st != RG_OK) {
                return rg__barrier_fail(b, st, r, &b->reqs[k], err);
            }
        }
        for (i = 0; i < rd->nsend; i++, k++) {
            st = rg_proto_isend(b->proto, pl->peers[rd->send_off + i], RG_COLL_TAG_BARRIER,
                                &b->token, 0, &b->reqs[k]);
            if (st != RG_OK) {
                return rg__barrier_fail(b, st, r, &b->reqs[k], err);
            }
        }
        st = rg_proto_waitall(b->proto, k, b->reqs, timeout_ns);
        if (st != RG_OK) {
            const rg_preq_t *bad = NULL;
            for (i = 0; i < k; i++) {
                if (b->reqs[i].status != RG_OK) {
                    bad = &b->reqs[i];
                    break;
                }
            }
            return rg__barrier_fail(b, st, r, bad, err);
        }
    }
    b->count++;
    return RG_OK;
}

rg_status_t rg_coll_barrier_run(rg_coll_barrier_t *b, uint64_t timeout_ns, rg_err_t *err)
{
    return rg_coll_barrier_run_rounds(b, b->plan.nrounds, timeout_ns, err);
}
