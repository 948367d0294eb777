/*
 * railgauge: the simulator's event queue (internal to sim/).
 *
 * Events are ordered by (time, sequence number). Simulations of collectives
 * put very many events at few distinct times, so the queue keeps one bucket
 * per distinct time: a min-heap of bucket times on top (found by a hash of
 * the time), and in each bucket a FIFO of fresh events, which arrive in
 * increasing sequence order because sequence numbers only grow, beside a small
 * heap for re-queued events, which keep an older sequence number. A pop is
 * then O(1) within a time and O(log distinct times) across them. Buckets and
 * their arrays are recycled: nothing is allocated per event.
 */
#ifndef RG_SIM_QUEUE_H
#define RG_SIM_QUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rg_simq_ev {
    uint64_t seq;
    uint32_t op;
    uint32_t type;
} rg_simq_ev_t;

typedef struct rg_simq_bucket {
    double        t;
    rg_simq_ev_t *fifo;
    size_t        head, n, cap;   /* fifo[head..n) */
    rg_simq_ev_t *rq;             /* min-heap by seq */
    size_t        rqn, rqcap;
    uint32_t      next_free;
} rg_simq_bucket_t;

typedef struct rg_simq {
    rg_simq_bucket_t *b;
    size_t            nb, bcap;
    uint32_t          free_b;
    uint32_t         *top;        /* min-heap of bucket indices by time */
    size_t            ntop, topcap;
    uint32_t         *hash;       /* open addressing, UINT32_MAX empty */
    size_t            hcap;       /* power of two */
    size_t            count;      /* events queued */
    /* The bucket of the last push (NONE when freed since): pushes come in runs
     * at one time (an event's successors), so most skip the hash probe. */
    double            last_t;
    uint32_t          last_b;
    int               nomem;
} rg_simq_t;

void rg_simq_init(rg_simq_t *q);
void rg_simq_free(rg_simq_t *q);
/* Queues an event; on allocation failure sets q->nomem (checked by the loop). */
void rg_simq_push(rg_simq_t *q, double t, uint64_t seq, uint32_t op, uint32_t type);
/* Removes the least event (q->count > 0) into *ev and its time into *t. */
void rg_simq_pop(rg_simq_t *q, double *t, rg_simq_ev_t *ev);

#endif /* RG_SIM_QUEUE_H */
