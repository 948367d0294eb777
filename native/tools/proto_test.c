/*
 * railgauge-proto-test: the conformance suite of the messaging runtime
 * (proto/), run over every transport and under every launcher.
 *
 *   railgauge run -n 4 -- railgauge-proto-test [--transport T] [--test NAME]...
 *   mpirun.openmpi -n 4 railgauge-proto-test --transport shm
 *
 * Every rank runs the same tests in the same order, separated by bootstrap
 * barriers. A failure prints "FAIL test=<name> rank=<r> ...: <detail>"; the
 * exit status is 0 when this rank saw no failure. The transport comes from
 * --transport, else RG_TRANSPORT, else shm.
 *
 * Not in the default run: "peer-dies" (rank 1 is killed while rank 0 waits
 * for its message; rank 0 must get an error, prints it and exits with 42)
 * "rate" (8-byte message rate, window 64, prints messages per second) and
 * "bw" (bandwidth of 4 MiB messages beside memcpy's, prints both).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/timer.h"
#include "boot/boot.h"
#include "proto/proto.h"
#include "common/testkit.h"

#define RG_PT_TIMEOUT_NS   (60ull * 1000000000ull)
#define RG_PT_PEER_DEAD_RC 42

typedef struct rg_pt {
    rg_tk_t     tk;      /* tool, transport, test, rank, size, failures, and
                            --seconds: the duration of "rate" and "bw" */
    rg_boot_t  *boot;
    rg_proto_t *p;
    size_t      eager;   /* the runtime's eager limit */
    size_t      big;     /* largest message of "sizes" */
    size_t      bw_size; /* message size of "bw" */
} rg_pt_t;

typedef void (*rg_pt_fn_t)(rg_pt_t *t);

static void rg_pt_fatal(rg_pt_t *t, rg_status_t status, const char *what)
{
    rg_tk_fail(&t->tk, "%s: %s: %s", what, rg_status_name(status), rg_proto_strerror(t->p));
    exit(1);
}

static uint32_t rg_pt_seed(int src, int dst, int tag, size_t index)
{
    return (uint32_t)src * 1000003u + (uint32_t)dst * 7919u + (uint32_t)tag * 104729u +
           (uint32_t)index * 31u + 17u;
}

static void rg_pt_isend(rg_pt_t *t, int peer, int tag, const void *buf, size_t len,
                        rg_preq_t *req)
{
    rg_tk_must(&t->tk, rg_proto_isend(t->p, peer, tag, buf, len, req), 0, "isend",
               rg_proto_strerror(t->p));
}

static void rg_pt_irecv(rg_pt_t *t, int peer, int tag, void *buf, size_t cap, rg_preq_t *req)
{
    rg_tk_must(&t->tk, rg_proto_irecv(t->p, peer, tag, buf, cap, req), 0, "irecv",
               rg_proto_strerror(t->p));
}

/* Waits; a runtime error or timeout ends the run. Returns the request's own
 * status (RG_OK or RG_ERR_TRUNCATED). */
static rg_status_t rg_pt_wait(rg_pt_t *t, rg_preq_t *req)
{
    return rg_tk_must(&t->tk, rg_proto_wait(t->p, req, RG_PT_TIMEOUT_NS), 1,
                      req->kind == RG_PREQ_SEND ? "wait (send)" : "wait (recv)",
                      rg_proto_strerror(t->p));
}

static void rg_pt_expect(rg_pt_t *t, const rg_preq_t *req, rg_status_t status, int src,
                         int tag, size_t len, uint32_t seed, const char *what)
{
    rg_tk_expect(&t->tk, status, req->buf, req->msg_len, req->source, req->msg_tag, len, src,
                 tag, seed, what);
}

static void rg_pt_barrier(rg_pt_t *t)
{
    rg_err_t err;

    rg_err_clear(&err);
    if (rg_boot_barrier(t->boot, &err) != RG_OK) {
        rg_tk_fail(&t->tk, "barrier: %s", rg_err_message(&err));
        exit(1);
    }
}

/* ---- tests ------------------------------------------------------------ */

/* Bad arguments give RG_ERR_RANGE and post nothing; sends to self work,
 * eager (buffered) and rendezvous (matched later). */
