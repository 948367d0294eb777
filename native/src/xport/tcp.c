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
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/timer.h"
#include "base/wire.h"
#include "xport/netaddr.h"
#include "xport/uring.h"
#include "xport/xport.h"
#include "xport/xreq_queue.h"

#define RG__TCP_HDR_LEN        8u
#define RG__TCP_HELLO_MAGIC    0x52475443u   /* "RGTC" */
#define RG__TCP_BLOB_LEN       36u
#define RG__TCP_REFUSED_MS     2000
#define RG__TCP_ACCEPT_MS      30000
#define RG__TCP_DISCARD_LEN    ((size_t)65536)

typedef struct rg__tcp_config {
    char   addr[RG_CONFIG_STRING_MAX];
    char   iface[RG_CONFIG_STRING_MAX];
    char   subnet[RG_CONFIG_STRING_MAX];
    double connect_timeout_ns;
    int    port;
    size_t sndbuf;
    size_t rcvbuf;
    int    uring;
    double dead_after_ns;
} rg__tcp_config_t;

static const rg_config_field_t rg__tcp_config_fields[] = {
    {"ADDR", "",
     "numeric IPv4 or IPv6 address to listen on and to send from; pinning it "
     "to one interface's address pins this rail to that path; empty: the "
     "address IFACE or SUBNET picks, else 127.0.0.1 (one host)",
     offsetof(rg__tcp_config_t, addr), RG_CONFIG_STRING},
    {"IFACE", "",
     "take the address of this interface (eth1, ib0, rail0): the setting for "
     "ranks on several hosts or network namespaces, each of which finds its "
     "own; IPv4 before IPv6; not together with ADDR",
     offsetof(rg__tcp_config_t, iface), RG_CONFIG_STRING},
    {"SUBNET", "",
     "take the address this host has inside this subnet (CIDR: 10.1.0.0/16, "
     "fd00::/64), alone or to choose among IFACE's addresses; not together "
     "with ADDR",
     offsetof(rg__tcp_config_t, subnet), RG_CONFIG_STRING},
    {"CONNECT_TIMEOUT", "10s",
     "how long a rank tries to reach a peer's address during open before it "
     "fails naming the peer (an unreachable or filtered path)",
     offsetof(rg__tcp_config_t, connect_timeout_ns), RG_CONFIG_TIME_NS},
    {"PORT", "0",
     "listening port of rank 0 (rank r uses PORT + r); 0 picks free ports",
     offsetof(rg__tcp_config_t, port), RG_CONFIG_INT},
    {"SNDBUF", "0",
     "socket send buffer (SO_SNDBUF); 0 keeps the system default and autotuning",
     offsetof(rg__tcp_config_t, sndbuf), RG_CONFIG_SIZE},
    {"RCVBUF", "0",
     "socket receive buffer (SO_RCVBUF); 0 keeps the system default and autotuning",
     offsetof(rg__tcp_config_t, rcvbuf), RG_CONFIG_SIZE},
    {"URING", "1",
     "list posts (rg_xport_isend_list) hand the sends for all their peers to the "
     "kernel with one io_uring_enter, each peer's messages gathered into one "
     "sendmsg; 0, or a kernel without io_uring: one sendmsg per peer",
     offsetof(rg__tcp_config_t, uring), RG_CONFIG_INT},
    {"DEAD_AFTER", "1s",
     "a connection whose bytes in flight the peer's host has acknowledged nothing "
     "of for this long is dead (a failed link, port or host): the transport fails "
     "naming the peer instead of leaving it to the kernel's retries (about 15 "
     "minutes); the kernel acknowledges whatever the peer process does, so a slow "
     "or busy peer is not taken for dead; 0: leave it to the kernel",
     offsetof(rg__tcp_config_t, dead_after_ns), RG_CONFIG_TIME_NS},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_xport_tcp_config_table = {"TCP", rg__tcp_config_fields};

/* Where a rank listens, as exchanged over the bootstrap. */
typedef struct rg__tcp_addr {
    int32_t  status;       /* the rank's setup status; RG_OK to go on */
    int32_t  pid;
    uint16_t family;
    uint16_t port;
    uint8_t  ip[16];
    uint64_t netns;        /* rg_netaddr_netns_id() of the rank */
} rg__tcp_addr_t;

typedef struct rg__tcp_peer {
    int            fd;
    int            pid;
    int            closed;         /* EOF seen between messages */
    char           where[INET6_ADDRSTRLEN + 8];
    rg_xreq_t     *sendq, *sendq_last;
    rg_xreq_t     *recvq, *recvq_last;
    rg_xreq_t     *cur;            /* receive bound to the message in flight */
    unsigned char  hdr[RG__TCP_HDR_LEN];
    size_t         hdr_got;
    uint64_t       wrote_ns;       /* bytes written since then may be unacknowledged */
} rg__tcp_peer_t;

typedef struct rg__tcp {
    rg_xport_t      super;
    rg__tcp_peer_t *peers;
    rg_xreq_t      *anyq, *anyq_last;
    uint64_t        post_seq;
    int             any_next;
    rg_status_t     failed;
    struct pollfd  *pfds;
    unsigned char  *discard;        /* sink for truncated payloads */
    rg__tcp_addr_t  me;
    char            addr_text[INET6_ADDRSTRLEN];
    char            addr_from[2 * RG_CONFIG_STRING_MAX + 48]; /* the setting that chose it */
    uint64_t        connect_timeout_ns;
    uint64_t        dead_after_ns;  /* RG_TCP_DEAD_AFTER; 0: off */
    uint64_t        next_check_ns;  /* when the paths with bytes in flight are checked */
    int             unsure;         /* peers with wrote_ns set */
    int             sndbuf, rcvbuf; /* as the kernel reports them */
    char            name[4 + RG_CONFIG_STRING_MAX];  /* "tcp" or "tcp:<where>" */
    /* List posts: the ring (fd -1 where unused or unavailable, and why), and
     * scratch for one gathered sendmsg per peer, grown to the most peers one
     * list has addressed. */
    rg__uring_t     ring;
    char            list_how[200];
    struct msghdr  *lmsg;
    struct iovec   *liov;
    int32_t        *lres;
    int            *lpeer;
    size_t          lcap;
} rg__tcp_t;

/* Request scratch: priv[0] = bytes moved (send: header included; receive:
 * payload only); priv[1] = send: the encoded header; receive: post order. */
#define RG__TCP_POS(req) ((req)->priv[0])
#define RG__TCP_AUX(req) ((req)->priv[1])

static inline rg__tcp_t *rg__tcp(rg_xport_t *xp)
{
    return (rg__tcp_t *)xp;
}




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
                   "every other rank closed its connection while rank %d waited to "
                   "receive from any of them (tcp)", tcp->super.rank);
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

