/*
 * railgauge: the "shm" transport, for ranks on one host.
 *
 * One POSIX shared segment per job holds a lock-free single-producer /
 * single-consumer byte ring for every ordered pair of ranks and one small
 * block per rank (its pid and its futex doorbell). A message is an 8-byte
 * length header followed by its payload, padded to 8 bytes, streamed through
 * the ring: a message larger than the ring flows in chunks as the receiver
 * frees space, so both sides copy at the same time.
 *
 * Layout (offsets from the start of the segment):
 *   0                      header (magic, version, ranks, ring size)
 *   RG__SHM_PAGE           one RG__SHM_PAD block per rank
 *   rings_off              ring (i -> j) for every i != j, RG__SHM_PAGE control
 *                          (head and tail on separate lines) then the data
 *
 * The transport is not thread-safe: one thread drives it, as xport.h says.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/timer.h"
#include "xport/xport.h"
#include "xport/xreq_queue.h"

#define RG__SHM_MAGIC      0x3130306d68736772ULL  /* "rgshm001" */
#define RG__SHM_VERSION    1u
#define RG__SHM_PAGE       4096u
/* Two cache lines: the adjacent-line prefetcher of x86 cores moves lines in
 * pairs, so indexes written by different processes sit 128 bytes apart. */
#define RG__SHM_PAD        128u
#define RG__SHM_HDR_LEN    8u
#define RG__SHM_RING_MIN   ((size_t)4096)
#define RG__SHM_RING_MAX   ((size_t)1 << 30)
/* Peers are checked for liveness at most this often while waiting. */
#define RG__SHM_LIVENESS_NS 50000000ull
#define RG__SHM_PREFIX     "railgauge-"

/* Ring bytes of a message of n payload bytes: header and payload rounded up
 * to a cache line, so that the sender never writes the line the receiver
 * is reading (two messages in one line would bounce it between the cores at
 * every message), and a header never wraps around the ring's end. */
#define RG__SHM_SLOT(n)    ((RG__SHM_HDR_LEN + (uint64_t)(n) + 63u) & ~(uint64_t)63u)

typedef struct rg__shm_config {
    size_t ring_size;
    int    cma;
} rg__shm_config_t;

static const rg_config_field_t rg__shm_config_fields[] = {
    {"RING_SIZE", "64KiB",
     "bytes of each ring (one per ordered pair of ranks); a power of two from "
     "4KiB to 1GiB. Larger rings let more sends complete at post time",
     offsetof(rg__shm_config_t, ring_size), RG_CONFIG_SIZE},
    {"CMA", "1",
     "1: large messages of the protocol layer move in one copy, the receiver "
     "reading the sender's buffer with process_vm_readv (cross-memory attach), "
     "where every rank can (tested at open: ptrace rules or a seccomp filter "
     "can forbid it); 0: never, they stream through the rings",
     offsetof(rg__shm_config_t, cma), RG_CONFIG_INT},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_xport_shm_config_table = {"SHM", rg__shm_config_fields};

/* The segment header; rank 0 writes magic last. */
typedef struct rg__shm_seg_hdr {
    _Atomic uint64_t magic;
    uint32_t         version;
    uint32_t         nranks;
    uint64_t         ring_size;
    uint64_t         seg_size;
} rg__shm_seg_hdr_t;

/* Per-rank block. Only its owner sleeps on the doorbell; peers read
 * `sleeping` after every publish, which costs nothing while the line stays
 * shared in their caches, and bump the doorbell only when it is set. */
typedef struct rg__shm_rank_blk {
    _Atomic uint32_t doorbell;
    _Atomic uint32_t sleeping;
    _Atomic int32_t  pid;
    uint32_t         pad0;
    uint64_t         cma_probe;  /* address of the owner's probe word */
    char             pad[RG__SHM_PAD - 4 * sizeof(uint32_t) - sizeof(uint64_t)];
} rg__shm_rank_blk_t;

/* Ring control. Each side also keeps a private copy of the other side's
 * index and rereads the shared one only when the copy says the ring is full
 * (sender) or empty (receiver), so the lines do not bounce per message. */
typedef struct rg__shm_ring_ctl {
    _Atomic uint64_t head;   /* bytes ever written; by the producer */
    char             pad0[RG__SHM_PAD - sizeof(uint64_t)];
    _Atomic uint64_t tail;   /* bytes ever consumed; by the consumer */
    char             pad1[RG__SHM_PAD - sizeof(uint64_t)];
} rg__shm_ring_ctl_t;

typedef struct rg__shm_peer {
    /* Ring this rank -> peer. */
    rg__shm_ring_ctl_t *tx;
    unsigned char      *tx_data;
    uint64_t            tx_head;       /* ours; the shared copy lags until publish */
    uint64_t            tx_tail_seen;  /* peer's tail as last read */
    rg_xreq_t          *sendq, *sendq_last;
    /* Ring peer -> this rank. */
    rg__shm_ring_ctl_t *rx;
    unsigned char      *rx_data;
    uint64_t            rx_tail;
    uint64_t            rx_tail_pub;   /* last tail published */
    uint64_t            rx_head_seen;
    rg_xreq_t          *recvq, *recvq_last;
    rg_xreq_t          *cur;           /* receive bound to the message in flight */
    rg__shm_rank_blk_t *blk;
    int                 dead;
    int                 staged;        /* a list post wrote here, not yet published */
} rg__shm_peer_t;

typedef struct rg__shm {
    rg_xport_t          super;
    unsigned char      *seg;
    size_t              seg_size;
    uint64_t            ring_size;
    uint64_t            mask;
    char                name[128];
    rg__shm_rank_blk_t *me;
    rg__shm_peer_t     *peers;         /* size entries; ours is unused */
    rg_xreq_t          *anyq, *anyq_last;
    uint64_t            post_seq;      /* orders receives for matching */
    uint64_t            events;        /* bumped whenever progress moves */
    int                 any_next;      /* where the next ANY_SOURCE scan starts */
    uint64_t            live_check_ns; /* time of the last liveness check */
    int                 cma_off_rank;  /* a rank that failed the CMA probe, or -1 */
    int                 asym_fence;    /* 1: sleepers fence by membarrier (see notify) */
    int                *staged;        /* size entries: peers a list post wrote to */
    unsigned            wins;          /* windows created, for their names in errors */
    rg_status_t         failed;        /* RG_OK, or the error that ended it */
} rg__shm_t;

/* A memory window (rg_xport_win_create): every rank's base address and
 * length, exchanged at creation; writes are process_vm_writev calls. */
struct rg_xwin {
    uint64_t *base;
    uint64_t *len;
};

/* Request scratch: priv[0] = bytes of the stream moved (send: header
 * included; receive: after the header); priv[1] = receive post order. */
#define RG__SHM_POS(req) ((req)->priv[0])
#define RG__SHM_SEQ(req) ((req)->priv[1])

static inline rg__shm_t *rg__shm(rg_xport_t *xp)
{
    return (rg__shm_t *)xp;
}



/* ---- waking and sleeping ---------------------------------------------- */

static long rg__shm_futex(_Atomic uint32_t *word, int op, uint32_t val,
                          const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, 0);
}

