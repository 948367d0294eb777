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
    uint8_t  flags;   /* RG_SIM_OPF_* */
    uint16_t cpu;
    uint16_t nic;
    uint16_t batch;   /* size of the op's batch (LoP), set by rg_sim_sched_finish */
} rg_sim_op_t;

/* A batch (the LoP model, docs/sim.md) is a maximal run of consecutive sends,
 * or of consecutive receives, in a rank's program order (no other operation
 * of the rank between them); batch is its size (capped at 65535) and
 * RG_SIM_OPF_FIRST marks its first operation. */
#define RG_SIM_OPF_FIRST 0x01u
#define RG_SIM_BATCH_MAX 65535u

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
    /* Generated dissemination: 1 / (2 P) to find an operation's round by a
     * multiplication (checked, so exact), and each round's distance 2^k mod P:
     * rg_sim_op_get runs several times per event, and three 64-bit divisions
     * there were the engine's largest cost. */
    double       gen_inv2p;
    uint32_t     gen_dist[32];
} rg_sim_sched_t;

enum { RG_SIM_GEN_NONE = 0, RG_SIM_GEN_DISSEMINATION = 1 };

/* Operation i of a schedule, stored or generated. Dissemination: operation
 * 2(kP + r) is rank r's round-k send of 0 bytes to (r + 2^k) mod P, tag k;
 * the next one its receive from (r - 2^k) mod P. */
static inline rg_sim_op_t rg_sim_op_get(const rg_sim_sched_t *s, size_t i)
{
    rg_sim_op_t op;
    uint64_t    P, P2, k, j, r, d;

    if (s->gen == RG_SIM_GEN_NONE) {
        return s->ops[i];
    }
    P = s->nranks;
    P2 = 2 * P;
    k = (uint64_t)((double)i * s->gen_inv2p);
    while (k * P2 > i) {
        k--;
    }
    while ((k + 1) * P2 <= i) {
        k++;
    }
    j = i - k * P2; /* i mod 2P */
    r = j >> 1;     /* (i / 2) mod P */
    d = s->gen_dist[k];
    /* Built as one initializer (no memset, fields not written one by one):
     * the compiler then keeps the fields in registers instead of storing
     * them and reloading the struct, a store-forwarding stall per call. */
    op = (rg_sim_op_t){
        .amount = 0,
        .peer = (int32_t)((j & 1) == RG_SIM_SEND ? (r + d >= P ? r + d - P : r + d)
                                                  : (r >= d ? r - d : r + P - d)),
        .tag = (int32_t)k,
        .rank = (uint32_t)r,
        .line = 0,
        .kind = (uint8_t)(j & 1),
        .flags = RG_SIM_OPF_FIRST,
        .cpu = 0,
        .nic = 0,
        .batch = 1,
    };
    return op;
}

/* Parameters for messages of at most to_bytes bytes (a protocol range). */
typedef struct rg_sim_range {
    double to_bytes;
    double L, o, g, G, O;
} rg_sim_range_t;

#define RG_SIM_MAX_RANGES 64

/* The LoP model (Hoefler and Rehm; docs/lop.md for the functions, docs/sim.md
 * for how they map onto events): RTT(p) = l1/(l2 + p) + l3 + l4 (1 -
 * e^(l5 (p - l6))) per peer, o_s(p) = a1 + a2/(a3 + p) per request, L(p) =
 * RTT(p)/2 - (o_s(p) + o_s(1)), or with list posting L_list(p) = RTT(p)/2 -
 * (p o_s(p) + o_s(1)) and the NIC starting once the whole batch is posted. */
typedef struct rg_sim_lop {
    double rtt[6];
    double os[3];
    int    list;
} rg_sim_lop_t;

/* o_s(p) and L(p) (L_list(p) in list mode) of a LoP model, in us. */
double rg_sim_lop_os(const rg_sim_lop_t *m, double p);
double rg_sim_lop_latency(const rg_sim_lop_t *m, double p);

typedef struct rg_sim_params {
    double L, o, g, G, O; /* us; G and O per byte */
    double S;             /* rendezvous above S bytes; INFINITY: never */
    /* Piecewise by message size where nranges > 0 (then L..O above are not
     * used): a message of s bytes takes the first range with s <= to_bytes,
     * the last range beyond; to_bytes must increase. */
    const rg_sim_range_t *ranges;
    size_t                nranges;
    /* LoP instead of LogGOPS where not NULL (then L..O, ranges are unused and
     * S must be inf). */
    const rg_sim_lop_t   *lop;
} rg_sim_params_t;

/* Per-rank results; every array has nranks entries and is freed by
 * rg_sim_result_free. overhead: CPU time in sends and in handling arriving
 * messages (o + (s-1)O, o + (s-1)max(O, G); LoP o_s(p), o_s(1)); calc: CPU
 * time in calc; both summed over the rank's CPUs. wait: the time up to the
 * rank's finish when none of its CPUs was busy (blocked on a message, a
 * dependency, a NIC gap, a rendezvous match). With one CPU per rank,
 * overhead + calc + wait = finish. */
typedef struct rg_sim_result {
    double   makespan;
    double  *finish;
    double  *overhead, *calc, *wait;
    uint64_t events;
} rg_sim_result_t;

void rg_sim_result_free(rg_sim_result_t *res);

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

/* Hooks into a run, each may be NULL. span: where each operation spends
 * time, for traces: rank, resource ("cpu", "nic-send", "nic-recv") and its
 * index, what ("send", "recv", "calc"), start and duration in microseconds,
 * and the operation (a recv span is the receiver handling the message: op is
 * the send). progress: called every RG_SIM_PROGRESS_EVENTS events with the
 * events so far, the operations done and in all, and the simulated time. */
#define RG_SIM_PROGRESS_EVENTS (1u << 20)

typedef struct rg_sim_trace {
    void (*span)(void *arg, uint32_t rank, const char *resource, uint16_t index,
                 const char *what, double start, double dur, const rg_sim_op_t *op);
    void *arg;
    void (*progress)(void *arg, uint64_t events, size_t done, size_t total, double now);
    void *progress_arg;
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