/* ---- setup -------------------------------------------------------------- */

static socklen_t rg__tcp_sockaddr(const rg__tcp_addr_t *a, struct sockaddr_storage *ss)
{
    struct sockaddr_in  *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET6) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port   = htons(a->port);
        memcpy(&in6->sin6_addr, a->ip, 16);
        return sizeof(*in6);
    }
    in4->sin_family = AF_INET;
    in4->sin_port   = htons(a->port);
    memcpy(&in4->sin_addr, a->ip, 4);
    return sizeof(*in4);
}

static void rg__tcp_addr_text(const rg__tcp_addr_t *a, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN];

    if (inet_ntop(a->family, a->ip, ip, sizeof(ip)) == NULL) {
        snprintf(ip, sizeof(ip), "?");
    }
    snprintf(buf, cap, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip,
             (unsigned)a->port);
}

/* The address's layout in its blob (family and port: the low and high
 * halves of one little-endian word). */
static const rg_wire_field_t rg__tcp_addr_wire[] = {
    RG_WIRE_INT(rg__tcp_addr_t, status, 0),  RG_WIRE_INT(rg__tcp_addr_t, pid, 4),
    RG_WIRE_INT(rg__tcp_addr_t, family, 8),  RG_WIRE_INT(rg__tcp_addr_t, port, 10),
    RG_WIRE_BYTES(rg__tcp_addr_t, ip, 12),   RG_WIRE_INT(rg__tcp_addr_t, netns, 28),
};
#define RG__TCP_ADDR_NFIELDS (sizeof(rg__tcp_addr_wire) / sizeof(rg__tcp_addr_wire[0]))

