/*
 * railgauge: the "tcp" transport: one non-blocking TCP connection per pair
 * of ranks, TCP_NODELAY, bindable to one local address so that a rail can be
 * pinned to one network path.
 *
 * Setup: every rank listens on its address, the addresses are allgathered
 * over the bootstrap, rank i connects to every j < i and accepts from every
 * j > i; a hello frame names the connecting rank. The address is RG_TCP_ADDR,
 * or the one this host has on interface RG_TCP_IFACE and/or inside subnet
 * RG_TCP_SUBNET (one setting for ranks on many hosts or network namespaces,
 * each of which finds its own address), else 127.0.0.1. A peer that announces
 * a loopback address from another host or network namespace is refused at
 * once; a peer that cannot be reached fails the open after at most
 * RG_TCP_CONNECT_TIMEOUT.
 *
 * Framing: an 8-byte little-endian length, then the payload. Sends write
 * header and payload with one sendmsg (keeping the state of partial writes);
 * receives read the header, then the payload straight into the posted buffer.
 *
 * The transport is not thread-safe: one thread drives it, as xport.h says.
 *
 * This file holds the data path and the ops table; tcp_open.c reads the
 * settings, chooses the address, sets the connections up, opens and closes
 * the transport; tcp_int.h is their private header.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "base/timer.h"
#include "xport/tcp_int.h"
#include "xport/uring.h"
#include "xport/xport.h"
#include "xport/xreq_queue.h"

#define RG__TCP_DISCARD_LEN    ((size_t)65536)

/* Ends the transport: pending requests complete with status and progress
 * returns it from now on. The message is already in super.err. */
static rg_status_t rg__tcp_fail(rg__tcp_t *tcp, rg_status_t status)
{
    rg__tcp_peer_t *p;
    int             i;

    tcp->failed = status;
    for (i = 0; i < tcp->super.size; i++) {
        p = &tcp->peers[i];
        rg__xreq_queue_fail(&p->sendq, &p->sendq_last, status);
        rg__xreq_queue_fail(&p->recvq, &p->recvq_last, status);
        if (p->cur != NULL) {
            p->cur->status = status;
            p->cur = NULL;
        }
    }
    rg__xreq_queue_fail(&tcp->anyq, &tcp->anyq_last, status);
    return status;
}

static rg_status_t rg__tcp_peer_gone(rg__tcp_t *tcp, int peer, int errnum,
                                     const char *doing)
{
    rg__tcp_peer_t *p = &tcp->peers[peer];

    if (errnum == 0) {
        rg_err_set(&tcp->super.err, RG_ERR_PEER_DEAD,
                   "rank %d (pid %d) closed its connection while rank %d was %s "
                   "(tcp %s)", peer, p->pid, tcp->super.rank, doing, p->where);
    } else {
        rg_err_set_errno(&tcp->super.err, RG_ERR_PEER_DEAD, errnum,
                         "rank %d (pid %d) dropped its connection while rank %d was "
                         "%s (tcp %s)", peer, p->pid, tcp->super.rank, doing, p->where);
    }
    return rg__tcp_fail(tcp, RG_ERR_PEER_DEAD);
}

static rg_status_t rg__tcp_io_error(rg__tcp_t *tcp, int peer, int errnum,
                                    const char *doing)
{
    if (errnum == EPIPE || errnum == ECONNRESET || errnum == ETIMEDOUT ||
        errnum == EHOSTUNREACH || errnum == ENETUNREACH || errnum == ENOTCONN) {
        return rg__tcp_peer_gone(tcp, peer, errnum, doing);
    }
    rg_err_set_errno(&tcp->super.err, RG_ERR_IO, errnum, "%s rank %d (tcp %s) failed",
                     doing, peer, tcp->peers[peer].where);
    return rg__tcp_fail(tcp, RG_ERR_IO);
}

/* ---- sending ---------------------------------------------------------- */

/* Bytes went into p's socket: from now on they may be in flight, and the
 * path is checked until the peer's host has acknowledged all of them. */
