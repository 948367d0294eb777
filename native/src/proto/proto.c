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

#include "base/json.h"
#include "base/timer.h"

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
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_proto_config_table = {"PROTO", rg__proto_config_fields};

#define RG__PROTO_POOL_MAX  65536
#define RG__PROTO_EAGER_MAX ((size_t)1 << 30)
/* Control messages and small eager sends share one staging size class. */
#define RG__PROTO_SMALL     256u
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
    RG__PH_DONE  = 6   /* sender -> receiver: its part is written; rreq completes */
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

/* Staging of one outgoing eager-path message. */
typedef struct rg__xop {
    rg_xreq_t       xreq;
    struct rg__xop *next;
    rg_preq_t      *owner;  /* the eager send it completes, or NULL */
    size_t          cap;    /* bytes of data[] */
    unsigned char   data[];
} rg__xop_t;

/* A pool buffer, posted as a receive from any source. */
typedef struct rg__pbuf {
    rg_xreq_t      xreq;
    unsigned char *data;
} rg__pbuf_t;

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
    rg_proto_config_t cfg;
    size_t            eager_limit;
    size_t            pbuf_size;   /* header + eager limit */
    rg__pbuf_t       *pool;
    int               npool;
    int               pool_head;   /* the oldest posted buffer */
    rg__preq_list_t   posted;      /* receives, in posting order */
    rg__preq_list_t   active;      /* requests whose payload is on the data channel */
    rg__uxm_list_t    unexpected;  /* arrivals, in order */
    rg__uxm_list_t    parked;      /* arrivals ahead of their turn */
    uint32_t         *send_seq;    /* per destination */
    uint32_t         *recv_seq;    /* per source: the next to match */
    int32_t          *pids;        /* per rank; 0 where on another host */
    uint64_t         *live_ns;     /* per rank: when its liveness was last asked */
    uint8_t          *dead;        /* per rank: found dead (sticky) */
    rg__xop_t        *xop_free[2]; /* small, eager */
    unsigned          xop_nfree[2];
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

static void rg__preq_append(rg__preq_list_t *l, rg_preq_t *r)
{
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail != NULL) {
        l->tail->next = r;
    } else {
        l->head = r;
    }
    l->tail = r;
}

static void rg__preq_unlink(rg__preq_list_t *l, rg_preq_t *r)
{
    if (r->prev != NULL) {
        r->prev->next = r->next;
    } else {
        l->head = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev;
    } else {
        l->tail = r->prev;
    }
    r->next = r->prev = NULL;
}

static void rg__uxm_append(rg__uxm_list_t *l, rg__uxm_t *u)
{
    u->next = NULL;
    u->prev = l->tail;
    if (l->tail != NULL) {
        l->tail->next = u;
    } else {
        l->head = u;
    }
    l->tail = u;
}

static void rg__uxm_unlink(rg__uxm_list_t *l, rg__uxm_t *u)
{
    if (u->prev != NULL) {
        u->prev->next = u->next;
    } else {
        l->head = u->next;
    }
    if (u->next != NULL) {
        u->next->prev = u->prev;
    } else {
        l->tail = u->prev;
    }
    u->next = u->prev = NULL;
}

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

static rg__xop_t *rg__xop_get(rg_proto_t *proto, size_t bytes)
{
    int        cls = bytes <= RG__PHDR + RG__PROTO_SMALL ? 0 : 1;
    size_t     cap = cls == 0 ? RG__PHDR + RG__PROTO_SMALL : proto->pbuf_size;
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
    x->next  = NULL;
    x->owner = NULL;
    return x;
}

