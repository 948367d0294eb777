/*
 * railgauge: eager and rendezvous messaging, tag matching, the eager pool and
 * the scheduling point (see proto.h for the protocol).
 *
 * Wire format: every message of the eager path starts with rg__phdr_t (40
 * bytes, host byte order: ranks of one job share an architecture); an EAGER
 * message carries its payload after it. Rendezvous payloads travel bare on
 * the data channel, each into the receive that its CTS announced: the
 * receiver posts that receive before it sends the CTS, the sender sends the
 * payloads in the order the CTSs arrive, and a transport keeps the order of
 * one pair, so payload and receive always meet.
 *
 * Matching order: EAGER and RTS carry a per-(sender, receiver) sequence
 * number; an arrival ahead of its turn (a transport that completes receives
 * out of order) waits in the park list, so messages of one sender match in
 * the order they were sent, whatever the transport does.
 */
#include "proto/proto.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "base/dlist.h"
#include "base/json.h"
#include "base/timer.h"
#include "proto/rxwin.h"

/* ---- settings ----------------------------------------------------------- */

static const rg_config_field_t rg__proto_config_fields[] = {
    {"EAGER_LIMIT", "0",
     "messages up to this many bytes go eagerly, larger ones by rendezvous; "
     "0 takes the transport's own limit below",
     offsetof(rg_proto_config_t, eager_limit), RG_CONFIG_SIZE},
    {"EAGER_SHM", "16KiB", "eager limit over shm",
     offsetof(rg_proto_config_t, eager_shm), RG_CONFIG_SIZE},
    {"EAGER_TCP", "32KiB", "eager limit over tcp",
     offsetof(rg_proto_config_t, eager_tcp), RG_CONFIG_SIZE},
    {"EAGER_OFI", "16KiB", "eager limit over ofi:* (libfabric)",
     offsetof(rg_proto_config_t, eager_ofi), RG_CONFIG_SIZE},
    {"EAGER_MPI", "16KiB", "eager limit over mpi",
     offsetof(rg_proto_config_t, eager_mpi), RG_CONFIG_SIZE},
    {"EAGER_OTHER", "16KiB", "eager limit over any other transport",
     offsetof(rg_proto_config_t, eager_other), RG_CONFIG_SIZE},
    {"POOL_BUFS", "64",
     "eager buffers of the per-process pool posted to the transport as "
     "receives from any source (the shared receive window), 1 to 65536",
     offsetof(rg_proto_config_t, pool_bufs), RG_CONFIG_INT},
    {"SPLIT_MIN", "256KiB",
     "with one-sided reads, a rendezvous payload of at least this many bytes is "
     "moved by both sides at once (the receiver reads the first half, the sender "
     "writes the second), which takes two cores' copy bandwidth; 0: never",
     offsetof(rg_proto_config_t, split_min), RG_CONFIG_SIZE},
    {"RNDV_YIELD_NS", "200ms",
     "while a rendezvous of this rank is under way, a wait polls with "
     "sched_yield() this long before it sleeps: the peer's next control message "
     "is due within microseconds, and a sleeping rank wakes late",
     offsetof(rg_proto_config_t, rndv_yield_ns), RG_CONFIG_TIME_NS},
    {"GET", "1",
     "1: rendezvous payloads are read one-sided from the sender's memory where "
     "the transport can (shm: cross-memory attach, one copy); 0: always over "
     "the data channel (CTS, then the payload as a message)",
     offsetof(rg_proto_config_t, use_get), RG_CONFIG_INT},
    {"RXWIN", "pool",
     "the shared receive window (docs/rxwin.md): fixed:N (N buffers), "
     "adaptive:W_init:W_max (grows to min(2^nlimit * W_init, W_max) at each limit "
     "event, next limit W/2), adaptive:W_init:W_max:reclaim (also shrinks after "
     "quiet periods); pool: fixed:RG_PROTO_POOL_BUFS",
     offsetof(rg_proto_config_t, rxwin), RG_CONFIG_STRING},
    {"RXWIN_LIMIT", "auto",
     "the first limit: a limit event when fewer buffers than this are posted, "
     "1 to W_init; auto: W_init/2 (at least 1)",
     offsetof(rg_proto_config_t, rxwin_limit), RG_CONFIG_STRING},
    {"RXWIN_QUIET_NS", "100ms",
     "reclaim: a window whose use stayed at a quarter or less for this long halves",
     offsetof(rg_proto_config_t, rxwin_quiet_ns), RG_CONFIG_TIME_NS},
    {"RNR", "0",
     "1: a message that arrives while every buffer of the window is taken is "
     "refused back to its sender (receiver not ready), which sends it again after "
     "RG_PROTO_RNR_TIMER_MS; 0: it waits in the transport (back-pressure)",
     offsetof(rg_proto_config_t, rnr), RG_CONFIG_INT},
    {"RNR_TIMER_MS", "1",
     "receiver-not-ready retry timer in milliseconds, 0.01 to 655.36 (InfiniBand's "
     "RNR NAK timer range)",
     offsetof(rg_proto_config_t, rnr_timer_ms), RG_CONFIG_DOUBLE},
    {"RNR_RETRY", "10000",
     "refusals of one message before its sender fails with an error naming the "
     "peer, 1 to 1000000",
     offsetof(rg_proto_config_t, rnr_retry), RG_CONFIG_INT},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_proto_config_table = {"PROTO", rg__proto_config_fields};

#define RG__PROTO_POOL_MAX  65536
#define RG__PROTO_EAGER_MAX ((size_t)1 << 30)
/* Control messages and small eager sends share one staging size class. */
#define RG__PROTO_SMALL     256u
#define RG__PROTO_MEDIUM    4096u
/* Staging buffers kept for reuse per size class. */
#define RG__PROTO_XOP_CACHE 64u
/* How often a waiting rank checks that the peers it waits on are alive. */
#define RG__PROTO_LIVENESS_NS 50000000ull
/* How long close keeps delivering control messages still in flight. */
#define RG__PROTO_FLUSH_NS  5000000000ull

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

#define RG__PROTO_RNR_RETRY_MAX 1000000

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

/* Staging of one outgoing eager-path message. */
typedef struct rg__xop {
    rg_xreq_t       xreq;
    struct rg__xop *next;
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
 * any source. */
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
    rg__pbuf_t       *phead, *ptail;  /* posted, in posting order */
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
    rg__xop_t        *rnr_head, *rnr_tail;  /* refused messages, by due time */
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
    rg__xop_t        *inflight, *inflight_tail;
    rg_proto_stats_t  stats;
    int               rndv_busy;   /* rendezvous of this rank under way */
    int               can_inject;  /* the eager path has ops->inject */
    rg_status_t       failed;
    rg_err_t          err;
};

/* ---- accounting ---------------------------------------------------------- */

static void rg__mem_add(rg_proto_t *proto, size_t *field, size_t n)
{
    rg_proto_mem_t *m = &proto->stats.mem;

    *field   += n;
    m->total += n;
    if (m->total > m->high_water) {
        m->high_water = m->total;
    }
}

static void rg__mem_sub(rg_proto_t *proto, size_t *field, size_t n)
{
    *field                 -= n;
    proto->stats.mem.total -= n;
}

/* ---- lists ---------------------------------------------------------------- */

RG_DLIST_FUNCS(rg__preq, rg__preq_list_t, rg_preq_t)
RG_DLIST_FUNCS(rg__uxm, rg__uxm_list_t, rg__uxm_t)

static int rg__peer_dead(const rg_proto_t *proto, int peer);

static rg_status_t rg__fail(rg_proto_t *proto, rg_status_t status, const char *what,
                            const rg_xport_t *xp)
{
    char dead[160] = "";
    int  peer, n = 0, k;

    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    proto->failed = status;
    /* A transport that lost a peer may not know which rank was the cause
     * (a receive from any source): name the ranks of this host that exited.
     * A closed connection can come before its process is gone: wait for it
     * a little (this is the path of a failing run, not of a message). */
    for (k = 0; status == RG_ERR_PEER_DEAD && proto->pids != NULL && k < 40; k++) {
        for (peer = 0; peer < proto->size && !rg__peer_dead(proto, peer); peer++) {
        }
        if (peer < proto->size) {
            break;
        }
        usleep(5000);
    }
    for (peer = 0; status == RG_ERR_PEER_DEAD && proto->pids != NULL && peer < proto->size;
         peer++) {
        if (rg__peer_dead(proto, peer) && (size_t)n < sizeof(dead) - 40) {
            k = snprintf(dead + n, sizeof(dead) - (size_t)n, "%s rank %d (pid %d)",
                         n == 0 ? "; exited:" : ",", peer, (int)proto->pids[peer]);
            n += k > 0 ? k : 0;
        }
    }
    rg_err_set(&proto->err, status, "%s: %s%s", what,
               xp != NULL ? rg_xport_strerror(xp) : rg_status_string(status), dead);
    return proto->failed;
}

/* ---- the scheduling point -------------------------------------------------- */

/*
 * Every transport operation of the runtime goes through these two functions:
 * they choose the channel (today: the eager path, or the data channel for
 * rendezvous payloads) and post the request there. The multirail part puts
 * its rails and its policies here; nothing else in this file calls
 * rg_xport_isend() or rg_xport_irecv().
 */
static rg_status_t rg__sched_send(rg_proto_t *proto, int chan, int peer, const void *buf,
                                  size_t len, rg_xreq_t *xreq)
{
    rg_status_t status = rg_xport_isend(proto->chan[chan], peer, buf, len, xreq);

    if (status < 0) {
        return rg__fail(proto, status, "send", proto->chan[chan]);
    }
    return RG_OK;
}

/* A small message sent at once without staging where the transport can
 * (RG_ERR_AGAIN: not now, the caller stages it). */
static rg_status_t rg__sched_inject(rg_proto_t *proto, int chan, int peer, const void *hdr,
                                    size_t hlen, const void *buf, size_t len)
{
    rg_status_t status = rg_xport_inject(proto->chan[chan], peer, hdr, hlen, buf, len);

    if (status < 0 && status != RG_ERR_AGAIN && status != RG_ERR_UNSUPPORTED) {
        return rg__fail(proto, status, "send", proto->chan[chan]);
    }
    return status;
}

static rg_status_t rg__sched_recv(rg_proto_t *proto, int chan, int peer, void *buf,
                                  size_t cap, rg_xreq_t *xreq)
{
    rg_status_t status = rg_xport_irecv(proto->chan[chan], peer, buf, cap, xreq);

    if (status < 0) {
        return rg__fail(proto, status, "receive", proto->chan[chan]);
    }
    return RG_OK;
}

/* ---- staging ------------------------------------------------------------- */

/* The staging size classes: control messages and small eager sends, up to
 * RG__PROTO_MEDIUM of payload (what RNR keeps until acknowledged is mostly
 * here, so a kept 512-byte message does not hold a whole eager buffer), and
 * the eager limit. */
static size_t rg__xop_cap(const rg_proto_t *proto, int cls)
{
    return cls == 0 ? RG__PHDR + RG__PROTO_SMALL
                    : cls == 1 ? RG__PHDR + RG__PROTO_MEDIUM : proto->pbuf_size;
}

static rg__xop_t *rg__xop_get(rg_proto_t *proto, size_t bytes)
{
    int        cls = bytes <= rg__xop_cap(proto, 0) ? 0 : bytes <= rg__xop_cap(proto, 1) ? 1 : 2;
    size_t     cap = rg__xop_cap(proto, cls);
    rg__xop_t *x   = proto->xop_free[cls];

    if (x != NULL) {
        proto->xop_free[cls] = x->next;
        proto->xop_nfree[cls]--;
    } else {
        x = malloc(sizeof(*x) + cap);
        if (x == NULL) {
            return NULL;
        }
        x->cap = cap;
        rg__mem_add(proto, &proto->stats.mem.control, sizeof(*x) + cap);
    }
    x->next   = NULL;
    x->owner  = NULL;
    x->retain = 0;
    return x;
}

static void rg__xop_put(rg_proto_t *proto, rg__xop_t *x)
{
    int cls = x->cap == rg__xop_cap(proto, 0) ? 0 : x->cap == rg__xop_cap(proto, 1) ? 1 : 2;

    if (proto->xop_nfree[cls] < RG__PROTO_XOP_CACHE) {
        x->next              = proto->xop_free[cls];
        proto->xop_free[cls] = x;
        proto->xop_nfree[cls]++;
        return;
    }
    rg__mem_sub(proto, &proto->stats.mem.control, sizeof(*x) + x->cap);
    free(x);
}

static void rg__xop_done(rg_proto_t *proto, rg__xop_t *x)
{
    if (x->owner != NULL) {
        x->owner->state  = RG__RS_DONE;
        x->owner->status = x->xreq.status;
    }
    rg__xop_put(proto, x);
}

static void rg__inflight_add(rg_proto_t *proto, rg__xop_t *x)
{
    x->next = NULL;
    if (proto->inflight_tail != NULL) {
        proto->inflight_tail->next = x;
    } else {
        proto->inflight = x;
    }
    proto->inflight_tail = x;
}

/* A staging buffer holding header + payload, or NULL (no memory). */
static rg__xop_t *rg__xop_staged(rg_proto_t *proto, const void *hdr, size_t hlen,
                                 const void *payload, size_t len)
{
    rg__xop_t *x = rg__xop_get(proto, hlen + len);

    if (x != NULL) {
        memcpy(x->data, hdr, hlen);
        if (len > 0) {
            memcpy(x->data + hlen, payload, len);
        }
    }
    return x;
}

/* Sends header (+ payload) on the eager path; owner completes with it. */
static rg_status_t rg__send_eager_path(rg_proto_t *proto, int peer, const void *hdr,
                                       size_t hlen, const void *payload, size_t len,
                                       rg_preq_t *owner)
{
    rg__xop_t  *x = rg__xop_staged(proto, hdr, hlen, payload, len);
    rg_status_t status;

    if (x == NULL) {
        return rg__fail(proto, RG_ERR_NOMEM, "send staging", NULL);
    }
    x->owner = owner;
    status   = rg__sched_send(proto, 0, peer, x->data, hlen + len, &x->xreq);
    if (status != RG_OK) {
        rg__xop_put(proto, x);
        return status;
    }
    if (x->xreq.status != RG_INPROGRESS) {
        rg__xop_done(proto, x);
        return RG_OK;
    }
    rg__inflight_add(proto, x);
    return RG_OK;
}

/* With RNR: an EAGER or RTS (header + payload) to peer, kept until peer
 * acknowledges it; owner (an eager send) completes then, as a send on an
 * InfiniBand reliable connection completes on its ACK. A refused message
 * goes again from this copy (rg__rnr_arrive, rg__rnr_progress). */
static rg_status_t rg__send_retained(rg_proto_t *proto, int peer, uint32_t seq,
                                     const void *hdr, size_t hlen, const void *payload,
                                     size_t len, rg_preq_t *owner)
{
    rg__xop_t      *x = rg__xop_staged(proto, hdr, hlen, payload, len);
    rg__xop_list_t *l = &proto->unacked[peer];
    rg_status_t     status;

    if (x == NULL) {
        return rg__fail(proto, RG_ERR_NOMEM, "send staging", NULL);
    }
    x->owner   = owner;
    x->retain  = 1;
    x->acked   = 0;
    x->tries   = 0;
    x->peer    = peer;
    x->seq     = seq;
    x->len     = hlen + len;
    x->unext   = NULL;
    x->rnext   = NULL;
    x->sending = 1;
    if (l->tail != NULL) {
        l->tail->unext = x;
    } else {
        l->head = x;
    }
    l->tail = x;
    proto->nunacked++;
    status = rg__sched_send(proto, 0, peer, x->data, x->len, &x->xreq);
    if (status != RG_OK) {
        x->sending = 0;  /* the runtime has failed; close frees x */
        return status;
    }
    if (x->xreq.status == RG_INPROGRESS) {
        rg__inflight_add(proto, x);
    } else {
        x->sending = 0;
    }
    return RG_OK;
}

static rg_status_t rg__send_ctl(rg_proto_t *proto, int peer, int type, uint64_t sreq)
{
    rg__phdr_t h;

    memset(&h, 0, sizeof(h));
    h.type = (uint8_t)type;
    h.sreq = sreq;
    return rg__send_eager_path(proto, peer, &h, RG__PHDR, NULL, 0, NULL);
}

/* ---- matching ----------------------------------------------------------- */

static int rg__matches(const rg_preq_t *r, int src, int tag)
{
    return (r->peer == RG_PROTO_ANY_SOURCE || r->peer == src) &&
           (r->tag == RG_PROTO_ANY_TAG || r->tag == tag);
}

static void rg__complete(rg_preq_t *r, rg_status_t status)
{
    r->state  = RG__RS_DONE;
    r->status = status;
}

/* A large payload moved by both sides: the sender is asked to write the
 * second part while this rank reads the first; r completes on DONE. */
static rg_status_t rg__split(rg_proto_t *proto, rg_preq_t *r, int src, const rg__phdr_t *hdr,
                             size_t n)
{
    rg__phdr_t  h;
    rg_status_t status;
    size_t      off = (n / 2) & ~(size_t)4095;

    memset(&h, 0, sizeof(h));
    h.type = RG__PH_SPLIT;
    h.sreq = hdr->sreq;
    h.rreq = (uint64_t)(uintptr_t)r;
    h.aux  = (uint64_t)(uintptr_t)r->buf;
    h.off  = off;
    h.len  = n;
    r->state = RG__RS_RECV_SPLIT;
    proto->rndv_busy++;
    status   = rg__send_eager_path(proto, src, &h, RG__PHDR, NULL, 0, NULL);
    if (status != RG_OK) {
        return status;
    }
    if (off > 0) {
        status = rg_xport_get(proto->chan[0], src, hdr->aux, r->buf, off);
        if (status != RG_OK) {
            return rg__fail(proto, status, "rendezvous read", proto->chan[0]);
        }
    }
    /* The sender's buffer is ours until this FIN: its send completes on it,
     * not when its own part is written. */
    return rg__send_ctl(proto, src, RG__PH_FIN, hdr->sreq);
}

/* Receive r meets the message (src, hdr): eager payload, a remote RTS, or a
 * send to this rank. */
static rg_status_t rg__deliver(rg_proto_t *proto, rg_preq_t *r, int src, const rg__phdr_t *hdr,
                               const unsigned char *payload, rg_preq_t *self_req)
{
    size_t      n = hdr->len < r->len ? (size_t)hdr->len : r->len;
    rg_status_t st = hdr->len > r->len ? RG_ERR_TRUNCATED : RG_OK;
    rg_status_t status;

    r->source  = src;
    r->msg_tag = hdr->tag;
    r->msg_len = (size_t)hdr->len;
    if (self_req != NULL) {
        if (n > 0) {
            memcpy(r->buf, self_req->buf, n);
        }
        rg__complete(self_req, RG_OK);
        rg__complete(r, st);
        return RG_OK;
    }
    if (hdr->type == RG__PH_EAGER) {
        if (n > 0) {
            memcpy(r->buf, payload, n);
        }
        proto->stats.eager_recv++;
        rg__complete(r, st);
        return RG_OK;
    }
    proto->stats.rndv_recv++;
    if (proto->data_chan < 0) {
        /* One copy: read the payload from the sender's buffer. */
        if (n > 0 && !(n >= proto->cfg.split_min && proto->cfg.split_min > 0 &&
                       proto->chan[0]->ops->put != NULL)) {
            status = rg_xport_get(proto->chan[0], src, hdr->aux, r->buf, n);
            if (status != RG_OK) {
                return rg__fail(proto, status, "rendezvous read", proto->chan[0]);
            }
        }
        proto->stats.rndv_get++;
        if (n >= proto->cfg.split_min && proto->cfg.split_min > 0 &&
            proto->chan[0]->ops->put != NULL) {
            return rg__split(proto, r, src, hdr, n);
        }
        status = rg__send_ctl(proto, src, RG__PH_FIN, hdr->sreq);
        if (status != RG_OK) {
            return status;
        }
        rg__complete(r, st);
        return RG_OK;
    }
    /* Post the payload's receive, then clear the sender to send it. */
    r->state = RG__RS_RECV_DATA;
    r->chan  = proto->data_chan;
    proto->rndv_busy++;
    status   = rg__sched_recv(proto, r->chan, src, r->buf, r->len, &r->xreq);
    if (status != RG_OK) {
        return status;
    }
    rg__preq_append(&proto->active, r);
    return rg__send_ctl(proto, src, RG__PH_CTS, hdr->sreq);
}

/* A matched-kind message (EAGER, RTS, or a send to self) in its turn: to the
 * first posted receive it matches, else to the unexpected queue. */
static rg_status_t rg__arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr,
                              const unsigned char *payload, rg_preq_t *self_req)
{
    rg_preq_t *r;
    rg__uxm_t *u;
    size_t     plen = hdr->type == RG__PH_EAGER ? (size_t)hdr->len : 0;

    for (r = proto->posted.head; r != NULL; r = r->next) {
        if (rg__matches(r, src, hdr->tag)) {
            rg__preq_unlink(&proto->posted, r);
            return rg__deliver(proto, r, src, hdr, payload, self_req);
        }
    }
    u = malloc(sizeof(*u) + plen);
    if (u == NULL) {
        return rg__fail(proto, RG_ERR_NOMEM, "unexpected message", NULL);
    }
    u->src      = src;
    u->hdr      = *hdr;
    u->self_req = self_req;
    u->bytes    = sizeof(*u) + plen;
    if (plen > 0) {
        memcpy(u->payload, payload, plen);
    }
    rg__mem_add(proto, &proto->stats.mem.unexpected, u->bytes);
    rg__uxm_append(&proto->unexpected, u);
    proto->stats.unexpected++;
    return RG_OK;
}

