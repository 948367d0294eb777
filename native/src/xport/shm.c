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
 *
 * This file holds the data path and the ops table; shm_open.c makes and
 * maps the segment, opens and closes the transport; shm_win.c holds the
 * one-sided operations and memory windows; shm_int.h is their private
 * header.
 */
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/timer.h"
#include "xport/shm_int.h"
#include "xport/xport.h"
#include "xport/xreq_queue.h"

/* Peers are checked for liveness at most this often while waiting. */
#define RG__SHM_LIVENESS_NS 50000000ull


/* Ring bytes of a message of n payload bytes: header and payload rounded up
 * to a cache line, so that the sender never writes the line the receiver
 * is reading (two messages in one line would bounce it between the cores at
 * every message), and a header never wraps around the ring's end. */
#define RG__SHM_SLOT(n)    ((RG__SHM_HDR_LEN + (uint64_t)(n) + 63u) & ~(uint64_t)63u)

/* Request scratch: priv[0] = bytes of the stream moved (send: header
 * included; receive: after the header); priv[1] = receive post order. */
#define RG__SHM_POS(req) ((req)->priv[0])
#define RG__SHM_SEQ(req) ((req)->priv[1])

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
rg_status_t rg__shm_fail(rg__shm_t *shm, rg_status_t status)
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

/* Publishes the ring's head moved since `*start` and rings the peer. */
static inline void rg__shm_publish_head(rg__shm_t *shm, rg__shm_peer_t *p, uint64_t *start)
{
    if (p->tx_head != *start) {
        atomic_store_explicit(&p->tx->head, p->tx_head, memory_order_release);
        rg__shm_notify(shm, p->blk);
        shm->events++;
        *start = p->tx_head;
    }
}

/* Writes as much of req as the ring has room for; returns 1 once all of it
 * (header, payload, padding) is in the ring. The payload goes in chunks of
 * shm->chunk bytes, each published before the next is copied, and the room
 * is looked at again after each: a message larger than the ring streams
 * with the receiver copying one chunk out while this side copies the next
 * in. Copying all the room at once, then publishing, makes the two sides
 * take turns whenever the message is a multiple of the ring (the receiver
 * frees the whole ring as this side fills it, then waits for it all): about
 * a quarter more time per byte at 64 KiB, 128 KiB, ... over a 64 KiB ring,
 * a step no LogGP model follows. */
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
    while (pos < RG__SHM_HDR_LEN + req->len && room > 0) {
        n = RG__SHM_HDR_LEN + req->len - pos;
        n = n < room ? n : room;
        n = n < shm->chunk ? n : shm->chunk;
        rg__shm_copy_in(shm, p->tx_data, p->tx_head,
                        (const unsigned char *)req->buf + (pos - RG__SHM_HDR_LEN), n);
        p->tx_head += n;
        room       -= n;
        pos        += n;
        req->done   = pos - RG__SHM_HDR_LEN;
        if (pos < RG__SHM_HDR_LEN + req->len) {
            rg__shm_publish_head(shm, p, &start);
            if (room < RG__SHM_HDR_LEN + req->len - pos) {
                p->tx_tail_seen = atomic_load_explicit(&p->tx->tail, memory_order_acquire);
                room = shm->ring_size - (p->tx_head - p->tx_tail_seen);
            }
        }
    }
    if (pos >= RG__SHM_HDR_LEN + req->len && pos < total) {
        /* The padding carries no data; the index just moves past it. */
        n = total - pos;
        n = n < room ? n : room;
        p->tx_head += n;
        pos        += n;
    }
    rg__shm_publish_head(shm, p, &start);
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
 * when the message is complete. It copies in chunks of shm->chunk bytes and
 * frees each (publishes the tail) before the next, so that the sender can
 * refill the ring while this side still copies (see rg__shm_push). */
static int rg__shm_pull(rg__shm_t *shm, rg__shm_peer_t *p)
{
    rg_xreq_t *req   = p->cur;
    uint64_t   total = RG__SHM_SLOT(req->msg_len) - RG__SHM_HDR_LEN;
    uint64_t   pos   = RG__SHM_POS(req);
    uint64_t   keep  = req->msg_len < req->len ? req->msg_len : req->len;
    uint64_t   n, c;

    for (;;) {
        n = rg__shm_avail(p, total - pos);
        n = n < total - pos ? n : total - pos;
        if (n == 0) {
            break;
        }
        n = n < shm->chunk ? n : shm->chunk;
        if (pos < keep) {
            c = keep - pos < n ? keep - pos : n;
            rg__shm_copy_out(shm, p->rx_data, p->rx_tail, (unsigned char *)req->buf + pos,
                             c);
        }
        p->rx_tail += n;
        pos        += n;
        atomic_store_explicit(&p->rx->tail, p->rx_tail, memory_order_release);
        p->rx_tail_pub = p->rx_tail;
        rg__shm_notify(shm, p->blk);
        shm->events++;
        if (pos == total) {
            break;
        }
    }
    if (p->rx_tail != p->rx_tail_pub) {
        /* The header taken by rg__shm_bind, when nothing of the payload was
         * there yet. */
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
        char others[96];

        rg_err_set(&shm->super.err, RG_ERR_PEER_DEAD,
                   "every other rank died (%s) while rank %d waited to receive from any "
                   "of them (shm)",
                   rg_err_others(others, sizeof(others), shm->super.size, shm->super.rank),
                   shm->super.rank);
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
