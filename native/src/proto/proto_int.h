/*
 * railgauge: the messaging runtime's internals, shared between its files
 * (internal to proto/; see proto.h for the protocol):
 *
 *   proto.c     settings, open and close, facts
 *   msg.c       staging, the eager and rendezvous state machine, sends
 *   match.c     arrivals on the eager path; matching: posted receives,
 *               unexpected and parked arrivals
 *   window.c    the shared receive window's buffers (the eager pool) and
 *               receiver-not-ready (rxwin.c holds the window's policy)
 *   progress.c  progress, waiting, failures and dead peers
 *
 * Wire format: every message of the eager path starts with rg__phdr_t (56
 * bytes, host byte order: ranks of one job share an architecture), except
 * EAGER, which starts with the shorter rg__ehdr_t (16 bytes) and carries its
 * payload after it. Rendezvous payloads travel bare on the data channel,
 * each into the receive that its CTS announced: the receiver posts that
 * receive before it sends the CTS, the sender sends the payloads in the
 * order the CTSs arrive, and a transport keeps the order of one pair, so
 * payload and receive always meet.
 *
 * Matching order: EAGER and RTS carry a per-(sender, receiver) sequence
 * number; an arrival ahead of its turn (a transport that completes receives
 * out of order) waits in the park list, so messages of one sender match in
 * the order they were sent, whatever the transport does.
 *
 * The small helpers of the per-message path that several files share are
 * static inline here, so that the split into files costs no call.
 */
#ifndef RG_PROTO_PROTO_INT_H
#define RG_PROTO_PROTO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/dlist.h"
#include "proto/proto.h"
#include "proto/rxwin.h"

/* Control messages and small eager sends share one staging size class. */
#define RG__PROTO_SMALL     256u

/* ---- wire ------------------------------------------------------------- */

enum {
    RG__PH_EAGER = 1,  /* header + payload, matched */
    RG__PH_RTS   = 2,  /* request to send, matched: len, sreq, aux = address */
    RG__PH_CTS   = 3,  /* clear to send: sreq; payload follows on the data channel */
    RG__PH_FIN   = 4,  /* the receiver has read the payload: sreq completes */
    RG__PH_SPLIT = 5,  /* receiver -> sender: write [off, len) of the payload to
                        * aux (the receive buffer), then DONE; the receiver reads
                        * [0, off) meanwhile, then sends FIN */
    RG__PH_DONE  = 6,  /* sender -> receiver: its part is written; rreq completes */
    /* With RG_PROTO_RNR=1 (docs/rxwin.md): */
    RG__PH_RNR   = 7,  /* receiver not ready: message seq was refused; aux = the
                        * refusing rank's window, off = its unexpected bytes */
    RG__PH_ACK   = 8   /* every message of the sender before seq was taken */
};

typedef struct rg__phdr {
    uint8_t  type;
    uint8_t  flags;
    uint16_t chan;
    int32_t  tag;
    uint32_t seq;
    uint32_t pad;
    uint64_t len;
    uint64_t sreq;
    uint64_t aux;
    uint64_t rreq;  /* SPLIT, DONE: the receiver's request */
    uint64_t off;   /* SPLIT: where the sender's part starts */
} rg__phdr_t;

#define RG__PHDR ((size_t)sizeof(rg__phdr_t))

/* EAGER messages carry this shorter header (the fields that matter to them),
 * so that a small message takes 16 bytes of header, not 56. */
typedef struct rg__ehdr {
    uint8_t  type;
    uint8_t  flags;
    uint16_t pad;
    int32_t  tag;
    uint32_t seq;
    uint32_t len;
} rg__ehdr_t;

#define RG__EHDR ((size_t)sizeof(rg__ehdr_t))

/* Request states. */
enum {
    RG__RS_DONE = 0,
    RG__RS_SEND_EAGER,   /* its staging copy is on its way */
    RG__RS_SEND_RTS,     /* waits for CTS or FIN */
    RG__RS_SEND_SELF,    /* a rendezvous to this rank, waits for its receive */
    RG__RS_SEND_DATA,    /* payload on the data channel */
    RG__RS_RECV_POSTED,  /* in the posted queue */
    RG__RS_RECV_DATA,    /* payload coming on the data channel */
    RG__RS_RECV_SPLIT    /* read its part, waits for the sender's DONE */
};

/* ---- objects ------------------------------------------------------------ */

/* Staging of one outgoing eager-path message. Its size is part of what
 * mem.control counts (and the simulator's model of it, sim/rxwin_work.c). */