static void rg_pt_test_api(rg_pt_t *t)
{
    rg_preq_t      r, s;
    unsigned char  small[16], *big, *got;
    size_t         n = t->eager * 2 + 100;
    rg_status_t    st;
    const struct {
        int peer, tag, recv;
    } bad[] = {
        {-2, 0, 0}, {-1, 0, 0}, {0, -1, 0}, {0, -5, 0}, {-2, 0, 1}, {0, -2, 1},
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        st = bad[i].recv ? rg_proto_irecv(t->p, bad[i].peer, bad[i].tag, small, 16, &r)
                         : rg_proto_isend(t->p, bad[i].peer, bad[i].tag, small, 16, &s);
        if (st != RG_ERR_RANGE) {
            rg_tk_fail(&t->tk, "%s to rank %d tag %d gave %s, expected RG_ERR_RANGE",
                       bad[i].recv ? "irecv" : "isend", bad[i].peer, bad[i].tag,
                       rg_status_name(st));
        }
    }
    st = rg_proto_isend(t->p, t->tk.size, 0, small, 16, &s);
    if (st != RG_ERR_RANGE) {
        rg_tk_fail(&t->tk, "isend to rank %d (= size) gave %s", t->tk.size, rg_status_name(st));
    }
    if ((st = rg_proto_isend(t->p, 0, 0, NULL, 16, &s)) != RG_ERR_INVALID ||
        rg_proto_irecv(t->p, 0, 0, NULL, 16, &r) != RG_ERR_INVALID) {
        rg_tk_fail(&t->tk, "a NULL buffer of 16 bytes was not refused with RG_ERR_INVALID");
    }
    /* Self, eager: the send completes before any receive. */
    rg_tk_fill(small, sizeof(small), rg_pt_seed(t->tk.rank, t->tk.rank, 5, 0));
    rg_pt_isend(t, t->tk.rank, 5, small, sizeof(small), &s);
    if (s.status != RG_OK) {
        rg_tk_fail(&t->tk, "an eager send to self is not complete at post");
    }
    got = rg_tk_alloc(&t->tk, n);
    rg_pt_irecv(t, RG_PROTO_ANY_SOURCE, 5, got, n, &r);
    rg_pt_expect(t, &r, rg_pt_wait(t, &r), t->tk.rank, 5, sizeof(small),
                 rg_pt_seed(t->tk.rank, t->tk.rank, 5, 0), "self eager");
    /* Self, rendezvous: completes when the receive comes. */
    big = rg_tk_alloc(&t->tk, n);
    rg_tk_fill(big, n, rg_pt_seed(t->tk.rank, t->tk.rank, 6, 1));
    rg_pt_isend(t, t->tk.rank, 6, big, n, &s);
    rg_pt_irecv(t, t->tk.rank, RG_PROTO_ANY_TAG, got, n, &r);
    rg_pt_wait(t, &s);
    rg_pt_expect(t, &r, rg_pt_wait(t, &r), t->tk.rank, 6, n, rg_pt_seed(t->tk.rank, t->tk.rank, 6, 1),
                 "self rendezvous");
    free(big);
    free(got);
}

/* Messages of one (sender, tag) arrive in order; receives for different
 * tags are posted in the reverse order of the sends, and half of them only
 * after the messages are there (unexpected). Sizes cross the eager limit. */
#define RG_PT_ORD_TAGS 3
#define RG_PT_ORD_MSGS 12

static size_t rg_pt_ord_size(const rg_pt_t *t, int k)
{
    static const size_t sz[] = {0, 1, 8, 100};

    if (k % 4 == 3) {
        return t->eager + 1 + (size_t)k * 977;  /* rendezvous */
    }
    return sz[k % 3] + (size_t)k;
}

static void rg_pt_test_ordering(rg_pt_t *t)
{
    int             nmsg = RG_PT_ORD_TAGS * RG_PT_ORD_MSGS, peer, tag, k, i;
    int             npeers = t->tk.size - 1, late;
    size_t          cap = t->eager + 1 + RG_PT_ORD_MSGS * 977 + 16;
    rg_preq_t      *sr = calloc((size_t)(npeers * nmsg), sizeof(rg_preq_t));
    rg_preq_t      *rr = calloc((size_t)(npeers * nmsg), sizeof(rg_preq_t));
    unsigned char **sb = calloc((size_t)(npeers * nmsg), sizeof(*sb));
    unsigned char **rb = calloc((size_t)(npeers * nmsg), sizeof(*rb));
    char            what[96];

    if (sr == NULL || rr == NULL || sb == NULL || rb == NULL) {
        rg_tk_fail(&t->tk, "out of memory");
        exit(1);
    }
    /* Early receives: tags in reverse order; the rest after a barrier. */
    for (late = 0; late < 2; late++) {
        if (late) {
            rg_pt_barrier(t);
        }
        for (i = 0, peer = 0; peer < t->tk.size; peer++) {
            if (peer == t->tk.rank) {
                continue;
            }
            for (tag = RG_PT_ORD_TAGS - 1; tag >= 0; tag--) {
                if ((tag % 2 == 1) != late) {
                    i += RG_PT_ORD_MSGS;
                    continue;
                }
                for (k = 0; k < RG_PT_ORD_MSGS; k++, i++) {
                    rb[i] = rg_tk_alloc(&t->tk, cap);
                    rg_pt_irecv(t, peer, tag, rb[i], cap, &rr[i]);
                }
            }
        }
        if (!late) {
            /* All sends: interleaved over tags. */
            for (i = 0, peer = 0; peer < t->tk.size; peer++) {
                if (peer == t->tk.rank) {
                    continue;
                }
                for (k = 0; k < RG_PT_ORD_MSGS; k++) {
                    for (tag = 0; tag < RG_PT_ORD_TAGS; tag++, i++) {
                        size_t n = rg_pt_ord_size(t, k);

                        sb[i] = rg_tk_alloc(&t->tk, n);
                        rg_tk_fill(sb[i], n, rg_pt_seed(t->tk.rank, peer, tag, (size_t)k));
                        rg_pt_isend(t, peer, tag, sb[i], n, &sr[i]);
                    }
                }
            }
        }
    }
    for (i = 0; i < npeers * nmsg; i++) {
        rg_pt_wait(t, &sr[i]);
    }
    for (i = 0, peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        for (tag = RG_PT_ORD_TAGS - 1; tag >= 0; tag--) {
            for (k = 0; k < RG_PT_ORD_MSGS; k++, i++) {
                snprintf(what, sizeof(what), "message %d of rank %d tag %d", k, peer, tag);
                rg_pt_expect(t, &rr[i], rg_pt_wait(t, &rr[i]), peer, tag, rg_pt_ord_size(t, k),
                             rg_pt_seed(peer, t->tk.rank, tag, (size_t)k), what);
                free(rb[i]);
            }
        }
    }
    for (i = 0; i < npeers * nmsg; i++) {
        free(sb[i]);
    }
    free(sr);
    free(rr);
    free(sb);
    free(rb);
}

