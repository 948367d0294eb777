/*
 * railgauge: the "tcp" transport's settings, addresses, connection set-up,
 * open and close (see tcp.c for the design; tcp_int.h is the private header
 * the two files share).
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
#include "xport/tcp_int.h"
#include "xport/uring.h"
#include "xport/xport.h"

#define RG__TCP_HELLO_MAGIC    0x52475443u   /* "RGTC" */
#define RG__TCP_BLOB_LEN       36u
#define RG__TCP_REFUSED_MS     2000
#define RG__TCP_ACCEPT_MS      30000

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

void rg__tcp_close(rg_xport_t *xp)
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

/* The settings of this instance: the config table, then "tcp:<where>",
 * each value checked. */
static rg_status_t rg__tcp_settings(const char *name, rg__tcp_config_t *cfg, rg_err_t *err)
{
    rg_status_t status;

    status = rg_config_load(&rg_xport_tcp_config_table, cfg, err);
    if (status != RG_OK) {
        return status;
    }
    status = rg__tcp_variant(name, cfg, err);
    if (status != RG_OK) {
        return status;
    }
    if (!(cfg->connect_timeout_ns >= 1e6 && cfg->connect_timeout_ns <= 3600e9)) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_TCP_CONNECT_TIMEOUT=%gns is outside 1ms .. 1h",
                          cfg->connect_timeout_ns);
    }
    if (!(cfg->dead_after_ns == 0 ||
          (cfg->dead_after_ns >= 10e6 && cfg->dead_after_ns <= 3600e9))) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_TCP_DEAD_AFTER=%gns is outside 10ms .. 1h (0: off)",
                          cfg->dead_after_ns);
    }
    return RG_OK;
}

/* How list posts go out (RG_TCP_URING): through an io_uring where the kernel
 * offers one, else one sendmsg per peer; tcp->list_how says which, and why. */
static void rg__tcp_list_how(rg__tcp_t *tcp, const rg__tcp_config_t *cfg)
{
    rg_err_t why;

    if (cfg->uring != 0) {
        rg_err_clear(&why);
        if (rg__uring_open(&tcp->ring, 64, &why) == RG_OK) {
            snprintf(tcp->list_how, sizeof(tcp->list_how),
                     "io_uring: one io_uring_enter for all peers, a gathered sendmsg each");
        } else {
            snprintf(tcp->list_how, sizeof(tcp->list_how), "a gathered sendmsg per peer (%s)",
                     rg_err_message(&why));
        }
    } else {
        snprintf(tcp->list_how, sizeof(tcp->list_how),
                 "a gathered sendmsg per peer (RG_TCP_URING=0)");
    }
}

/* The handle, with its peers not yet connected, and in *all_p room for
 * every rank's address blob. On failure nothing stays allocated. */
static rg_status_t rg__tcp_alloc(const char *name, rg_boot_t *boot,
                                 const rg__tcp_config_t *cfg, rg__tcp_t **tcp_p,
                                 unsigned char **all_p, rg_err_t *err)
{
    rg__tcp_t     *tcp;
    unsigned char *all;
    int            size = rg_boot_size(boot), rank = rg_boot_rank(boot), i;

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
    tcp->connect_timeout_ns      = (uint64_t)cfg->connect_timeout_ns;
    tcp->dead_after_ns           = (uint64_t)cfg->dead_after_ns;
    rg__tcp_list_how(tcp, cfg);
    *tcp_p = tcp;
    *all_p = all;
    return RG_OK;
}

/* Reads every rank's address from the exchanged blobs (all), refuses a
 * rank that could not listen or that announces loopback from elsewhere,
 * and connects to every lower rank. */