static rg_status_t rg__rnr_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr);
static rg_status_t rg__ack_arrive(rg_proto_t *proto, int src, uint32_t upto);

/* With RNR: the sender of an EAGER or RTS that was taken gets an ACK at the
 * end of this pass of the pool (one per sender and pass, cumulative). */
static void rg__ack_mark(rg_proto_t *proto, int src)
{
    if (proto->rnr && !proto->ack_due[src]) {
        proto->ack_due[src]            = 1;
        proto->ack_list[proto->nack++] = src;
    }
}

/* An arrival on the eager path from src. */
static rg_status_t rg__handle(rg_proto_t *proto, int src, const unsigned char *data,
                              size_t len)
{
    rg__phdr_t  hdr;
    rg_preq_t  *s;
    rg__uxm_t  *u;
    rg_status_t status;
    uint64_t    rreq;
    const unsigned char *payload;
    size_t      plen;
    int         again;

    if (len >= RG__EHDR && data[0] == RG__PH_EAGER) {
        rg__ehdr_t eh;

        memcpy(&eh, data, RG__EHDR);
        memset(&hdr, 0, sizeof(hdr));
        hdr.type = RG__PH_EAGER;
        hdr.tag  = eh.tag;
        hdr.seq  = eh.seq;
        hdr.len  = eh.len;
        payload  = data + RG__EHDR;
        plen     = len - RG__EHDR;
    } else if (len < RG__PHDR) {
        return rg__fail(proto, RG_ERR_PARSE, "a message shorter than a header arrived", NULL);
    } else {
        memcpy(&hdr, data, RG__PHDR);
        payload = data + RG__PHDR;
        plen    = len - RG__PHDR;
    }
    switch (hdr.type) {
    case RG__PH_EAGER:
    case RG__PH_RTS:
        if (hdr.type == RG__PH_EAGER ? hdr.len != plen : plen != 0) {
            return rg__fail(proto, RG_ERR_PARSE, "an eager message's length is inconsistent",
                            NULL);
        }
        if (hdr.seq != proto->recv_seq[src]) {
            /* Ahead of its turn: park a copy until the earlier ones came. */
            u = malloc(sizeof(*u) + plen);
            if (u == NULL) {
                return rg__fail(proto, RG_ERR_NOMEM, "parked message", NULL);
            }
            u->src      = src;
            u->hdr      = hdr;
            u->self_req = NULL;
            u->bytes    = sizeof(*u) + plen;
            if (plen > 0) {
                memcpy(u->payload, payload, plen);
            }
            rg__mem_add(proto, &proto->stats.mem.unexpected, u->bytes);
            rg__uxm_append(&proto->parked, u);
            proto->stats.out_of_order++;
            return RG_OK;
        }
        status = rg__arrive(proto, src, &hdr, payload, NULL);
        proto->recv_seq[src]++;
        rg__ack_mark(proto, src);
        /* Parked successors of src may now be in turn. */
        do {
            again = 0;
            for (u = proto->parked.head; u != NULL && status == RG_OK; u = u->next) {
                if (u->src == src && u->hdr.seq == proto->recv_seq[src]) {
                    rg__uxm_unlink(&proto->parked, u);
                    status = rg__arrive(proto, src, &u->hdr, u->payload, NULL);
                    proto->recv_seq[src]++;
                    rg__mem_sub(proto, &proto->stats.mem.unexpected, u->bytes);
                    free(u);
                    again = 1;
                    break;
                }
            }
        } while (again && status == RG_OK);
        return status;
    case RG__PH_CTS:
        s = (rg_preq_t *)(uintptr_t)hdr.sreq;
        s->state = RG__RS_SEND_DATA;
        s->chan  = proto->data_chan;
        status   = rg__sched_send(proto, s->chan, src, s->buf, s->len, &s->xreq);
        if (status != RG_OK) {
            return status;
        }
        rg__preq_append(&proto->active, s);
        return RG_OK;
    case RG__PH_FIN:
        s = (rg_preq_t *)(uintptr_t)hdr.sreq;
        rg__complete(s, RG_OK);
        proto->rndv_busy--;
        return RG_OK;
    case RG__PH_SPLIT:
        s = (rg_preq_t *)(uintptr_t)hdr.sreq;
        if (hdr.off > hdr.len || hdr.len > s->len) {
            return rg__fail(proto, RG_ERR_PARSE, "a SPLIT request is out of bounds", NULL);
        }
        if (hdr.len > hdr.off) {
            status = rg_xport_put(proto->chan[0], src, hdr.aux + hdr.off,
                                  (const unsigned char *)s->buf + hdr.off,
                                  (size_t)(hdr.len - hdr.off));
            if (status != RG_OK) {
                return rg__fail(proto, status, "rendezvous write", proto->chan[0]);
            }
        }
        rreq = hdr.rreq;
        memset(&hdr, 0, sizeof(hdr));
        hdr.type = RG__PH_DONE;
        hdr.rreq = rreq;
        /* s completes on the receiver's FIN (it may still be reading). */
        return rg__send_eager_path(proto, src, &hdr, RG__PHDR, NULL, 0, NULL);
    case RG__PH_DONE:
        s = (rg_preq_t *)(uintptr_t)hdr.rreq;
        rg__complete(s, s->msg_len > s->len ? RG_ERR_TRUNCATED : RG_OK);
        proto->rndv_busy--;
        return RG_OK;
    case RG__PH_RNR:
        return rg__rnr_arrive(proto, src, &hdr);
    case RG__PH_ACK:
        return rg__ack_arrive(proto, src, hdr.seq);
    default:
        return rg__fail(proto, RG_ERR_PARSE, "a message of unknown type arrived", NULL);
    }
}