/* Called after publishing an index the peer may be sleeping on: either the
 * sleeper sees our index when it rechecks, or we see its flag and ring.
 * That needs a full fence between our store and our load of the flag, and a
 * fence costs a cross-core round trip per message (the store must own its
 * line first). Where every rank could register for membarrier's global
 * expedited command, the fence is moved to the sleeper (an asymmetric
 * fence, as liburcu does): rg__shm_block() calls membarrier, which runs a
 * full barrier on every registered process, so this side needs only a
 * compiler barrier. Otherwise the fence stays here. */
static inline void rg__shm_notify(const rg__shm_t *shm, rg__shm_rank_blk_t *blk)
{
    if (shm->asym_fence) {
        atomic_signal_fence(memory_order_seq_cst);
    } else {
        atomic_thread_fence(memory_order_seq_cst);
    }
    if (atomic_load_explicit(&blk->sleeping, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&blk->doorbell, 1, memory_order_release);
        rg__shm_futex(&blk->doorbell, FUTEX_WAKE, 1, NULL);
    }
}

/* ---- ring copies ------------------------------------------------------ */

static inline void rg__shm_copy_in(rg__shm_t *shm, unsigned char *data, uint64_t pos,
                                   const unsigned char *src, uint64_t n)
{
    uint64_t off   = pos & shm->mask;
    uint64_t first = shm->ring_size - off;

    if (n <= first) {
        memcpy(data + off, src, n);
    } else {
        memcpy(data + off, src, first);
        memcpy(data, src + first, n - first);
    }
}

static inline void rg__shm_copy_out(rg__shm_t *shm, const unsigned char *data,
                                    uint64_t pos, unsigned char *dst, uint64_t n)
{
    uint64_t off   = pos & shm->mask;
    uint64_t first = shm->ring_size - off;

    if (n <= first) {
        memcpy(dst, data + off, n);
    } else {
        memcpy(dst, data + off, first);
        memcpy(dst + first, data, n - first);
    }
}

/* ---- failure ---------------------------------------------------------- */


/* Ends the transport: every pending request completes with status, and
 * progress returns it from now on. The message is already in super.err. */
static rg_status_t rg__shm_fail(rg__shm_t *shm, rg_status_t status)
{
    rg__shm_peer_t *p;
    int             i;

    shm->failed = status;
    for (i = 0; i < shm->super.size; i++) {
        p = &shm->peers[i];
        rg__xreq_queue_fail(&p->sendq, &p->sendq_last, status);
        rg__xreq_queue_fail(&p->recvq, &p->recvq_last, status);
        if (p->cur != NULL) {
            p->cur->status = status;
            p->cur = NULL;
        }
    }
    rg__xreq_queue_fail(&shm->anyq, &shm->anyq_last, status);
    return status;
}

/* ---- sending ---------------------------------------------------------- */

/* Writes as much of req as the ring has room for; returns 1 once all of it
 * (header, payload, padding) is in the ring. */
static int rg__shm_push(rg__shm_t *shm, rg__shm_peer_t *p, rg_xreq_t *req)
{
    uint64_t total = RG__SHM_SLOT(req->len);
    uint64_t pos   = RG__SHM_POS(req);
    uint64_t room  = shm->ring_size - (p->tx_head - p->tx_tail_seen);
    uint64_t start = p->tx_head;
    uint64_t n, hdr;

    if (room < total - pos) {
        p->tx_tail_seen = atomic_load_explicit(&p->tx->tail, memory_order_acquire);
        room = shm->ring_size - (p->tx_head - p->tx_tail_seen);
    }
    if (pos == 0) {
        if (room < RG__SHM_HDR_LEN) {
            return 0;
        }
        hdr = (uint64_t)req->len;
        memcpy(p->tx_data + (p->tx_head & shm->mask), &hdr, sizeof(hdr));
        p->tx_head += RG__SHM_HDR_LEN;
        room       -= RG__SHM_HDR_LEN;
        pos         = RG__SHM_HDR_LEN;
    }
    if (pos < RG__SHM_HDR_LEN + req->len && room > 0) {
        n = RG__SHM_HDR_LEN + req->len - pos;
        n = n < room ? n : room;
        rg__shm_copy_in(shm, p->tx_data, p->tx_head,
                        (const unsigned char *)req->buf + (pos - RG__SHM_HDR_LEN), n);
        p->tx_head += n;
        room       -= n;
        pos        += n;
        req->done   = pos - RG__SHM_HDR_LEN;
    }
    if (pos >= RG__SHM_HDR_LEN + req->len && pos < total) {
        /* The padding carries no data; the index just moves past it. */
        n = total - pos;
        n = n < room ? n : room;
        p->tx_head += n;
        pos        += n;
    }
    if (p->tx_head != start) {
        atomic_store_explicit(&p->tx->head, p->tx_head, memory_order_release);
        rg__shm_notify(shm, p->blk);
        shm->events++;
    }
    RG__SHM_POS(req) = pos;
    return pos == total;
}