/* Wildcards: every rank receives from every other with ANY_SOURCE/ANY_TAG
 * receives; per sender the messages come in order; source and tag are
 * reported. Then ANY_SOURCE with one tag, and one source with ANY_TAG. */
#define RG_PT_WILD_MSGS 8

static void rg_pt_test_wildcards(rg_pt_t *t)
{
    int            npeers = t->tk.size - 1, n = npeers * RG_PT_WILD_MSGS, i, k, peer, src;
    size_t         cap = t->eager + 512, len;
    rg_preq_t     *sr = calloc((size_t)n, sizeof(rg_preq_t));
    rg_preq_t      r;
    unsigned char **sb = calloc((size_t)n, sizeof(*sb));
    unsigned char *rb = rg_tk_alloc(&t->tk, cap);
    int           *next = calloc((size_t)t->tk.size, sizeof(int));
    char           what[96];

    if (sr == NULL || sb == NULL || next == NULL) {
        rg_tk_fail(&t->tk, "out of memory");
        exit(1);
    }
    /* Round 1: ANY/ANY; message k of a sender has tag 10 + k. */
    for (i = 0, peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        for (k = 0; k < RG_PT_WILD_MSGS; k++, i++) {
            len   = (k == 5) ? t->eager + 333 : (size_t)(k * 13);
            sb[i] = rg_tk_alloc(&t->tk, len);
            rg_tk_fill(sb[i], len, rg_pt_seed(t->tk.rank, peer, 10 + k, (size_t)k));
            rg_pt_isend(t, peer, 10 + k, sb[i], len, &sr[i]);
        }
    }
    for (i = 0; i < n; i++) {
        rg_pt_irecv(t, RG_PROTO_ANY_SOURCE, RG_PROTO_ANY_TAG, rb, cap, &r);
        rg_pt_wait(t, &r);
        src = r.source;
        if (src < 0 || src >= t->tk.size || src == t->tk.rank) {
            rg_tk_fail(&t->tk, "ANY/ANY receive reports source %d", src);
            break;
        }
        k = next[src]++;
        len = (k == 5) ? t->eager + 333 : (size_t)(k * 13);
        snprintf(what, sizeof(what), "ANY/ANY receive %d (from rank %d, its message %d)", i,
                 src, k);
        rg_pt_expect(t, &r, r.status, src, 10 + k, len, rg_pt_seed(src, t->tk.rank, 10 + k,
                     (size_t)k), what);
    }
    for (i = 0; i < n; i++) {
        rg_pt_wait(t, &sr[i]);
        free(sb[i]);
    }
    rg_pt_barrier(t);

    /* Round 2: each rank sends its left neighbour tag 1 then tag 2; the
     * receiver asks for tag 2 from ANY first, then tag 1 from the sender
     * with ANY_TAG... which must be tag 1 (the only one left). */
    {
        int           right = (t->tk.rank + 1) % t->tk.size, left = (t->tk.rank + t->tk.size - 1) % t->tk.size;
        unsigned char a[32], b[32];
        rg_preq_t     s1, s2, r1, r2;

        rg_tk_fill(a, sizeof(a), rg_pt_seed(t->tk.rank, left, 1, 0));
        rg_tk_fill(b, sizeof(b), rg_pt_seed(t->tk.rank, left, 2, 0));
        rg_pt_isend(t, left, 1, a, sizeof(a), &s1);
        rg_pt_isend(t, left, 2, b, sizeof(b), &s2);
        rg_pt_irecv(t, RG_PROTO_ANY_SOURCE, 2, rb, cap, &r2);
        rg_pt_expect(t, &r2, rg_pt_wait(t, &r2), right, 2, sizeof(b),
                     rg_pt_seed(right, t->tk.rank, 2, 0), "ANY_SOURCE tag 2");
        rg_pt_irecv(t, right, RG_PROTO_ANY_TAG, rb, cap, &r1);
        rg_pt_expect(t, &r1, rg_pt_wait(t, &r1), right, 1, sizeof(a),
                     rg_pt_seed(right, t->tk.rank, 1, 0), "rank's ANY_TAG after tag 2");
        rg_pt_wait(t, &s1);
        rg_pt_wait(t, &s2);
    }
    free(sr);
    free(sb);
    free(rb);
    free(next);
}