static void rg__tcp_blob_put(unsigned char *b, const rg__tcp_addr_t *a)
{
    rg_wire_pack(b, a, rg__tcp_addr_wire, RG__TCP_ADDR_NFIELDS);
}

static void rg__tcp_blob_get(const unsigned char *b, rg__tcp_addr_t *a)
{
    rg_wire_unpack(b, a, rg__tcp_addr_wire, RG__TCP_ADDR_NFIELDS);
}

static rg_status_t rg__tcp_set_bufs(const rg__tcp_config_t *cfg, int fd, rg_err_t *err)
{
    int v;

    if (cfg->sndbuf > 0) {
        v = cfg->sndbuf > (size_t)INT32_MAX ? INT32_MAX : (int)cfg->sndbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) != 0) {
            return rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                    "setting SO_SNDBUF to RG_TCP_SNDBUF=%zu failed",
                                    cfg->sndbuf);
        }
    }
    if (cfg->rcvbuf > 0) {
        v = cfg->rcvbuf > (size_t)INT32_MAX ? INT32_MAX : (int)cfg->rcvbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) != 0) {
            return rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                    "setting SO_RCVBUF to RG_TCP_RCVBUF=%zu failed",
                                    cfg->rcvbuf);
        }
    }
    return RG_OK;
}

/* The address to listen on and send from: RG_TCP_ADDR, or the one RG_TCP_IFACE
 * and/or RG_TCP_SUBNET pick on this host, else loopback. Fills tcp->me's
 * family and ip, tcp->addr_text and tcp->addr_from. */
static rg_status_t rg__tcp_choose_addr(rg__tcp_t *tcp, const rg__tcp_config_t *cfg,
                                       rg_err_t *err)
{
    const char  *text = cfg->addr[0] != '\0' ? cfg->addr : "127.0.0.1";
    rg_netaddr_t pick;
    rg_status_t  status;
    size_t       used = 0;

    if (cfg->iface[0] != '\0' || cfg->subnet[0] != '\0') {
        if (cfg->addr[0] != '\0') {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_TCP_ADDR='%s' and RG_TCP_%s='%s' both choose the address; "
                              "set only one", cfg->addr,
                              cfg->iface[0] != '\0' ? "IFACE" : "SUBNET",
                              cfg->iface[0] != '\0' ? cfg->iface : cfg->subnet);
        }
        status = rg_netaddr_pick(cfg->iface, cfg->subnet, "RG_TCP_IFACE", "RG_TCP_SUBNET",
                                 &pick, err);
        if (status != RG_OK) {
            return status;
        }
        tcp->me.family = (uint16_t)pick.family;
        memcpy(tcp->me.ip, pick.ip, 16);
        snprintf(tcp->addr_text, sizeof(tcp->addr_text), "%s", pick.text);
        if (cfg->iface[0] != '\0') {
            used += (size_t)snprintf(tcp->addr_from, sizeof(tcp->addr_from),
                                     "RG_TCP_IFACE=%s", cfg->iface);
        }
        if (cfg->subnet[0] != '\0') {
            snprintf(tcp->addr_from + used, sizeof(tcp->addr_from) - used,
                     "%sRG_TCP_SUBNET=%s", used > 0 ? ", " : "", cfg->subnet);
        }
        return RG_OK;
    }
    if (inet_pton(AF_INET, text, tcp->me.ip) == 1) {
        tcp->me.family = AF_INET;
    } else if (inet_pton(AF_INET6, text, tcp->me.ip) == 1) {
        tcp->me.family = AF_INET6;
    } else {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_TCP_ADDR='%s' is not a numeric IPv4 or IPv6 address", text);
    }
    if (inet_ntop(tcp->me.family, tcp->me.ip, tcp->addr_text, sizeof(tcp->addr_text)) == NULL) {
        snprintf(tcp->addr_text, sizeof(tcp->addr_text), "?");
    }
    snprintf(tcp->addr_from, sizeof(tcp->addr_from), "%s",
             cfg->addr[0] != '\0' ? "RG_TCP_ADDR" : "the default, loopback");
    return RG_OK;
}

