/*
 * railgauge: the tcp transport's private header, shared by tcp.c (the data
 * path: sends, list posts, receives, progress, blocking, and the ops table)
 * and tcp_open.c (settings, addresses, connection set-up, open, close). The
 * design is described at the top of tcp.c.
 */
#ifndef RG_XPORT_TCP_INT_H
#define RG_XPORT_TCP_INT_H

#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "xport/uring.h"
#include "xport/xport.h"

#define RG__TCP_HDR_LEN        8u

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

/* Shared between the two files: tcp_open.c's part of the ops table. */
rg_status_t rg__tcp_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                         rg_err_t *err);
void        rg__tcp_close(rg_xport_t *xp);
rg_status_t rg__tcp_info_json(rg_xport_t *xp, char *buf, size_t cap);

#endif /* RG_XPORT_TCP_INT_H */