/* A whole small message written now, or nothing (see ops->inject). */
static rg_status_t rg__shm_inject(rg_xport_t *xp, int peer, const void *hdr, size_t hlen,
                                  const void *buf, size_t len)
{
    rg__shm_t      *shm   = rg__shm(xp);
    rg__shm_peer_t *p     = &shm->peers[peer];
    uint64_t        n     = (uint64_t)hlen + (uint64_t)len;
    uint64_t        total = RG__SHM_SLOT(n);

    if (shm->failed != RG_OK) {
        return shm->failed;
    }
    if (p->sendq != NULL) {
        return RG_ERR_AGAIN;  /* a queued send goes first */
    }
    if (shm->ring_size - (p->tx_head - p->tx_tail_seen) < total) {
        p->tx_tail_seen = atomic_load_explicit(&p->tx->tail, memory_order_acquire);
        if (shm->ring_size - (p->tx_head - p->tx_tail_seen) < total) {
            return RG_ERR_AGAIN;
        }
    }
    memcpy(p->tx_data + (p->tx_head & shm->mask), &n, sizeof(n));
    rg__shm_copy_in(shm, p->tx_data, p->tx_head + RG__SHM_HDR_LEN, hdr, hlen);
    if (len > 0) {
        rg__shm_copy_in(shm, p->tx_data, p->tx_head + RG__SHM_HDR_LEN + hlen, buf, len);
    }
    p->tx_head += total;
    atomic_store_explicit(&p->tx->head, p->tx_head, memory_order_release);
    rg__shm_notify(shm, p->blk);
    shm->events++;
    return RG_OK;
}

static void rg__shm_progress_send(rg__shm_t *shm, rg__shm_peer_t *p)
{
    rg_xreq_t *req;

    while (p->sendq != NULL && rg__shm_push(shm, p, p->sendq)) {
        req         = rg__xreq_queue_pop(&p->sendq, &p->sendq_last);
        req->done   = req->len;
        req->status = RG_OK;
    }
}

static rg_status_t rg__shm_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__shm_t      *shm = rg__shm(xp);
    rg__shm_peer_t *p   = &shm->peers[req->peer];

    if (shm->failed != RG_OK) {
        req->status = shm->failed;
        return shm->failed;
    }
    /* Inline fast path: a send that fits completes here, never queued. */
    if (p->sendq == NULL && rg__shm_push(shm, p, req)) {
        req->done   = req->len;
        req->status = RG_OK;
        return RG_OK;
    }
    rg__xreq_queue_push(&p->sendq, &p->sendq_last, req);
    return RG_OK;
}

/* A list post (ops->isend_list): every message that fits its ring now is
 * written there without moving the shared head; then one release fence, the
 * heads of every ring written to, and one wake-up round (one full fence
 * where the asymmetric fence is off, then each peer's sleeping flag). A peer
 * sees none of the messages before all are written, as an RDMA adapter
 * starts on a posted list only once the call returns. Sends that do not fit
 * now, or that have an older send queued before them, are queued as isend
 * queues them and pushed after the publication. */
static rg_status_t rg__shm_isend_list(rg_xport_t *xp, rg_xreq_t *reqs, size_t n)
{
    rg__shm_t      *shm = rg__shm(xp);
    rg__shm_peer_t *p;
    rg_xreq_t      *req;
    uint64_t        total, hdr;
    size_t          i;
    int             nstaged = 0, queued = 0, k;

    if (shm->failed != RG_OK) {
        for (i = 0; i < n; i++) {
            reqs[i].status = shm->failed;
        }
        return shm->failed;
    }
    for (i = 0; i < n; i++) {
        req   = &reqs[i];
        p     = &shm->peers[req->peer];
        total = RG__SHM_SLOT(req->len);
        if (p->sendq == NULL && shm->ring_size - (p->tx_head - p->tx_tail_seen) < total) {
            p->tx_tail_seen = atomic_load_explicit(&p->tx->tail, memory_order_acquire);
        }
        if (p->sendq != NULL || shm->ring_size - (p->tx_head - p->tx_tail_seen) < total) {
            rg__xreq_queue_push(&p->sendq, &p->sendq_last, req);
            queued = 1;
            continue;
        }
        hdr = (uint64_t)req->len;
        memcpy(p->tx_data + (p->tx_head & shm->mask), &hdr, sizeof(hdr));
        if (req->len > 0) {
            rg__shm_copy_in(shm, p->tx_data, p->tx_head + RG__SHM_HDR_LEN, req->buf, req->len);
        }
        p->tx_head  += total;
        req->done    = req->len;
        req->status  = RG_OK;
        if (!p->staged) {
            p->staged = 1;
            shm->staged[nstaged++] = req->peer;
        }
    }
    if (nstaged > 0) {
        /* One release orders every entry before every head (fence-to-atomic
         * synchronisation with the readers' acquire loads of the heads). */
        atomic_thread_fence(memory_order_release);
        for (k = 0; k < nstaged; k++) {
            p = &shm->peers[shm->staged[k]];
            atomic_store_explicit(&p->tx->head, p->tx_head, memory_order_relaxed);
        }
        if (shm->asym_fence) {
            atomic_signal_fence(memory_order_seq_cst);
        } else {
            atomic_thread_fence(memory_order_seq_cst);
        }
        for (k = 0; k < nstaged; k++) {
            p = &shm->peers[shm->staged[k]];
            p->staged = 0;
            if (atomic_load_explicit(&p->blk->sleeping, memory_order_relaxed)) {
                atomic_fetch_add_explicit(&p->blk->doorbell, 1, memory_order_release);
                rg__shm_futex(&p->blk->doorbell, FUTEX_WAKE, 1, NULL);
            }
        }
        shm->events++;
    }
    if (queued) {
        for (i = 0; i < n; i++) {
            p = &shm->peers[reqs[i].peer];
            if (p->sendq != NULL) {
                rg__shm_progress_send(shm, p);
            }
        }
    }
    return RG_OK;
}

/* ---- receiving -------------------------------------------------------- */

/* The receive the next message from p goes to: the earlier posted of p's
 * first specific receive and the first ANY_SOURCE receive. */
static rg_xreq_t *rg__shm_candidate(rg__shm_t *shm, rg__shm_peer_t *p, int *is_any)
{
    rg_xreq_t *spec = p->recvq;
    rg_xreq_t *any  = shm->anyq;

    if (spec != NULL && (any == NULL || RG__SHM_SEQ(spec) < RG__SHM_SEQ(any))) {
        *is_any = 0;
        return spec;
    }
    *is_any = 1;
    return any;
}

/* Bytes readable from p's ring, rereading the shared head only when the
 * private copy shows fewer than `want`. */
