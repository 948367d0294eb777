/*
 * railgauge: barrier schedules, written once as a generator and used by the
 * runtime (exec/barrier.c, the PMPI library) and by the simulator
 * (sim/barrier.c). docs/coll.md gives the algorithms and their LogP costs.
 *
 * A plan is one rank's part of a barrier: rounds, each a list of peers to
 * send one message to and a list of peers to receive one message from. The
 * rule every user follows: the sends of round r start once every receive of
 * the rounds before r has completed (and, for simplicity, the sends before
 * r too); the rank leaves after its last round. Every send of round r is
 * matched by a receive of round r on its destination (as multisets: a
 * round's sends to one peer are as many as that peer's receives from the
 * sender in that round), so no schedule can deadlock. An ordered pair
 * (sender, receiver) may carry more than one message in one barrier (the
 * double ring's two passes, the wrapped distances of the k-dissemination,
 * even twice in one round); one tag still serves every round, because
 * each executor posts a round's receives only after the rounds before it
 * and matches a pair's messages in order (FIFO on source and tag), so the
 * c-th message of a pair always meets the c-th receive of that pair, which
 * belongs to the same round. A self-message (a rank's own distance 0) is
 * never in a plan.
 *
 * The schedules depend only on (algorithm, n, P, rank): this header uses
 * only base/ and touches no transport.
 */
#ifndef RG_COLL_SCHED_H
#define RG_COLL_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef enum rg_coll_barrier_alg {
    RG_COLL_BARRIER_LINEAR = 0,   /* gather to rank 0, then release */
    RG_COLL_BARRIER_BINOMIAL,     /* gather up a binomial tree, release down it */
    RG_COLL_BARRIER_RECDBL,       /* recursive doubling, extra ranks folded in */
    RG_COLL_BARRIER_DISSEM,       /* dissemination: p -> p + 2^r */
    RG_COLL_BARRIER_NWAY,         /* n-way dissemination: p -> p + i(n+1)^r */
    RG_COLL_BARRIER_RING,         /* Open MPI's double ring: two passes round the ring */
    RG_COLL_BARRIER_KDISSEM,      /* MPICH's k-dissemination: p -> p + jK^r, wrapped */
    RG_COLL_BARRIER_RECEXCH,      /* MPICH's recursive exchange (allreduce of count 0) */
    RG_COLL_BARRIER_NALGS
} rg_coll_barrier_alg_t;

/* The largest n of the n-way dissemination that is accepted (n >= P - 1 is
 * already one round to every peer). */
#define RG_COLL_NWAY_MAX 1024
/* The largest K of MPICH's k-dissemination and recursive exchange (K = n + 1
 * of the n-way dissemination's largest n). */
#define RG_COLL_K_MAX    (RG_COLL_NWAY_MAX + 1)
/* The largest number of ranks a plan is made for. */
#define RG_COLL_P_MAX    (1 << 26)

typedef struct rg_coll_barrier_spec {
    rg_coll_barrier_alg_t alg;
    int                   n;     /* nway: 1..RG_COLL_NWAY_MAX; dissem: 1; kdissem,
                                  * recexch: K in 2..RG_COLL_K_MAX; others: 0 */
} rg_coll_barrier_spec_t;

/* One round of one rank: its sends are peers[send_off .. send_off+nsend),
 * its receives peers[recv_off .. recv_off+nrecv). */
typedef struct rg_coll_round {
    uint32_t send_off, nsend;
    uint32_t recv_off, nrecv;
} rg_coll_round_t;

/* One rank's plan. Reusable: rg_coll_barrier_plan() keeps the arrays'
 * memory between calls. */
typedef struct rg_coll_plan {
    rg_coll_barrier_spec_t spec;
    int              P, rank;
    uint32_t         nrounds;
    rg_coll_round_t *rounds;
    int32_t         *peers;
    uint32_t         npeers;      /* entries used in peers */
    uint32_t         max_ops;     /* the largest nsend + nrecv of a round */
    /* capacities */
    uint32_t         rounds_cap, peers_cap;
} rg_coll_plan_t;

/* The canonical name of an algorithm ("linear", "binomial", "recdbl",
 * "dissem", "nway", "ring", "kdissem", "recexch"); "?" for a value out of
 * range. */
const char *rg_coll_barrier_alg_name(rg_coll_barrier_alg_t alg);

/* Parses an algorithm name: "linear", "binomial" (or "tree"), "recdbl" (or
 * "recursive-doubling"), "dissem" (or "dissemination"), "nway" (or "n-way"),
 * "ring" (or "doublering"), "kdissem" (or "k-dissemination"), "recexch" (or
 * "recursive-exchange"), optionally with ":N" ("nway:3", "kdissem:3"). n_opt
 * is an n given separately (0: none); where both are given they must agree.
 * nway needs an n in 1..RG_COLL_NWAY_MAX; kdissem and recexch a K in
 * 2..RG_COLL_K_MAX; dissem takes none or 1; the others take none.
 * RG_ERR_INVALID with a message naming the text otherwise. */
rg_status_t rg_coll_barrier_parse(const char *text, int n_opt, rg_coll_barrier_spec_t *spec,
                                  rg_err_t *err);

/* Writes "nway:3", "kdissem:3", "dissem", ... into buf (at least 32 bytes). */
void        rg_coll_barrier_format(const rg_coll_barrier_spec_t *spec, char *buf, size_t cap);

/* The number of rounds of the schedule on P ranks (the same on every rank;
 * some ranks may have nothing to do in some rounds). */
uint32_t    rg_coll_barrier_rounds(const rg_coll_barrier_spec_t *spec, int P);

void        rg_coll_plan_init(rg_coll_plan_t *plan);
void        rg_coll_plan_fini(rg_coll_plan_t *plan);

/* Builds rank's plan of the barrier on P ranks. RG_ERR_RANGE for P out of
 * 1..RG_COLL_P_MAX or rank out of 0..P-1, RG_ERR_INVALID for a bad spec,
 * RG_ERR_NOMEM; the plan is unchanged on error. */
rg_status_t rg_coll_barrier_plan(rg_coll_plan_t *plan, const rg_coll_barrier_spec_t *spec,
                                 int P, int rank, rg_err_t *err);

#endif /* RG_COLL_SCHED_H */