/* A message longer than its receive: RG_ERR_TRUNCATED, msg_len the real
 * length, the buffer's bytes right and nothing past them written; the next
 * message is fine. Eager and rendezvous. */
static void rg_pt_test_truncate(rg_pt_t *t)
{
    int           right = (t->tk.rank + 1) % t->tk.size, left = (t->tk.rank + t->tk.size - 1) % t->tk.size;
    size_t        lens[3] = {100, t->eager * 3 + 5, ((size_t)1 << 20) + 5}, cap, i;
    unsigned char *sb, *rb;
    rg_preq_t     s, r;
    rg_status_t   st;

    for (i = 0; i < 3; i++) {
        cap = lens[i] / 2;
        sb  = rg_tk_alloc(&t->tk, lens[i]);
        rb  = rg_tk_alloc(&t->tk, lens[i]);
        memset(rb, 0xee, lens[i]);
        rg_tk_fill(sb, lens[i], rg_pt_seed(t->tk.rank, right, 7, i));
        rg_pt_isend(t, right, 7, sb, lens[i], &s);
        rg_pt_irecv(t, left, 7, rb, cap, &r);
        st = rg_pt_wait(t, &r);
        rg_pt_wait(t, &s);
        if (st != RG_ERR_TRUNCATED || r.msg_len != lens[i]) {
            rg_tk_fail(&t->tk, "%zu bytes into %zu: %s, msg_len %zu; expected RG_ERR_TRUNCATED and "
                       "%zu", lens[i], cap, rg_status_name(st), r.msg_len, lens[i]);
        } else if (rg_tk_check(rb, cap, rg_pt_seed(left, t->tk.rank, 7, i)) != cap) {
            rg_tk_fail(&t->tk, "truncated receive of %zu bytes: kept bytes are wrong", lens[i]);
        } else if (rb[cap] != 0xee) {
            rg_tk_fail(&t->tk, "truncated receive of %zu bytes wrote past its buffer", lens[i]);
        }
        /* The runtime goes on. */
        rg_pt_isend(t, right, 8, sb, lens[i], &s);
        rg_pt_irecv(t, left, 8, rb, lens[i], &r);
        rg_pt_expect(t, &r, rg_pt_wait(t, &r), left, 8, lens[i],
                     rg_pt_seed(left, t->tk.rank, 7, i), "message after a truncation");
        rg_pt_wait(t, &s);
        free(sb);
        free(rb);
    }
}

/* Sizes 0 B to t->big in a ring (to the right, from the left). */
static void rg_pt_test_sizes(rg_pt_t *t)
{
    int           right = (t->tk.rank + 1) % t->tk.size, left = (t->tk.rank + t->tk.size - 1) % t->tk.size;
    size_t        sizes[32], n = 0, i;
    size_t        fixed[] = {0, 1, 7, 8, 63, 4096};
    unsigned char *sb, *rb;
    rg_preq_t     s, r;
    char          what[64];

    for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        sizes[n++] = fixed[i];
    }
    sizes[n++] = t->eager - 1;
    sizes[n++] = t->eager;
    sizes[n++] = t->eager + 1;
    for (i = (size_t)64 << 10; i <= t->big && n < 31; i *= 4) {
        sizes[n++] = i + (i > t->eager ? 3 : 0);
    }
    if (sizes[n - 1] < t->big) {
        sizes[n++] = t->big;
    }
    sb = rg_tk_alloc(&t->tk, t->big + 8);
    rb = rg_tk_alloc(&t->tk, t->big + 8);
    for (i = 0; i < n; i++) {
        rg_tk_fill(sb, sizes[i], rg_pt_seed(t->tk.rank, right, 3, i));
        rg_pt_irecv(t, left, 3, rb, t->big + 8, &r);
        rg_pt_isend(t, right, 3, sb, sizes[i], &s);
        snprintf(what, sizeof(what), "%zu bytes", sizes[i]);
        rg_pt_expect(t, &r, rg_pt_wait(t, &r), left, 3, sizes[i],
                     rg_pt_seed(left, t->tk.rank, 3, i), what);
        rg_pt_wait(t, &s);
    }
    free(sb);
    free(rb);
}

/* Many messages to every peer before any receive is posted: the unexpected
 * queue holds them (eager copies, rendezvous requests), in order, and its
 * memory is returned once they are received. */
