/*
 * railgauge-xport-test: the transport conformance suite, written once and
 * run for every transport (STYLE.md, 10).
 *
 *   railgauge run -n 4 -- railgauge-xport-test [--transport shm|tcp] [--test NAME]...
 *
 * Every rank runs the same tests in the same order, separated by bootstrap
 * barriers. A failure prints one line, "FAIL test=<name> rank=<r>: <detail>";
 * the exit status is 0 when this rank saw no failure. The transport comes
 * from --transport, else RG_TRANSPORT (set by the launcher), else shm.
 *
 * Tests that are not in the default run: "latency" (ping-pong of 1 and 8
 * bytes between ranks 0 and 1, prints the median RTT/2), "large" (64 MiB and
 * more, and one truncated, around the ring), "soak" (messages
 * in a ring for --seconds), and "peer-dies" / "peer-exits" (rank 1 dies by
 * SIGKILL / _exit(3) in the middle of a transfer; rank 0 must see
 * RG_ERR_PEER_DEAD, prints it and exits with 42).
 */
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/timer.h"
#include "boot/boot.h"
#include "xport/xport.h"
#include "common/testkit.h"

#define RG_XT_TIMEOUT_NS   (30ull * 1000000000ull)
#define RG_XT_PEER_DEAD_RC 42

typedef struct rg_xt {
    rg_tk_t     tk;        /* tool, transport, test, rank, size, failures, and
                              --seconds: the duration of "soak" */
    rg_boot_t  *boot;
    rg_xport_t *xp;
} rg_xt_t;

typedef void (*rg_xt_fn_t)(rg_xt_t *t);

/* A transport that stops working leaves nothing to test: report and leave. */
static void rg_xt_fatal(rg_xt_t *t, rg_status_t status, const char *what)
{
    rg_tk_fail(&t->tk, "%s: %s: %s", what, rg_status_name(status), rg_xport_strerror(t->xp));
    exit(1);
}

/* Deterministic content: every (sender, receiver, message) has its own bytes,
 * so a message delivered to the wrong receive or shifted is caught. */
static uint32_t rg_xt_seed(int src, int dst, size_t index)
{
    return (uint32_t)src * 1000003u + (uint32_t)dst * 7919u + (uint32_t)index * 31u + 17u;
}

static void rg_xt_isend(rg_xt_t *t, int peer, const void *buf, size_t len, rg_xreq_t *req)
{
    rg_tk_must(&t->tk, rg_xport_isend(t->xp, peer, buf, len, req), 0, "isend",
               rg_xport_strerror(t->xp));
}

static void rg_xt_irecv(rg_xt_t *t, int peer, void *buf, size_t cap, rg_xreq_t *req)
{
    rg_tk_must(&t->tk, rg_xport_irecv(t->xp, peer, buf, cap, req), 0, "irecv",
               rg_xport_strerror(t->xp));
}

/* Waits for req; a timeout or a transport error ends the run. Returns the
 * request's own final status (RG_OK or RG_ERR_TRUNCATED). */
static rg_status_t rg_xt_wait(rg_xt_t *t, rg_xreq_t *req)
{
    return rg_tk_must(&t->tk, rg_xport_wait(t->xp, req, RG_XT_TIMEOUT_NS), 1,
                      req->kind == RG_XREQ_SEND ? "wait (send)" : "wait (recv)",
                      rg_xport_strerror(t->xp));
}

/* Checks a completed receive of an exact-size message. */
static void rg_xt_expect(rg_xt_t *t, rg_xreq_t *req, rg_status_t status, int src,
                         size_t len, uint32_t seed, const char *what)
{
    rg_tk_expect(&t->tk, status, req->buf, req->msg_len, req->source, -1, len, src, -1, seed,
                 what);
}

static int rg_xt_right(const rg_xt_t *t)
{
    return (t->tk.rank + 1) % t->tk.size;
}

static int rg_xt_left(const rg_xt_t *t)
{
    return (t->tk.rank + t->tk.size - 1) % t->tk.size;
}

/* ---- tests ------------------------------------------------------------ */

/* Argument checks that need no peer. */
static void rg_xt_test_api(rg_xt_t *t)
{
    rg_xport_t *other = NULL;
    rg_err_t    err;
    rg_xreq_t   req;
    char        info[16384];
    int         bad[] = {t->tk.rank, t->tk.size, -1, -7};
    size_t      i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (rg_xport_isend(t->xp, bad[i], "x", 1, &req) != RG_ERR_RANGE ||
            req.status != RG_ERR_RANGE) {
            rg_tk_fail(&t->tk, "isend to rank %d was not refused with RG_ERR_RANGE", bad[i]);
        }
    }
    if (rg_xport_irecv(t->xp, t->tk.size, info, 1, &req) != RG_ERR_RANGE ||
        rg_xport_irecv(t->xp, t->tk.rank, info, 1, &req) != RG_ERR_RANGE) {
        rg_tk_fail(&t->tk, "irecv from rank %d or itself was not refused with RG_ERR_RANGE",
                   t->tk.size);
    }
    rg_err_clear(&err);
    if (rg_xport_open("no-such-transport", t->boot, &other, &err) != RG_ERR_NOT_FOUND ||
        strstr(err.msg, "shm") == NULL || strstr(err.msg, "tcp") == NULL) {
        rg_tk_fail(&t->tk, "opening an unknown transport: '%s'", rg_err_message(&err));
    }
    if (rg_xport_find(t->tk.transport) != t->xp->ops || rg_xport_find("nope") != NULL) {
        rg_tk_fail(&t->tk, "rg_xport_find does not find '%s'", t->tk.transport);
    }
    if (t->xp->ops->info_json(t->xp, info, sizeof(info)) != RG_OK || info[0] != '{') {
        rg_tk_fail(&t->tk, "info_json failed");
    }
    if (strcmp(t->xp->attr.name, t->tk.transport) != 0) {
        rg_tk_fail(&t->tk, "attr.name is '%s'", t->xp->attr.name);
    }
}