static inline uint64_t rg__shm_avail(rg__shm_peer_t *p, uint64_t want)
{
    uint64_t avail = p->rx_head_seen - p->rx_tail;

    if (avail < want) {
        p->rx_head_seen = atomic_load_explicit(&p->rx->head, memory_order_acquire);
        avail = p->rx_head_seen - p->rx_tail;
    }
    return avail;
}

/* Takes the header of p's next message for the matching receive, if both a
 * header and a receive are there; returns 1 when it bound one. */
static int rg__shm_bind(rg__shm_t *shm, int peer, rg__shm_peer_t *p)
{
    rg_xreq_t *req;
    uint64_t   len;
    int        is_any;

    req = rg__shm_candidate(shm, p, &is_any);
    if (req == NULL || rg__shm_avail(p, RG__SHM_HDR_LEN) < RG__SHM_HDR_LEN) {
        return 0;
    }
    if (is_any) {
        rg__xreq_queue_pop(&shm->anyq, &shm->anyq_last);
    } else {
        rg__xreq_queue_pop(&p->recvq, &p->recvq_last);
    }
    memcpy(&len, p->rx_data + (p->rx_tail & shm->mask), sizeof(len));
    p->rx_tail      += RG__SHM_HDR_LEN;
    req->source      = peer;
    req->msg_len     = (size_t)len;
    RG__SHM_POS(req) = 0;
    p->cur           = req;
    return 1;
}

/* Copies what has arrived of the bound message into its buffer (bytes past
 * the buffer's capacity are dropped, keeping the stream in step); returns 1
 * when the message is complete. */
static int rg__shm_pull(rg__shm_t *shm, rg__shm_peer_t *p)
{
    rg_xreq_t *req   = p->cur;
    uint64_t   total = RG__SHM_SLOT(req->msg_len) - RG__SHM_HDR_LEN;
    uint64_t   pos   = RG__SHM_POS(req);
    uint64_t   keep  = req->msg_len < req->len ? req->msg_len : req->len;
    uint64_t   n, c;

    n = rg__shm_avail(p, total - pos);
    n = n < total - pos ? n : total - pos;
    if (pos < keep && n > 0) {
        c = keep - pos < n ? keep - pos : n;
        rg__shm_copy_out(shm, p->rx_data, p->rx_tail, (unsigned char *)req->buf + pos, c);
    }
    p->rx_tail += n;
    pos        += n;
    if (p->rx_tail != p->rx_tail_pub) {
        atomic_store_explicit(&p->rx->tail, p->rx_tail, memory_order_release);
        p->rx_tail_pub = p->rx_tail;
        rg__shm_notify(shm, p->blk);
        shm->events++;
    }
    RG__SHM_POS(req) = pos;
    req->done        = pos < keep ? pos : keep;
    if (pos < total) {
        return 0;
    }
    p->cur      = NULL;
    req->status = req->msg_len > req->len ? RG_ERR_TRUNCATED : RG_OK;
    return 1;
}

/* Returns 1 if it completed at least one receive from p. */
static int rg__shm_progress_recv(rg__shm_t *shm, int peer, rg__shm_peer_t *p)
{
    int completed = 0;

    for (;;) {
        if (p->cur == NULL && !rg__shm_bind(shm, peer, p)) {
            return completed;
        }
        if (!rg__shm_pull(shm, p)) {
            return completed;
        }
        completed = 1;
    }
}

static rg_status_t rg__shm_irecv(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__shm_t      *shm = rg__shm(xp);
    rg__shm_peer_t *p;

    if (shm->failed != RG_OK) {
        req->status = shm->failed;
        return shm->failed;
    }
    RG__SHM_SEQ(req) = shm->post_seq++;
    if (req->peer == RG_XPORT_ANY_SOURCE) {
        rg__xreq_queue_push(&shm->anyq, &shm->anyq_last, req);
        return RG_OK;
    }
    p = &shm->peers[req->peer];
    rg__xreq_queue_push(&p->recvq, &p->recvq_last, req);
    /* A message already waiting completes the receive here. */
    if (p->cur == NULL && p->recvq == req) {
        rg__shm_progress_recv(shm, req->peer, p);
    }
    return RG_OK;
}

/* ---- progress --------------------------------------------------------- */

static rg_status_t rg__shm_progress(rg_xport_t *xp)
{
    rg__shm_t      *shm = rg__shm(xp);
    rg__shm_peer_t *p;
    int             size = xp->size;
    int             i, peer;

    if (shm->failed != RG_OK) {
        return shm->failed;
    }
    if (shm->anyq == NULL) {
        for (peer = 0; peer < size; peer++) {
            p = &shm->peers[peer];
            if (p->sendq != NULL) {
                rg__shm_progress_send(shm, p);
            }
            /* The poll of a receive that waits for a new message is one load
             * of the peer's head, as in a bare ring. */
            if (p->cur == NULL &&
                (p->recvq == NULL || rg__shm_avail(p, RG__SHM_HDR_LEN) < RG__SHM_HDR_LEN)) {
                continue;
            }
            rg__shm_progress_recv(shm, peer, p);
        }
        return RG_OK;
    }
    /* ANY_SOURCE receives go to the first peer with a message, scanning from
     * just after the peer that matched last, so no sender starves. */
    for (i = 0; i < size; i++) {
        peer = (shm->any_next + i) % size;
        if (peer == xp->rank) {
            continue;
        }
        p = &shm->peers[peer];
        if (p->sendq != NULL) {
            rg__shm_progress_send(shm, p);
        }
        if (rg__shm_progress_recv(shm, peer, p)) {
            shm->any_next = (peer + 1) % size;
        }
    }
    return RG_OK;
}

/* ---- one-sided reads (cross-memory attach) ------------------------------ */

/* Opens of this transport in this process (see rg__shm_open). */
static unsigned rg__shm_opens;

/* What a peer reads in the open-time test of process_vm_readv. */
static const uint64_t rg__shm_cma_word = 0x7267636d61707262ull;

/* Reads len bytes at raddr in pid into buf (or writes buf there); RG_OK or
 * the errno's status. */
