/*
 * railgauge: the receive-window workloads as simulator schedules (issue 9).
 *
 * The five patterns of `railgauge-bench rxwin` (native/tools/bench/rxwin.c),
 * with its peers, sizes, phases, burst and computation, generated (no memory
 * per operation but the engine's few bytes of state):
 *
 *   alltoall  every rank sends one message to every other
 *   halo2d    exchange with the neighbours of a periodic 2-D grid
 *   halo3d    the same in 3-D
 *   incast    every rank sends `burst` messages to rank 0
 *   mix       computation (unequal per rank), then alltoall, halo2d, incast
 *             in turn
 *
 * Per rank and phase: a calc of the phase's computation, then the phase's
 * receives (posted at once, as MPI_Irecv), then its sends one after the
 * other (each irequires the one before: a single thread issues them), and
 * the next phase's calc requires every receive and send of this one (the
 * MPI_Waitall of both). Tags are phase * 64 + kind, as in the benchmark.
 */
#ifndef RG_SIM_RXWIN_WORK_H
#define RG_SIM_RXWIN_WORK_H

#include "sim/sim.h"

enum {
    RG_SIM_RXWORK_ALLTOALL = 0,
    RG_SIM_RXWORK_HALO2D   = 1,
    RG_SIM_RXWORK_HALO3D   = 2,
    RG_SIM_RXWORK_INCAST   = 3,
    RG_SIM_RXWORK_MIX      = 4
};

/* The benchmark's defaults: 50 phases, 512-byte messages, bursts of 32,
 * no computation (mix: 200 us, rank r computing 200 (1 + r % 4) / 2). */
typedef struct rg_sim_rxwork_spec {
    int      pattern;     /* RG_SIM_RXWORK_* */
    uint32_t nranks;      /* 2 .. RG_SIM_RXWIN_MAX_RANKS */
    uint32_t iters;       /* phases, >= 1 */
    uint32_t burst;       /* incast: messages per sender and phase */
    double   size;        /* bytes per message, >= 24 as the benchmark's */
    double   compute_us;  /* before each phase; < 0: the pattern's default */
} rg_sim_rxwork_spec_t;

/* One phase kind: per rank, receives and sends (rank 0 apart for incast). */
typedef struct rg_sim_rxwork_kind {
    int      kind;          /* RG_SIM_RXWORK_ALLTOALL .. _INCAST */
    uint32_t nrecv0, nsend0; /* rank 0 */
    uint32_t nrecv, nsend;   /* the others */
    uint64_t ops0, ops;      /* 1 + receives + sends */
    uint64_t total;          /* the phase's operations over all ranks */
} rg_sim_rxwork_kind_t;

/* A generated workload (a handle: rg_sim_rxwork_build, rg_sim_rxwork_fini). */
typedef struct rg_sim_rxwork {
    rg_sim_rxwork_spec_t spec;
    uint32_t             period;     /* phase kinds in turn: 1, or 3 (mix) */
    rg_sim_rxwork_kind_t kinds[3];
    uint64_t             pbase[4];   /* operations before each phase of a period */
    int                  dims2[3], dims3[3];
    uint32_t             nnb2, nnb3; /* neighbours per rank (the same for all) */
    int32_t             *nb2, *nb3;  /* nranks * 6 */
    uint64_t             messages;   /* sends in all */
    double               inv_ptot, inv_ops[3], inv_n1; /* reciprocals for decoding */
} rg_sim_rxwork_t;

/* The pattern's name to RG_SIM_RXWORK_*, or -1. */
int         rg_sim_rxwork_pattern(const char *name);
const char *rg_sim_rxwork_pattern_name(int pattern);

/* Builds the workload w and the generated schedule s that reads it (s is
 * initialized here; w must outlive s). RG_ERR_INVALID / RG_ERR_RANGE naming
 * the setting for bad input. */
rg_status_t rg_sim_rxwork_build(rg_sim_rxwork_t *w, rg_sim_sched_t *s,
                                const rg_sim_rxwork_spec_t *spec, rg_err_t *err);
void        rg_sim_rxwork_fini(rg_sim_rxwork_t *w);

/* The runtime's window settings, for the simulator's window model:
 * "fixed:N" or "adaptive:W_init:W_max[:reclaim]" into w->mode, w_init,
 * w_max, reclaim (RG_PROTO_RXWIN's syntax and bounds), and the runtime's
 * defaults for an eager limit (bytes): first limit W_init/2 (at least 1),
 * quiet period 100 ms, RNR timer 1 ms, its byte counts (LP64, as
 * rg_proto_info_json's pool_buf_bytes). */
rg_status_t rg_sim_rxwin_parse(const char *text, rg_sim_rxwin_t *w, double eager_limit,
                               rg_err_t *err);

#endif /* RG_SIM_RXWIN_WORK_H */