/* ---- posting --------------------------------------------------------------- */

static rg_status_t rg__check_peer(rg_proto_t *proto, int peer, int any_ok)
{
    if ((peer >= 0 && peer < proto->size) || (any_ok && peer == RG_PROTO_ANY_SOURCE)) {
        return RG_OK;
    }
    return rg_err_set(&proto->err, RG_ERR_RANGE, "rank %d is out of range [0, %d)%s", peer,
                      proto->size, any_ok ? " and not ANY_SOURCE" : "");
}

static rg_status_t rg__check_tag(rg_proto_t *proto, int tag, int any_ok)
{
    if (tag >= 0 || (any_ok && tag == RG_PROTO_ANY_TAG)) {
        return RG_OK;
    }
    return rg_err_set(&proto->err, RG_ERR_RANGE, "tag %d is out of range [0, %d]%s", tag,
                      RG_PROTO_TAG_MAX, any_ok ? " and not ANY_TAG" : "");
}

rg_status_t rg_proto_isend(rg_proto_t *proto, int peer, int tag, const void *buf,
                           size_t len, rg_preq_t *req)
{
    rg__phdr_t  hdr;
    rg_status_t status;

    if ((status = rg__check_peer(proto, peer, 0)) != RG_OK ||
        (status = rg__check_tag(proto, tag, 0)) != RG_OK) {
        return status;
    }
    if (req == NULL || (buf == NULL && len > 0)) {
        return rg_err_set(&proto->err, RG_ERR_INVALID, "send of %zu bytes: %s is NULL", len,
                          req == NULL ? "the request" : "the buffer");
    }
    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    req->next   = req->prev = NULL;
    req->rid    = 0;
    req->kind   = RG_PREQ_SEND;
    req->peer   = peer;
    req->tag    = tag;
    req->buf    = (void *)(uintptr_t)buf;
    req->len    = len;
    req->status = RG_INPROGRESS;
    req->chan   = -1;
    memset(&hdr, 0, sizeof(hdr));
    hdr.tag = tag;
    hdr.len = len;

    if (peer == proto->rank) {
        proto->stats.self_sent++;
        if (len <= proto->eager_limit) {
            /* Buffered, as a message from another rank would be. */
            hdr.type = RG__PH_EAGER;
            status   = rg__arrive(proto, peer, &hdr, buf, NULL);
            if (status == RG_OK) {
                rg__complete(req, RG_OK);
            }
            return status;
        }
        hdr.type   = RG__PH_RTS;
        req->state = RG__RS_SEND_SELF;
        return rg__arrive(proto, peer, &hdr, NULL, req);
    }
    hdr.seq = proto->send_seq[peer]++;
    if (len <= proto->eager_limit) {
        rg__ehdr_t eh = {RG__PH_EAGER, 0, 0, tag, hdr.seq, (uint32_t)len};

        proto->stats.eager_sent++;
        if (proto->rnr) {
            req->state = RG__RS_SEND_EAGER;
            return rg__send_retained(proto, peer, hdr.seq, &eh, RG__EHDR, buf, len, req);
        }
        if (len <= RG__PROTO_SMALL && proto->can_inject) {
            status = rg__sched_inject(proto, 0, peer, &eh, RG__EHDR, buf, len);
            if (status == RG_OK) {
                rg__complete(req, RG_OK);
                return RG_OK;
            }
            if (status == RG_ERR_UNSUPPORTED) {
                proto->can_inject = 0;
            } else if (status != RG_ERR_AGAIN) {
                return status;
            }
        }
        req->state = RG__RS_SEND_EAGER;
        return rg__send_eager_path(proto, peer, &eh, RG__EHDR, buf, len, req);
    }
    hdr.type   = RG__PH_RTS;
    hdr.sreq   = (uint64_t)(uintptr_t)req;
    hdr.aux    = (uint64_t)(uintptr_t)buf;
    req->state = RG__RS_SEND_RTS;
    proto->stats.rndv_sent++;
    proto->rndv_busy++;
    if (proto->rnr) {
        return rg__send_retained(proto, peer, hdr.seq, &hdr, RG__PHDR, NULL, 0, NULL);
    }
    return rg__send_eager_path(proto, peer, &hdr, RG__PHDR, NULL, 0, NULL);
}

