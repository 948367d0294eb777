/*
 * railgauge: the runtime barrier. exec/ is the layer that executes coll/'s
 * schedules over the runtime: it runs a schedule of coll/sched.h over the
 * messaging runtime (proto/), so it works on every transport proto runs on
 * (shm, tcp, ofi:*, mpi). The peers are computed once, at init; a barrier
 * is then, round by round, its receives posted, its zero-byte sends posted,
 * and a wait for all of them: one message per peer per round, no
 * allocation.
 *
 * Messages use the reserved tag RG_COLL_TAG_BARRIER: an application that
 * shares the runtime must not use it. Consecutive barriers need no epoch in
 * the message: within one barrier a pair (sender, receiver) carries at most
 * one message, and the runtime matches one sender's messages in order.
 */
#ifndef RG_EXEC_BARRIER_H
#define RG_EXEC_BARRIER_H

#include <stdint.h>

#include "base/error.h"
#include "coll/flags.h"
#include "coll/sched.h"
#include "proto/proto.h"

#define RG_COLL_TAG_BARRIER (RG_PROTO_TAG_MAX - 1)

/* The shared-memory engine (rg_coll_barrier_use_shm): the flags of
 * coll/flags.h in a POSIX shared segment that every rank maps. */
typedef struct rg_coll_shm {
    void           *seg;
    size_t          seg_len;
    rg_coll_flags_t flags;
} rg_coll_shm_t;

typedef struct rg_coll_barrier {
    rg_proto_t     *proto;
    rg_coll_plan_t  plan;
    rg_preq_t      *reqs;      /* plan.max_ops */
    unsigned char   token;     /* what the zero-byte messages point at */
    uint64_t        count;     /* barriers done */
    rg_coll_shm_t  *shm;       /* NULL: messages over proto */
} rg_coll_barrier_t;

/* Prepares the barrier of spec over proto's ranks (local: no communication). */
rg_status_t rg_coll_barrier_init(rg_coll_barrier_t *b, rg_proto_t *proto,
                                 const rg_coll_barrier_spec_t *spec, rg_err_t *err);
void        rg_coll_barrier_fini(rg_coll_barrier_t *b);

/* One barrier: returns once every rank has entered it. timeout_ns bounds
 * each round's wait (0: none); RG_ERR_TIMEOUT, a dead peer or another
 * runtime error is returned with the round and the cause in err. A barrier
 * that failed leaves the runtime unusable for further barriers. */
rg_status_t rg_coll_barrier_run(rg_coll_barrier_t *b, uint64_t timeout_ns, rg_err_t *err);

/* Collective over the barrier's ranks: switches b to flags in a shared
 * memory segment when every rank is on this host (segment made by rank 0,
 * its name sent over proto, unlinked once every rank has mapped it).
 * RG_ERR_UNSUPPORTED (on every rank, b unchanged) where the ranks span hosts
 * or the segment cannot be made; other errors are the runtime's. */
rg_status_t rg_coll_barrier_use_shm(rg_coll_barrier_t *b, rg_err_t *err);

/* Runs only the first `rounds` rounds (fewer than the plan's is NOT a
 * barrier): used by tests to show that the run-time check catches a
 * schedule that is cut short. */
rg_status_t rg_coll_barrier_run_rounds(rg_coll_barrier_t *b, uint32_t rounds,
                                       uint64_t timeout_ns, rg_err_t *err);

#endif /* RG_EXEC_BARRIER_H */