static rg_status_t rg__tcp_connect_lower(rg__tcp_t *tcp, const rg__tcp_config_t *cfg,
                                         const unsigned char *all, rg_err_t *err)
{
    rg__tcp_addr_t addr;
    rg_status_t    status;
    int            size = tcp->super.size, rank = tcp->super.rank, i;

    for (i = 0; i < size; i++) {
        rg__tcp_blob_get(all + (size_t)i * RG__TCP_BLOB_LEN, &addr);
        tcp->peers[i].pid = addr.pid;
        if (addr.status != RG_OK) {
            return rg_err_set(err, RG_ERR_BOOTSTRAP,
                              "rank %d could not listen for tcp connections (%s)", i,
                              rg_status_name((rg_status_t)addr.status));
        }
        /* A loopback address reaches only the announcer's own network
         * namespace: every rank sees that at once, instead of a refusal or,
         * worse, a connection to a stranger on the same port. */
        if (i != rank && addr.netns != tcp->me.netns &&
            rg_netaddr_is_loopback(addr.family, addr.ip)) {
            rg__tcp_addr_text(&addr, tcp->peers[i].where, sizeof(tcp->peers[i].where));
            return rg_err_set(err, RG_ERR_INVALID,
                              "rank %d listens on loopback (%s) but runs on another host "
                              "or in another network namespace than rank %d: set "
                              "RG_TCP_IFACE or RG_TCP_SUBNET (one setting for every rank) "
                              "so that each rank announces an address its peers can reach",
                              i, tcp->peers[i].where, rank);
        }
        if (i < rank) {
            status = rg__tcp_connect(tcp, cfg, i, &addr, err);
            if (status != RG_OK) {
                return status;
            }
        } else {
            rg__tcp_addr_text(&addr, tcp->peers[i].where, sizeof(tcp->peers[i].where));
        }
    }
    return RG_OK;
}

/* TCP_NODELAY on every connection; records the buffer sizes the kernel
 * reports (for the transport info). */
static rg_status_t rg__tcp_tune(rg__tcp_t *tcp, rg_err_t *err)
{
    socklen_t olen;
    int       one = 1, i;

    for (i = 0; i < tcp->super.size; i++) {
        if (i == tcp->super.rank) {
            continue;
        }
        if (setsockopt(tcp->peers[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
            return rg_err_set_errno(err, RG_ERR_SYSTEM, errno, "setting TCP_NODELAY failed");
        }
        olen = sizeof(tcp->sndbuf);
        (void)getsockopt(tcp->peers[i].fd, SOL_SOCKET, SO_SNDBUF, &tcp->sndbuf, &olen);
        olen = sizeof(tcp->rcvbuf);
        (void)getsockopt(tcp->peers[i].fd, SOL_SOCKET, SO_RCVBUF, &tcp->rcvbuf, &olen);
    }
    return RG_OK;
}

/* Open, in steps: the settings; the handle; listening, and the exchange of
 * the addresses over the bootstrap; connecting to lower ranks, accepting
 * the higher ones; then tuning the connections. */
rg_status_t rg__tcp_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                         rg_err_t *err)
{
    rg__tcp_config_t cfg;
    rg__tcp_t       *tcp = NULL;
    unsigned char    mine[RG__TCP_BLOB_LEN];
    unsigned char   *all = NULL;
    rg_status_t      status, setup = RG_OK;
    rg_err_t         setup_err;
    int              lfd = -1;

    status = rg__tcp_settings(name, &cfg, err);
    if (status != RG_OK) {
        return status;
    }
    status = rg__tcp_alloc(name, boot, &cfg, &tcp, &all, err);
    if (status != RG_OK) {
        return status;
    }

    /* A rank that cannot listen still joins the exchange, with its status,
     * so that every rank fails the open instead of waiting for it. */
    rg_err_clear(&setup_err);
    setup = rg__tcp_listen(tcp, &cfg, &lfd, &setup_err);
    tcp->me.status = setup;
    rg__tcp_blob_put(mine, &tcp->me);
    status = rg_xport_join_setup(boot, setup, &setup_err, mine, sizeof(mine), all, err);
    if (status != RG_OK) {
        goto err_close;
    }
    status = rg__tcp_connect_lower(tcp, &cfg, all, err);
    if (status != RG_OK) {
        goto err_close;
    }
    status = rg__tcp_accept_all(tcp, lfd, err);
    if (status != RG_OK) {
        goto err_close;
    }
    close(lfd);
    lfd = -1;

    status = rg__tcp_tune(tcp, err);
    if (status != RG_OK) {
        goto err_close;
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

rg_status_t rg__tcp_info_json(rg_xport_t *xp, char *buf, size_t cap)
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