rg_status_t rg_proto_irecv(rg_proto_t *proto, int peer, int tag, void *buf, size_t cap,
                           rg_preq_t *req)
{
    rg__uxm_t  *u;
    rg_status_t status;

    if ((status = rg__check_peer(proto, peer, 1)) != RG_OK ||
        (status = rg__check_tag(proto, tag, 1)) != RG_OK) {
        return status;
    }
    if (req == NULL || (buf == NULL && cap > 0)) {
        return rg_err_set(&proto->err, RG_ERR_INVALID, "receive of %zu bytes: %s is NULL",
                          cap, req == NULL ? "the request" : "the buffer");
    }
    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    req->next    = req->prev = NULL;
    req->rid     = 0;
    req->msg_len = 0;
    req->msg_tag = 0;
    req->kind   = RG_PREQ_RECV;
    req->peer   = peer;
    req->tag    = tag;
    req->buf    = buf;
    req->len    = cap;
    req->status = RG_INPROGRESS;
    req->source = -1;
    req->chan   = -1;
    for (u = proto->unexpected.head; u != NULL; u = u->next) {
        if (rg__matches(req, u->src, u->hdr.tag)) {
            rg__uxm_unlink(&proto->unexpected, u);
            status = rg__deliver(proto, req, u->src, &u->hdr, u->payload, u->self_req);
            rg__mem_sub(proto, &proto->stats.mem.unexpected, u->bytes);
            free(u);
            return status;
        }
    }
    req->state = RG__RS_RECV_POSTED;
    rg__preq_append(&proto->posted, req);
    return RG_OK;
}

/* ---- progress ------------------------------------------------------------ */

/* Posts b (a window buffer, or the refusal buffer) as a receive from any
 * source; window buffers join the posted list. */
static rg_status_t rg__pool_post(rg_proto_t *proto, rg__pbuf_t *b)
{
    rg_status_t status;

    b->next   = NULL;
    b->postno = proto->postno++;
    status    = rg__sched_recv(proto, 0, RG_XPORT_ANY_SOURCE, b->data, proto->pbuf_size,
                               &b->xreq);
    if (status != RG_OK) {
        return status;
    }
    if (b == proto->drain) {
        proto->drain_posted = 1;
        proto->drain_behind = 0;
        return RG_OK;
    }
    if (proto->ptail != NULL) {
        proto->ptail->next = b;
    } else {
        proto->phead = b;
    }
    proto->ptail = b;
    proto->nposted++;
    /* Behind the refusal buffer only while it still waits: once it holds a
     * message (handled later in this pass), that message came before b. */
    if (proto->drain_posted && proto->drain->xreq.status == RG_INPROGRESS) {
        proto->drain_behind++;
    }
    return RG_OK;
}

static rg__pbuf_t *rg__pbuf_new(rg_proto_t *proto)
{
    rg__pbuf_t *b = calloc(1, sizeof(*b));

    if (b != NULL && (b->data = malloc(proto->pbuf_size)) == NULL) {
        free(b);
        b = NULL;
    }
    if (b != NULL) {
        rg__mem_add(proto, &proto->stats.mem.pool, sizeof(*b) + proto->pbuf_size);
    }
    return b;
}

static void rg__pbuf_free(rg_proto_t *proto, rg__pbuf_t *b)
{
    rg__mem_sub(proto, &proto->stats.mem.pool, sizeof(*b) + proto->pbuf_size);
    free(b->data);
    free(b);
}