typedef struct rg__xop {
    rg_xreq_t       xreq;
    struct rg__xop *next;   /* the inflight list, or a free list */
    rg_preq_t      *owner;  /* the eager send it completes, or NULL */
    size_t          cap;    /* bytes of data[] */
    /* With RNR: an EAGER or RTS kept until the receiver takes it (ACK). */
    struct rg__xop *unext;   /* the peer's list of messages not yet taken */
    struct rg__xop *rnext;   /* the retry queue */
    uint64_t        due_ns;  /* when a refused message goes again */
    size_t          len;     /* bytes of the message */
    int             peer;
    uint32_t        seq;
    unsigned        tries;   /* refusals so far */
    uint8_t         retain;  /* kept until acknowledged */
    uint8_t         sending; /* on the transport (in the inflight list) */
    uint8_t         acked;
    unsigned char   data[];
} rg__xop_t;

/* A buffer of the window (or the refusal buffer), posted as a receive from
 * any source. Its size is part of what mem.pool counts (pool_buf_bytes). */
typedef struct rg__pbuf {
    rg_xreq_t        xreq;
    struct rg__pbuf *next;    /* the posted list, in posting order */
    uint64_t         postno;  /* when it was posted (order against the refusal buffer) */
    unsigned char   *data;    /* header + eager limit (apart: the descriptors stay
                               * close together, each buffer on its own pages) */
} rg__pbuf_t;

typedef struct rg__xop_list {
    rg__xop_t *head, *tail;
} rg__xop_list_t;

typedef struct rg__pbuf_list {
    rg__pbuf_t *head, *tail;
} rg__pbuf_list_t;

/* An unexpected (or parked) arrival. */
typedef struct rg__uxm {
    struct rg__uxm *next, *prev;
    int             src;
    rg__phdr_t      hdr;
    rg_preq_t      *self_req;  /* a rendezvous to this rank: its send */
    size_t          bytes;     /* what it counts in mem.unexpected */
    unsigned char   payload[];
} rg__uxm_t;

typedef struct rg__preq_list {
    rg_preq_t *head, *tail;
} rg__preq_list_t;

typedef struct rg__uxm_list {
    rg__uxm_t *head, *tail;
} rg__uxm_list_t;

#define RG__PROTO_MAX_CHAN 2

struct rg_proto {
    rg_xport_t       *chan[RG__PROTO_MAX_CHAN]; /* 0: eager path; 1: data channel */
    int               nchan;
    int               data_chan;   /* index of the data channel, -1 with get */
    int               rank, size;
    int               rnr;         /* cfg.rnr, where the hot path reads it */
    rg_proto_config_t cfg;
    size_t            eager_limit;
    size_t            pbuf_size;   /* header + eager limit */
    /* The shared receive window (rxwin.h): buffers posted in order; a buffer
     * that took a message is handled and posted again (or freed where the
     * window shrank). */
    rg_rxwin_t        rxwin;
    rg__pbuf_list_t   pbufs;       /* posted, in posting order */
    int               nposted;     /* window buffers posted */
    int               nalloc;      /* window buffers allocated */
    uint64_t          postno;      /* posts so far */
    /* RNR (cfg.rnr): the refusal buffer, posted behind the window's buffers:
     * a message lands in it only when every buffer posted before it is
     * taken; if no window buffer was posted after it either, the window was
     * exhausted at that arrival and the message is refused. */
    rg__pbuf_t       *drain;
    int               drain_posted;
    int               drain_behind; /* window buffers posted after it */
    uint64_t          rnr_timer_ns;
    rg__xop_list_t    rnrq;        /* refused messages, by due time */
    int               nrnr;
    rg__xop_list_t   *unacked;     /* per destination: sent, not yet taken */
    int               nunacked;
    uint8_t          *ack_due;     /* per source: an ACK to send this pass */
    int              *ack_list;    /* the sources of ack_due, nack of them */
    int               nack;
    rg__preq_list_t   posted;      /* receives, in posting order */
    rg__preq_list_t   active;      /* requests whose payload is on the data channel */
    rg__uxm_list_t    unexpected;  /* arrivals, in order */
    rg__uxm_list_t    parked;      /* arrivals ahead of their turn */
    uint32_t         *send_seq;    /* per destination */
    uint32_t         *recv_seq;    /* per source: the next to match */
    int32_t          *pids;        /* per rank; 0 where on another host */
    uint64_t         *live_ns;     /* per rank: when its liveness was last asked */
    uint8_t          *dead;        /* per rank: found dead (sticky) */
    rg__xop_t        *xop_free[3]; /* small, medium, eager */
    unsigned          xop_nfree[3];
    rg__xop_list_t    inflight;    /* staged messages on the transport */
    rg_proto_stats_t  stats;
    int               rndv_busy;   /* rendezvous of this rank under way */
    int               can_inject;  /* the eager path has ops->inject */
    rg_status_t       failed;
    rg_err_t          err;
};