static void rg__tcp_wrote(rg__tcp_t *tcp, rg__tcp_peer_t *p)
{
    if (tcp->dead_after_ns != 0 && p->wrote_ns == 0) {
        p->wrote_ns = rg_time_mono_ns();
        tcp->unsure++;
    }
}

/* Returns RG_OK (possibly with sends still queued for lack of socket
 * buffer) or the error that ended the transport. */
static rg_status_t rg__tcp_progress_send(rg__tcp_t *tcp, int peer, rg__tcp_peer_t *p)
{
    struct msghdr msg;
    struct iovec  iov[2];
    rg_xreq_t    *req;
    uint64_t      pos, total;
    ssize_t       n;

    while ((req = p->sendq) != NULL) {
        total = RG__TCP_HDR_LEN + (uint64_t)req->len;
        pos   = RG__TCP_POS(req);
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = iov;
        if (pos < RG__TCP_HDR_LEN) {
            iov[0].iov_base = (unsigned char *)&RG__TCP_AUX(req) + pos;
            iov[0].iov_len  = RG__TCP_HDR_LEN - pos;
            iov[1].iov_base = req->buf;
            iov[1].iov_len  = req->len;
            msg.msg_iovlen  = req->len > 0 ? 2 : 1;
        } else {
            iov[0].iov_base = (unsigned char *)req->buf + (pos - RG__TCP_HDR_LEN);
            iov[0].iov_len  = total - pos;
            msg.msg_iovlen  = 1;
        }
        /* MSG_NOSIGNAL: a dead peer gives EPIPE here, never SIGPIPE. */
        n = sendmsg(p->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return RG_OK;
            }
            return rg__tcp_io_error(tcp, peer, errno, "sending to");
        }
        if (n > 0) {
            rg__tcp_wrote(tcp, p);
        }
        pos             += (uint64_t)n;
        RG__TCP_POS(req) = pos;
        req->done        = pos > RG__TCP_HDR_LEN ? pos - RG__TCP_HDR_LEN : 0;
        if (pos < total) {
            return RG_OK;
        }
        rg__xreq_queue_pop(&p->sendq, &p->sendq_last);
        req->status = RG_OK;
    }
    return RG_OK;
}

static rg_status_t rg__tcp_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__tcp_t      *tcp = rg__tcp(xp);
    rg__tcp_peer_t *p   = &tcp->peers[req->peer];
    uint64_t        hdr = htole64((uint64_t)req->len);

    if (tcp->failed != RG_OK) {
        req->status = tcp->failed;
        return tcp->failed;
    }
    memcpy(&RG__TCP_AUX(req), &hdr, sizeof(hdr));
    rg__xreq_queue_push(&p->sendq, &p->sendq_last, req);
    /* Alone in the queue, the send goes out now; the socket buffer usually
     * takes it whole, completing it at post time. */
    if (p->sendq == req) {
        return rg__tcp_progress_send(tcp, req->peer, p);
    }
    return RG_OK;
}

/* ---- list posts --------------------------------------------------------- */

/* iovecs of one peer's gathered sendmsg: a header and a payload a message. */
#define RG__TCP_LIST_IOV 64

/* Advances p's send queue by n bytes that a gathered sendmsg wrote,
 * completing the messages it wrote whole. */
static void rg__tcp_sent(rg__tcp_peer_t *p, size_t n)
{
    rg_xreq_t *req;
    uint64_t   total, pos, take;

    while (n > 0 && (req = p->sendq) != NULL) {
        total = RG__TCP_HDR_LEN + (uint64_t)req->len;
        pos   = RG__TCP_POS(req);
        take  = total - pos < n ? total - pos : n;
        pos  += take;
        n    -= (size_t)take;
        RG__TCP_POS(req) = pos;
        req->done        = pos > RG__TCP_HDR_LEN ? pos - RG__TCP_HDR_LEN : 0;
        if (pos < total) {
            return;
        }
        rg__xreq_queue_pop(&p->sendq, &p->sendq_last);
        req->status = RG_OK;
    }
}