static rg_status_t rg__pbuf_check(rg_proto_t *proto, const rg__pbuf_t *b)
{
    if (b->xreq.status == RG_ERR_TRUNCATED) {
        return rg__fail(proto, RG_ERR_TRUNCATED,
                        "a message larger than an eager buffer arrived (do all ranks "
                        "use the same RG_PROTO_EAGER_* settings?)", NULL);
    }
    if (b->xreq.status != RG_OK) {
        return rg__fail(proto, b->xreq.status, "eager receive", proto->chan[0]);
    }
    return RG_OK;
}

/* The refusal buffer took a message. A window buffer posted after it was
 * free at that moment: the message is taken as any other. Otherwise every
 * buffer of the window was taken when it arrived, and a message that would
 * need one (EAGER, RTS: they may have to wait as unexpected) is dropped and
 * refused with a receiver-not-ready reply (its sender kept a copy until our
 * ACK, and sends it again after the RNR timer); the runtime's control
 * messages are always taken (they hold no buffer). */
static rg_status_t rg__drain_handle(rg_proto_t *proto)
{
    rg__pbuf_t *d = proto->drain;
    rg__phdr_t  h;
    rg_status_t status;
    uint32_t    seq;
    int32_t     tag;

    proto->drain_posted = 0;
    if ((status = rg__pbuf_check(proto, d)) != RG_OK) {
        return status;
    }
    if (proto->drain_behind > 0 || d->xreq.msg_len == 0 ||
        (d->data[0] != RG__PH_EAGER && d->data[0] != RG__PH_RTS)) {
        return rg__handle(proto, d->xreq.source, d->data, d->xreq.msg_len);
    }
    if (d->xreq.msg_len < RG__EHDR) {
        return rg__fail(proto, RG_ERR_PARSE, "a message shorter than a header arrived", NULL);
    }
    /* EAGER and RTS headers both have the tag at byte 4 and seq at byte 8;
     * the message itself is dropped: its sender still has it. */
    memcpy(&tag, d->data + 4, sizeof(tag));
    memcpy(&seq, d->data + 8, sizeof(seq));
    memset(&h, 0, sizeof(h));
    h.type = RG__PH_RNR;
    h.tag  = tag;
    h.seq  = seq;
    h.aux  = (uint64_t)proto->rxwin.window;
    h.off  = proto->stats.mem.unexpected;
    proto->stats.rnr_sent++;
    return rg__send_eager_path(proto, d->xreq.source, &h, RG__PHDR, NULL, 0, NULL);
}

/* Frees a kept message once nothing refers to it any more. */
static void rg__retained_release(rg_proto_t *proto, rg__xop_t *x)
{
    x->retain = 0;
    rg__xop_put(proto, x);
}

/* ACK from src: its messages before seq upto are taken; their sends
 * complete and their copies go. */
static rg_status_t rg__ack_arrive(rg_proto_t *proto, int src, uint32_t upto)
{
    rg__xop_list_t *l = &proto->unacked[src];
    rg__xop_t      *x;

    while ((x = l->head) != NULL && (int32_t)(x->seq - upto) < 0) {
        l->head = x->unext;
        if (l->head == NULL) {
            l->tail = NULL;
        }
        proto->nunacked--;
        if (x->owner != NULL) {
            rg__complete(x->owner, RG_OK);
        }
        x->acked = 1;
        if (!x->sending) {
            rg__retained_release(proto, x);
        }
    }
    return RG_OK;
}

/* A receiver-not-ready reply for our message seq to src: it goes again
 * after the RNR timer, from the copy this rank kept, or, refused too often,
 * ends the runtime with an error naming the peer and both queues. */
static rg_status_t rg__rnr_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr)
{
    rg__xop_t *x, *e;
    int        to_peer = 0;

    for (x = proto->unacked[src].head; x != NULL && x->seq != hdr->seq; x = x->unext) {
    }
    if (x == NULL) {
        return rg__fail(proto, RG_ERR_PARSE,
                        "a receiver-not-ready reply names a message this rank does not hold",
                        NULL);
    }
    proto->stats.rnr_recv++;
    if (++x->tries > (unsigned)proto->cfg.rnr_retry) {
        for (e = proto->unacked[src].head; e != NULL; e = e->unext) {
            to_peer++;
        }
        proto->failed = RG_ERR_BUSY;
        return rg_err_set(&proto->err, RG_ERR_BUSY,
                          "a message of rank %d to rank %d (tag %d, seq %u) was refused %u times "
                          "(receiver not ready: all %llu buffers of rank %d's window were "
                          "taken, %llu bytes of unexpected messages held there); rank %d "
                          "holds %d messages that rank %d has not taken and %d waiting for "
                          "their retry (RG_PROTO_RNR_RETRY=%d, RG_PROTO_RNR_TIMER_MS=%g)",
                          proto->rank, src, hdr->tag, (unsigned)hdr->seq, x->tries,
                          (unsigned long long)hdr->aux, src, (unsigned long long)hdr->off,
                          proto->rank, to_peer, src, proto->nrnr, proto->cfg.rnr_retry,
                          proto->cfg.rnr_timer_ms);
    }
    x->due_ns = rg_time_mono_ns() + proto->rnr_timer_ns;
    x->rnext  = NULL;
    if (proto->rnr_tail != NULL) {
        proto->rnr_tail->rnext = x;
    } else {
        proto->rnr_head = x;
    }
    proto->rnr_tail = x;
    proto->nrnr++;
    return RG_OK;
}

/* Refused messages whose timer ran out go again (one timer for all: the
 * queue is in due order). */
static rg_status_t rg__rnr_progress(rg_proto_t *proto)
{
    uint64_t    now = rg_time_mono_ns();
    rg__xop_t  *x;
    rg_status_t status;

    while ((x = proto->rnr_head) != NULL && x->due_ns <= now && !x->sending) {
        proto->rnr_head = x->rnext;
        if (proto->rnr_head == NULL) {
            proto->rnr_tail = NULL;
        }
        proto->nrnr--;
        proto->stats.retries++;
        x->sending = 1;
        status     = rg__sched_send(proto, 0, x->peer, x->data, x->len, &x->xreq);
        if (status != RG_OK) {
            x->sending = 0;  /* the runtime has failed; close frees x */
            return status;
        }
        if (x->xreq.status == RG_INPROGRESS) {
            rg__inflight_add(proto, x);
        } else {
            x->sending = 0;
        }
    }
    return RG_OK;
}

/* With RNR: one cumulative ACK to each sender whose messages this pass took. */
static rg_status_t rg__ack_send(rg_proto_t *proto)
{
    rg__phdr_t  h;
    rg_status_t status = RG_OK;
    int         i, src;

    for (i = 0; i < proto->nack; i++) {
        src                 = proto->ack_list[i];
        proto->ack_due[src] = 0;
        if (status == RG_OK && src != proto->rank) {
            memset(&h, 0, sizeof(h));
            h.type = RG__PH_ACK;
            h.seq  = proto->recv_seq[src];
            status = rg__send_eager_path(proto, src, &h, RG__PHDR, NULL, 0, NULL);
        }
    }
    proto->nack = 0;
    return status;
}

/* The window's buffers that took messages, in posting order (the order the
 * transports fill receives from any source), each handled and posted again
 * at once (or freed where the window shrank); then, once per pass, the
 * window's check (a limit event where fewer than the limit stayed posted at
 * the pass's low point: the adaptive window grows), reclaim, and new
 * buffers posted behind the others up to the window's size. */
static rg_status_t rg__pool_progress(rg_proto_t *proto)
{
    rg__pbuf_t *b;
    rg_status_t status;
    int         handled = 0, taken = 0, posted0 = proto->nposted;

    for (;;) {
        b = proto->phead;
        if (proto->drain_posted && (b == NULL || proto->drain->postno < b->postno)) {
            if (proto->drain->xreq.status == RG_INPROGRESS) {
                break;
            }
            handled++;
            status = rg__drain_handle(proto);
            if (status != RG_OK) {
                return status;
            }
            continue;
        }
        if (b == NULL || b->xreq.status == RG_INPROGRESS) {
            break;
        }
        proto->phead = b->next;
        if (proto->phead == NULL) {
            proto->ptail = NULL;
        }
        proto->nposted--;
        handled++;
        taken++;
        if ((status = rg__pbuf_check(proto, b)) != RG_OK ||
            (status = rg__handle(proto, b->xreq.source, b->data, b->xreq.msg_len)) != RG_OK) {
            rg__pbuf_free(proto, b);
            proto->nalloc--;
            return status;
        }
        if (proto->nalloc > proto->rxwin.window) {
            /* The window shrank: this buffer's memory goes back. */
            rg__pbuf_free(proto, b);
            proto->nalloc--;
        } else if ((status = rg__pool_post(proto, b)) != RG_OK) {
            rg__pbuf_free(proto, b);
            proto->nalloc--;
            return status;
        }
    }
    if (handled == 0) {
        return RG_OK;
    }
    /* The pass's low point: the buffers still posted before any went back. */
    if (posted0 - taken < proto->rxwin.limit && rg_rxwin_check(&proto->rxwin, posted0 - taken)) {
        proto->stats.limit_events++;
    }
    if (proto->rxwin.spec.reclaim &&
        rg_rxwin_reclaim(&proto->rxwin, rg_time_mono_ns(), taken)) {
        proto->stats.rxwin_shrinks++;
    }
    while (proto->nalloc < proto->rxwin.window) {
        /* The window grew: new buffers, posted behind the others. */
        b = rg__pbuf_new(proto);
        if (b == NULL) {
            return rg__fail(proto, RG_ERR_NOMEM, "growing the receive window", NULL);
        }
        proto->nalloc++;
        if ((status = rg__pool_post(proto, b)) != RG_OK) {
            rg__pbuf_free(proto, b);
            proto->nalloc--;
            return status;
        }
    }
    if (proto->drain != NULL && !proto->drain_posted &&
        (status = rg__pool_post(proto, proto->drain)) != RG_OK) {
        return status;
    }
    proto->stats.window = proto->rxwin.window;
    if (proto->rxwin.window > proto->stats.window_peak) {
        proto->stats.window_peak = proto->rxwin.window;
    }
    return proto->nack > 0 ? rg__ack_send(proto) : RG_OK;
}