/* ---- lists (base/dlist.h) ------------------------------------------------ */

RG_DLIST_FUNCS(rg__proto_preq, rg__preq_list_t, rg_preq_t)
RG_DLIST_FUNCS(rg__proto_uxm, rg__uxm_list_t, rg__uxm_t)
RG_SLIST_FUNCS(rg__proto_inflight, rg__xop_list_t, rg__xop_t, next)
RG_SLIST_FUNCS(rg__proto_unacked, rg__xop_list_t, rg__xop_t, unext)
RG_SLIST_FUNCS(rg__proto_rnrq, rg__xop_list_t, rg__xop_t, rnext)
RG_SLIST_FUNCS(rg__proto_pbufs, rg__pbuf_list_t, rg__pbuf_t, next)

/* ---- accounting ---------------------------------------------------------- */

static inline void rg__proto_mem_add(rg_proto_t *proto, size_t *field, size_t n)
{
    rg_proto_mem_t *m = &proto->stats.mem;

    *field   += n;
    m->total += n;
    if (m->total > m->high_water) {
        m->high_water = m->total;
    }
}

static inline void rg__proto_mem_sub(rg_proto_t *proto, size_t *field, size_t n)
{
    *field                 -= n;
    proto->stats.mem.total -= n;
}

/* ---- failures (progress.c) ----------------------------------------------- */

/* Ends the runtime with status (the first failure stays): the message says
 * what failed, the transport's own message where xp is given, and, for a
 * dead peer, which ranks of this host have exited. Returns proto->failed. */
rg_status_t rg__proto_fail(rg_proto_t *proto, rg_status_t status, const char *what,
                           const rg_xport_t *xp);

/* ---- the scheduling point -------------------------------------------------- */

/*
 * Every transport operation of the runtime goes through these three
 * functions: they choose the channel (the eager path, or the data channel
 * for rendezvous payloads) and post the request there; no other file of
 * proto/ calls rg_xport_isend(), rg_xport_inject() or rg_xport_irecv().
 * Rails are not chosen here: multirail is a transport below the runtime
 * (`--transport rails`, README "departures"), which chooses rails and
 * stripes itself, so the runtime over rails sees one transport. This point
 * stays for per-message decisions that need the runtime's tags.
 */
static inline rg_status_t rg__proto_sched_send(rg_proto_t *proto, int chan, int peer,
                                               const void *buf, size_t len, rg_xreq_t *xreq)
{
    rg_status_t status = rg_xport_isend(proto->chan[chan], peer, buf, len, xreq);

    if (status < 0) {
        return rg__proto_fail(proto, status, "send", proto->chan[chan]);
    }
    return RG_OK;
}

/* A small message sent at once without staging where the transport can
 * (RG_ERR_AGAIN: not now, the caller stages it). */
static inline rg_status_t rg__proto_sched_inject(rg_proto_t *proto, int chan, int peer,
                                                 const void *hdr, size_t hlen,
                                                 const void *buf, size_t len)
{
    rg_status_t status = rg_xport_inject(proto->chan[chan], peer, hdr, hlen, buf, len);

    if (status < 0 && status != RG_ERR_AGAIN && status != RG_ERR_UNSUPPORTED) {
        return rg__proto_fail(proto, status, "send", proto->chan[chan]);
    }
    return status;
}

static inline rg_status_t rg__proto_sched_recv(rg_proto_t *proto, int chan, int peer,
                                               void *buf, size_t cap, rg_xreq_t *xreq)
{
    rg_status_t status = rg_xport_irecv(proto->chan[chan], peer, buf, cap, xreq);

    if (status < 0) {
        return rg__proto_fail(proto, status, "receive", proto->chan[chan]);
    }
    return RG_OK;
}

/* ---- requests ------------------------------------------------------------- */

static inline void rg__proto_complete(rg_preq_t *r, rg_status_t status)
{
    r->state  = RG__RS_DONE;
    r->status = status;
}

static inline rg_status_t rg__proto_check_peer(rg_proto_t *proto, int peer, int any_ok)
{
    if ((peer >= 0 && peer < proto->size) || (any_ok && peer == RG_PROTO_ANY_SOURCE)) {
        return RG_OK;
    }
    return rg_err_set(&proto->err, RG_ERR_RANGE, "rank %d is out of range [0, %d)%s", peer,
                      proto->size, any_ok ? " and not ANY_SOURCE" : "");
}