/* Describes the messages queued for p, from the head (none of them started:
 * p's queue was empty before the list), in one msghdr over iov. */
static void rg__tcp_gather(rg__tcp_peer_t *p, struct msghdr *msg, struct iovec *iov)
{
    rg_xreq_t *req;
    size_t     k = 0;

    memset(msg, 0, sizeof(*msg));
    for (req = p->sendq; req != NULL && k + 2 <= RG__TCP_LIST_IOV; req = req->next) {
        iov[k].iov_base = &RG__TCP_AUX(req);
        iov[k].iov_len  = RG__TCP_HDR_LEN;
        k++;
        if (req->len > 0) {
            iov[k].iov_base = req->buf;
            iov[k].iov_len  = req->len;
            k++;
        }
    }
    msg->msg_iov    = iov;
    msg->msg_iovlen = k;
}

static void rg__tcp_list_done(void *ctx, uint64_t user_data, int32_t res)
{
    rg__tcp_t *tcp = ctx;

    tcp->lres[user_data] = res;
}

static rg_status_t rg__tcp_list_room(rg__tcp_t *tcp, size_t n)
{
    struct msghdr *m;
    struct iovec  *v;
    int32_t       *r;
    int           *q;

    if (n <= tcp->lcap) {
        return RG_OK;
    }
    m = realloc(tcp->lmsg, n * sizeof(*m));
    if (m != NULL) {
        tcp->lmsg = m;
    }
    v = realloc(tcp->liov, n * RG__TCP_LIST_IOV * sizeof(*v));
    if (v != NULL) {
        tcp->liov = v;
    }
    r = realloc(tcp->lres, n * sizeof(*r));
    if (r != NULL) {
        tcp->lres = r;
    }
    q = realloc(tcp->lpeer, n * sizeof(*q));
    if (q != NULL) {
        tcp->lpeer = q;
    }
    if (m == NULL || v == NULL || r == NULL || q == NULL) {
        return rg_err_set(&tcp->super.err, RG_ERR_NOMEM,
                          "cannot grow the list-post scratch to %zu peers", n);
    }
    tcp->lcap = n;
    return RG_OK;
}

/*
 * A list post (ops->isend_list). Every message is queued first, in order;
 * then each peer whose queue was empty gets one sendmsg gathering all its
 * messages of the list (header, payload, header, ...), and the sendmsg calls
 * of all those peers go to the kernel together: one io_uring_enter that
 * submits them and reaps their completions (MSG_DONTWAIT: each completes at
 * once, with the bytes the socket took or EAGAIN). Without a ring, one
 * sendmsg per peer. Whatever a socket did not take stays queued, as isend
 * leaves it, for progress to send.
 */
