/*
 * railgauge: the shared-memory flag engine of the barrier family: a plan of
 * coll/sched.h run on cache lines in memory that every rank maps (a POSIX
 * segment for the runtime barrier, exec/barrier.c; an MPI shared window for
 * the PMPI library, native/pmpi/pmpi.c). Knows nothing of how the memory
 * was made or how the ranks talk otherwise.
 *
 * Each rank's inbox is a row of lines, one per (round, sender) of its plan;
 * a send is a store of the barrier's epoch into the peer's line, a receive a
 * spin on its own line until the epoch is there (where ranks outnumber the
 * CPUs, a short spin and then a millisecond of polls with sched_yield between
 * them), then a sleep on it (futex, shared), so that ranks that outnumber the
 * CPUs hand theirs over and a long wait costs no CPU.
 */
#ifndef RG_COLL_FLAGS_H
#define RG_COLL_FLAGS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "coll/sched.h"

#define RG_COLL_FLAGS_LINE_WORDS 8u  /* one 64-byte line per inbox slot */

typedef struct rg_coll_flags {
    uint64_t *lines;      /* P * nrounds * maxin lines (rg_coll_flags_bytes) */
    uint32_t  nrounds, maxin;
    uint32_t *send_line;  /* per send of the plan: its line in the segment */
    unsigned  spin;       /* polls of a line before yielding or sleeping */
    uint64_t  yield_ns;   /* then polls with sched_yield for this long (0: none) */
} rg_coll_flags_t;

/* From every rank's plan (recomputed here from pl's spec, P and rank): the
 * segment's shape and the line of each of this rank's sends. Local. */
rg_status_t rg_coll_flags_layout(rg_coll_flags_t *f, const rg_coll_plan_t *pl, rg_err_t *err);

/* The same for plans that need not be a barrier's (the flag round trips of
 * railgauge-bench flagprtt): plans[q] is rank q's plan (P = plans[0].P of
 * them, each with its P and rank set), this rank's is plans[rank]. Every send
 * of round r must be matched by a receive of round r on its destination; a
 * round may send to one peer more than once (its c-th send takes the peer's
 * c-th receive from this rank). Local. */
rg_status_t rg_coll_flags_layout_plans(rg_coll_flags_t *f, const rg_coll_plan_t *plans,
                                       int rank, rg_err_t *err);

/* The bytes of the segment every rank maps (0 for one rank). */
size_t rg_coll_flags_bytes(const rg_coll_flags_t *f, int P);

/* The segment, zeroed by its maker before any rank runs a barrier. */
void rg_coll_flags_attach(rg_coll_flags_t *f, void *seg, int P);

/* Runs the plan's first `rounds` rounds as barrier number `epoch` (1, 2, ...:
 * one more per barrier, the same on every rank). timeout_ns bounds a round's
 * wait once it has spun out (0: none); on RG_ERR_TIMEOUT *round and *peer
 * say which rank did not arrive. */
rg_status_t rg_coll_flags_run(const rg_coll_flags_t *f, const rg_coll_plan_t *pl,
                              uint32_t rounds, uint64_t epoch, uint64_t timeout_ns,
                              uint32_t *round, int *peer);

/* Runs rounds first .. end-1 of the plan only (the same epoch for all of a
 * barrier's rounds); rg_coll_flags_run is first = 0. */
rg_status_t rg_coll_flags_run_range(const rg_coll_flags_t *f, const rg_coll_plan_t *pl,
                                    uint32_t first, uint32_t end, uint64_t epoch,
                                    uint64_t timeout_ns, uint32_t *round, int *peer);

void rg_coll_flags_fini(rg_coll_flags_t *f);

#endif /* RG_COLL_FLAGS_H */