static inline rg_status_t rg__proto_check_tag(rg_proto_t *proto, int tag, int any_ok)
{
    if (tag >= 0 || (any_ok && tag == RG_PROTO_ANY_TAG)) {
        return RG_OK;
    }
    return rg_err_set(&proto->err, RG_ERR_RANGE, "tag %d is out of range [0, %d]%s", tag,
                      RG_PROTO_TAG_MAX, any_ok ? " and not ANY_TAG" : "");
}

/* ---- staging (msg.c) -------------------------------------------------------- */

/* Gives a staging buffer back (to its size class's cache, or frees it). */
void       rg__proto_xop_put(rg_proto_t *proto, rg__xop_t *x);
/* A staging buffer holding header + payload, or NULL (no memory). */
rg__xop_t *rg__proto_xop_staged(rg_proto_t *proto, const void *hdr, size_t hlen,
                                const void *payload, size_t len);
/* Sends header (+ payload) on the eager path; owner completes with it. */
rg_status_t rg__proto_send_eager_path(rg_proto_t *proto, int peer, const void *hdr,
                                      size_t hlen, const void *payload, size_t len,
                                      rg_preq_t *owner);

/* A staged message whose send completed: its owner (an eager send) too. */
static inline void rg__proto_xop_done(rg_proto_t *proto, rg__xop_t *x)
{
    if (x->owner != NULL) {
        x->owner->state  = RG__RS_DONE;
        x->owner->status = x->xreq.status;
    }
    rg__proto_xop_put(proto, x);
}

/* Frees a kept message (RNR) once nothing refers to it any more. */
static inline void rg__proto_retained_release(rg_proto_t *proto, rg__xop_t *x)
{
    x->retain = 0;
    rg__proto_xop_put(proto, x);
}

/* ---- the eager and rendezvous state machine (msg.c) ------------------------ */

/* Receive r meets the message (src, hdr): eager payload, a remote RTS, or a
 * send to this rank (self_req). */
rg_status_t rg__proto_deliver(rg_proto_t *proto, rg_preq_t *r, int src,
                              const rg__phdr_t *hdr, const unsigned char *payload,
                              rg_preq_t *self_req);
/* CTS for our send s from src: its payload goes on the data channel. */
rg_status_t rg__proto_cts_arrive(rg_proto_t *proto, int src, rg_preq_t *s);
/* SPLIT for our send from src: write the receiver's part of the payload,
 * then DONE; the send completes on the receiver's FIN (it may still be
 * reading). */
rg_status_t rg__proto_split_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr);

/* ---- arrivals and matching (match.c) ------------------------------------------ */

/* A matched-kind message (EAGER, RTS, or a send to self) in its turn: to the
 * first posted receive it matches, else to the unexpected queue. */
rg_status_t rg__proto_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr,
                             const unsigned char *payload, rg_preq_t *self_req);
/* An arrival on the eager path from src (data: len bytes of a pool buffer). */
rg_status_t rg__proto_handle(rg_proto_t *proto, int src, const unsigned char *data,
                             size_t len);

/* ---- the receive window and RNR (window.c) ----------------------------------- */

/* Posts the window's first buffers and the refusal buffer behind them (err:
 * the message of a failure, as open reports it). */
rg_status_t rg__proto_window_open(rg_proto_t *proto, rg_err_t *err);
/* Frees the window's buffers and the messages kept for RNR (at close, after
 * the transports closed). */
void        rg__proto_window_free(rg_proto_t *proto);
/* Handles the window's buffers that took messages (once per progress call). */
rg_status_t rg__proto_pool_progress(rg_proto_t *proto);
/* With RNR: an EAGER or RTS to peer, kept until peer acknowledges it. */
rg_status_t rg__proto_send_retained(rg_proto_t *proto, int peer, uint32_t seq,
                                    const void *hdr, size_t hlen, const void *payload,
                                    size_t len, rg_preq_t *owner);
rg_status_t rg__proto_rnr_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr);
rg_status_t rg__proto_ack_arrive(rg_proto_t *proto, int src, uint32_t upto);
/* Refused messages whose timer ran out go again. */
rg_status_t rg__proto_rnr_progress(rg_proto_t *proto);

/* With RNR: the sender of an EAGER or RTS that was taken gets an ACK at the
 * end of this pass of the pool (one per sender and pass, cumulative). */
static inline void rg__proto_ack_mark(rg_proto_t *proto, int src)
{
    if (proto->rnr && !proto->ack_due[src]) {
        proto->ack_due[src]            = 1;
        proto->ack_list[proto->nack++] = src;
    }
}

#endif /* RG_PROTO_PROTO_INT_H */