#define RG_PT_UX_MSGS 200

static void rg_pt_test_unexpected(rg_pt_t *t)
{
    int            npeers = t->tk.size - 1, n = npeers * RG_PT_UX_MSGS, i, k, peer;
    size_t         cap = t->eager + 1024, len;
    rg_preq_t     *sr = calloc((size_t)n, sizeof(rg_preq_t)), r;
    unsigned char *sb = rg_tk_alloc(&t->tk, cap), *rb = rg_tk_alloc(&t->tk, cap);
    rg_proto_stats_t st0, st1;
    char           what[96];

    if (sr == NULL) {
        rg_tk_fail(&t->tk, "out of memory");
        exit(1);
    }
    rg_tk_fill(sb, cap, 99);
    rg_proto_get_stats(t->p, &st0);
    for (i = 0, peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        for (k = 0; k < RG_PT_UX_MSGS; k++, i++) {
            len = k % 50 == 49 ? cap : (size_t)(k % 17);
            rg_pt_isend(t, peer, 4, sb, len, &sr[i]);
        }
    }
    /* Let everything arrive, then receive in order. */
    for (k = 0; k < 20; k++) {
        rg_proto_progress(t->p);
        usleep(1000);
    }
    rg_pt_barrier(t);
    for (k = 0; k < 20; k++) {
        rg_proto_progress(t->p);
    }
    for (peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        for (k = 0; k < RG_PT_UX_MSGS; k++) {
            len = k % 50 == 49 ? cap : (size_t)(k % 17);
            rg_pt_irecv(t, peer, 4, rb, cap, &r);
            snprintf(what, sizeof(what), "unexpected message %d of rank %d", k, peer);
            rg_pt_expect(t, &r, rg_pt_wait(t, &r), peer, 4, len, 99, what);
        }
    }
    for (i = 0; i < n; i++) {
        rg_pt_wait(t, &sr[i]);
    }
    rg_proto_get_stats(t->p, &st1);
    if (st1.unexpected == st0.unexpected) {
        rg_tk_fail(&t->tk, "no message was counted unexpected");
    }
    if (st1.mem.unexpected != 0) {
        rg_tk_fail(&t->tk, "%zu bytes of unexpected messages still held", st1.mem.unexpected);
    }
    if (st1.mem.total != st1.mem.pool + st1.mem.unexpected + st1.mem.control ||
        st1.mem.high_water < st1.mem.total) {
        rg_tk_fail(&t->tk, "memory accounting is inconsistent");
    }
    free(sr);
    free(sb);
    free(rb);
}

/* All to all with mixed sizes and tags, receives from ANY_SOURCE per tag. */
static void rg_pt_test_alltoall(rg_pt_t *t)
{
    int            peer, i = 0, n = t->tk.size - 1;
    size_t         len = t->eager + 4000;
    rg_preq_t     *sr = calloc((size_t)n, sizeof(rg_preq_t));
    rg_preq_t     *rr = calloc((size_t)n, sizeof(rg_preq_t));
    unsigned char *sb = rg_tk_alloc(&t->tk, len * (size_t)t->tk.size);
    unsigned char *rb = rg_tk_alloc(&t->tk, len * (size_t)t->tk.size);
    int           *seen = calloc((size_t)t->tk.size, sizeof(int));

    if (sr == NULL || rr == NULL || seen == NULL) {
        rg_tk_fail(&t->tk, "out of memory");
        exit(1);
    }
    for (i = 0; i < n; i++) {
        rg_pt_irecv(t, RG_PROTO_ANY_SOURCE, 9, rb + len * (size_t)i, len, &rr[i]);
    }
    for (i = 0, peer = 0; peer < t->tk.size; peer++) {
        if (peer == t->tk.rank) {
            continue;
        }
        rg_tk_fill(sb + len * (size_t)peer, ((t->tk.rank + peer) % 2) ? len : 24,
                   rg_pt_seed(t->tk.rank, peer, 9, 0));
        rg_pt_isend(t, peer, 9, sb + len * (size_t)peer, ((t->tk.rank + peer) % 2) ? len : 24,
                    &sr[i++]);
    }
    if (rg_proto_waitall(t->p, (size_t)n, rr, RG_PT_TIMEOUT_NS) != RG_OK) {
        rg_tk_fail(&t->tk, "waitall of the receives failed: %s", rg_proto_strerror(t->p));
    }
    for (i = 0; i < n; i++) {
        int src = rr[i].source;

        if (src < 0 || src >= t->tk.size || src == t->tk.rank || seen[src]++) {
            rg_tk_fail(&t->tk, "receive %d reports source %d (duplicate or invalid)", i, src);
            continue;
        }
        rg_pt_expect(t, &rr[i], rr[i].status, src, 9, ((t->tk.rank + src) % 2) ? len : 24,
                     rg_pt_seed(src, t->tk.rank, 9, 0), "all-to-all");
    }
    if (rg_proto_waitall(t->p, (size_t)n, sr, RG_PT_TIMEOUT_NS) != RG_OK) {
        rg_tk_fail(&t->tk, "waitall of the sends failed: %s", rg_proto_strerror(t->p));
    }
    free(sr);
    free(rr);
    free(sb);
    free(rb);
    free(seen);
}