static rg_status_t rg__tcp_isend_list(rg_xport_t *xp, rg_xreq_t *reqs, size_t n)
{
    rg__tcp_t      *tcp = rg__tcp(xp);
    rg__tcp_peer_t *p;
    rg_status_t     status;
    uint64_t        hdr;
    size_t          i, k, nfresh = 0;
    ssize_t         sent;

    if (tcp->failed != RG_OK) {
        for (i = 0; i < n; i++) {
            reqs[i].status = tcp->failed;
        }
        return tcp->failed;
    }
    status = rg__tcp_list_room(tcp, n);
    if (status != RG_OK) {
        for (i = 0; i < n; i++) {
            reqs[i].status = status;
        }
        return status;
    }
    for (i = 0; i < n; i++) {
        p   = &tcp->peers[reqs[i].peer];
        hdr = htole64((uint64_t)reqs[i].len);
        memcpy(&RG__TCP_AUX(&reqs[i]), &hdr, sizeof(hdr));
        if (p->sendq == NULL) {
            tcp->lpeer[nfresh++] = reqs[i].peer;
        }
        rg__xreq_queue_push(&p->sendq, &p->sendq_last, &reqs[i]);
    }
    for (k = 0; k < nfresh; k++) {
        rg__tcp_gather(&tcp->peers[tcp->lpeer[k]], &tcp->lmsg[k],
                       &tcp->liov[k * RG__TCP_LIST_IOV]);
        tcp->lres[k] = -EAGAIN;
    }
    if (tcp->ring.fd >= 0 && nfresh > 1) {
        for (k = 0; k < nfresh; k++) {
            if (rg__uring_sendmsg(&tcp->ring, tcp->peers[tcp->lpeer[k]].fd, &tcp->lmsg[k],
                                  MSG_NOSIGNAL | MSG_DONTWAIT, k) != 0) {
                status = rg__uring_run(&tcp->ring, rg__tcp_list_done, tcp, &tcp->super.err);
                if (status != RG_OK) {
                    return rg__tcp_fail(tcp, status);
                }
                k--;    /* the ring is empty now: this one again */
            }
        }
        status = rg__uring_run(&tcp->ring, rg__tcp_list_done, tcp, &tcp->super.err);
        if (status != RG_OK) {
            return rg__tcp_fail(tcp, status);
        }
    } else {
        for (k = 0; k < nfresh; k++) {
            do {
                sent = sendmsg(tcp->peers[tcp->lpeer[k]].fd, &tcp->lmsg[k],
                               MSG_NOSIGNAL | MSG_DONTWAIT);
            } while (sent < 0 && errno == EINTR);
            tcp->lres[k] = sent >= 0 ? (int32_t)sent : -errno;
        }
    }
    for (k = 0; k < nfresh; k++) {
        if (tcp->lres[k] >= 0) {
            if (tcp->lres[k] > 0) {
                rg__tcp_wrote(tcp, &tcp->peers[tcp->lpeer[k]]);
            }
            rg__tcp_sent(&tcp->peers[tcp->lpeer[k]], (size_t)tcp->lres[k]);
        } else if (tcp->lres[k] != -EAGAIN && tcp->lres[k] != -EWOULDBLOCK &&
                   tcp->lres[k] != -EINTR) {
            return rg__tcp_io_error(tcp, tcp->lpeer[k], -tcp->lres[k], "sending to");
        }
    }
    return RG_OK;
}

/* ---- receiving -------------------------------------------------------- */

static rg_xreq_t *rg__tcp_candidate(rg__tcp_t *tcp, rg__tcp_peer_t *p, int *is_any)
{
    rg_xreq_t *spec = p->recvq;
    rg_xreq_t *any  = tcp->anyq;

    if (spec != NULL && (any == NULL || RG__TCP_AUX(spec) < RG__TCP_AUX(any))) {
        *is_any = 0;
        return spec;
    }
    *is_any = 1;
    return any;
}

static int rg__tcp_all_closed(const rg__tcp_t *tcp)
{
    int i;

    for (i = 0; i < tcp->super.size; i++) {
        if (i != tcp->super.rank && !tcp->peers[i].closed) {
            return 0;
        }
    }
    return 1;
}

/* EOF between messages: fatal only if something waits for this peer. */
static rg_status_t rg__tcp_eof(rg__tcp_t *tcp, int peer, rg__tcp_peer_t *p)
{
    p->closed = 1;
    if (p->recvq != NULL || p->sendq != NULL) {
        return rg__tcp_peer_gone(tcp, peer, 0, "receiving from it");
    }
    if (tcp->anyq != NULL && rg__tcp_all_closed(tcp)) {
        rg_err_set(&tcp->super.err, RG_ERR_PEER_DEAD,
                   "every other rank closed its connection (the last: rank %d) while "
                   "rank %d waited to receive from any of them (tcp)", peer,
                   tcp->super.rank);
        return rg__tcp_fail(tcp, RG_ERR_PEER_DEAD);
    }
    return RG_OK;
}