/* Many small messages per pair arrive in order, whether the receives are
 * posted before or after the sends. */
static void rg_xt_test_ordering(rg_xt_t *t)
{
    enum { K = 200 };
    size_t     n = (size_t)t->tk.size * K;
    uint64_t (*out)[2] = rg_tk_alloc(&t->tk, n * sizeof(*out));
    uint64_t (*in)[2]  = rg_tk_alloc(&t->tk, n * sizeof(*in));
    rg_xreq_t *sreq    = rg_tk_alloc(&t->tk, n * sizeof(*sreq));
    rg_xreq_t *rreq    = rg_tk_alloc(&t->tk, n * sizeof(*rreq));
    int        phase, peer, k;
    size_t     i;

    for (phase = 0; phase < 2; phase++) {
        for (peer = 0; peer < t->tk.size; peer++) {
            for (k = 0; k < K && peer != t->tk.rank; k++) {
                i         = (size_t)peer * K + (size_t)k;
                out[i][0] = (uint64_t)t->tk.rank;
                out[i][1] = (uint64_t)k + (uint64_t)phase * 1000000u;
                if (phase == 0) {
                    rg_xt_irecv(t, peer, in[i], sizeof(in[i]), &rreq[i]);
                }
            }
        }
        for (i = 0; i < n; i++) {
            if ((int)(i / K) != t->tk.rank) {
                rg_xt_isend(t, (int)(i / K), out[i], sizeof(out[i]), &sreq[i]);
            }
        }
        if (phase == 1) {
            for (i = 0; i < n; i++) {
                if ((int)(i / K) != t->tk.rank) {
                    rg_xt_irecv(t, (int)(i / K), in[i], sizeof(in[i]), &rreq[i]);
                }
            }
        }
        for (i = 0; i < n; i++) {
            if ((int)(i / K) == t->tk.rank) {
                continue;
            }
            rg_xt_wait(t, &sreq[i]);
            if (rg_xt_wait(t, &rreq[i]) != RG_OK || rreq[i].msg_len != sizeof(in[i]) ||
                in[i][0] != i / K || in[i][1] != i % K + (uint64_t)phase * 1000000u) {
                rg_tk_fail(&t->tk, "phase %d: message %zu from rank %zu carried (%llu, %llu)",
                           phase, i % K, i / K, (unsigned long long)in[i][0],
                           (unsigned long long)in[i][1]);
                break;
            }
        }
    }
    free(rreq);
    free(sreq);
    free(in);
    free(out);
}

static size_t rg_xt_boundary_size(int src, int dst, int k)
{
    if (k % 17 == 0) {
        return 0;
    }
    return ((size_t)src * 131u + (size_t)dst * 71u + (size_t)k * 977u) % 3001u;
}

/* The rails transport re-sends what a failed rail carried unacknowledged
 * only while the sender is inside the transport: a rank whose sends all
 * completed (locally) and that waits in the bootstrap barrier would leave a
 * peer waiting for them. So under rails every rank also exchanges an empty
 * message with every peer through the transport before the barrier, as a
 * program's next call into the library would. */
static void rg_xt_settle(rg_xt_t *t)
{
    rg_xreq_t *req = rg_tk_alloc(&t->tk, 2 * (size_t)t->tk.size * sizeof(*req));
    char       one[1];
    int        peer;

    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer != t->tk.rank) {
            rg_xt_irecv(t, peer, one, sizeof(one), &req[2 * peer]);
            rg_xt_isend(t, peer, one, 0, &req[2 * peer + 1]);
        }
    }
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer != t->tk.rank) {
            (void)rg_xt_wait(t, &req[2 * peer + 1]);
            (void)rg_xt_wait(t, &req[2 * peer]);
        }
    }
    free(req);
}

/* Messages of varying sizes back to back keep their boundaries. */
static void rg_xt_test_boundaries(rg_xt_t *t)
{
    enum { M = 150, CAP = 4096 };
    size_t          n = (size_t)t->tk.size * M;
    unsigned char **sbuf = rg_tk_alloc(&t->tk, n * sizeof(*sbuf));
    unsigned char  *rbuf = rg_tk_alloc(&t->tk, n * CAP);
    rg_xreq_t      *sreq = rg_tk_alloc(&t->tk, n * sizeof(*sreq));
    rg_xreq_t      *rreq = rg_tk_alloc(&t->tk, n * sizeof(*rreq));
    char            what[96];
    size_t          i, len;
    int             peer, k;

    for (peer = 0; peer < t->tk.size; peer++) {
        for (k = 0; k < M && peer != t->tk.rank; k++) {
            i = (size_t)peer * M + (size_t)k;
            rg_xt_irecv(t, peer, rbuf + i * CAP, CAP, &rreq[i]);
            len     = rg_xt_boundary_size(t->tk.rank, peer, k);
            sbuf[i] = rg_tk_alloc(&t->tk, len);
            rg_tk_fill(sbuf[i], len, rg_xt_seed(t->tk.rank, peer, (size_t)k));
            rg_xt_isend(t, peer, sbuf[i], len, &sreq[i]);
        }
    }
    for (peer = 0; peer < t->tk.size; peer++) {
        for (k = 0; k < M && peer != t->tk.rank; k++) {
            i = (size_t)peer * M + (size_t)k;
            rg_xt_wait(t, &sreq[i]);
            snprintf(what, sizeof(what), "message %d from rank %d", k, peer);
            rg_xt_expect(t, &rreq[i], rg_xt_wait(t, &rreq[i]), peer,
                         rg_xt_boundary_size(peer, t->tk.rank, k),
                         rg_xt_seed(peer, t->tk.rank, (size_t)k), what);
            free(sbuf[i]);
        }
    }
    free(rreq);
    free(sreq);
    free(rbuf);
    free(sbuf);
}

