/*
 * railgauge: the simulator engine's internals, shared by the engine
 * (engine.c: the event loop and LogGOPS) and its models (model_*.c: LoP, the
 * receive window, rails, duplex), which models.c lists in one table. Not
 * public: only sim/'s own files include it.
 *
 * A model is a struct of hooks (rg__sim_model_t), as a transport is an ops
 * table in xport/: each hook replaces one step of the engine's LogGOPS
 * behaviour, and a NULL hook leaves that step as it is. A run resolves its
 * model once, at set-up, into the engine's own copy of the hooks (e->hk,
 * all NULL without a model), so that an event pays one test of a pointer per
 * step that a model could take over, and a model that is not in the run
 * costs nothing. The models exclude each other (each set-up refuses the
 * others it cannot run with, see rg__sim_model_t.setup): a run has at most
 * one.
 */
#ifndef RG_SIM_ENGINE_INT_H
#define RG_SIM_ENGINE_INT_H

#include "sim/queue.h"
#include "sim/sim.h"

/* Event types: an operation freed (due to start) and a message arriving at
 * its receiver. A model's own events are numbered from RG__SIM_EV_MODEL
 * (below 1 << RG__SIM_EV_BITS); the type's bits above those carry a number
 * of the model's (a sequence number, a record's index). */
enum { RG__SIM_EV_READY = 0, RG__SIM_EV_ARRIVE = 1, RG__SIM_EV_MODEL = 2 };
#define RG__SIM_EV_BITS 3u
#define RG__SIM_EV_NUM_MAX (UINT32_MAX >> RG__SIM_EV_BITS)

#define RG__SIM_NIL UINT32_MAX

/* At most this many models in the table (models.c checks). */
#define RG__SIM_MODELS_MAX 8

typedef struct rg__sim_ev {
    double   t;
    uint64_t seq;
    uint32_t op;
    uint32_t type;
} rg__sim_ev_t;

/* A rank's accounts: CPU time in overheads and calc, the union of busy CPU
 * intervals (every interval starts at the current event's time, so they
 * come sorted by start and one running end suffices), and its finish. */
typedef struct rg__sim_racc {
    double ov, calc, busy, busy_end, finish;
} rg__sim_racc_t;

typedef struct rg__sim_eng rg__sim_eng_t;

/* A model: its name, when a run has it, and its hooks. Every hook but
 * active may be NULL. Per run: check (before anything is allocated), setup,
 * then the per-event hooks, result, and fini, also after a failed setup. */
typedef struct rg__sim_model {
    const char *name;
    /* Whether the parameters ask for the model. */
    int (*active)(const rg_sim_params_t *p);
    /* Checks the model's own parameters. */
    rg_status_t (*check)(const rg_sim_params_t *p, rg_err_t *err);
    /* Sets up the model's state (*state_p, as soon as there is any, so that
     * fini can free it after a failure) once the engine's own is; refuses
     * the models given with it that it cannot run with. */
    rg_status_t (*setup)(rg__sim_eng_t *e, void **state_p, rg_err_t *err);
    void (*fini)(rg__sim_eng_t *e, void *state);
    /* A send due at ev->t on CPU index c (rank * ncpus + cpu): the whole of
     * LogGOPS's send (wait for the CPU and NIC, or start; the message's
     * arrival; done where eager). */
    void (*send)(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *op, size_t c);
    /* When NIC nic of rank lets a send start at the earliest, for the time
     * a freed send is queued at (LogGOPS: its send gap). */
    double (*send_nic)(const rg__sim_eng_t *e, uint32_t rank, uint16_t nic);
    /* A receive started at t: what LogGOPS does with it (take a matching
     * unexpected message or join the posted receives). */
    void (*recv)(rg__sim_eng_t *e, uint32_t op, const rg_sim_op_t *recv, double t);
    /* A message m arriving at ev->t (RG__SIM_EV_ARRIVE): LogGOPS's handling
     * before matching. Returns 1 where the message is handled and is to be
     * matched now, 0 where it was put back to wait. */
    int (*arrive)(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *m);
    /* The model's own events (types from RG__SIM_EV_MODEL). */
    void (*event)(rg__sim_eng_t *e, const rg__sim_ev_t *ev);
    /* A rendezvous send is done at t: its NIC's send side, at index n (rank
     * * nnics + nic), is held until then (LogGOPS: the one send gap). */
    void (*rndv_done)(rg__sim_eng_t *e, uint32_t send, size_t n, double t);
    /* The model's figures into the run's result. */
    void (*result)(rg__sim_eng_t *e, rg_sim_result_t *res);
} rg__sim_model_t;

/* The table of models (models.c), NULL-terminated, in the order their
 * checks and set-ups run, which decides the message where a run is given
 * several. */
extern const rg__sim_model_t *const rg__sim_models[];