/* Reads at most len bytes; returns bytes read, 0 for "try later", and sets
 * *status on EOF or an error. */
static size_t rg__tcp_read(rg__tcp_t *tcp, int peer, void *buf, size_t len,
                           int mid_message, rg_status_t *status)
{
    rg__tcp_peer_t *p = &tcp->peers[peer];
    ssize_t         n;

    for (;;) {
        n = recv(p->fd, buf, len, MSG_DONTWAIT);
        if (n > 0) {
            return (size_t)n;
        }
        if (n == 0) {
            *status = mid_message ? rg__tcp_peer_gone(tcp, peer, 0, "receiving a message")
                                  : rg__tcp_eof(tcp, peer, p);
            return 0;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            *status = rg__tcp_io_error(tcp, peer, errno, "receiving from");
        }
        return 0;
    }
}

/* Moves every message of peer that has a receive waiting for it. Sets
 * *completed when at least one receive finished. */
static rg_status_t rg__tcp_progress_recv(rg__tcp_t *tcp, int peer, rg__tcp_peer_t *p,
                                         int *completed)
{
    rg_status_t status = RG_OK;
    rg_xreq_t  *req;
    uint64_t    len, pos, keep, want;
    size_t      n;
    int         is_any;

    for (;;) {
        if (p->cur == NULL) {
            req = rg__tcp_candidate(tcp, p, &is_any);
            if (req == NULL) {
                return RG_OK;
            }
            if (p->closed) {
                /* Nothing more can come: fatal for a receive naming this peer. */
                return is_any ? RG_OK : rg__tcp_eof(tcp, peer, p);
            }
            while (p->hdr_got < RG__TCP_HDR_LEN) {
                n = rg__tcp_read(tcp, peer, p->hdr + p->hdr_got,
                                 RG__TCP_HDR_LEN - p->hdr_got, p->hdr_got > 0, &status);
                if (n == 0) {
                    return status;
                }
                p->hdr_got += n;
            }
            if (is_any) {
                rg__xreq_queue_pop(&tcp->anyq, &tcp->anyq_last);
            } else {
                rg__xreq_queue_pop(&p->recvq, &p->recvq_last);
            }
            memcpy(&len, p->hdr, sizeof(len));
            p->hdr_got       = 0;
            p->cur           = req;
            req->source      = peer;
            req->msg_len     = (size_t)le64toh(len);
            RG__TCP_POS(req) = 0;
        }
        req  = p->cur;
        keep = req->msg_len < req->len ? req->msg_len : req->len;
        pos  = RG__TCP_POS(req);
        while (pos < req->msg_len) {
            if (pos < keep) {
                n = rg__tcp_read(tcp, peer, (unsigned char *)req->buf + pos, keep - pos, 1,
                                 &status);
            } else {
                if (tcp->discard == NULL) {
                    tcp->discard = malloc(RG__TCP_DISCARD_LEN);
                    if (tcp->discard == NULL) {
                        rg_err_set(&tcp->super.err, RG_ERR_NOMEM,
                                   "cannot allocate a buffer to drop a truncated message");
                        return rg__tcp_fail(tcp, RG_ERR_NOMEM);
                    }
                }
                want = req->msg_len - pos;
                n = rg__tcp_read(tcp, peer, tcp->discard,
                                 want < RG__TCP_DISCARD_LEN ? want : RG__TCP_DISCARD_LEN, 1,
                                 &status);
            }
            if (n == 0) {
                RG__TCP_POS(req) = pos;
                req->done        = pos < keep ? pos : keep;
                return status;
            }
            pos += n;
        }
        p->cur      = NULL;
        req->done   = keep;
        req->status = req->msg_len > req->len ? RG_ERR_TRUNCATED : RG_OK;
        *completed  = 1;
    }
}