/* Every size from 0 bytes to 8 MiB, around the ring, content checked. */
static void rg_xt_test_sizes(rg_xt_t *t)
{
    static const size_t sizes[] = {
        0, 1, 7, 8, 63, 64, 65, 4095, 4096, 65535, 65536, 65537,
        (size_t)1 << 20, ((size_t)8 << 20) - 1, (size_t)8 << 20
    };
    size_t         max = (size_t)8 << 20;
    unsigned char *sbuf = rg_tk_alloc(&t->tk, max);
    unsigned char *rbuf = rg_tk_alloc(&t->tk, max + 64);
    rg_xreq_t      sreq, rreq;
    char           what[96];
    size_t         i, cap;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        /* Every other receive has room to spare: msg_len, not the buffer's
         * size, must say how long the message was. */
        cap = sizes[i] + (i % 2 == 0 ? 0 : 64);
        rg_tk_fill(sbuf, sizes[i], rg_xt_seed(t->tk.rank, rg_xt_right(t), sizes[i]));
        rg_xt_irecv(t, rg_xt_left(t), rbuf, cap, &rreq);
        rg_xt_isend(t, rg_xt_right(t), sbuf, sizes[i], &sreq);
        rg_xt_wait(t, &sreq);
        snprintf(what, sizeof(what), "%zu bytes (buffer %zu)", sizes[i], cap);
        rg_xt_expect(t, &rreq, rg_xt_wait(t, &rreq), rg_xt_left(t), sizes[i],
                     rg_xt_seed(rg_xt_left(t), t->tk.rank, sizes[i]), what);
    }
    free(rbuf);
    free(sbuf);
}

/* Receives from any rank get every message, each peer's in order. */
static void rg_xt_test_any(rg_xt_t *t)
{
    enum { K = 64 };
    size_t      n = (size_t)t->tk.size * K;
    uint64_t  (*msg)[2] = rg_tk_alloc(&t->tk, n * sizeof(*msg));
    rg_xreq_t  *req     = rg_tk_alloc(&t->tk, n * sizeof(*req));
    uint64_t   *next    = rg_tk_alloc(&t->tk, (size_t)t->tk.size * sizeof(*next));
    rg_status_t status;
    int         root, k, src;
    size_t      i, got;

    for (root = 0; root < t->tk.size; root++) {
        if (t->tk.rank == root) {
            memset(next, 0, (size_t)t->tk.size * sizeof(*next));
            got = (size_t)(t->tk.size - 1) * K;
            for (i = 0; i < got; i++) {
                rg_xt_irecv(t, RG_XPORT_ANY_SOURCE, msg[i], sizeof(msg[i]), &req[i]);
            }
            for (i = 0; i < got; i++) {
                status = rg_xt_wait(t, &req[i]);
                src    = req[i].source;
                if (status != RG_OK || src < 0 || src >= t->tk.size || src == root ||
                    req[i].msg_len != sizeof(msg[i]) || msg[i][0] != (uint64_t)src ||
                    msg[i][1] != next[src]) {
                    rg_tk_fail(&t->tk, "root %d: receive %zu: source %d, %zu bytes, (%llu, %llu)",
                               root, i, src, req[i].msg_len, (unsigned long long)msg[i][0],
                               (unsigned long long)msg[i][1]);
                    break;
                }
                next[src]++;
            }
        } else {
            for (k = 0; k < K; k++) {
                msg[k][0] = (uint64_t)t->tk.rank;
                msg[k][1] = (uint64_t)k;
                rg_xt_isend(t, root, msg[k], sizeof(msg[k]), &req[k]);
            }
            for (k = 0; k < K; k++) {
                rg_xt_wait(t, &req[k]);
            }
        }
        rg_boot_barrier(t->boot, NULL);
    }
    free(next);
    free(req);
    free(msg);
}

/* A message longer than the receive buffer ends that receive with
 * RG_ERR_TRUNCATED and the real length; the next message arrives intact. */
static void rg_xt_test_truncate(rg_xt_t *t)
{
    static const struct {
        size_t len, cap;
    } cases[] = {
        {1000, 100}, {10, 100}, {(size_t)1 << 20, 4096}, {5, 100}, {64, 0}, {3, 3},
        {200000, 65536}, {0, 16},
    };
    enum { N = sizeof(cases) / sizeof(cases[0]) };
    unsigned char *sbuf[N];
    unsigned char *rbuf = rg_tk_alloc(&t->tk, 65536);
    rg_xreq_t      sreq[N], rreq;
    rg_status_t    status;
    size_t         i, keep, bad;
    uint32_t       seed;

    for (i = 0; i < N; i++) {
        sbuf[i] = rg_tk_alloc(&t->tk, cases[i].len);
        rg_tk_fill(sbuf[i], cases[i].len, rg_xt_seed(t->tk.rank, rg_xt_right(t), i));
        rg_xt_isend(t, rg_xt_right(t), sbuf[i], cases[i].len, &sreq[i]);
    }
    for (i = 0; i < N; i++) {
        rg_xt_irecv(t, rg_xt_left(t), rbuf, cases[i].cap, &rreq);
        status = rg_xt_wait(t, &rreq);
        keep   = cases[i].len < cases[i].cap ? cases[i].len : cases[i].cap;
        seed   = rg_xt_seed(rg_xt_left(t), t->tk.rank, i);
        bad    = rg_tk_check(rbuf, keep, seed);
        if (status != (cases[i].len > cases[i].cap ? RG_ERR_TRUNCATED : RG_OK) ||
            rreq.msg_len != cases[i].len || rreq.done != keep || bad != keep) {
            rg_tk_fail(&t->tk, "%zu bytes into %zu: status %s, msg_len %zu, done %zu, first "
                       "bad byte %zu", cases[i].len, cases[i].cap, rg_status_name(status),
                       rreq.msg_len, rreq.done, bad);
        }
    }
    for (i = 0; i < N; i++) {
        rg_xt_wait(t, &sreq[i]);
        free(sbuf[i]);
    }
    free(rbuf);
}