struct rg__sim_eng {
    rg_sim_sched_t        *s;
    const rg_sim_params_t *p;
    rg_simq_t              q;
    const rg_sim_trace_t  *trace;
    rg_sim_range_t         flat;     /* the scalar parameters as one range */
    uint64_t               seq;
    /* Busy until: per CPU (rank * ncpus + cpu) and per NIC (rank * nnics +
     * nic) its send and receive gaps. A model may widen the NICs' arrays
     * (rails: one gap per rail). */
    double                *cpu, *nic_s, *nic_r;
    uint32_t              *left;     /* unmet dependencies per op */
    uint8_t               *state;    /* per op: 0 waiting, 3 queued, 1 started, 2 done */
    uint32_t              *posted, *unexp; /* per rank: head, tail */
    struct rg__sim_qnode  *pool;
    size_t                 pool_n, pool_cap;
    uint32_t               pool_free;
    struct rg__sim_freed  *freed;
    size_t                 nfreed, freed_cap;
    size_t                 ndone;
    /* 1: out of memory while running; 2: bad input found while running (a
     * model's), said in fail. */
    int                    nomem;
    /* Per rank: its accounts, one record per rank rather than an array per
     * figure, so that an event touches one place, not five. */
    rg__sim_racc_t        *acc;
    /* The run's model: its hooks (all NULL without one) and its state. */
    rg__sim_model_t        hk;
    void                  *ms;
    /* Every model set up in this run and its state, for fini. */
    const rg__sim_model_t *set[RG__SIM_MODELS_MAX];
    void                  *set_state[RG__SIM_MODELS_MAX];
    size_t                 nset;
    char                   fail[200];
};

/* The CPU of `rank` is busy for [t, t + dur) with an overhead (is_calc 0) or
 * a computation. */
static inline void rg__sim_busy(rg__sim_eng_t *e, uint32_t rank, double t, double dur,
                                int is_calc)
{
    double          end = t + dur;
    rg__sim_racc_t *a = &e->acc[rank];

    if (is_calc) {
        a->calc += dur;
    } else {
        a->ov += dur;
    }
    if (t >= a->busy_end) {
        a->busy += dur;
        a->busy_end = end;
    } else if (end > a->busy_end) {
        a->busy += end - a->busy_end;
        a->busy_end = end;
    }
}

static inline void rg__sim_push(rg__sim_eng_t *e, double t, uint64_t seq, uint32_t op,
                                uint32_t type)
{
    rg_simq_push(&e->q, t, seq, op, type);
}

/* The parameters for a message of `size` bytes. */
static inline const rg_sim_range_t *rg__sim_prm(const rg__sim_eng_t *e, double size)
{
    const rg_sim_params_t *p = e->p;
    size_t                 i;

    if (p->nranges == 0) {
        return &e->flat;
    }
    for (i = 0; i + 1 < p->nranges && size > p->ranges[i].to_bytes; i++) {
    }
    return &p->ranges[i];
}

/* The bytes that the per-byte parameters (G, O) apply to: s - 1. */
static inline double rg__sim_per_byte(double size)
{
    return size > 0 ? size - 1 : 0;
}

/* Whether the run reports spans. */
static inline int rg__sim_tracing(const rg__sim_eng_t *e)
{
    return e->trace != NULL && e->trace->span != NULL;
}

/* Op started at t (its irequiring dependents are freed). */
void rg__sim_start(rg__sim_eng_t *e, uint32_t op, double t);
/* Op, of `rank`, done at t (its requiring dependents are freed). */
void rg__sim_done(rg__sim_eng_t *e, uint32_t op, uint32_t rank, double t);
/* A receive matched message `send` at t: the receive is done, and so is a
 * rendezvous send. */
void rg__sim_complete_match(rg__sim_eng_t *e, uint32_t recv, uint32_t send, double t);
/* Message `msg` (m), handled at t, meets its receiver's posted receives: the
 * first that matches completes with it, else it waits as unexpected. */
void rg__sim_match_arrival(rg__sim_eng_t *e, uint32_t msg, const rg_sim_op_t *m, double t);
/* LogGOPS's send due at ev->t on CPU index c: put back while the CPU or the
 * NIC's send gap is busy (NULL), else started: the CPU busy for o + (s-1)O,
 * the gap for g + (s-1)G; returns the message's parameters. What becomes of
 * the message is the caller's (rg__sim_send_end, or a model's own). */
const rg_sim_range_t *rg__sim_send_begin(rg__sim_eng_t *e, const rg__sim_ev_t *ev,
                                         const rg_sim_op_t *op, size_t c);
/* The rest of LogGOPS's send started at t with parameters r: the message
 * arrives o + L later, and an eager send is done. */
void rg__sim_send_end(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *op,
                      const rg_sim_range_t *r);
/* LogGOPS's handling of arriving message m (the arrive hook's contract). */
int  rg__sim_arrive_begin(rg__sim_eng_t *e, const rg__sim_ev_t *ev, const rg_sim_op_t *m);

#endif /* RG_SIM_ENGINE_INT_H */