rg_status_t rg_proto_progress(rg_proto_t *proto)
{
    rg__xop_t  *x, **link, *last;
    rg_preq_t  *r, *next;
    rg_status_t status;
    int         c;

    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    for (c = 0; c < proto->nchan; c++) {
        status = rg_xport_progress(proto->chan[c]);
        if (status < 0) {
            /* A peer that left after its last messages (an ACK, a FIN) ends
             * the transport, but what arrived before still counts: the
             * runtime fails, and then takes those arrivals, so that a wait
             * they complete succeeds. */
            status = rg__fail(proto, status, "transport", proto->chan[c]);
            rg__pool_progress(proto);
            return status;
        }
    }
    status = rg__pool_progress(proto);
    if (status != RG_OK) {
        return status;
    }
    if (proto->rnr_head != NULL && (status = rg__rnr_progress(proto)) != RG_OK) {
        return status;
    }
    /* Staged sends still on their way. */
    last = NULL;
    for (link = &proto->inflight; (x = *link) != NULL;) {
        if (x->xreq.status == RG_INPROGRESS) {
            last = x;
            link = &x->next;
            continue;
        }
        *link = x->next;
        if (x->retain) {
            /* Kept until acknowledged (RNR); freed here if that came first. */
            x->sending = 0;
            if (x->xreq.status < 0) {
                return rg__fail(proto, x->xreq.status, "send", proto->chan[0]);
            }
            if (x->acked) {
                rg__retained_release(proto, x);
            }
            continue;
        }
        if (x->xreq.status < 0 && x->owner == NULL) {
            return rg__fail(proto, x->xreq.status, "control message", proto->chan[0]);
        }
        rg__xop_done(proto, x);
    }
    proto->inflight_tail = last;
    /* Rendezvous payloads on the data channel. */
    for (r = proto->active.head; r != NULL; r = next) {
        next = r->next;
        if (r->xreq.status != RG_INPROGRESS) {
            rg__preq_unlink(&proto->active, r);
            proto->rndv_busy--;
            if (r->kind == RG_PREQ_RECV) {
                r->msg_len = r->xreq.msg_len;
            }
            rg__complete(r, r->xreq.status);
        }
    }
    return RG_OK;
}

rg_status_t rg_proto_test(rg_proto_t *proto, rg_preq_t *req)
{
    rg_status_t status;

    if (req->status == RG_INPROGRESS) {
        status = rg_proto_progress(proto);
        if (status < 0) {
            return status;
        }
    }
    return req->status;
}

#define RG__PROTO_FIRST_BURST 64
#define RG__PROTO_BURST       32

/* Waits until *done(arg) holds; the loop of rg_xport_wait(): spin, yield,
 * then sleep in the transport that has the work. */
/* 1 if rank peer runs on this host and has exited. */
static int rg__peer_dead(const rg_proto_t *proto, int peer)
{
    return peer >= 0 && peer != proto->rank && proto->pids[peer] > 0 &&
           rg_xport_pid_dead((pid_t)proto->pids[peer]);
}

/* rg__peer_dead, asked of the system at most once per liveness period per
 * peer (a wait for a window of requests asks for the same peer many times). */
static int rg__peer_dead_cached(rg_proto_t *proto, int peer)
{
    uint64_t now;

    if (peer < 0 || peer == proto->rank || proto->pids[peer] <= 0) {
        return 0;
    }
    if (proto->dead[peer]) {
        return 1;
    }
    now = rg_time_mono_ns();
    if (now - proto->live_ns[peer] < RG__PROTO_LIVENESS_NS) {
        return 0;
    }
    proto->live_ns[peer] = now;
    proto->dead[peer]    = (uint8_t)rg__peer_dead(proto, peer);
    return proto->dead[peer];
}

/* The transports report a dead peer where a transport request waits for it;
 * the runtime's own waits (a receive matched in the runtime while the pool
 * takes messages from any source, a rendezvous waiting for its CTS) are
 * checked here: a request for a dead peer on this host (any peer for a
 * receive from any source: all of them dead) ends the wait with an error
 * that names it. Peers on other hosts: their transport's errors, and the
 * launcher, which ends the job when a rank dies. */
static rg_status_t rg__check_req(rg_proto_t *proto, const rg_preq_t *r)
{
    int peer, alive = 0;

    if (r->status != RG_INPROGRESS) {
        return RG_OK;
    }
    if (r->peer != RG_PROTO_ANY_SOURCE) {
        if (!rg__peer_dead_cached(proto, r->peer)) {
            return RG_OK;
        }
        proto->failed = RG_ERR_PEER_DEAD;
        return rg_err_set(&proto->err, RG_ERR_PEER_DEAD,
                          "rank %d (pid %d) died while rank %d waited for its %s", r->peer,
                          (int)proto->pids[r->peer], proto->rank,
                          r->kind == RG_PREQ_SEND ? "receive of a message" : "message");
    }
    for (peer = 0; peer < proto->size && !alive; peer++) {
        alive = peer != proto->rank && !rg__peer_dead_cached(proto, peer);
    }
    if (alive || proto->size < 2) {
        return RG_OK;
    }
    proto->failed = RG_ERR_PEER_DEAD;
    return rg_err_set(&proto->err, RG_ERR_PEER_DEAD,
                      "every other rank died while rank %d waited for a message from any "
                      "of them", proto->rank);
}

static rg_status_t rg__wait(rg_proto_t *proto, int (*done)(void *), void *arg,
                            rg_status_t (*check)(rg_proto_t *, void *), uint64_t timeout_ns)
{
    uint64_t    next_check = 0;
    const rg_xport_wait_config_t *w = &proto->chan[0]->wait;
    rg_xport_t *xp;
    rg_status_t status;
    uint64_t    start = 0, now, spin_end = 0, yield_end = 0, deadline = 0, sleep_ns;
    unsigned    i, burst = RG__PROTO_FIRST_BURST;

    for (;;) {
        for (i = 0; i < burst; i++) {
            status = rg_proto_progress(proto);
            if (status < 0) {
                return done(arg) ? RG_OK : status;
            }
            if (done(arg)) {
                return RG_OK;
            }
        }
        burst = RG__PROTO_BURST;
        now   = rg_time_mono_ns();
        if (start == 0) {
            start     = now;
            spin_end  = start + (uint64_t)w->spin_ns;
            yield_end = spin_end + (uint64_t)w->yield_ns;
            deadline  = timeout_ns > 0 ? start + timeout_ns : UINT64_MAX;
        }
        if (now >= deadline) {
            return rg_err_set(&proto->err, RG_ERR_TIMEOUT, "still pending after %.3f s",
                              (double)timeout_ns * 1e-9);
        }
        if (now < spin_end) {
            continue;
        }
        if (now >= next_check) {
            next_check = now + RG__PROTO_LIVENESS_NS;
            status     = check(proto, arg);
            if (status != RG_OK) {
                return status;
            }
        }
        if (now < yield_end ||
            (proto->rndv_busy > 0 && now < yield_end + (uint64_t)proto->cfg.rndv_yield_ns)) {
            rg_xport_wait_yield(w);
            continue;
        }
        sleep_ns = deadline - now;
        if (sleep_ns > (uint64_t)w->block_ns) {
            sleep_ns = (uint64_t)w->block_ns;
        }
        /* A refused message goes again when its timer runs out. */
        if (proto->rnr_head != NULL) {
            sleep_ns = proto->rnr_head->due_ns > now && proto->rnr_head->due_ns - now < sleep_ns
                           ? proto->rnr_head->due_ns - now
                           : (proto->rnr_head->due_ns <= now ? 0 : sleep_ns);
        }
        if (sleep_ns < 1000) {
            sleep_ns = 1000;
        }
        /* Sleep where the work is: payloads on the data channel, else the
         * eager path. */
        xp     = proto->active.head != NULL ? proto->chan[proto->active.head->chan]
                                            : proto->chan[0];
        status = xp->ops->block(xp, sleep_ns);
        if (status == RG_ERR_UNSUPPORTED) {
            sched_yield();
        } else if (status < 0) {
            return rg__fail(proto, status, "transport", xp);
        }
    }
}