static rg_status_t rg__tcp_irecv(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__tcp_t      *tcp = rg__tcp(xp);
    rg__tcp_peer_t *p;
    int             completed = 0;

    if (tcp->failed != RG_OK) {
        req->status = tcp->failed;
        return tcp->failed;
    }
    RG__TCP_AUX(req) = tcp->post_seq++;
    if (req->peer == RG_XPORT_ANY_SOURCE) {
        if (rg__tcp_all_closed(tcp) && tcp->super.size > 1) {
            rg_err_set(&tcp->super.err, RG_ERR_PEER_DEAD,
                       "receive from any rank: every other rank has closed its "
                       "connection (tcp)");
            req->status = RG_ERR_PEER_DEAD;
            return RG_ERR_PEER_DEAD;
        }
        rg__xreq_queue_push(&tcp->anyq, &tcp->anyq_last, req);
        return RG_OK;
    }
    p = &tcp->peers[req->peer];
    rg__xreq_queue_push(&p->recvq, &p->recvq_last, req);
    if (p->cur == NULL && p->recvq == req) {
        return rg__tcp_progress_recv(tcp, req->peer, p, &completed);
    }
    return RG_OK;
}

/* ---- progress and blocking --------------------------------------------- */

/* Dead paths (RG_TCP_DEAD_AFTER). A link, switch port or host that fails
 * leaves TCP retransmitting for a quarter of an hour before the socket
 * errs. The peer's kernel acknowledges every segment it gets, whether the
 * peer process reads or not (a full receive buffer answers window probes),
 * so bytes in flight that nothing acknowledges for DEAD_AFTER mean the path
 * is gone: TCP_INFO says so (tcpi_unacked, tcpi_last_ack_recv), checked a
 * few times per DEAD_AFTER for the peers written to since their last
 * check found everything acknowledged. */