/* "tcp:<where>" (several tcp instances side by side, one per rail): <where>
 * replaces RG_TCP_ADDR, IFACE and SUBNET for this instance: a CIDR subnet
 * (contains '/'), a numeric address, or else an interface name. */
static rg_status_t rg__tcp_variant(const char *name, rg__tcp_config_t *cfg, rg_err_t *err)
{
    const char     *where;
    unsigned char   ip[16];
    size_t          n;

    if (strcmp(name, "tcp") == 0) {
        return RG_OK;
    }
    where = name + 4;
    n     = strlen(where);
    if (strncmp(name, "tcp:", 4) != 0 || n == 0 || n >= RG_CONFIG_STRING_MAX) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "transport '%s': expected tcp or tcp:<interface|address|subnet>", name);
    }
    cfg->addr[0] = cfg->iface[0] = cfg->subnet[0] = '\0';
    if (strchr(where, '/') != NULL) {
        memcpy(cfg->subnet, where, n + 1);
    } else if (inet_pton(AF_INET, where, ip) == 1 || inet_pton(AF_INET6, where, ip) == 1) {
        memcpy(cfg->addr, where, n + 1);
    } else {
        memcpy(cfg->iface, where, n + 1);
    }
    return RG_OK;
}

/* Fills tcp->me from the configuration and starts listening on *fd_p. */
static rg_status_t rg__tcp_listen(rg__tcp_t *tcp, const rg__tcp_config_t *cfg,
                                  int *fd_p, rg_err_t *err)
{
    struct sockaddr_storage ss;
    socklen_t               slen;
    char                    where[INET6_ADDRSTRLEN + 16];
    long                    port;
    int                     fd, one = 1;
    rg_status_t             status;

    memset(&tcp->me, 0, sizeof(tcp->me));
    status = rg__tcp_choose_addr(tcp, cfg, err);
    if (status != RG_OK) {
        return status;
    }
    port = cfg->port == 0 ? 0 : (long)cfg->port + tcp->super.rank;
    if (cfg->port < 0 || port > 65535) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_TCP_PORT=%d: rank %d would listen on port %ld, outside "
                          "[0, 65535]", cfg->port, tcp->super.rank, port);
    }
    tcp->me.port  = (uint16_t)port;
    tcp->me.pid   = (int32_t)getpid();
    tcp->me.netns = rg_netaddr_netns_id();
    rg__tcp_addr_text(&tcp->me, where, sizeof(where));

    fd = socket(tcp->me.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return rg_err_set_errno(err, RG_ERR_SYSTEM, errno, "cannot create a TCP socket");
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* Accepted sockets inherit the buffer sizes of the listening one. */
    status = rg__tcp_set_bufs(cfg, fd, err);
    if (status != RG_OK) {
        goto err_close;
    }
    slen = rg__tcp_sockaddr(&tcp->me, &ss);
    if (bind(fd, (struct sockaddr *)&ss, slen) != 0) {
        status = rg_err_set_errno(err, RG_ERR_IO, errno,
                                  "cannot bind a TCP socket to %s (address from %s; "
                                  "RG_TCP_PORT=%d)", where, tcp->addr_from, cfg->port);
        goto err_close;
    }
    if (listen(fd, tcp->super.size + 16) != 0) {
        status = rg_err_set_errno(err, RG_ERR_IO, errno, "cannot listen on %s", where);
        goto err_close;
    }
    slen = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &slen) != 0) {
        status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno, "getsockname on %s failed",
                                  where);
        goto err_close;
    }
    tcp->me.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
    *fd_p = fd;
    return RG_OK;