static void rg__xop_put(rg_proto_t *proto, rg__xop_t *x)
{
    int cls = x->cap == RG__PHDR + RG__PROTO_SMALL ? 0 : 1;

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

/* Sends header (+ payload) on the eager path; owner completes with it. */
static rg_status_t rg__send_eager_path(rg_proto_t *proto, int peer, const void *hdr,
                                       size_t hlen, const void *payload, size_t len,
                                       rg_preq_t *owner)
{
    rg__xop_t  *x = rg__xop_get(proto, hlen + len);
    rg_status_t status;

    if (x == NULL) {
        return rg__fail(proto, RG_ERR_NOMEM, "send staging", NULL);
    }
    memcpy(x->data, hdr, hlen);
    if (len > 0) {
        memcpy(x->data + hlen, payload, len);
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
    if (proto->inflight_tail != NULL) {
        proto->inflight_tail->next = x;
    } else {
        proto->inflight = x;
    }
    proto->inflight_tail = x;
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

static rg_status_t rg__pool_post(rg_proto_t *proto, rg__pbuf_t *b)
{
    return rg__sched_recv(proto, 0, RG_XPORT_ANY_SOURCE, b->data, proto->pbuf_size, &b->xreq);
}

rg_status_t rg_proto_progress(rg_proto_t *proto)
{
    rg__pbuf_t *b;
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
            return rg__fail(proto, status, "transport", proto->chan[c]);
        }
    }
    /* The pool, in posting order: the transports fill receives from any
     * source in the order they were posted. */
    for (;;) {
        b = &proto->pool[proto->pool_head];
        if (b->xreq.status == RG_INPROGRESS) {
            break;
        }
        if (b->xreq.status == RG_ERR_TRUNCATED) {
            return rg__fail(proto, RG_ERR_TRUNCATED,
                            "a message larger than an eager buffer arrived (do all ranks "
                            "use the same RG_PROTO_EAGER_* settings?)", NULL);
        }
        if (b->xreq.status != RG_OK) {
            return rg__fail(proto, b->xreq.status, "eager receive", proto->chan[0]);
        }
        status = rg__handle(proto, b->xreq.source, b->data, b->xreq.msg_len);
        if (status != RG_OK) {
            return status;
        }
        status = rg__pool_post(proto, b);
        if (status != RG_OK) {
            return status;
        }
        proto->pool_head = (proto->pool_head + 1) % proto->npool;
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
                return status;
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
    uint64_t    mine[4] = {proto->eager_limit, (uint64_t)proto->cfg.use_get,
                           (uint64_t)getpid(), rg_xport_host_id()};
    uint64_t   *all;
    rg_status_t status;
    int         i;

    all = calloc((size_t)proto->size, sizeof(mine));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d settings", proto->size);
    }
    status = rg_boot_allgather(boot, mine, sizeof(mine), all, err);
    for (i = 0; status == RG_OK && i < proto->size; i++) {
        proto->pids[i] = all[4 * i + 3] == mine[3] ? (int32_t)all[4 * i + 2] : 0;
        if (all[4 * i] != mine[0] || all[4 * i + 1] != mine[1]) {
            status = rg_err_set(err, RG_ERR_INVALID,
                                "rank %d uses eager limit %llu and RG_PROTO_GET=%llu, rank %d "
                                "%llu and %llu: set RG_PROTO_* alike on every rank",
                                i, (unsigned long long)all[4 * i],
                                (unsigned long long)all[4 * i + 1], proto->rank,
                                (unsigned long long)mine[0], (unsigned long long)mine[1]);
        }
    }
    free(all);
    return status;
}

static rg_status_t rg__check_config(const rg_proto_config_t *cfg, rg_err_t *err)
{
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
    return RG_OK;
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
    for (c = 0; c < 2; c++) {
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
    uint64_t end;
    int      c, i;

    if (proto == NULL) {
        return;
    }
    /* Control messages still on their way (a FIN the peer waits for) are
     * delivered before the transport goes. */
    if (proto->failed == RG_OK && proto->inflight != NULL) {
        end = rg_time_mono_ns() + RG__PROTO_FLUSH_NS;
        while (proto->inflight != NULL && rg_proto_progress(proto) == RG_OK &&
               rg_time_mono_ns() < end) {
            sched_yield();
        }
    }
    for (c = proto->nchan - 1; c >= 0; c--) {
        rg_xport_close(proto->chan[c]);
    }
    if (proto->pool != NULL) {
        for (i = 0; i < proto->npool; i++) {
            free(proto->pool[i].data);
        }
        free(proto->pool);
    }
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
        status = rg__check_config(&proto->cfg, err);
    }
    if (status != RG_OK) {
        free(proto);
        return status;
    }
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
    proto->npool    = proto->cfg.pool_bufs;
    proto->pool     = calloc((size_t)proto->npool, sizeof(*proto->pool));
    if (proto->send_seq == NULL || proto->recv_seq == NULL || proto->pool == NULL) {
        status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the runtime's tables");
        goto err_close;
    }
    for (i = 0; i < proto->npool; i++) {
        proto->pool[i].data = malloc(proto->pbuf_size);
        if (proto->pool[i].data == NULL) {
            status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d eager buffers of %zu "
                                "bytes", proto->npool, proto->pbuf_size);
            goto err_close;
        }
        rg__mem_add(proto, &proto->stats.mem.pool, proto->pbuf_size + sizeof(rg__pbuf_t));
    }
    if (proto->size > 1) {
        for (i = 0; i < proto->npool; i++) {
            status = rg__pool_post(proto, &proto->pool[i]);
            if (status != RG_OK) {
                if (err != NULL) {
                    *err = proto->err;
                }
                goto err_close;
            }
        }
    } else {
        /* Alone: nothing arrives on the transport; the buffers stay idle
         * but marked as posted so progress does not take them. */
        for (i = 0; i < proto->npool; i++) {
            proto->pool[i].xreq.status = RG_INPROGRESS;
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

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_uint(&js, "eager_limit", proto->eager_limit);
    rg_json_kv_int(&js, "pool_bufs", proto->npool);
    rg_json_kv_uint(&js, "pool_buf_size", proto->pbuf_size);
    rg_json_kv_string(&js, "rendezvous", proto->data_chan < 0 ? "get" : "data-channel");
    rg_json_kv_int(&js, "channels", proto->nchan);
    rg_json_object_end(&js);
    return js.status;
}