/* 8-byte messages from rank 0 to rank 1 in windows of 64, acknowledged per
 * window (as the OSU message-rate test); prints messages per second. */
#define RG_PT_WINDOW 64

static void rg_pt_test_rate(rg_pt_t *t)
{
    rg_preq_t     reqs[RG_PT_WINDOW], ack;
    unsigned char buf[RG_PT_WINDOW][8], a = 0;
    uint64_t      t0 = 0, windows = 0, i;
    int           w, stop = 0;
    double        secs;

    if (t->tk.rank > 1) {
        return;
    }
    memset(buf, 1, sizeof(buf));
    for (i = 0;; i++) {
        if (i == 100) {
            t0 = rg_time_mono_ns();  /* after a warm-up */
        }
        if (t->tk.rank == 0) {
            for (w = 0; w < RG_PT_WINDOW; w++) {
                rg_pt_isend(t, 1, 1, buf[w], 8, &reqs[w]);
            }
            rg_proto_waitall(t->p, RG_PT_WINDOW, reqs, RG_PT_TIMEOUT_NS);
            rg_pt_irecv(t, 1, 2, &a, 1, &ack);
            rg_pt_wait(t, &ack);
            stop = a;
        } else {
            for (w = 0; w < RG_PT_WINDOW; w++) {
                rg_pt_irecv(t, 0, 1, buf[w], 8, &reqs[w]);
            }
            rg_proto_waitall(t->p, RG_PT_WINDOW, reqs, RG_PT_TIMEOUT_NS);
            a = (i >= 100 && (double)(rg_time_mono_ns() - t0) * 1e-9 >= t->tk.seconds) ? 1 : 0;
            rg_pt_isend(t, 0, 2, &a, 1, &ack);
            rg_pt_wait(t, &ack);
            stop = a;
        }
        if (i >= 100) {
            windows++;
        }
        if (stop) {
            break;
        }
    }
    secs = (double)(rg_time_mono_ns() - t0) * 1e-9;
    if (t->tk.rank == 0) {
        printf("rate transport=%s size=8 window=%d messages_per_s=%.0f windows=%llu\n",
               t->tk.transport, RG_PT_WINDOW, (double)(windows * RG_PT_WINDOW) / secs,
               (unsigned long long)windows);
        fflush(stdout);
    }
}

/* Bandwidth of --bw-size messages (default 4 MiB) from rank 0 to rank 1 in
 * windows of 16, acknowledged per window (as the OSU bandwidth test), each
 * message of a window in a buffer of its own (64 MiB in all at 4 MiB, more
 * than a cache holds, as the data of an application); beside it the
 * bandwidth of memcpy over the same buffers in one process, measured in the
 * same run. Prints both in MB/s (1e6 bytes). */
#define RG_PT_BW_WINDOW 16

static void rg_pt_test_bw(rg_pt_t *t)
{
    rg_preq_t      reqs[RG_PT_BW_WINDOW], ack;
    size_t         n = t->bw_size;
    unsigned char *buf[RG_PT_BW_WINDOW], *other[RG_PT_BW_WINDOW], a = 0;
    uint64_t       t0 = 0, windows = 0, i, c0;
    double         secs, copies[9], memcpy_mbps = 0;
    int            w, stop = 0, k;

    if (t->tk.rank > 1) {
        return;
    }
    for (w = 0; w < RG_PT_BW_WINDOW; w++) {
        buf[w]   = rg_tk_alloc(&t->tk, n);
        other[w] = t->tk.rank == 0 ? rg_tk_alloc(&t->tk, n) : NULL;
        memset(buf[w], 3, n);
    }
    if (t->tk.rank == 0) {
        for (w = 0; w < RG_PT_BW_WINDOW; w++) {
            memset(other[w], 4, n);
        }
        for (k = 0; k < 9; k++) {
            c0 = rg_time_mono_ns();
            for (w = 0; w < RG_PT_BW_WINDOW; w++) {
                memcpy(k % 2 ? buf[w] : other[w], k % 2 ? other[w] : buf[w], n);
            }
            copies[k] = (double)(rg_time_mono_ns() - c0) * 1e-9;
        }
        qsort(copies + 1, 8, sizeof(double), rg_tk_cmp_double);
        memcpy_mbps = (double)n * RG_PT_BW_WINDOW / ((copies[4] + copies[5]) / 2) * 1e-6;
    }
    for (i = 0;; i++) {
        if (i == 2) {
            t0 = rg_time_mono_ns();  /* after a warm-up */
        }
        for (w = 0; w < RG_PT_BW_WINDOW; w++) {
            if (t->tk.rank == 0) {
                rg_pt_isend(t, 1, 1, buf[w], n, &reqs[w]);
            } else {
                rg_pt_irecv(t, 0, 1, buf[w], n, &reqs[w]);
            }
        }
        if (rg_proto_waitall(t->p, RG_PT_BW_WINDOW, reqs, RG_PT_TIMEOUT_NS) != RG_OK) {
            rg_pt_fatal(t, RG_ERR_IO, "waitall");
        }
        if (t->tk.rank == 0) {
            rg_pt_irecv(t, 1, 2, &a, 1, &ack);
        } else {
            a = (i >= 2 && (double)(rg_time_mono_ns() - t0) * 1e-9 >= t->tk.seconds) ? 1 : 0;
            rg_pt_isend(t, 0, 2, &a, 1, &ack);
        }
        rg_pt_wait(t, &ack);
        stop = a;
        windows += i >= 2;
        if (stop) {
            break;
        }
    }
    secs = (double)(rg_time_mono_ns() - t0) * 1e-9;
    if (t->tk.rank == 0) {
        printf("bw transport=%s size=%zu window=%d MBps=%.1f memcpy_MBps=%.1f windows=%llu\n",
               t->tk.transport, n, RG_PT_BW_WINDOW,
               (double)(windows * RG_PT_BW_WINDOW) * (double)n / secs * 1e-6, memcpy_mbps,
               (unsigned long long)windows);
        fflush(stdout);
    }
    for (w = 0; w < RG_PT_BW_WINDOW; w++) {
        free(buf[w]);
        free(other[w]);
    }
}