err_close:
    close(fd);
    return status;
}

static int rg__tcp_ms_left(uint64_t deadline_ns)
{
    uint64_t now = rg_time_mono_ns();

    return now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
}

/* Writes or reads exactly len bytes on a non-blocking socket during setup,
 * waiting up to the deadline. */
static rg_status_t rg__tcp_setup_io(int fd, void *buf, size_t len, int writing,
                                    uint64_t deadline_ns, const char *what, rg_err_t *err)
{
    struct pollfd pfd;
    unsigned char *b = buf;
    ssize_t        n;

    while (len > 0) {
        n = writing ? send(fd, b, len, MSG_NOSIGNAL) : recv(fd, b, len, 0);
        if (n > 0) {
            b   += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0) {
            return rg_err_set(err, RG_ERR_PEER_DEAD, "%s: the connection closed", what);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return rg_err_set_errno(err, RG_ERR_IO, errno, "%s failed", what);
        }
        pfd.fd     = fd;
        pfd.events = writing ? POLLOUT : POLLIN;
        if (poll(&pfd, 1, rg__tcp_ms_left(deadline_ns)) == 0) {
            return rg_err_set(err, RG_ERR_TIMEOUT, "%s timed out", what);
        }
    }
    return RG_OK;
}

static rg_status_t rg__tcp_connect(rg__tcp_t *tcp, const rg__tcp_config_t *cfg,
                                   int peer, const rg__tcp_addr_t *addr, rg_err_t *err)
{
    struct sockaddr_storage ss, local;
    struct pollfd           pfd;
    socklen_t               slen, elen;
    uint64_t                refused_until, deadline, start = rg_time_mono_ns();
    uint32_t                hello[2];
    char                    what[96];
    const char             *why;
    int                     fd = -1, rc, soerr;
    rg_status_t             status;
    rg__tcp_addr_t          bind_me;

    rg__tcp_addr_text(addr, tcp->peers[peer].where, sizeof(tcp->peers[peer].where));
    slen          = rg__tcp_sockaddr(addr, &ss);
    /* One deadline for the whole attempt, refusals and retries included. */
    deadline      = start + tcp->connect_timeout_ns;
    refused_until = start + (uint64_t)RG__TCP_REFUSED_MS * 1000000ull;
    refused_until = refused_until < deadline ? refused_until : deadline;
    for (;;) {
        fd = socket(addr->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            return rg_err_set_errno(err, RG_ERR_SYSTEM, errno, "cannot create a TCP socket");
        }
        status = rg__tcp_set_bufs(cfg, fd, err);
        if (status != RG_OK) {
            goto err_close;
        }
        /* Sending from the configured address keeps the rail on its path. */
        bind_me      = tcp->me;
        bind_me.port = 0;
        if (bind_me.family == addr->family) {
            rg__tcp_sockaddr(&bind_me, &local);
            if (bind(fd, (struct sockaddr *)&local, slen) != 0) {
                status = rg_err_set_errno(err, RG_ERR_IO, errno,
                                          "cannot bind the connection to rank %d to %s "
                                          "(from %s)", peer, tcp->addr_text, tcp->addr_from);
                goto err_close;
            }
        }
        rc    = connect(fd, (struct sockaddr *)&ss, slen);
        soerr = rc == 0 ? 0 : errno;
        if (soerr == EINPROGRESS) {
            pfd.fd     = fd;
            pfd.events = POLLOUT;
            do {
                rc = poll(&pfd, 1, rg__tcp_ms_left(deadline));
            } while (rc < 0 && errno == EINTR);
            if (rc == 0) {
                soerr = ETIMEDOUT;
            } else {
                elen = sizeof(soerr);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen) != 0) {
                    soerr = errno;
                }
            }
        }
        if (soerr == 0) {
            break;
        }
        close(fd);
        fd = -1;
        /* The peer listens before the addresses are exchanged, so a refusal
         * is transient (a full backlog); anything else means no path. */
        if (soerr == ECONNREFUSED && rg_time_mono_ns() < refused_until) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        switch (soerr) {
        case ETIMEDOUT:
            why = "; no answer: a path that drops packets, a filter, or a peer address "
                  "this rank cannot reach (RG_TCP_CONNECT_TIMEOUT bounds the wait)";
            break;
        case EHOSTUNREACH:
        case ENETUNREACH:
            why = "; this rank has no path to that address (RG_TCP_IFACE or RG_TCP_SUBNET "
                  "choose the addresses ranks announce)";
            break;
        default:
            why = "";
            break;
        }
        return rg_err_set_errno(err, soerr == ETIMEDOUT ? RG_ERR_TIMEOUT : RG_ERR_IO, soerr,
                                "rank %d cannot connect to rank %d at %s from %s after "
                                "%.1f s%s", tcp->super.rank, peer, tcp->peers[peer].where,
                                tcp->addr_text, (double)(rg_time_mono_ns() - start) / 1e9,
                                why);
    }

    hello[0] = htole32(RG__TCP_HELLO_MAGIC);
    hello[1] = htole32((uint32_t)tcp->super.rank);
    snprintf(what, sizeof(what), "sending the hello to rank %d at %s", peer,
             tcp->peers[peer].where);
    status = rg__tcp_setup_io(fd, hello, sizeof(hello), 1,
                              rg_time_mono_ns() + tcp->connect_timeout_ns, what, err);
    if (status != RG_OK) {
        goto err_close;
    }
    tcp->peers[peer].fd = fd;
    return RG_OK;