/* Large sends in both directions at once, then all-to-all, must not
 * deadlock although no transport buffers a whole message. */
static void rg_xt_test_bidir(rg_xt_t *t)
{
    size_t          big = (size_t)8 << 20, mid = (size_t)1 << 20;
    int             partner = t->tk.rank ^ 1;
    unsigned char  *sbuf, *rbuf;
    unsigned char **sall, **rall;
    rg_xreq_t       sreq, rreq, *sreqs, *rreqs;
    int             peer;

    if (partner < t->tk.size) {
        sbuf = rg_tk_alloc(&t->tk, big);
        rbuf = rg_tk_alloc(&t->tk, big);
        rg_tk_fill(sbuf, big, rg_xt_seed(t->tk.rank, partner, 1));
        rg_xt_isend(t, partner, sbuf, big, &sreq);
        rg_xt_irecv(t, partner, rbuf, big, &rreq);
        /* Waiting for the send first needs the receive to progress too. */
        rg_xt_wait(t, &sreq);
        rg_xt_expect(t, &rreq, rg_xt_wait(t, &rreq), partner, big,
                     rg_xt_seed(partner, t->tk.rank, 1), "8 MiB exchange");
        free(rbuf);
        free(sbuf);
    }

    sall  = rg_tk_alloc(&t->tk, (size_t)t->tk.size * sizeof(*sall));
    rall  = rg_tk_alloc(&t->tk, (size_t)t->tk.size * sizeof(*rall));
    sreqs = rg_tk_alloc(&t->tk, (size_t)t->tk.size * sizeof(*sreqs));
    rreqs = rg_tk_alloc(&t->tk, (size_t)t->tk.size * sizeof(*rreqs));
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        sall[peer] = rg_tk_alloc(&t->tk, mid);
        rall[peer] = rg_tk_alloc(&t->tk, mid);
        rg_tk_fill(sall[peer], mid, rg_xt_seed(t->tk.rank, peer, 2));
        rg_xt_isend(t, peer, sall[peer], mid, &sreqs[peer]);
    }
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer != t->tk.rank) {
            rg_xt_irecv(t, peer, rall[peer], mid, &rreqs[peer]);
        }
    }
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer != t->tk.rank) {
            rg_xt_wait(t, &sreqs[peer]);
        }
    }
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer != t->tk.rank) {
            rg_xt_expect(t, &rreqs[peer], rg_xt_wait(t, &rreqs[peer]), peer, mid,
                         rg_xt_seed(peer, t->tk.rank, 2), "1 MiB all-to-all");
            free(sall[peer]);
            free(rall[peer]);
        }
    }
    free(rreqs);
    free(sreqs);
    free(rall);
    free(sall);
}

/* Messages of 64 MiB and more around the ring, content checked, then one of
 * 64 MiB + 5 bytes into a 1 MiB buffer (truncated); not in the default run,
 * for its memory and time. */
static void rg_xt_test_large(rg_xt_t *t)
{
    static const size_t sizes[] = {(size_t)64 << 20, ((size_t)64 << 20) + 3};
    size_t         max = ((size_t)64 << 20) + 5;
    unsigned char *sbuf = rg_tk_alloc(&t->tk, max);
    unsigned char *rbuf = rg_tk_alloc(&t->tk, max);
    rg_xreq_t      sreq, rreq;
    rg_status_t    status;
    char           what[96];
    size_t         i, bad, cap = (size_t)1 << 20;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        rg_tk_fill(sbuf, sizes[i], rg_xt_seed(t->tk.rank, rg_xt_right(t), sizes[i]));
        rg_xt_irecv(t, rg_xt_left(t), rbuf, max, &rreq);
        rg_xt_isend(t, rg_xt_right(t), sbuf, sizes[i], &sreq);
        rg_xt_wait(t, &sreq);
        snprintf(what, sizeof(what), "%zu bytes", sizes[i]);
        rg_xt_expect(t, &rreq, rg_xt_wait(t, &rreq), rg_xt_left(t), sizes[i],
                     rg_xt_seed(rg_xt_left(t), t->tk.rank, sizes[i]), what);
    }
    rg_tk_fill(sbuf, max, rg_xt_seed(t->tk.rank, rg_xt_right(t), 7));
    memset(rbuf, 0, cap + 1);
    rg_xt_irecv(t, rg_xt_left(t), rbuf, cap, &rreq);
    rg_xt_isend(t, rg_xt_right(t), sbuf, max, &sreq);
    rg_xt_wait(t, &sreq);
    status = rg_xt_wait(t, &rreq);
    bad    = rg_tk_check(rbuf, cap, rg_xt_seed(rg_xt_left(t), t->tk.rank, 7));
    if (status != RG_ERR_TRUNCATED || rreq.msg_len != max || rreq.done != cap || bad != cap ||
        rbuf[cap] != 0) {
        rg_tk_fail(&t->tk, "%zu bytes into %zu: status %s, msg_len %zu, done %zu, first bad byte "
                   "%zu, byte past the buffer %u", max, cap, rg_status_name(status),
                   rreq.msg_len, rreq.done, bad, rbuf[cap]);
    }
    free(rbuf);
    free(sbuf);
}

