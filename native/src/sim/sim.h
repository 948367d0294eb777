/*
 * railgauge: the discrete-event simulator of per-rank operation graphs under
 * LogGOPS (LogP and LogGP are special cases), after LogGOPSim (Hoefler,
 * Schneider, Lumsdaine, HPDC 2010). docs/sim.md states the semantics; times
 * are floating-point microseconds.
 *
 * A schedule (rg_sim_sched_t) is a flat array of operations, each owned by a
 * rank, plus the dependencies between operations of one rank: "A requires B"
 * (A starts once B is done) and "A irequires B" (A starts once B started).
 * It is built by the GOAL parser (goal.h) or by a generator (rg_sim_barrier_*),
 * checked (rg_sim_sched_check: peers, cycles) and run (rg_sim_run).
 */
#ifndef RG_SIM_SIM_H
#define RG_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

enum { RG_SIM_SEND = 0, RG_SIM_RECV = 1, RG_SIM_CALC = 2 };

#define RG_SIM_ANY (-1) /* source or tag wildcard of a receive */

/* One operation: 32 bytes. amount is bytes (send, recv) or microseconds
 * (calc). */
typedef struct rg_sim_op {
    double   amount;
    int32_t  peer;    /* send: destination; recv: source or RG_SIM_ANY */
    int32_t  tag;     /* RG_SIM_ANY on a recv matches any tag */
    uint32_t rank;
    uint32_t line;    /* source line (GOAL) for messages; 0 when generated */
    uint8_t  kind;
    uint8_t  pad;
    uint16_t cpu;
    uint16_t nic;
    uint16_t pad2;
} rg_sim_op_t;

/* A dependency edge: the dependent op, bit 31 set for irequires. */
#define RG_SIM_EDGE_IREQ 0x80000000u

typedef struct rg_sim_sched {
    uint32_t     nranks;
    uint32_t     ncpus, nnics;   /* per rank: highest index used + 1 */
    rg_sim_op_t *ops;
    size_t       nops, ops_cap;
    /* Edges while building: (before, after|IREQ) pairs; rg_sim_sched_finish
     * turns them into dependents lists (CSR: dep_off[op]..dep_off[op+1]). */
    uint32_t    *pairs;
    size_t       npairs, pairs_cap;
    uint32_t    *dep_off;        /* nops + 1 */
    uint32_t    *deps;           /* npairs */
    uint32_t    *ndeps;          /* per op: number of dependencies */
    /* A generated schedule (gen != 0) has no arrays: its operations and
     * dependencies are computed from their index (rg_sim_op_get), so a
     * million-rank collective needs no memory per operation but the engine's
     * few bytes of state. */
    int          gen;
    uint32_t     gen_rounds;
} rg_sim_sched_t;

enum { RG_SIM_GEN_NONE = 0, RG_SIM_GEN_DISSEMINATION = 1 };

/* Operation i of a schedule, stored or generated. Dissemination: operation
 * 2(kP + r) is rank r's round-k send of 0 bytes to (r + 2^k) mod P, tag k;
 * the next one its receive from (r - 2^k) mod P. */
static inline rg_sim_op_t rg_sim_op_get(const rg_sim_sched_t *s, size_t i)
{
    rg_sim_op_t op;
    uint64_t    P, k, r, d;

    if (s->gen == RG_SIM_GEN_NONE) {
        return s->ops[i];
    }
    P = s->nranks;
    k = i / (2 * P);
    r = (i / 2) % P;
    d = (1ull << k) % P;
    memset(&op, 0, sizeof(op));
    op.kind = (uint8_t)(i & 1);
    op.rank = (uint32_t)r;
    op.tag = (int32_t)k;
    op.peer = (int32_t)(op.kind == RG_SIM_SEND ? (r + d) % P : (r + P - d) % P);
    return op;
}

/* Parameters for messages of at most to_bytes bytes (a protocol range). */
typedef struct rg_sim_range {
    double to_bytes;
    double L, o, g, G, O;
} rg_sim_range_t;

#define RG_SIM_MAX_RANGES 64

typedef struct rg_sim_params {
    double L, o, g, G, O; /* us; G and O per byte */
    double S;             /* rendezvous above S bytes; INFINITY: never */
    /* Piecewise by message size where nranges > 0 (then L..O above are not
     * used): a message of s bytes takes the first range with s <= to_bytes,
     * the last range beyond; to_bytes must increase. */
    const rg_sim_range_t *ranges;
    size_t                nranges;
} rg_sim_params_t;

typedef struct rg_sim_result {
    double   makespan;
    double  *finish;      /* per rank (caller frees with free()) */
    uint64_t events;
} rg_sim_result_t;

void        rg_sim_sched_init(rg_sim_sched_t *s, uint32_t nranks);
void        rg_sim_sched_free(rg_sim_sched_t *s);
/* Appends an operation; its index is s->nops - 1 afterwards. */
rg_status_t rg_sim_sched_add(rg_sim_sched_t *s, const rg_sim_op_t *op, rg_err_t *err);
/* Records that op `after` requires (irequires when ireq) op `before`. */
rg_status_t rg_sim_sched_dep(rg_sim_sched_t *s, uint32_t after, uint32_t before,
                             int ireq, rg_err_t *err);
/* Builds the dependents lists and checks the schedule: peers in range, sizes
 * and durations finite and >= 0, no dependency cycle (the cycle is named). */
rg_status_t rg_sim_sched_finish(rg_sim_sched_t *s, rg_err_t *err);

/* Checks parameters: finite (S may be +inf) and >= 0; ranges increasing. */
rg_status_t rg_sim_params_check(const rg_sim_params_t *p, rg_err_t *err);

/* Runs the schedule. A deadlock (operations never done) is RG_ERR_INVALID
 * with the waiting operations named in err and, in full, on `report` when it
 * is not NULL. */
rg_status_t rg_sim_run(rg_sim_sched_t *s, const rg_sim_params_t *p,
                       rg_sim_result_t *res, FILE *report, rg_err_t *err);

/* Where each operation spends time, for traces: rank, resource ("cpu",
 * "nic-send", "nic-recv") and its index, what ("send", "recv", "calc"), start
 * and duration in microseconds, and the operation (a recv span is the
 * receiver handling the message: op is the send). */
typedef struct rg_sim_trace {
    void (*span)(void *arg, uint32_t rank, const char *resource, uint16_t index,
                 const char *what, double start, double dur, const rg_sim_op_t *op);
    void *arg;
} rg_sim_trace_t;

/* rg_sim_run, reporting every span to trace (which may be NULL). */
rg_status_t rg_sim_run_traced(rg_sim_sched_t *s, const rg_sim_params_t *p,
                              const rg_sim_trace_t *trace, rg_sim_result_t *res,
                              FILE *report, rg_err_t *err);

/* The dissemination barrier on P ranks, generated (no per-operation memory):
 * in round k, rank r sends 0 bytes to (r + 2^k) mod P and receives from
 * (r - 2^k) mod P, tag k; round k+1's operations require round k's send and
 * receive. */
rg_status_t rg_sim_barrier_dissemination(rg_sim_sched_t *s, uint32_t P, rg_err_t *err);

#endif /* RG_SIM_SIM_H */