err_close:
    close(fd);
    return status;
}

static rg_status_t rg__tcp_accept_all(rg__tcp_t *tcp, int lfd, rg_err_t *err)
{
    struct pollfd pfd;
    uint64_t      deadline, wait_ns;
    uint32_t      hello[2];
    int           left = tcp->super.size - 1 - tcp->super.rank;
    int           fd, rc, peer;
    rg_status_t   status;

    /* Higher ranks may spend their whole connect timeout on another peer. */
    wait_ns  = (uint64_t)RG__TCP_ACCEPT_MS * 1000000ull + tcp->connect_timeout_ns;
    deadline = rg_time_mono_ns() + wait_ns;
    while (left > 0) {
        pfd.fd     = lfd;
        pfd.events = POLLIN;
        rc         = poll(&pfd, 1, rg__tcp_ms_left(deadline));
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        if (rc == 0) {
            return rg_err_set(err, RG_ERR_TIMEOUT,
                              "rank %d waited %.0f s for %d connection(s) from higher ranks",
                              tcp->super.rank, (double)wait_ns / 1e9, left);
        }
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) {
                continue;
            }
            return rg_err_set_errno(err, RG_ERR_IO, errno, "accept failed");
        }
        status = rg__tcp_setup_io(fd, hello, sizeof(hello), 0, deadline,
                                  "reading a hello frame", err);
        if (status != RG_OK) {
            close(fd);
            return status;
        }
        peer = (int)le32toh(hello[1]);
        if (le32toh(hello[0]) != RG__TCP_HELLO_MAGIC || peer <= tcp->super.rank ||
            peer >= tcp->super.size || tcp->peers[peer].fd >= 0) {
            close(fd);
            return rg_err_set(err, RG_ERR_BOOTSTRAP,
                              "rank %d got a bad hello frame (magic 0x%08x, rank %d)",
                              tcp->super.rank, le32toh(hello[0]), peer);
        }
        tcp->peers[peer].fd = fd;
        left--;
    }
    return RG_OK;
}