static rg_status_t rg__tcp_check_paths(rg__tcp_t *tcp, uint64_t now)
{
    rg__tcp_peer_t *p;
    struct tcp_info ti;
    socklen_t       len;
    uint64_t        quiet_ms, dead_ms = tcp->dead_after_ns / 1000000u;
    int             peer;

    for (peer = 0; peer < tcp->super.size && tcp->unsure > 0; peer++) {
        p = &tcp->peers[peer];
        if (p->wrote_ns == 0) {
            continue;
        }
        memset(&ti, 0, sizeof(ti));
        len = sizeof(ti);
        if (getsockopt(p->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) {
            continue;
        }
        if (ti.tcpi_unacked == 0) {
            if (p->sendq == NULL) {
                p->wrote_ns = 0;
                tcp->unsure--;
            } else {
                p->wrote_ns = now;  /* all acknowledged: the path is alive now */
            }
            continue;
        }
        /* Quiet since the later of the last acknowledgement and the first
         * write after everything was acknowledged (an idle connection's last
         * acknowledgement may be old). */
        quiet_ms = (now - p->wrote_ns) / 1000000u;
        if (ti.tcpi_last_ack_recv < quiet_ms) {
            quiet_ms = ti.tcpi_last_ack_recv;
        }
        if (quiet_ms >= dead_ms) {
            rg_err_set(&tcp->super.err, RG_ERR_PEER_DEAD,
                       "rank %d (tcp %s) acknowledged nothing for %llu ms with %u segments "
                       "in flight from rank %d: the path to it is down (RG_TCP_DEAD_AFTER)",
                       peer, p->where, (unsigned long long)quiet_ms, ti.tcpi_unacked,
                       tcp->super.rank);
            return rg__tcp_fail(tcp, RG_ERR_PEER_DEAD);
        }
    }
    return RG_OK;
}

static rg_status_t rg__tcp_progress(rg_xport_t *xp)
{
    rg__tcp_t      *tcp = rg__tcp(xp);
    rg__tcp_peer_t *p;
    rg_status_t     status;
    int             size = xp->size;
    int             i, peer, completed;

    if (tcp->failed != RG_OK) {
        return tcp->failed;
    }
    for (i = 0; i < size; i++) {
        /* ANY_SOURCE receives take the first peer with a message, scanning
         * from just after the peer that matched last, so no sender starves. */
        peer = (tcp->any_next + i) % size;
        if (peer == xp->rank) {
            continue;
        }
        p = &tcp->peers[peer];
        if (p->sendq != NULL) {
            status = rg__tcp_progress_send(tcp, peer, p);
            if (status != RG_OK) {
                return status;
            }
        }
        if (p->cur != NULL || p->recvq != NULL || tcp->anyq != NULL) {
            completed = 0;
            status    = rg__tcp_progress_recv(tcp, peer, p, &completed);
            if (status != RG_OK) {
                return status;
            }
            if (completed && tcp->anyq != NULL) {
                tcp->any_next = (peer + 1) % size;
            }
        }
    }
    if (tcp->unsure > 0) {
        uint64_t now = rg_time_mono_ns();

        if (now >= tcp->next_check_ns) {
            tcp->next_check_ns = now + (tcp->dead_after_ns / 4 > 10000000u
                                            ? tcp->dead_after_ns / 4 : 10000000u);
            return rg__tcp_check_paths(tcp, now);
        }
    }
    return RG_OK;
}

/* The sockets something waits on, with their events (ops->wait_fds). Only
 * those are watched: an idle socket whose peer has gone would otherwise
 * report POLLHUP at once and turn the sleep into a spin. */
static rg_status_t rg__tcp_wait_fds(rg_xport_t *xp, struct pollfd *pfds, size_t cap,
                                    size_t *n_p)
{
    rg__tcp_t      *tcp = rg__tcp(xp);
    rg__tcp_peer_t *p;
    size_t          n = 0;
    int             peer;
    short           events;

    if (tcp->failed != RG_OK) {
        return tcp->failed;
    }
    for (peer = 0; peer < xp->size; peer++) {
        p      = &tcp->peers[peer];
        events = 0;
        if (peer == xp->rank) {
            continue;
        }
        if (p->sendq != NULL) {
            events |= POLLOUT;
        }
        if (!p->closed && (p->cur != NULL || p->recvq != NULL || tcp->anyq != NULL)) {
            events |= POLLIN;
        }
        if (events != 0) {
            if (n < cap) {
                pfds[n].fd      = p->fd;
                pfds[n].events  = events;
                pfds[n].revents = 0;
            }
            n++;
        }
    }
    *n_p = n;
    return n <= cap ? RG_OK : RG_ERR_RANGE;
}

static rg_status_t rg__tcp_block(rg_xport_t *xp, uint64_t timeout_ns)
{
    rg__tcp_t      *tcp = rg__tcp(xp);
    struct timespec ts;
    size_t          n = 0;
    rg_status_t     status;

    status = rg__tcp_wait_fds(xp, tcp->pfds, (size_t)xp->size, &n);
    if (status != RG_OK) {
        return status;
    }
    ts.tv_sec  = (time_t)(timeout_ns / 1000000000ull);
    ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
    if (ppoll(tcp->pfds, (nfds_t)n, &ts, NULL) < 0 && errno != EINTR) {
        rg_err_set_errno(&xp->err, RG_ERR_SYSTEM, errno, "ppoll on %d sockets failed",
                         (int)n);
        return rg__tcp_fail(tcp, RG_ERR_SYSTEM);
    }
    return RG_OK;
}

const rg_xport_ops_t rg_xport_tcp_ops = {
    .name        = "tcp",
    .description = "TCP sockets, bindable to one local address (one rail, one path); "
                   "tcp:<interface|address|subnet> picks the address per instance",
    .variants    = 1,
    .open        = rg__tcp_open,
    .close       = rg__tcp_close,
    .isend       = rg__tcp_isend,
    .irecv       = rg__tcp_irecv,
    .progress    = rg__tcp_progress,
    .block       = rg__tcp_block,
    .info_json   = rg__tcp_info_json,
    .get         = rg_xport_no_get,
    .isend_list  = rg__tcp_isend_list,
    .wait_fds    = rg__tcp_wait_fds,
};