static rg_status_t rg__shm_cma(pid_t pid, uint64_t raddr, void *buf, size_t len, int write,
                               int *errno_p)
{
    struct iovec local, remote;
    size_t       done = 0;
    ssize_t      n;

    while (done < len) {
        local.iov_base  = (char *)buf + done;
        local.iov_len   = len - done;
        remote.iov_base = (void *)(uintptr_t)(raddr + done);
        remote.iov_len  = len - done;
        n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
                  : process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            *errno_p = errno;
            return errno == ESRCH ? RG_ERR_PEER_DEAD : RG_ERR_SYSTEM;
        }
        if (n == 0) {
            *errno_p = EFAULT;
            return RG_ERR_SYSTEM;
        }
        done += (size_t)n;
    }
    return RG_OK;
}

static rg_status_t rg__shm_rma(rg_xport_t *xp, int peer, uint64_t raddr, void *buf,
                               size_t len, int write)
{
    rg__shm_t  *shm = rg__shm(xp);
    rg_status_t status;
    int         e = 0;

    if (!xp->attr.can_get) {
        return rg_xport_no_get(xp, peer, raddr, buf, len);
    }
    if (shm->failed != RG_OK) {
        return shm->failed;
    }
    status = rg__shm_cma((pid_t)atomic_load(&shm->peers[peer].blk->pid), raddr, buf, len,
                         write, &e);
    if (status != RG_OK) {
        return rg_err_set(&xp->err, status, "%s %zu bytes of rank %d's memory failed: %s",
                          write ? "writing" : "reading", len, peer, strerror(e));
    }
    return RG_OK;
}

static rg_status_t rg__shm_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf,
                               size_t len)
{
    return rg__shm_rma(xp, peer, raddr, buf, len, 0);
}

static rg_status_t rg__shm_put(rg_xport_t *xp, int peer, uint64_t raddr, const void *buf,
                               size_t len)
{
    return rg__shm_rma(xp, peer, raddr, (void *)(uintptr_t)buf, len, 1);
}

/* ---- memory windows (ops->win_*) --------------------------------------- */

static rg_status_t rg__shm_win_create(rg_xport_t *xp, void *base, size_t len,
                                      rg_xwin_t **win_p)
{
    rg__shm_t  *shm = rg__shm(xp);
    rg_xwin_t  *win;
    uint64_t    mine[2] = {(uint64_t)(uintptr_t)base, (uint64_t)len};
    uint64_t   *all;
    rg_status_t status;
    int         i;

    win = calloc(1, sizeof(*win));
    all = calloc((size_t)xp->size, sizeof(mine));
    if (win != NULL) {
        win->base = calloc((size_t)xp->size, sizeof(uint64_t));
        win->len  = calloc((size_t)xp->size, sizeof(uint64_t));
    }
    if (win == NULL || all == NULL || win->base == NULL || win->len == NULL) {
        /* Still joins the exchange, so that no other rank waits for it. */
        mine[1] = UINT64_MAX;
    }
    status = all != NULL ? rg_boot_allgather(xp->boot, mine, sizeof(mine), all, &xp->err)
                         : rg_err_set(&xp->err, RG_ERR_NOMEM, "cannot allocate a window");
    for (i = 0; i < xp->size && status == RG_OK; i++) {
        if (all[2 * i + 1] == UINT64_MAX) {
            status = rg_err_set(&xp->err, RG_ERR_NOMEM,
                                "rank %d could not allocate its memory window", i);
        } else if (win != NULL && win->base != NULL && win->len != NULL) {
            win->base[i] = all[2 * i];
            win->len[i]  = all[2 * i + 1];
        }
    }
    free(all);
    if (status != RG_OK) {
        if (win != NULL) {
            free(win->base);
            free(win->len);
            free(win);
        }
        return status;
    }
    shm->wins++;
    *win_p = win;
    return RG_OK;
}

/* process_vm_writev with the last 8 bytes as a second remote iovec: the
 * kernel copies the iovecs in order, so a reader polling that word sees
 * it change only after the rest is there. */
static rg_status_t rg__shm_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                                     rg_xreq_t *req)
{
    rg__shm_t   *shm = rg__shm(xp);
    struct iovec local, remote[2];
    uint64_t     raddr;
    size_t       head;
    ssize_t      n;
    pid_t        pid;
    int          e;

    if (shm->failed != RG_OK) {
        req->status = shm->failed;
        return shm->failed;
    }
    if (rg_xport_win_range(xp, win->len[peer], peer, off, req) != RG_OK) {
        return RG_ERR_RANGE;
    }
    raddr = win->base[peer] + off;
    pid   = (pid_t)atomic_load(&shm->peers[peer].blk->pid);
    head  = req->len > 8 ? req->len - 8 : 0;
    while (req->len > 0) {
        local.iov_base     = req->buf;
        local.iov_len      = req->len;
        remote[0].iov_base = (void *)(uintptr_t)raddr;
        remote[0].iov_len  = head > 0 ? head : req->len;
        remote[1].iov_base = (void *)(uintptr_t)(raddr + head);
        remote[1].iov_len  = req->len - head;
        n = process_vm_writev(pid, &local, 1, remote, head > 0 ? 2 : 1, 0);
        if (n == (ssize_t)req->len) {
            break;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        e = n < 0 ? errno : EFAULT;
        req->status = e == ESRCH ? RG_ERR_PEER_DEAD : RG_ERR_SYSTEM;
        if (e == ESRCH) {
            rg_err_set(&xp->err, RG_ERR_PEER_DEAD,
                       "rank %d (pid %d) died: a one-sided write to it failed (shm)", peer,
                       (int)pid);
            return rg__shm_fail(shm, RG_ERR_PEER_DEAD);
        }
        return rg_err_set(&xp->err, req->status,
                          "one-sided write of %zu bytes into rank %d's window failed: %s%s",
                          req->len, peer, strerror(e),
                          n >= 0 ? " (a partial write)" : "");
    }
    req->done   = req->len;
    req->status = RG_OK;
    return RG_OK;
}

static void rg__shm_win_free(rg_xport_t *xp, rg_xwin_t *win)
{
    (void)xp;
    free(win->base);
    free(win->len);
    free(win);
}

/* Every rank reads its right neighbour's probe word; the transport offers
 * get only if all of them could, so that the ranks agree on the protocol. */
static rg_status_t rg__shm_cma_probe(rg__shm_t *shm, int want, rg_err_t *err)
{
    int         size = shm->super.size, rank = shm->super.rank;
    int         peer = (rank + 1) % size, e = 0, i;
    int32_t     mine = 0, *all;
    int         asym = 1;
    uint64_t    word = 0;
    rg__shm_peer_t *p = &shm->peers[peer];
    rg_status_t status;

    if (want && size > 1 &&
        rg__shm_cma((pid_t)atomic_load(&p->blk->pid), p->blk->cma_probe, &word,
                    sizeof(word), 0, &e) == RG_OK &&
        word == rg__shm_cma_word) {
        mine = 1;
    }
    /* Registration for the asymmetric fence of rg__shm_notify(). */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0) {
        mine |= 2;
    }
    all = calloc((size_t)size, sizeof(*all));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d flags", size);
    }
    status = rg_boot_allgather(shm->super.boot, &mine, sizeof(mine), all, err);
    shm->super.attr.can_get = status == RG_OK && size > 1;
    for (i = 0; i < size && status == RG_OK; i++) {
        if (!(all[i] & 1) && shm->super.attr.can_get) {
            shm->super.attr.can_get = 0;
            shm->cma_off_rank = want ? i : -1;
        }
        asym &= (all[i] & 2) != 0;
    }
    shm->asym_fence = status == RG_OK && asym;
    free(all);
    return status;
}