/* Ping-pong between ranks 0 and 1; prints the median of RTT/2. */
static void rg_xt_test_latency(rg_xt_t *t)
{
    enum { WARMUP = 2000, ITERS = 20000 };
    static const size_t sizes[] = {1, 8};
    unsigned char       buf[8] = {0};
    double             *rtt;
    uint64_t            t0;
    size_t              s;
    int                 i, peer = 1 - t->tk.rank;

    if (t->tk.rank > 1) {
        return;
    }
    rtt = rg_tk_alloc(&t->tk, ITERS * sizeof(*rtt));
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (i = -WARMUP; i < ITERS; i++) {
            t0 = rg_time_mono_ns();
            if (t->tk.rank == 0) {
                rg_status_t a = rg_xport_send(t->xp, peer, buf, sizes[s]);
                rg_status_t b = a == RG_OK ? rg_xport_recv(t->xp, peer, buf, sizeof(buf), NULL) : a;
                if (b != RG_OK) {
                    rg_xt_fatal(t, b, "ping");
                }
            } else {
                rg_status_t a = rg_xport_recv(t->xp, peer, buf, sizeof(buf), NULL);
                rg_status_t b = a == RG_OK ? rg_xport_send(t->xp, peer, buf, sizes[s]) : a;
                if (b != RG_OK) {
                    rg_xt_fatal(t, b, "pong");
                }
            }
            if (i >= 0) {
                rtt[i] = (double)(rg_time_mono_ns() - t0);
            }
        }
        if (t->tk.rank == 0) {
            qsort(rtt, ITERS, sizeof(*rtt), rg_tk_cmp_double);
            printf("latency transport=%s size=%zu iters=%d oneway_median_ns=%.1f "
                   "oneway_min_ns=%.1f oneway_p99_ns=%.1f\n", t->tk.transport, sizes[s],
                   ITERS, rtt[ITERS / 2] / 2, rtt[0] / 2, rtt[ITERS * 99 / 100] / 2);
            fflush(stdout);
        }
    }
    free(rtt);
}

/* Messages of varying sizes around the ring until --seconds pass; the
 * launcher tests kill ranks in the middle of it. */
static void rg_xt_test_soak(rg_xt_t *t)
{
    size_t         max = (size_t)256 << 10;
    unsigned char *sbuf = rg_tk_alloc(&t->tk, max);
    unsigned char *rbuf = rg_tk_alloc(&t->tk, max);
    rg_xreq_t      sreq, rreq;
    uint64_t       end = rg_time_mono_ns() + (uint64_t)(t->tk.seconds * 1e9);
    uint64_t       round;
    size_t         len;
    int            go = 1;

    for (round = 0; go; round++) {
        len = (size_t)((round * 2654435761u) % max);
        memset(sbuf, (int)(round & 0xff), len);
        rg_xt_irecv(t, rg_xt_left(t), rbuf, max, &rreq);
        rg_xt_isend(t, rg_xt_right(t), sbuf, len, &sreq);
        rg_xt_wait(t, &sreq);
        if (rg_xt_wait(t, &rreq) != RG_OK || rreq.msg_len != len ||
            (len > 0 && (rbuf[0] != (unsigned char)round || rbuf[len - 1] != (unsigned char)round))) {
            rg_tk_fail(&t->tk, "round %llu: %zu bytes", (unsigned long long)round, rreq.msg_len);
            break;
        }
        /* All ranks must run the same number of rounds, so rank 0's clock
         * decides, and every 64 rounds its verdict is shared. */
        if (round % 64 == 63) {
            int32_t mine = rg_time_mono_ns() < end, *all;

            all = rg_tk_alloc(&t->tk, (size_t)t->tk.size * sizeof(*all));
            if (rg_boot_allgather(t->boot, &mine, sizeof(mine), all, NULL) != RG_OK) {
                rg_tk_fail(&t->tk, "bootstrap allgather failed");
                free(all);
                break;
            }
            go = all[0];
            free(all);
        }
    }
    free(rbuf);
    free(sbuf);
}

/* Rank 1 dies while sending 64 MiB to rank 0, which must get PEER_DEAD.
 * The message is larger than any ring or socket buffer, so it cannot all
 * leave rank 1 at post time, and rank 1 never progresses it after that. */
static void rg_xt_peer_death(rg_xt_t *t, int by_signal)
{
    size_t         big = (size_t)64 << 20;
    unsigned char *buf;
    rg_xreq_t      req;
    rg_status_t    status;
    struct timespec nap = {0, 50 * 1000 * 1000};

    if (t->tk.size < 2) {
        rg_tk_fail(&t->tk, "needs at least 2 ranks");
        return;
    }
    if (t->tk.rank > 1) {
        return;
    }
    buf = rg_tk_alloc(&t->tk, big);
    if (t->tk.rank == 1) {
        rg_xt_isend(t, 0, buf, big, &req);
        nanosleep(&nap, NULL);
        fflush(stdout);
        if (by_signal) {
            raise(SIGKILL);
        }
        _exit(3);
    }
    rg_xt_irecv(t, 1, buf, big, &req);
    status = rg_xport_wait(t->xp, &req, 10ull * 1000000000ull);
    if (status == RG_ERR_PEER_DEAD && req.status == RG_ERR_PEER_DEAD) {
        printf("rank 0: %s: wait returned %s after %zu bytes: %s\n", t->tk.test,
               rg_status_name(status), req.done, rg_xport_strerror(t->xp));
        fflush(stdout);
        free(buf);
        rg_xport_close(t->xp);
        rg_boot_fini(t->boot);
        /* Rank 0 may learn of the death (a TCP reset) within microseconds of
         * it; waiting a few launcher ticks before exiting lets the launcher
         * see the dead rank's exit first, so the test can check that the
         * launcher names the rank that died, not the one that noticed. */
        usleep(300 * 1000);
        exit(RG_XT_PEER_DEAD_RC);
    }
    rg_tk_fail(&t->tk, "wait returned %s (%s), expected RG_ERR_PEER_DEAD", rg_status_name(status),
               rg_xport_strerror(t->xp));
    free(buf);
}