/* Rank 1 dies while rank 0 waits for a message from it: an error, not a
 * hang. */
static void rg_pt_test_peer_dies(rg_pt_t *t)
{
    unsigned char   b[16];
    rg_preq_t       r;
    rg_status_t     st;
    struct timespec nap = {0, 100 * 1000 * 1000};

    if (t->tk.rank == 1) {
        nanosleep(&nap, NULL);
        raise(SIGKILL);
    }
    if (t->tk.rank != 0) {
        /* The others stay (without closing their connections) while rank 0
         * finds out, so that only rank 1 is gone. */
        sleep(2);
        return;
    }
    rg_pt_irecv(t, 1, 0, b, sizeof(b), &r);
    st = rg_proto_wait(t->p, &r, 10ull * 1000000000ull);
    if (st < 0 && st != RG_ERR_TIMEOUT) {
        printf("rank 0: %s: wait returned %s: %s\n", t->tk.test, rg_status_name(st),
               rg_proto_strerror(t->p));
        fflush(stdout);
        usleep(300 * 1000);
        exit(RG_PT_PEER_DEAD_RC);
    }
    rg_tk_fail(&t->tk, "wait returned %s, expected an error naming the dead peer",
               rg_status_name(st));
}

static const struct {
    rg_tk_case_t c;  /* first: the kit reads the names */
    rg_pt_fn_t   fn;
} rg_pt_tests[] = {
    {{"api", 1, 1}, rg_pt_test_api},
    {{"ordering", 1, 1}, rg_pt_test_ordering},
    {{"wildcards", 1, 1}, rg_pt_test_wildcards},
    {{"truncate", 1, 1}, rg_pt_test_truncate},
    {{"sizes", 1, 1}, rg_pt_test_sizes},
    {{"unexpected", 1, 1}, rg_pt_test_unexpected},
    {{"alltoall", 1, 1}, rg_pt_test_alltoall},
    {{"rate", 0, 1}, rg_pt_test_rate},
    {{"bw", 0, 1}, rg_pt_test_bw},
    {{"peer-dies", 0, 0}, rg_pt_test_peer_dies},
};
#define RG_PT_SUITE RG_TK_SUITE(rg_pt_tests)

/* Every setting of the runtime and the transports, as loaded now. */
static int rg_pt_print_config(void)
{
    const rg_config_table_t *const *t;
    const rg_config_table_t        *proto[] = {&rg_proto_config_table, NULL};
    _Alignas(16) unsigned char      scratch[8192];
    rg_err_t                        err;
    int                             rc = 0, pass;

    for (pass = 0; pass < 2; pass++) {
        for (t = pass == 0 ? proto : rg_xport_config_tables(); *t != NULL; t++) {
            memset(scratch, 0, sizeof(scratch));
            if (rg_config_load(*t, scratch, &err) != RG_OK) {
                fprintf(stderr, "railgauge-proto-test: %s\n", rg_err_message(&err));
                rc = 2;
                continue;
            }
            printf("[%s]\n", (*t)->prefix);
            rg_config_print(*t, scratch, stdout);
        }
    }
    return rc;
}

static void rg_pt_usage(FILE *f)
{
    fprintf(f, "usage: railgauge-proto-test [--transport NAME] [--test NAME]... "
               "[--max-size BYTES] [--bw-size BYTES] [--seconds S] [--tag TEXT] "
               "[--print-config]\n"
               "Run under a launcher: railgauge run -n 4 -- railgauge-proto-test, or "
               "mpirun -n 4 railgauge-proto-test\n");
    rg_tk_list(f, RG_PT_SUITE);
}