/* ---- liveness --------------------------------------------------------- */

static int rg__shm_waits_on(const rg__shm_peer_t *p)
{
    return p->sendq != NULL || p->recvq != NULL || p->cur != NULL;
}

/* Fails the transport if a peer this rank waits on has died. Data a peer
 * wrote before it died is still delivered first. */
static rg_status_t rg__shm_check_peers(rg__shm_t *shm)
{
    rg__shm_peer_t *p;
    int             size = shm->super.size;
    int             any_wait = shm->anyq != NULL;
    int             found = 0, alive = 0, peer;

    for (peer = 0; peer < size; peer++) {
        p = &shm->peers[peer];
        if (peer == shm->super.rank || (!any_wait && !rg__shm_waits_on(p))) {
            continue;
        }
        if (!p->dead) {
            p->dead = rg_xport_pid_dead(atomic_load(&p->blk->pid));
        }
        found |= p->dead;
    }
    if (!found) {
        return RG_OK;
    }
    rg__shm_progress(&shm->super);
    for (peer = 0; peer < size; peer++) {
        p = &shm->peers[peer];
        if (peer == shm->super.rank) {
            continue;
        }
        if (p->dead && rg__shm_waits_on(p)) {
            rg_err_set(&shm->super.err, RG_ERR_PEER_DEAD,
                       "rank %d (pid %d) died while rank %d was waiting for it (shm)",
                       peer, (int)atomic_load(&p->blk->pid), shm->super.rank);
            return rg__shm_fail(shm, RG_ERR_PEER_DEAD);
        }
        alive += !p->dead;
    }
    if (shm->anyq != NULL && alive == 0) {
        rg_err_set(&shm->super.err, RG_ERR_PEER_DEAD,
                   "every other rank died while rank %d waited to receive from any "
                   "of them (shm)", shm->super.rank);
        return rg__shm_fail(shm, RG_ERR_PEER_DEAD);
    }
    return RG_OK;
}

static rg_status_t rg__shm_block(rg_xport_t *xp, uint64_t timeout_ns)
{
    rg__shm_t      *shm = rg__shm(xp);
    struct timespec ts;
    uint64_t        now, events;
    uint32_t        seq;
    rg_status_t     status;

    if (shm->failed != RG_OK) {
        return shm->failed;
    }
    now = rg_time_mono_ns();
    if (now - shm->live_check_ns >= RG__SHM_LIVENESS_NS) {
        shm->live_check_ns = now;
        status = rg__shm_check_peers(shm);
        if (status != RG_OK) {
            return status;
        }
    }

    /* Announce the sleep, then look once more: a peer that published before
     * it could see the flag is caught by this last look (see notify). */
    seq = atomic_load_explicit(&shm->me->doorbell, memory_order_acquire);
    atomic_store_explicit(&shm->me->sleeping, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (shm->asym_fence &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0) {
        /* Cannot happen once registered; never sleep on a doubt. */
        atomic_store_explicit(&shm->me->sleeping, 0, memory_order_relaxed);
        return RG_OK;
    }
    events = shm->events;
    status = rg__shm_progress(xp);
    if (status == RG_OK && events == shm->events) {
        ts.tv_sec  = (time_t)(timeout_ns / 1000000000ull);
        ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
        rg__shm_futex(&shm->me->doorbell, FUTEX_WAIT, seq, &ts);
    }
    atomic_store_explicit(&shm->me->sleeping, 0, memory_order_relaxed);
    return status;
}

/* ---- open and close --------------------------------------------------- */

/* Removes segments of earlier jobs whose launcher (the pid that starts the
 * job id) is gone: a job killed between creating and unlinking its segment
 * would otherwise leave it in /dev/shm until reboot. */
static void rg__shm_remove_stale(const char *own)
{
    struct dirent *e;
    DIR           *dir;
    char           path[300];
    char          *end;
    long           pid;

    dir = opendir("/dev/shm");
    if (dir == NULL) {
        return;
    }
    while ((e = readdir(dir)) != NULL) {
        if (strncmp(e->d_name, RG__SHM_PREFIX, strlen(RG__SHM_PREFIX)) != 0 ||
            strcmp(e->d_name, own + 1) == 0) {
            continue;
        }
        errno = 0;
        pid   = strtol(e->d_name + strlen(RG__SHM_PREFIX), &end, 10);
        if (errno != 0 || *end != '-' || pid <= 0 || pid > INT32_MAX) {
            continue;
        }
        if (rg_xport_pid_dead((pid_t)pid)) {
            snprintf(path, sizeof(path), "/%s", e->d_name);
            (void)shm_unlink(path);
        }
    }
    closedir(dir);
}

static rg_status_t rg__shm_layout(uint64_t nranks, uint64_t ring_size,
                                  uint64_t *rings_off_p, uint64_t *seg_size_p,
                                  rg_err_t *err)
{
    uint64_t rings_off, nrings, stride;

    rings_off = RG__SHM_PAGE +
                (nranks * RG__SHM_PAD + RG__SHM_PAGE - 1) / RG__SHM_PAGE * RG__SHM_PAGE;
    nrings    = nranks * (nranks - 1);
    stride    = RG__SHM_PAGE + ring_size;
    if (nrings > 0 && stride > ((uint64_t)INT64_MAX - rings_off) / nrings) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "a shm segment for %llu ranks with %llu-byte rings is too large",
                          (unsigned long long)nranks, (unsigned long long)ring_size);
    }
    *rings_off_p = rings_off;
    *seg_size_p  = rings_off + nrings * stride;
    return RG_OK;
}