static void rg_xt_test_peer_dies(rg_xt_t *t)
{
    rg_xt_peer_death(t, 1);
}

static void rg_xt_test_peer_exits(rg_xt_t *t)
{
    rg_xt_peer_death(t, 0);
}

/* The list post (where the transport has one): every rank posts one list to
 * all others, with a large message (it streams or queues) and a small one
 * after it to the right neighbour; every message arrives whole and in order.
 * A bad peer anywhere in a list posts nothing. Without one, the wrapper says
 * RG_ERR_UNSUPPORTED and rg_xport_has gives a reason. */
/* A list of more bytes to one peer than its path buffers (16 MiB in 8
 * messages, then a small one): the transport sends part at post time and
 * the rest as the receiver drains, in order. */
static void rg_xt_opt_list_burst(rg_xt_t *t)
{
    enum { NB = 9 };
    const size_t   mib = (size_t)2 << 20;
    rg_xsend_t     sends[NB];
    rg_xreq_t      sreqs[NB], rreqs[NB];
    unsigned char *sbuf = rg_tk_alloc(&t->tk, NB * mib), *rbuf = rg_tk_alloc(&t->tk, NB * mib);
    rg_status_t    status;
    size_t         len;
    int            i;

    for (i = 0; i < NB; i++) {
        len           = i + 1 < NB ? mib : 24;
        sends[i].peer = rg_xt_right(t);
        sends[i].buf  = sbuf + (size_t)i * mib;
        sends[i].len  = len;
        rg_tk_fill(sbuf + (size_t)i * mib, len, rg_xt_seed(t->tk.rank, sends[i].peer, 100 + (size_t)i));
        rg_xt_irecv(t, rg_xt_left(t), rbuf + (size_t)i * mib, mib, &rreqs[i]);
    }
    status = rg_xport_isend_list(t->xp, sends, NB, sreqs);
    if (status != RG_OK) {
        rg_xt_fatal(t, status, "isend_list of a burst");
    }
    for (i = 0; i < NB; i++) {
        status = rg_xt_wait(t, &rreqs[i]);
        rg_xt_expect(t, &rreqs[i], status, rg_xt_left(t), i + 1 < NB ? mib : 24,
                     rg_xt_seed(rg_xt_left(t), t->tk.rank, 100 + (size_t)i), "burst list message");
    }
    for (i = 0; i < NB; i++) {
        rg_xt_wait(t, &sreqs[i]);
    }
    free(sbuf);
    free(rbuf);
}

static void rg_xt_opt_list(rg_xt_t *t)
{
    const size_t big = (size_t)192 << 10, small = 40;
    int          n = t->tk.size - 1 + 2, k = 0, peer, right = rg_xt_right(t), i;
    rg_xsend_t  *sends = rg_tk_alloc(&t->tk, (size_t)n * sizeof(*sends));
    rg_xreq_t   *sreqs = rg_tk_alloc(&t->tk, (size_t)n * sizeof(*sreqs));
    rg_xreq_t   *rreqs = rg_tk_alloc(&t->tk, (size_t)n * sizeof(*rreqs));
    unsigned char *sbuf = rg_tk_alloc(&t->tk, (size_t)n * big), *rbuf = rg_tk_alloc(&t->tk, (size_t)n * big);
    const char  *why = NULL;
    rg_status_t  status;
    char         what[96];

    if (!rg_xport_has(t->xp, RG_XPORT_OPT_LIST, &why)) {
        sends[0].peer = right;
        sends[0].buf  = sbuf;
        sends[0].len  = small;
        if (why == NULL || why[0] == '\0' ||
            rg_xport_isend_list(t->xp, sends, 1, sreqs) != RG_ERR_UNSUPPORTED ||
            sreqs[0].status != RG_ERR_UNSUPPORTED) {
            rg_tk_fail(&t->tk, "a transport without list post must refuse one and say why");
        }
        goto out;
    }
    if (rg_xport_isend_list(t->xp, sends, 0, sreqs) != RG_OK) {
        rg_tk_fail(&t->tk, "an empty list was refused");
    }
    /* A bad peer: nothing is posted, every request ends with the error. */
    sends[0].peer = right;
    sends[0].buf  = sbuf;
    sends[0].len  = small;
    sends[1].peer = t->tk.rank;
    sends[1].buf  = sbuf;
    sends[1].len  = small;
    if (rg_xport_isend_list(t->xp, sends, 2, sreqs) != RG_ERR_RANGE ||
        sreqs[0].status != RG_ERR_RANGE || sreqs[1].status != RG_ERR_RANGE) {
        rg_tk_fail(&t->tk, "a list with a send to itself was not refused as a whole");
    }
    /* One message to every other rank, then a large and a small one more to
     * the right neighbour; receives from the left mirror it. */
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        sends[k].peer = peer;
        sends[k].len  = small + (size_t)peer;
        k++;
    }
    sends[k].peer = right;
    sends[k].len  = big;
    k++;
    sends[k].peer = right;
    sends[k].len  = small;
    k++;
    for (i = 0; i < k; i++) {
        sends[i].buf = sbuf + (size_t)i * big;
        rg_tk_fill(sbuf + (size_t)i * big, sends[i].len, rg_xt_seed(t->tk.rank, sends[i].peer,
                                                                     (size_t)i));
    }
    k = 0;
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer != t->tk.rank) {
            rg_xt_irecv(t, peer, rbuf + (size_t)k * big, big, &rreqs[k]);
            k++;
        }
    }
    rg_xt_irecv(t, rg_xt_left(t), rbuf + (size_t)k * big, big, &rreqs[k]);
    rg_xt_irecv(t, rg_xt_left(t), rbuf + (size_t)(k + 1) * big, big, &rreqs[k + 1]);
    status = rg_xport_isend_list(t->xp, sends, (size_t)n, sreqs);
    if (status != RG_OK) {
        rg_xt_fatal(t, status, "isend_list");
    }
    for (i = 0; i < n; i++) {
        rg_xt_wait(t, &sreqs[i]);
    }
    k = 0;
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        /* Where peer's list put our message: its index among peer's others. */
        snprintf(what, sizeof(what), "list message from rank %d", peer);
        status = rg_xt_wait(t, &rreqs[k]);
        rg_xt_expect(t, &rreqs[k], status, peer, small + (size_t)t->tk.rank,
                     rg_xt_seed(peer, t->tk.rank, (size_t)(t->tk.rank < peer ? t->tk.rank
                                                                      : t->tk.rank - 1)),
                     what);
        k++;
    }
    status = rg_xt_wait(t, &rreqs[k]);
    rg_xt_expect(t, &rreqs[k], status, rg_xt_left(t), big,
                 rg_xt_seed(rg_xt_left(t), t->tk.rank, (size_t)(t->tk.size - 1)), "large list message");
    status = rg_xt_wait(t, &rreqs[k + 1]);
    rg_xt_expect(t, &rreqs[k + 1], status, rg_xt_left(t), small,
                 rg_xt_seed(rg_xt_left(t), t->tk.rank, (size_t)t->tk.size), "small message after it");
    rg_xt_opt_list_burst(t);