static void rg__tcp_close(rg_xport_t *xp)
{
    rg__tcp_t *tcp = rg__tcp(xp);
    int        i;

    /* A failed transport resets its connections: the kernel then keeps no
     * orphaned bytes to deliver once a dead path comes back. */
    struct linger lg = {1, 0};

    for (i = 0; i < xp->size; i++) {
        if (tcp->peers[i].fd >= 0) {
            if (tcp->failed != RG_OK) {
                (void)setsockopt(tcp->peers[i].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
            }
            close(tcp->peers[i].fd);
        }
    }
    rg__uring_close(&tcp->ring);
    free(tcp->lmsg);
    free(tcp->liov);
    free(tcp->lres);
    free(tcp->lpeer);
    free(tcp->discard);
    free(tcp->pfds);
    free(tcp->peers);
    free(tcp);
}

static rg_status_t rg__tcp_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                                rg_err_t *err)
{
    rg__tcp_config_t cfg;
    rg__tcp_t       *tcp;
    rg__tcp_addr_t   addr;
    unsigned char    mine[RG__TCP_BLOB_LEN];
    unsigned char   *all = NULL;
    socklen_t        olen;
    rg_status_t      status, setup = RG_OK;
    rg_err_t         setup_err;
    int              size = rg_boot_size(boot), rank = rg_boot_rank(boot);
    int              lfd = -1, one = 1, i;

    status = rg_config_load(&rg_xport_tcp_config_table, &cfg, err);
    if (status != RG_OK) {
        return status;
    }
    status = rg__tcp_variant(name, &cfg, err);
    if (status != RG_OK) {
        return status;
    }
    if (!(cfg.connect_timeout_ns >= 1e6 && cfg.connect_timeout_ns <= 3600e9)) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_TCP_CONNECT_TIMEOUT=%gns is outside 1ms .. 1h",
                          cfg.connect_timeout_ns);
    }
    if (!(cfg.dead_after_ns == 0 || (cfg.dead_after_ns >= 10e6 && cfg.dead_after_ns <= 3600e9))) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_TCP_DEAD_AFTER=%gns is outside 10ms .. 1h (0: off)",
                          cfg.dead_after_ns);
    }
    tcp = calloc(1, sizeof(*tcp));
    if (tcp == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the tcp transport");
    }
    tcp->ring.fd = -1;
    tcp->peers = calloc((size_t)size, sizeof(*tcp->peers));
    tcp->pfds  = calloc((size_t)size, sizeof(*tcp->pfds));
    all        = calloc((size_t)size, RG__TCP_BLOB_LEN);
    if (tcp->peers == NULL || tcp->pfds == NULL || all == NULL) {
        free(all);
        free(tcp->pfds);
        free(tcp->peers);
        free(tcp);
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d tcp peers", size);
    }
    for (i = 0; i < size; i++) {
        tcp->peers[i].fd = -1;
    }
    tcp->super.ops               = &rg_xport_tcp_ops;
    snprintf(tcp->name, sizeof(tcp->name), "%s", name);
    tcp->super.attr.name         = tcp->name;
    tcp->super.attr.same_host    = 0;
    tcp->super.attr.max_msg_size = SIZE_MAX;
    tcp->super.attr.inject_size  = 0;
    /* The optional operations tcp has no slot for, and why. */
    tcp->super.attr.why_not[RG_XPORT_OPT_INJECT] =
        "no inline send: every send already goes out with one sendmsg at post time and "
        "completes when the socket takes it, which is the single mode";
    tcp->super.attr.why_not[RG_XPORT_OPT_WIN] =
        "TCP has no one-sided writes: every byte is taken by the receiver's own recv";
    tcp->super.boot              = boot;
    tcp->super.rank              = rank;
    tcp->super.size              = size;
    tcp->connect_timeout_ns      = (uint64_t)cfg.connect_timeout_ns;
    tcp->dead_after_ns           = (uint64_t)cfg.dead_after_ns;
    if (cfg.uring != 0) {
        rg_err_clear(&setup_err);
        if (rg__uring_open(&tcp->ring, 64, &setup_err) == RG_OK) {
            snprintf(tcp->list_how, sizeof(tcp->list_how),
                     "io_uring: one io_uring_enter for all peers, a gathered sendmsg each");
        } else {
            snprintf(tcp->list_how, sizeof(tcp->list_how), "a gathered sendmsg per peer (%s)",
                     rg_err_message(&setup_err));
        }
    } else {
        snprintf(tcp->list_how, sizeof(tcp->list_how),
                 "a gathered sendmsg per peer (RG_TCP_URING=0)");
    }

    /* A rank that cannot listen still joins the exchange, with its status,
     * so that every rank fails the open instead of waiting for it. */
    rg_err_clear(&setup_err);
    setup = rg__tcp_listen(tcp, &cfg, &lfd, &setup_err);
    tcp->me.status = setup;
    rg__tcp_blob_put(mine, &tcp->me);
    status = rg_boot_allgather(boot, mine, sizeof(mine), all, err);
    if (status != RG_OK) {
        goto err_close;
    }
    if (setup != RG_OK) {
        if (err != NULL) {
            *err = setup_err;
        }
        status = setup;
        goto err_close;
    }
    for (i = 0; i < size; i++) {
        rg__tcp_blob_get(all + (size_t)i * RG__TCP_BLOB_LEN, &addr);
        tcp->peers[i].pid = addr.pid;
        if (addr.status != RG_OK) {
            status = rg_err_set(err, RG_ERR_BOOTSTRAP,
                                "rank %d could not listen for tcp connections (%s)", i,
                                rg_status_name((rg_status_t)addr.status));
            goto err_close;
        }
        /* A loopback address reaches only the announcer's own network
         * namespace: every rank sees that at once, instead of a refusal or,
         * worse, a connection to a stranger on the same port. */
        if (i != rank && addr.netns != tcp->me.netns &&
            rg_netaddr_is_loopback(addr.family, addr.ip)) {
            rg__tcp_addr_text(&addr, tcp->peers[i].where, sizeof(tcp->peers[i].where));
            status = rg_err_set(err, RG_ERR_INVALID,
                                "rank %d listens on loopback (%s) but runs on another host "
                                "or in another network namespace than rank %d: set "
                                "RG_TCP_IFACE or RG_TCP_SUBNET (one setting for every rank) "
                                "so that each rank announces an address its peers can reach",
                                i, tcp->peers[i].where, rank);
            goto err_close;
        }
        if (i < rank) {
            status = rg__tcp_connect(tcp, &cfg, i, &addr, err);
            if (status != RG_OK) {
                goto err_close;
            }
        } else {
            rg__tcp_addr_text(&addr, tcp->peers[i].where, sizeof(tcp->peers[i].where));
        }
    }
    status = rg__tcp_accept_all(tcp, lfd, err);
    if (status != RG_OK) {
        goto err_close;
    }
    close(lfd);
    lfd = -1;

    for (i = 0; i < size; i++) {
        if (i == rank) {
            continue;
        }
        if (setsockopt(tcp->peers[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
            status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno, "setting TCP_NODELAY failed");
            goto err_close;
        }
        olen = sizeof(tcp->sndbuf);
        (void)getsockopt(tcp->peers[i].fd, SOL_SOCKET, SO_SNDBUF, &tcp->sndbuf, &olen);
        olen = sizeof(tcp->rcvbuf);
        (void)getsockopt(tcp->peers[i].fd, SOL_SOCKET, SO_RCVBUF, &tcp->rcvbuf, &olen);
    }
    free(all);
    *xp_p = &tcp->super;
    return RG_OK;

err_close:
    if (lfd >= 0) {
        close(lfd);
    }
    free(all);
    rg__tcp_close(&tcp->super);
    return status;
}

static rg_status_t rg__tcp_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    rg__tcp_t *tcp = rg__tcp(xp);
    rg_json_t  js;

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "address", tcp->addr_text);
    rg_json_kv_string(&js, "address_from", tcp->addr_from);
    rg_json_kv_uint(&js, "port", tcp->me.port);
    rg_json_kv_int(&js, "sndbuf", tcp->sndbuf);
    rg_json_kv_int(&js, "rcvbuf", tcp->rcvbuf);
    rg_json_kv_string(&js, "list_post", tcp->list_how);
    rg_json_object_end(&js);
    return js.status;
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