/* Rank 0: creates, sizes and initializes the segment. */
static rg_status_t rg__shm_create(rg__shm_t *shm, rg_err_t *err)
{
    rg__shm_seg_hdr_t *hdr;
    void              *map;
    int                fd, rc;
    rg_status_t        status;

    rg__shm_remove_stale(shm->name);
    fd = shm_open(shm->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                "cannot create the shm segment %s", shm->name);
    }
    if (ftruncate(fd, (off_t)shm->seg_size) != 0) {
        status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                  "cannot size the shm segment %s to %zu bytes",
                                  shm->name, shm->seg_size);
        goto err_unlink;
    }
    /* Reserving the memory now turns a full /dev/shm into an error here
     * instead of a SIGBUS on first touch. */
    rc = posix_fallocate(fd, 0, (off_t)shm->seg_size);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
        status = rg_err_set_errno(err, RG_ERR_NOMEM, rc,
                                  "cannot reserve %zu bytes in /dev/shm for %s",
                                  shm->seg_size, shm->name);
        goto err_unlink;
    }
    map = mmap(NULL, shm->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                  "cannot map the shm segment %s", shm->name);
        goto err_unlink;
    }
    close(fd);
    shm->seg       = map;
    hdr            = map;
    hdr->version   = RG__SHM_VERSION;
    hdr->nranks    = (uint32_t)shm->super.size;
    hdr->ring_size = shm->ring_size;
    hdr->seg_size  = shm->seg_size;
    atomic_store_explicit(&hdr->magic, RG__SHM_MAGIC, memory_order_release);
    return RG_OK;

err_unlink:
    shm_unlink(shm->name);
    close(fd);
    return status;
}

/* Other ranks: maps the segment rank 0 made and checks it. */
static rg_status_t rg__shm_attach(rg__shm_t *shm, rg_err_t *err)
{
    rg__shm_seg_hdr_t *hdr;
    struct stat        st;
    uint64_t           rings_off, seg_size;
    void              *map;
    int                fd;
    rg_status_t        status;

    fd = shm_open(shm->name, O_RDWR, 0);
    if (fd < 0) {
        return rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                "cannot open the shm segment %s", shm->name);
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(rg__shm_seg_hdr_t)) {
        status = rg_err_set(err, RG_ERR_BOOTSTRAP,
                            "the shm segment %s is missing or too small", shm->name);
        goto err_close;
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                  "cannot map the shm segment %s", shm->name);
        goto err_close;
    }
    close(fd);
    shm->seg      = map;
    shm->seg_size = (size_t)st.st_size;
    hdr           = map;
    /* Rank 0's ring size rules: the others follow the segment. */
    if (atomic_load_explicit(&hdr->magic, memory_order_acquire) != RG__SHM_MAGIC ||
        hdr->version != RG__SHM_VERSION || hdr->nranks != (uint32_t)shm->super.size ||
        hdr->seg_size != (uint64_t)st.st_size ||
        rg__shm_layout(hdr->nranks, hdr->ring_size, &rings_off, &seg_size, err) != RG_OK ||
        seg_size != hdr->seg_size) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "the shm segment %s does not match this job (%d ranks)",
                          shm->name, shm->super.size);
    }
    shm->ring_size = hdr->ring_size;
    shm->mask      = hdr->ring_size - 1;
    return RG_OK;

err_close:
    close(fd);
    return status;
}

/* Every rank contributes its step's status; a failure anywhere fails the
 * open on every rank, rather than leaving the others to hang. */
static rg_status_t rg__shm_agree(rg__shm_t *shm, rg_status_t mine, const char *step,
                                 rg_err_t *err)
{
    int32_t     code = (int32_t)mine;
    int32_t    *all;
    rg_status_t status;
    int         i;

    all = calloc((size_t)shm->super.size, sizeof(*all));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d statuses",
                          shm->super.size);
    }
    status = rg_boot_allgather(shm->super.boot, &code, sizeof(code), all, err);
    if (status == RG_OK && mine == RG_OK) {
        for (i = 0; i < shm->super.size; i++) {
            if (all[i] != RG_OK) {
                status = rg_err_set(err, RG_ERR_BOOTSTRAP,
                                    "rank %d failed to %s the shm segment %s (%s)", i,
                                    step, shm->name, rg_status_name((rg_status_t)all[i]));
                break;
            }
        }
    }
    free(all);
    return mine != RG_OK ? mine : status;
}

static void rg__shm_close(rg_xport_t *xp)
{
    rg__shm_t *shm = rg__shm(xp);

    if (shm->seg != NULL) {
        munmap(shm->seg, shm->seg_size);
    }
    free(shm->staged);
    free(shm->peers);
    free(shm);
}