out:
    free(sends);
    free(sreqs);
    free(rreqs);
    free(sbuf);
    free(rbuf);
}

/* Inline sends (where the transport has them): header and payload arrive as
 * one message, in order with isend's. */
static void rg_xt_opt_inject(rg_xt_t *t)
{
    unsigned char hdr[5], payload[27], msg[32], got[64];
    const char   *why = NULL;
    rg_xreq_t     rreq[2], sreq;
    rg_status_t   status;
    int           right = rg_xt_right(t), left = rg_xt_left(t);

    if (!rg_xport_has(t->xp, RG_XPORT_OPT_INJECT, &why)) {
        if (why == NULL || why[0] == '\0' ||
            rg_xport_inject(t->xp, right, "x", 1, NULL, 0) != RG_ERR_UNSUPPORTED) {
            rg_tk_fail(&t->tk, "a transport without inject must refuse one and say why");
        }
        return;
    }
    rg_tk_fill(msg, sizeof(msg), rg_xt_seed(t->tk.rank, right, 1));
    memcpy(hdr, msg, sizeof(hdr));
    memcpy(payload, msg + sizeof(hdr), sizeof(payload));
    rg_xt_irecv(t, left, got, sizeof(got), &rreq[0]);
    rg_xt_irecv(t, left, got + 32, 32, &rreq[1]);
    while ((status = rg_xport_inject(t->xp, right, hdr, sizeof(hdr), payload,
                                     sizeof(payload))) == RG_ERR_AGAIN) {
        if (rg_xport_progress(t->xp) < 0) {
            rg_xt_fatal(t, RG_ERR_IO, "progress");
        }
    }
    if (status != RG_OK) {
        rg_xt_fatal(t, status, "inject");
    }
    rg_xt_isend(t, right, msg, 16, &sreq);
    status = rg_xt_wait(t, &rreq[0]);
    rg_xt_expect(t, &rreq[0], status, left, sizeof(msg), rg_xt_seed(left, t->tk.rank, 1),
                 "injected message");
    status = rg_xt_wait(t, &rreq[1]);
    rg_xt_expect(t, &rreq[1], status, left, 16, rg_xt_seed(left, t->tk.rank, 1),
                 "message sent after the inject");
    rg_xt_wait(t, &sreq);
}

/* Memory windows (where the transport has them): every rank writes 56 bytes
 * and a flag into its slot of the right neighbour's window and polls its own
 * window for the left neighbour's flag; the data is there once the flag is.
 * Writes past a window's end are refused. Without windows, creation fails
 * with RG_ERR_UNSUPPORTED on every rank. */
static void rg_xt_opt_win(rg_xt_t *t)
{
    const size_t   slot = 64;
    unsigned char *mem = rg_tk_alloc(&t->tk, (size_t)t->tk.size * slot), src[64];
    const char    *why = NULL;
    rg_xwin_t     *win = NULL;
    rg_xreq_t      req;
    rg_status_t    status;
    uint64_t       flag = 0x52474657ull << 8, want, seen;
    uint64_t       deadline = rg_time_mono_ns() + RG_XT_TIMEOUT_NS;
    int            right = rg_xt_right(t), left = rg_xt_left(t);
    size_t         bad;

    status = rg_xport_win_create(t->xp, mem, (size_t)t->tk.size * slot, &win);
    if (!rg_xport_has(t->xp, RG_XPORT_OPT_WIN, &why)) {
        if (status != RG_ERR_UNSUPPORTED || win != NULL || why == NULL || why[0] == '\0') {
            rg_tk_fail(&t->tk, "a transport without windows must refuse one and say why (%s)",
                       rg_status_name(status));
        }
        free(mem);
        return;
    }
    if (status == RG_ERR_UNSUPPORTED) {
        /* Offered, but not for this memory here (an MPI library whose
         * windows have the separate model): said on every rank alike. */
        free(mem);
        return;
    }
    if (status != RG_OK) {
        rg_xt_fatal(t, status, "win_create");
    }
    rg_tk_fill(src, 56, rg_xt_seed(t->tk.rank, right, 2));
    want = flag + (uint64_t)left;
    flag += (uint64_t)t->tk.rank;
    memcpy(src + 56, &flag, 8);
    if (rg_xport_win_write(t->xp, win, right, (size_t)t->tk.size * slot - 8, src, 16, &req) !=
            RG_ERR_RANGE ||
        req.status != RG_ERR_RANGE) {
        rg_tk_fail(&t->tk, "a write past the end of a window was not refused");
    }
    while ((status = rg_xport_win_write(t->xp, win, right, (size_t)t->tk.rank * slot, src,
                                        sizeof(src), &req)) == RG_ERR_AGAIN) {
        rg_xport_progress(t->xp);
    }
    if (status != RG_OK) {
        rg_xt_fatal(t, status, "win_write");
    }
    for (;;) {
        seen = __atomic_load_n((uint64_t *)(void *)(mem + (size_t)left * slot + 56),
                               __ATOMIC_ACQUIRE);
        if (seen == want) {
            break;
        }
        if (rg_xport_progress(t->xp) < 0 || rg_time_mono_ns() > deadline) {
            rg_xt_fatal(t, RG_ERR_TIMEOUT, "polling the window for the left neighbour");
        }
        sched_yield();
    }
    bad = rg_tk_check(mem + (size_t)left * slot, 56, rg_xt_seed(left, t->tk.rank, 2));
    if (bad != 56) {
        rg_tk_fail(&t->tk, "byte %zu of the left neighbour's write is wrong", bad);
    }
    rg_xt_wait(t, &req);
    /* Every rank's writes are complete before any window goes. */
    if (rg_boot_barrier(t->boot, &t->xp->err) != RG_OK) {
        rg_xt_fatal(t, RG_ERR_BOOTSTRAP, "barrier");
    }
    rg_xport_win_free(t->xp, win);
    free(mem);
}