static int rg__req_done(void *arg)
{
    return ((rg_preq_t *)arg)->status != RG_INPROGRESS;
}

static rg_status_t rg__req_check(rg_proto_t *proto, void *arg)
{
    return rg__check_req(proto, arg);
}

rg_status_t rg_proto_wait(rg_proto_t *proto, rg_preq_t *req, uint64_t timeout_ns)
{
    rg_status_t status;

    if (req->status != RG_INPROGRESS) {
        return req->status;
    }
    status = rg__wait(proto, rg__req_done, req, rg__req_check, timeout_ns);
    return status != RG_OK ? status : req->status;
}

typedef struct rg__all {
    rg_preq_t *reqs;
    size_t     n, first;  /* reqs before first are complete */
} rg__all_t;

static int rg__all_done(void *arg)
{
    rg__all_t *a = arg;

    while (a->first < a->n && a->reqs[a->first].status != RG_INPROGRESS) {
        a->first++;
    }
    return a->first == a->n;
}

static rg_status_t rg__all_check(rg_proto_t *proto, void *arg)
{
    rg__all_t  *a = arg;
    rg_status_t status = RG_OK;
    size_t      i;

    for (i = a->first; i < a->n && status == RG_OK; i++) {
        status = rg__check_req(proto, &a->reqs[i]);
    }
    return status;
}

rg_status_t rg_proto_waitall(rg_proto_t *proto, size_t n, rg_preq_t *reqs,
                             uint64_t timeout_ns)
{
    rg__all_t   a = {reqs, n, 0};
    rg_status_t status;
    size_t      i;

    if (!rg__all_done(&a)) {
        status = rg__wait(proto, rg__all_done, &a, rg__all_check, timeout_ns);
        if (status != RG_OK) {
            return status;
        }
    }
    for (i = 0; i < n; i++) {
        if (reqs[i].status != RG_OK) {
            return reqs[i].status;
        }
    }
    return RG_OK;
}

rg_status_t rg_proto_send(rg_proto_t *proto, int peer, int tag, const void *buf, size_t len)
{
    rg_preq_t   req;
    rg_status_t status = rg_proto_isend(proto, peer, tag, buf, len, &req);

    return status != RG_OK ? status : rg_proto_wait(proto, &req, 0);
}

rg_status_t rg_proto_recv(rg_proto_t *proto, int peer, int tag, void *buf, size_t cap,
                          rg_preq_t *out)
{
    rg_status_t status = rg_proto_irecv(proto, peer, tag, buf, cap, out);

    return status != RG_OK ? status : rg_proto_wait(proto, out, 0);
}

/* ---- open and close ------------------------------------------------------ */

static size_t rg__default_eager(const rg_proto_config_t *cfg, const char *name)
{
    if (cfg->eager_limit > 0) {
        return cfg->eager_limit;
    }
    if (strcmp(name, "shm") == 0) {
        return cfg->eager_shm;
    }
    if (strcmp(name, "tcp") == 0) {
        return cfg->eager_tcp;
    }
    if (strncmp(name, "ofi", 3) == 0) {
        return cfg->eager_ofi;
    }
    if (strcmp(name, "mpi") == 0) {
        return cfg->eager_mpi;
    }
    return cfg->eager_other;
}

/* Every rank must use the same eager limit, pool and rendezvous mode: a
 * mismatch is found here rather than as truncated messages later. */
static rg_status_t rg__agree(rg_proto_t *proto, rg_boot_t *boot, rg_err_t *err)
{
    uint64_t    mine[5] = {proto->eager_limit, (uint64_t)proto->cfg.use_get,
                           (uint64_t)getpid(), rg_host_id(), (uint64_t)proto->cfg.rnr};
    uint64_t   *all;
    rg_status_t status;
    int         i;

    all = calloc((size_t)proto->size, sizeof(mine));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d settings", proto->size);
    }
    status = rg_boot_allgather(boot, mine, sizeof(mine), all, err);
    for (i = 0; status == RG_OK && i < proto->size; i++) {
        proto->pids[i] = all[5 * i + 3] == mine[3] ? (int32_t)all[5 * i + 2] : 0;
        if (all[5 * i] != mine[0] || all[5 * i + 1] != mine[1] || all[5 * i + 4] != mine[4]) {
            status = rg_err_set(err, RG_ERR_INVALID,
                                "rank %d uses eager limit %llu, RG_PROTO_GET=%llu and "
                                "RG_PROTO_RNR=%llu, rank %d %llu, %llu and %llu: set RG_PROTO_* "
                                "alike on every rank",
                                i, (unsigned long long)all[5 * i],
                                (unsigned long long)all[5 * i + 1],
                                (unsigned long long)all[5 * i + 4], proto->rank,
                                (unsigned long long)mine[0], (unsigned long long)mine[1],
                                (unsigned long long)mine[4]);
        }
    }
    free(all);
    return status;
}

static rg_status_t rg__check_config(rg_proto_t *proto, rg_err_t *err)
{
    const rg_proto_config_t *cfg = &proto->cfg;
    rg_rxwin_spec_t          spec;
    char                     pool[32];
    const char              *win = cfg->rxwin;
    rg_status_t              status;
    int                      limit;
    const size_t *e[] = {&cfg->eager_limit, &cfg->eager_shm, &cfg->eager_tcp, &cfg->eager_ofi,
                         &cfg->eager_mpi, &cfg->eager_other};
    size_t        i;

    for (i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
        if (*e[i] > RG__PROTO_EAGER_MAX) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "an eager limit of %zu bytes is above the 1GiB maximum", *e[i]);
        }
    }
    if (cfg->pool_bufs < 1 || cfg->pool_bufs > RG__PROTO_POOL_MAX) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_POOL_BUFS=%d: must be 1 to %d",
                          cfg->pool_bufs, RG__PROTO_POOL_MAX);
    }
    if (cfg->use_get != 0 && cfg->use_get != 1) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_GET=%d: must be 0 or 1",
                          cfg->use_get);
    }
    if (cfg->rnr != 0 && cfg->rnr != 1) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_RNR=%d: must be 0 or 1", cfg->rnr);
    }
    if (cfg->rnr && !(cfg->rnr_timer_ms >= 0.01 && cfg->rnr_timer_ms <= 655.36)) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_PROTO_RNR_TIMER_MS=%g: must be 0.01 to 655.36 ms (the range of "
                          "InfiniBand's RNR NAK timer)", cfg->rnr_timer_ms);
    }
    if (cfg->rnr && (cfg->rnr_retry < 1 || cfg->rnr_retry > RG__PROTO_RNR_RETRY_MAX)) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_RNR_RETRY=%d: must be 1 to %d",
                          cfg->rnr_retry, RG__PROTO_RNR_RETRY_MAX);
    }
    /* The window: "pool" (or unset) is a fixed window of RG_PROTO_POOL_BUFS. */
    if (win[0] == '\0' || strcmp(win, "pool") == 0) {
        snprintf(pool, sizeof(pool), "fixed:%d", cfg->pool_bufs);
        win = pool;
    }
    status = rg_rxwin_parse(win, &spec, err);
    if (status == RG_OK) {
        status = rg_rxwin_parse_limit(cfg->rxwin_limit, &spec, &limit, err);
    }
    if (status == RG_OK && spec.reclaim && !(cfg->rxwin_quiet_ns >= 1000.0)) {
        status = rg_err_set(err, RG_ERR_INVALID,
                            "RG_PROTO_RXWIN_QUIET_NS=%g: reclaiming needs a quiet period of "
                            "at least 1us", cfg->rxwin_quiet_ns);
    }
    if (status == RG_OK) {
        status = rg_rxwin_init(&proto->rxwin, &spec, limit, (uint64_t)cfg->rxwin_quiet_ns, err);
    }
    return status;
}

static void rg__free_lists(rg_proto_t *proto)
{
    rg__uxm_t *u;
    rg__xop_t *x;
    int        c;

    while ((u = proto->unexpected.head) != NULL) {
        rg__uxm_unlink(&proto->unexpected, u);
        free(u);
    }
    while ((u = proto->parked.head) != NULL) {
        rg__uxm_unlink(&proto->parked, u);
        free(u);
    }
    for (c = 0; c < 3; c++) {
        while ((x = proto->xop_free[c]) != NULL) {
            proto->xop_free[c] = x->next;
            free(x);
        }
    }
    while ((x = proto->inflight) != NULL) {
        proto->inflight = x->next;
        free(x);
    }
}