static rg_status_t rg__shm_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                                rg_err_t *err)
{
    rg__shm_config_t cfg;
    rg__shm_t       *shm;
    rg__shm_peer_t  *p;
    unsigned char   *rings;
    uint64_t         rings_off, seg_size, stride;
    int              rank = rg_boot_rank(boot), size = rg_boot_size(boot);
    int              peer, created = 0;
    rg_status_t      status, mine = RG_OK;
    rg_err_t         mine_err;

    (void)name;  /* Always "shm": the transport has no variants. */
    status = rg_config_load(&rg_xport_shm_config_table, &cfg, err);
    if (status != RG_OK) {
        return status;
    }
    if (cfg.ring_size < RG__SHM_RING_MIN || cfg.ring_size > RG__SHM_RING_MAX ||
        (cfg.ring_size & (cfg.ring_size - 1)) != 0) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_SHM_RING_SIZE=%zu: must be a power of two from 4KiB to 1GiB",
                          cfg.ring_size);
    }
    status = rg__shm_layout((uint64_t)size, cfg.ring_size, &rings_off, &seg_size, err);
    if (status != RG_OK) {
        return status;
    }
    shm   = calloc(1, sizeof(*shm));
    if (shm == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the shm transport");
    }
    shm->peers  = calloc((size_t)size, sizeof(*shm->peers));
    shm->staged = calloc((size_t)size, sizeof(*shm->staged));
    if (shm->peers == NULL || shm->staged == NULL) {
        status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d shm peers", size);
        goto err_free;
    }
    shm->super.ops            = &rg_xport_shm_ops;
    shm->super.attr.name      = "shm";
    shm->super.attr.same_host = 1;
    shm->super.attr.max_msg_size = SIZE_MAX;
    shm->super.boot           = boot;
    shm->super.rank           = rank;
    shm->super.size           = size;
    shm->ring_size            = cfg.ring_size;
    shm->mask                 = cfg.ring_size - 1;
    shm->seg_size             = (size_t)seg_size;
    /* Every rank opens the same transports in the same order, so the count
     * of opens names the same segment on all of them (the protocol layer
     * may open a second instance for bulk data). */
    snprintf(shm->name, sizeof(shm->name), "/" RG__SHM_PREFIX "%s-%u", rg_boot_job_id(boot),
             rg__shm_opens++);

    /* Step 1: rank 0 creates the segment; the others wait for it. */
    rg_err_clear(&mine_err);
    if (rank == 0) {
        mine    = rg__shm_create(shm, &mine_err);
        created = mine == RG_OK;
    }
    status = rg__shm_agree(shm, mine, "create", err);
    if (status != RG_OK) {
        if (mine != RG_OK && err != NULL) {
            *err = mine_err;
        }
        goto err_unlink;
    }

    /* Step 2: the others map it; every rank records its pid. Once all have
     * mapped it, rank 0 removes the name, so even a crash of every rank
     * cannot leave the segment behind. */
    if (rank != 0) {
        mine = rg__shm_attach(shm, &mine_err);
    }
    if (mine == RG_OK) {
        shm->me = (rg__shm_rank_blk_t *)(shm->seg + RG__SHM_PAGE) + rank;
        atomic_store(&shm->me->pid, (int32_t)getpid());
        shm->me->cma_probe = (uint64_t)(uintptr_t)&rg__shm_cma_word;
    }
    status = rg__shm_agree(shm, mine, "map", err);
    if (created) {
        shm_unlink(shm->name);
        created = 0;
    }
    if (status != RG_OK) {
        if (mine != RG_OK && err != NULL) {
            *err = mine_err;
        }
        goto err_unmap;
    }

    stride = RG__SHM_PAGE + shm->ring_size;
    rings  = shm->seg + rings_off;
    for (peer = 0; peer < size; peer++) {
        uint64_t tx_index, rx_index;

        if (peer == rank) {
            continue;
        }
        p        = &shm->peers[peer];
        tx_index = (uint64_t)rank * (uint64_t)(size - 1) + (uint64_t)(peer < rank ? peer : peer - 1);
        rx_index = (uint64_t)peer * (uint64_t)(size - 1) + (uint64_t)(rank < peer ? rank : rank - 1);
        p->tx      = (rg__shm_ring_ctl_t *)(rings + tx_index * stride);
        p->tx_data = rings + tx_index * stride + RG__SHM_PAGE;
        p->rx      = (rg__shm_ring_ctl_t *)(rings + rx_index * stride);
        p->rx_data = rings + rx_index * stride + RG__SHM_PAGE;
        p->blk     = (rg__shm_rank_blk_t *)(shm->seg + RG__SHM_PAGE) + peer;
    }
    shm->cma_off_rank = -1;
    status = rg__shm_cma_probe(shm, cfg.cma != 0, err);
    if (status != RG_OK) {
        goto err_unmap;
    }
    /* A send of up to this many bytes completes at post when its ring has
     * room, which is the case unless the receiver lags. */
    shm->super.attr.inject_size = shm->ring_size - RG__SHM_HDR_LEN;
    /* Windows are written with process_vm_writev: where the probe failed on
     * some rank (ptrace rules, seccomp, RG_SHM_CMA=0), every rank lacks them. */
    if (!shm->super.attr.can_get) {
        shm->super.attr.why_not[RG_XPORT_OPT_WIN] =
            cfg.cma == 0 ? "one-sided writes use cross-memory attach (process_vm_writev), "
                           "which RG_SHM_CMA=0 turns off"
                         : "one-sided writes use cross-memory attach (process_vm_writev), "
                           "which a rank could not use here (ptrace rules or a seccomp "
                           "filter; see single_copy_failed_rank in the transport info)";
    }
    *xp_p = &shm->super;
    return RG_OK;

err_unlink:
    if (created) {
        shm_unlink(shm->name);
    }
err_unmap:
    if (shm->seg != NULL) {
        munmap(shm->seg, shm->seg_size);
    }
err_free:
    free(shm->staged);
    free(shm->peers);
    free(shm);
    return status;
}

static rg_status_t rg__shm_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    rg__shm_t *shm = rg__shm(xp);
    rg_json_t  js;

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_uint(&js, "ring_size", shm->ring_size);
    rg_json_kv_uint(&js, "segment_size", shm->seg_size);
    rg_json_kv_string(&js, "segment", shm->name);
    rg_json_kv_bool(&js, "single_copy", xp->attr.can_get);
    rg_json_kv_bool(&js, "asymmetric_fence", shm->asym_fence);
    if (shm->cma_off_rank >= 0) {
        rg_json_kv_int(&js, "single_copy_failed_rank", shm->cma_off_rank);
    }
    rg_json_object_end(&js);
    return js.status;
}

const rg_xport_ops_t rg_xport_shm_ops = {
    .name        = "shm",
    .description = "ranks on one host: lock-free rings in a POSIX shared segment",
    .open        = rg__shm_open,
    .close       = rg__shm_close,
    .isend       = rg__shm_isend,
    .irecv       = rg__shm_irecv,
    .progress    = rg__shm_progress,
    .block       = rg__shm_block,
    .info_json   = rg__shm_info_json,
    .get         = rg__shm_get,
    .put         = rg__shm_put,
    .inject      = rg__shm_inject,
    .isend_list  = rg__shm_isend_list,
    .win_create  = rg__shm_win_create,
    .win_write   = rg__shm_win_write,
    .win_free    = rg__shm_win_free,
};