/* The optional operations of xport.h, each where the transport has it. */
static void rg_xt_test_optional(rg_xt_t *t)
{
    rg_xt_opt_list(t);
    rg_xt_opt_inject(t);
    rg_xt_opt_win(t);
}

static const struct {
    rg_tk_case_t c;  /* first: the kit reads the names */
    rg_xt_fn_t   fn;
} rg_xt_tests[] = {
    {{"api", 1, 1}, rg_xt_test_api},
    {{"ordering", 1, 1}, rg_xt_test_ordering},
    {{"boundaries", 1, 1}, rg_xt_test_boundaries},
    {{"sizes", 1, 1}, rg_xt_test_sizes},
    {{"any", 1, 1}, rg_xt_test_any},
    {{"truncate", 1, 1}, rg_xt_test_truncate},
    {{"bidir", 1, 1}, rg_xt_test_bidir},
    {{"optional", 1, 1}, rg_xt_test_optional},
    {{"large", 0, 1}, rg_xt_test_large},
    {{"latency", 0, 1}, rg_xt_test_latency},
    {{"soak", 0, 1}, rg_xt_test_soak},
    {{"peer-dies", 0, 0}, rg_xt_test_peer_dies},
    {{"peer-exits", 0, 0}, rg_xt_test_peer_exits},
};
#define RG_XT_SUITE RG_TK_SUITE(rg_xt_tests)

static void rg_xt_usage(FILE *f)
{
    fprintf(f, "usage: railgauge-xport-test [--transport NAME] [--test NAME]... "
               "[--seconds S] [--tag TEXT]\n"
               "Run under the launcher: railgauge run -n 4 -- railgauge-xport-test\n");
    rg_tk_list(f, RG_XT_SUITE);
}

static int rg_xt_open_cb(void *ctx, rg_err_t *err)
{
    rg_xt_t *t = ctx;

    return rg_xport_open(t->tk.transport, t->boot, &t->xp, err);
}

static void rg_xt_close_cb(void *ctx)
{
    rg_xport_close(((rg_xt_t *)ctx)->xp);
}

/* Opens the transport over the bootstrap; 0, or the exit status. */
static int rg_xt_open(rg_xt_t *t)
{
    if (rg_tk_open(&t->tk, &t->boot, 8, rg_xt_open_cb, rg_xt_close_cb, t) != 0) {
        return 1;
    }
    return 0;
}

/* Test i, then (rails) the settling of the rails and the barrier that
 * ends a collective test; -1 stops the run where that barrier fails. */
static int rg_xt_run_one(void *ctx, size_t i)
{
    rg_xt_t *t = ctx;
    rg_err_t err;

    rg_xt_tests[i].fn(t);
    if (!rg_xt_tests[i].c.collective) {
        return 0;
    }
    if (strcmp(t->tk.transport, "rails") == 0 && t->tk.failures == 0) {
        rg_xt_settle(t);
    }
    rg_err_clear(&err);
    if (rg_boot_barrier(t->boot, &err) != RG_OK) {
        rg_tk_fail(&t->tk, "barrier after the test: %s", rg_err_message(&err));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    rg_xt_t     t;
    int         selected[RG_TK_MAX_TESTS] = {0};
    int         rc;
    char        env_transport[RG_CONFIG_STRING_MAX];

    _Static_assert(sizeof(rg_xt_tests) / sizeof(rg_xt_tests[0]) <= RG_TK_MAX_TESTS,
                   "RG_TK_MAX_TESTS");
    memset(&t, 0, sizeof(t));
    rc = rg_tk_init(&t.tk, "railgauge-xport-test", 30.0, env_transport, sizeof(env_transport));
    if (rc != 0) {
        return rc;
    }
    if (!rg_tk_parse_args(&t.tk, RG_XT_SUITE, argc, argv, selected, NULL, &t,
                          rg_xt_usage, &rc)) {
        return rc;
    }
    rc = rg_xt_open(&t);
    if (rc != 0) {
        return rc;
    }
    rg_tk_run(&t.tk, RG_XT_SUITE, selected, rg_xt_run_one, &t);
    rg_xport_close(t.xp);
    rg_boot_fini(t.boot);
    return t.tk.failures == 0 ? 0 : 1;
}