void rg_proto_close(rg_proto_t *proto)
{
    rg__pbuf_t *b;
    rg__xop_t  *x, *xn;
    uint64_t    end;
    int         c;

    if (proto == NULL) {
        return;
    }
    /* Control messages still on their way (a FIN the peer waits for) and
     * refused messages waiting for their retry are delivered before the
     * transport goes. */
    if (proto->failed == RG_OK && (proto->inflight != NULL || proto->nunacked > 0)) {
        end = rg_time_mono_ns() + RG__PROTO_FLUSH_NS +
              (uint64_t)proto->cfg.rnr_retry * proto->rnr_timer_ns;
        while ((proto->inflight != NULL || proto->nunacked > 0) &&
               rg_proto_progress(proto) == RG_OK && rg_time_mono_ns() < end) {
            sched_yield();
        }
    }
    for (c = proto->nchan - 1; c >= 0; c--) {
        rg_xport_close(proto->chan[c]);
    }
    while ((b = proto->phead) != NULL) {
        proto->phead = b->next;
        free(b->data);
        free(b);
    }
    if (proto->drain != NULL) {
        free(proto->drain->data);
        free(proto->drain);
    }
    /* Kept messages not on the transport (those on it are in the inflight
     * list, freed with it). */
    for (c = 0; proto->unacked != NULL && c < proto->size; c++) {
        for (x = proto->unacked[c].head; x != NULL; x = xn) {
            xn = x->unext;
            if (!x->sending) {
                free(x);
            }
        }
    }
    free(proto->unacked);
    free(proto->ack_due);
    free(proto->ack_list);
    rg__free_lists(proto);
    free(proto->send_seq);
    free(proto->recv_seq);
    free(proto->pids);
    free(proto->live_ns);
    free(proto->dead);
    free(proto);
}

rg_status_t rg_proto_open(const char *xport_name, rg_boot_t *boot,
                          const rg_proto_config_t *cfg, rg_proto_t **proto_p,
                          rg_err_t *err)
{
    rg_proto_t *proto;
    rg_status_t status;
    rg_xport_t *xp;
    rg__pbuf_t *b;
    int         i;

    proto = calloc(1, sizeof(*proto));
    if (proto == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the runtime");
    }
    if (cfg != NULL) {
        proto->cfg = *cfg;
        status     = RG_OK;
    } else {
        status = rg_config_load(&rg_proto_config_table, &proto->cfg, err);
    }
    if (status == RG_OK) {
        status = rg__check_config(proto, err);
    }
    if (status != RG_OK) {
        free(proto);
        return status;
    }
    proto->rnr_timer_ns = (uint64_t)(proto->cfg.rnr_timer_ms * 1e6 + 0.5);
    proto->rnr          = proto->cfg.rnr;
    proto->rank      = rg_boot_rank(boot);
    proto->size      = rg_boot_size(boot);
    proto->data_chan = -1;
    status = rg_xport_open(xport_name, boot, &proto->chan[0], err);
    if (status != RG_OK) {
        free(proto);
        return status;
    }
    proto->nchan = 1;
    xp           = proto->chan[0];
    proto->can_inject = xp->ops->inject != NULL;
    proto->eager_limit = rg__default_eager(&proto->cfg, xp->attr.name);
    if (xp->attr.max_msg_size < RG__PHDR ||
        proto->eager_limit > xp->attr.max_msg_size - RG__PHDR) {
        proto->eager_limit = xp->attr.max_msg_size < RG__PHDR ? 0
                                                             : xp->attr.max_msg_size - RG__PHDR;
    }
    proto->pbuf_size = RG__PHDR + proto->eager_limit;
    proto->pids      = calloc((size_t)proto->size, sizeof(int32_t));
    proto->live_ns   = calloc((size_t)proto->size, sizeof(uint64_t));
    proto->dead      = calloc((size_t)proto->size, sizeof(uint8_t));
    if (proto->pids == NULL || proto->live_ns == NULL || proto->dead == NULL) {
        status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d pids", proto->size);
        goto err_close;
    }
    status = rg__agree(proto, boot, err);
    if (status != RG_OK) {
        goto err_close;
    }
    /* Rendezvous payloads: one-sided reads, or a second instance of the
     * transport that carries only payloads (collective: every rank agreed
     * on can_get when the transport opened, and on RG_PROTO_GET above). */
    if (!(xp->attr.can_get && proto->cfg.use_get == 1) && proto->size > 1) {
        status = rg_xport_open(xport_name, boot, &proto->chan[1], err);
        if (status != RG_OK) {
            goto err_close;
        }
        proto->nchan     = 2;
        proto->data_chan = 1;
    }
    proto->send_seq = calloc((size_t)proto->size, sizeof(uint32_t));
    proto->recv_seq = calloc((size_t)proto->size, sizeof(uint32_t));
    if (proto->cfg.rnr) {
        proto->unacked  = calloc((size_t)proto->size, sizeof(*proto->unacked));
        proto->ack_due  = calloc((size_t)proto->size, sizeof(*proto->ack_due));
        proto->ack_list = calloc((size_t)proto->size, sizeof(*proto->ack_list));
    }
    if (proto->send_seq == NULL || proto->recv_seq == NULL ||
        (proto->cfg.rnr && (proto->unacked == NULL || proto->ack_due == NULL ||
                            proto->ack_list == NULL))) {
        status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the runtime's tables");
        goto err_close;
    }
    /* The window's first buffers, and the refusal buffer behind them. Alone,
     * nothing arrives on the transport: the buffers are not posted (and not
     * allocated), the window does nothing. */
    proto->stats.window      = proto->rxwin.window;
    proto->stats.window_peak = proto->rxwin.window;
    if (proto->size > 1) {
        if (proto->cfg.rnr) {
            proto->drain = rg__pbuf_new(proto);
            if (proto->drain == NULL) {
                status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the refusal buffer");
                goto err_close;
            }
        }
        for (i = 0; i < proto->rxwin.window; i++) {
            b = rg__pbuf_new(proto);
            if (b == NULL) {
                status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d eager buffers of "
                                    "%zu bytes", proto->rxwin.window, proto->pbuf_size);
                goto err_close;
            }
            proto->nalloc++;
            status = rg__pool_post(proto, b);
            if (status != RG_OK) {
                rg__pbuf_free(proto, b);
                proto->nalloc--;
                if (err != NULL) {
                    *err = proto->err;
                }
                goto err_close;
            }
        }
        if (proto->drain != NULL) {
            status = rg__pool_post(proto, proto->drain);
            if (status != RG_OK) {
                if (err != NULL) {
                    *err = proto->err;
                }
                goto err_close;
            }
        }
    }
    *proto_p = proto;
    return RG_OK;

err_close:
    rg_proto_close(proto);
    return status;
}

/* ---- facts --------------------------------------------------------------- */

int rg_proto_rank(const rg_proto_t *proto)
{
    return proto->rank;
}

int rg_proto_size(const rg_proto_t *proto)
{
    return proto->size;
}

size_t rg_proto_eager_limit(const rg_proto_t *proto)
{
    return proto->eager_limit;
}

rg_xport_t *rg_proto_xport(rg_proto_t *proto)
{
    return proto->chan[0];
}

void rg_proto_get_stats(const rg_proto_t *proto, rg_proto_stats_t *stats)
{
    *stats = proto->stats;
}

const char *rg_proto_strerror(const rg_proto_t *proto)
{
    return rg_err_message(&proto->err);
}

rg_status_t rg_proto_info_json(rg_proto_t *proto, char *buf, size_t cap)
{
    rg_json_t js;
    char      win[64];

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_uint(&js, "eager_limit", proto->eager_limit);
    rg_json_kv_int(&js, "pool_bufs", proto->rxwin.window);
    rg_rxwin_format(&proto->rxwin.spec, win, sizeof(win));
    rg_json_kv_string(&js, "rxwin", win);
    rg_json_kv_int(&js, "rxwin_limit", proto->rxwin.first_limit);
    rg_json_kv_int(&js, "rnr", proto->cfg.rnr);
    if (proto->cfg.rnr) {
        rg_json_kv_double(&js, "rnr_timer_ms", proto->cfg.rnr_timer_ms);
        rg_json_kv_int(&js, "rnr_retry", proto->cfg.rnr_retry);
    }
    rg_json_kv_uint(&js, "pool_buf_size", proto->pbuf_size);
    /* What one buffer of the window counts in mem.pool: its descriptor too. */
    rg_json_kv_uint(&js, "pool_buf_bytes", sizeof(rg__pbuf_t) + proto->pbuf_size);
    rg_json_kv_string(&js, "rendezvous", proto->data_chan < 0 ? "get" : "data-channel");
    rg_json_kv_int(&js, "channels", proto->nchan);
    rg_json_object_end(&js);
    return js.status;
}