/* The options of this suite alone (--max-size, --bw-size, --print-config):
 * 1 read, 0 not one of them, 2 done (--print-config ran: *rc its status),
 * -1 after an error. */
static int rg_pt_own_arg(void *ctx, int argc, char **argv, int *a, int *rc)
{
    rg_pt_t *t = ctx;
    rg_err_t err;

    if (strcmp(argv[*a], "--print-config") == 0) {
        *rc = rg_pt_print_config();
        return 2;
    }
    if (*a + 1 >= argc) {
        return 0;
    }
    if (strcmp(argv[*a], "--max-size") == 0) {
        if (rg_parse_size(argv[++*a], &t->big, &err) != RG_OK || t->big < 65536) {
            fprintf(stderr, "railgauge-proto-test: --max-size '%s': a size of at least "
                    "64KiB\n", argv[*a]);
            return -1;
        }
        return 1;
    }
    if (strcmp(argv[*a], "--bw-size") == 0) {
        if (rg_parse_size(argv[++*a], &t->bw_size, &err) != RG_OK || t->bw_size == 0 ||
            t->bw_size > ((size_t)1 << 30)) {
            fprintf(stderr, "railgauge-proto-test: --bw-size '%s': a size from 1 byte to "
                    "1GiB\n", argv[*a]);
            return -1;
        }
        return 1;
    }
    return 0;
}

static int rg_pt_open_cb(void *ctx, rg_err_t *err)
{
    rg_pt_t *t = ctx;

    return rg_proto_open(t->tk.transport, t->boot, NULL, &t->p, err);
}

static void rg_pt_close_cb(void *ctx)
{
    rg_proto_close(((rg_pt_t *)ctx)->p);
}

/* Opens the runtime over the bootstrap; 0, or the exit status. */
static int rg_pt_open(rg_pt_t *t)
{
    if (rg_tk_open(&t->tk, &t->boot, 16, rg_pt_open_cb, rg_pt_close_cb, t) != 0) {
        return 1;
    }
    t->eager = rg_proto_eager_limit(t->p);
    if (t->tk.rank == 0) {
        char info[512];

        rg_proto_info_json(t->p, info, sizeof(info));
        printf("proto transport=%s ranks=%d %s\n", t->tk.transport, t->tk.size, info);
        fflush(stdout);
    }
    return 0;
}

static void rg_pt_print_stats(rg_pt_t *t)
{
    rg_proto_stats_t st;

    rg_proto_get_stats(t->p, &st);
    if (t->tk.rank == 0) {
        printf("stats rank=0 eager_sent=%llu rndv_sent=%llu rndv_get=%llu unexpected=%llu "
               "out_of_order=%llu mem_high_water=%zu window=%d limit_events=%llu "
               "rnr_sent=%llu rnr_recv=%llu retries=%llu\n",
               (unsigned long long)st.eager_sent, (unsigned long long)st.rndv_sent,
               (unsigned long long)st.rndv_get, (unsigned long long)st.unexpected,
               (unsigned long long)st.out_of_order, st.mem.high_water, st.window,
               (unsigned long long)st.limit_events, (unsigned long long)st.rnr_sent,
               (unsigned long long)st.rnr_recv, (unsigned long long)st.retries);
    }
}

/* Test i, then the barrier that ends a collective test. */
static int rg_pt_run_one(void *ctx, size_t i)
{
    rg_pt_t *t = ctx;

    rg_pt_tests[i].fn(t);
    if (rg_pt_tests[i].c.collective) {
        rg_pt_barrier(t);
    }
    return 0;
}

int main(int argc, char **argv)
{
    rg_pt_t  t;
    int      selected[RG_TK_MAX_TESTS] = {0};
    int      rc = 0;
    char     env_transport[RG_CONFIG_STRING_MAX];

    _Static_assert(sizeof(rg_pt_tests) / sizeof(rg_pt_tests[0]) <= RG_TK_MAX_TESTS,
                   "RG_TK_MAX_TESTS");
    memset(&t, 0, sizeof(t));
    rc = rg_tk_init(&t.tk, "railgauge-proto-test", 2.0, env_transport, sizeof(env_transport));
    if (rc != 0) {
        return rc;
    }
    t.big          = (size_t)64 << 20;
    t.bw_size      = (size_t)4 << 20;
    if (!rg_tk_parse_args(&t.tk, RG_PT_SUITE, argc, argv, selected, rg_pt_own_arg, &t,
                          rg_pt_usage, &rc)) {
        return rc;
    }
    rc = rg_pt_open(&t);
    if (rc != 0) {
        return rc;
    }
    rg_tk_run(&t.tk, RG_PT_SUITE, selected, rg_pt_run_one, &t);
    rg_pt_print_stats(&t);
    rg_proto_close(t.p);
    rg_boot_fini(t.boot);
    return t.tk.failures == 0 ? 0 : 1;
}
