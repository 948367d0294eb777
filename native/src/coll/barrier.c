/*
 * railgauge: the runtime barrier over proto (coll/barrier.h).
 */
#include "coll/barrier.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/timer.h"
#include "xport/xport.h"

#define RG__LINE_WORDS 8u       /* one 64-byte cache line per inbox slot */
#define RG__SPIN_POLLS 20000u   /* polls of a line before sleeping on it (CPUs to spare) */

rg_status_t rg_coll_barrier_init(rg_coll_barrier_t *b, rg_proto_t *proto,
                                 const rg_coll_barrier_spec_t *spec, rg_err_t *err)
{
    rg_status_t st;

    memset(b, 0, sizeof(*b));
    rg_coll_plan_init(&b->plan);
    st = rg_coll_barrier_plan(&b->plan, spec, rg_proto_size(proto), rg_proto_rank(proto), err);
    if (st != RG_OK) {
        return st;
    }
    b->reqs = calloc(b->plan.max_ops ? b->plan.max_ops : 1, sizeof(*b->reqs));
    if (b->reqs == NULL) {
        rg_coll_plan_fini(&b->plan);
        return rg_err_set(err, RG_ERR_NOMEM, "barrier: out of memory for %u requests",
                          b->plan.max_ops);
    }
    b->proto = proto;
    return RG_OK;
}

static void rg__shm_free(rg_coll_shm_t *s)
{
    if (s == NULL) {
        return;
    }
    if (s->seg != NULL) {
        munmap(s->seg, s->seg_len);
    }
    free(s->send_line);
    free(s);
}

void rg_coll_barrier_fini(rg_coll_barrier_t *b)
{
    if (b == NULL) {
        return;
    }
    rg__shm_free(b->shm);
    free(b->reqs);
    rg_coll_plan_fini(&b->plan);
    memset(b, 0, sizeof(*b));
}

/* Names the request that failed (its peer) with the runtime's message. */
static rg_status_t rg__barrier_fail(rg_coll_barrier_t *b, rg_status_t st, uint32_t round,
                                    const rg_preq_t *req, rg_err_t *err)
{
    char name[32];

    rg_coll_barrier_format(&b->plan.spec, name, sizeof(name));
    return rg_err_set(err, st, "barrier %s on %d ranks, rank %d, round %u: %s rank %d: %s",
                      name, b->plan.P, b->plan.rank, round,
                      req != NULL && req->kind == RG_PREQ_SEND ? "send to" : "receive from",
                      req != NULL ? req->peer : -1,
                      st == RG_ERR_TIMEOUT ? "timed out" : rg_proto_strerror(b->proto));
}

/* ---- the shared-memory engine ------------------------------------------ */

static size_t rg__line(const rg_coll_shm_t *s, int q, uint32_t r, uint32_t j)
{
    return (((size_t)q * s->nrounds + r) * s->maxin + j) * RG__LINE_WORDS;
}

/* The setup's messages: blocking, on the barrier's tag, 8 bytes each. */
static rg_status_t rg__shm_say(rg_coll_barrier_t *b, int peer, uint64_t v)
{
    return rg_proto_send(b->proto, peer, RG_COLL_TAG_BARRIER, &v, sizeof(v));
}

static rg_status_t rg__shm_hear(rg_coll_barrier_t *b, int peer, uint64_t *v)
{
    rg_preq_t req;

    return rg_proto_recv(b->proto, peer, RG_COLL_TAG_BARRIER, v, sizeof(*v), &req);
}

/* Every rank's plan, for the segment's shape (the most rounds and the most
 * receives in a round of any rank) and for the line of each of this rank's
 * sends (its place among the peer's receives of that round). */
static rg_status_t rg__shm_layout(rg_coll_barrier_t *b, rg_coll_shm_t *s, rg_err_t *err)
{
    const rg_coll_plan_t *pl = &b->plan;
    rg_coll_plan_t        other;
    rg_status_t           st = RG_OK;
    uint32_t              r, i, j, k = 0, nsend = 0;
    int                   q, found;

    rg_coll_plan_init(&other);
    for (q = 0; q < pl->P && st == RG_OK; q++) {
        st = rg_coll_barrier_plan(&other, &pl->spec, pl->P, q, err);
        for (r = 0; st == RG_OK && r < other.nrounds; r++) {
            if (other.rounds[r].nrecv > s->maxin) {
                s->maxin = other.rounds[r].nrecv;
            }
        }
        if (st == RG_OK && other.nrounds > s->nrounds) {
            s->nrounds = other.nrounds;
        }
    }
    for (r = 0; r < pl->nrounds; r++) {
        nsend += pl->rounds[r].nsend;
    }
    s->send_line = calloc(nsend ? nsend : 1, sizeof(*s->send_line));
    if (st == RG_OK && s->send_line == NULL) {
        st = rg_err_set(err, RG_ERR_NOMEM, "barrier: no memory for %u sends", nsend);
    }
    for (r = 0; st == RG_OK && r < pl->nrounds; r++) {
        for (i = 0; st == RG_OK && i < pl->rounds[r].nsend; i++, k++) {
            q  = pl->peers[pl->rounds[r].send_off + i];
            st = rg_coll_barrier_plan(&other, &pl->spec, pl->P, q, err);
            for (j = 0, found = 0; st == RG_OK && r < other.nrounds &&
                                   j < other.rounds[r].nrecv; j++) {
                if (other.peers[other.rounds[r].recv_off + j] == pl->rank) {
                    s->send_line[k] = (uint32_t)(rg__line(s, q, r, j) / RG__LINE_WORDS);
                    found           = 1;
                    break;
                }
            }
            if (st == RG_OK && !found) {
                st = rg_err_set(err, RG_ERR_INVALID,
                                "barrier: rank %d sends to rank %d in round %u, which does "
                                "not receive from it", pl->rank, q, r);
            }
        }
    }
    rg_coll_plan_fini(&other);
    return st;
}

rg_status_t rg_coll_barrier_use_shm(rg_coll_barrier_t *b, rg_err_t *err)
{
    rg_coll_shm_t *s;
    rg_status_t    st;
    uint64_t       host = rg_xport_host_id(), v = 0, ok = 1, nonce;
    char           name[64];
    int            P = b->plan.P, me = b->plan.rank, q, fd = -1;

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "barrier: no memory");
    }
    st = rg__shm_layout(b, s, err);
    if (st != RG_OK) {
        rg__shm_free(s);
        return st;
    }
    s->seg_len = (size_t)P * s->nrounds * (s->maxin ? s->maxin : 1) * RG__LINE_WORDS *
                 sizeof(uint64_t);
    if (s->nrounds == 0) {
        /* One rank: a barrier of no rounds needs no segment. */
        s->spin = RG__SPIN_POLLS;
        b->shm  = s;
        return RG_OK;
    }
    /* One host? Rank 0 gathers the host ids, makes the segment and sends its
     * name's nonce (0: no segment); every rank maps it and reports; rank 0
     * unlinks it and sends the verdict. */
    nonce = ((uint64_t)getpid() << 20) ^ (rg_time_mono_ns() & 0xfffff);
    if (me == 0) {
        for (q = 1; q < P && st == RG_OK; q++) {
            st = rg__shm_hear(b, q, &v);
            ok = ok && v == host;
        }
    } else {
        st = rg__shm_say(b, 0, host);
    }
    if (st == RG_OK && me == 0 && ok && s->seg_len > 0) {
        snprintf(name, sizeof(name), "/railgauge-bar-%llx", (unsigned long long)nonce);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)s->seg_len) != 0) {
            ok = 0;
        }
    }
    for (q = 1; me == 0 && q < P && st == RG_OK; q++) {
        st = rg__shm_say(b, q, ok ? nonce : 0);
    }
    if (st == RG_OK && me != 0) {
        st    = rg__shm_hear(b, 0, &nonce);
        ok    = nonce != 0;
        snprintf(name, sizeof(name), "/railgauge-bar-%llx", (unsigned long long)nonce);
        if (ok && (fd = shm_open(name, O_RDWR, 0600)) < 0) {
            ok = 0;
        }
    }
    if (st == RG_OK && ok) {
        s->seg = mmap(NULL, s->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (s->seg == MAP_FAILED) {
            s->seg = NULL;
            ok     = 0;
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    /* Everyone's outcome to rank 0, the verdict back. */
    if (me == 0) {
        for (q = 1; q < P && st == RG_OK; q++) {
            st = rg__shm_hear(b, q, &v);
            ok = ok && v;
        }
        if (nonce != 0 && s->seg_len > 0) {
            snprintf(name, sizeof(name), "/railgauge-bar-%llx", (unsigned long long)nonce);
            shm_unlink(name);
        }
        for (q = 1; q < P && st == RG_OK; q++) {
            st = rg__shm_say(b, q, ok);
        }
    } else if (st == RG_OK) {
        st = rg__shm_say(b, 0, ok);
        if (st == RG_OK) {
            st = rg__shm_hear(b, 0, &ok);
        }
    }
    if (st != RG_OK) {
        rg__shm_free(s);
        return rg_err_set(err, st, "barrier: setting up shared memory: %s",
                          rg_proto_strerror(b->proto));
    }
    if (!ok) {
        rg__shm_free(s);
        return rg_err_set(err, RG_ERR_UNSUPPORTED,
                          "barrier: the ranks are not all on one host, or the shared "
                          "segment could not be made; messages are used");
    }
    s->lines = s->seg;
    /* Ranks that outnumber the CPUs poll briefly: the awaited rank may be
     * waiting for the very CPU a poller holds. */
    s->spin  = P > sysconf(_SC_NPROCESSORS_ONLN) ? 16 : RG__SPIN_POLLS;
    b->shm   = s;
    return RG_OK;
}

/* A line: word 0 the epoch (its low 32 bits are the futex word, little
 * endian), word 1 the number of sleepers. */
static inline uint64_t rg__epoch(const uint64_t *line)
{
    return atomic_load_explicit((const _Atomic uint64_t *)line, memory_order_seq_cst);
}

/* Waits until the line holds epoch e: polls (spin polls, fewer where ranks
 * share CPUs), then sleeps on the line with a futex (shared memory: the
 * address is shared between processes), so that a rank that shares its CPU
 * hands it to the one it waits for. The Dekker pair (sleeper: count, then
 * check; sender: store, then look at the count; all sequentially
 * consistent) ensures no wake-up is lost; the sleep is bounded anyway. */
static rg_status_t rg__shm_wait(uint64_t *line, uint64_t e, unsigned spin,
                                uint64_t timeout_ns, uint64_t *deadline_ns)
{
    struct timespec ts = {0, 2000000};  /* 2 ms: the deadline is checked between sleeps */
    uint64_t        v;
    unsigned        k = 0;

    while ((v = rg__epoch(line)) < e) {
        if (++k < spin) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        /* The round's deadline is read off the clock only once a wait gets
         * this far (a clock read per round was a tenth of a fast barrier). */
        if (timeout_ns != 0 && *deadline_ns == 0) {
            *deadline_ns = rg_time_mono_ns() + timeout_ns;
        }
        atomic_fetch_add_explicit((_Atomic uint64_t *)&line[1], 1, memory_order_seq_cst);
        if ((v = rg__epoch(line)) < e) {
            syscall(SYS_futex, (uint32_t *)line, FUTEX_WAIT, (uint32_t)v, &ts, NULL, 0);
        }
        atomic_fetch_sub_explicit((_Atomic uint64_t *)&line[1], 1, memory_order_seq_cst);
        if (*deadline_ns != 0 && rg_time_mono_ns() > *deadline_ns) {
            return rg__epoch(line) >= e ? RG_OK : RG_ERR_TIMEOUT;
        }
    }
    return RG_OK;
}

static inline void rg__shm_post(uint64_t *line, uint64_t e)
{
    atomic_store_explicit((_Atomic uint64_t *)line, e, memory_order_seq_cst);
    if (atomic_load_explicit((_Atomic uint64_t *)&line[1], memory_order_seq_cst) != 0) {
        syscall(SYS_futex, (uint32_t *)line, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    }
}

static rg_status_t rg__shm_run(rg_coll_barrier_t *b, uint32_t rounds, uint64_t timeout_ns,
                               rg_err_t *err)
{
    const rg_coll_plan_t *pl = &b->plan;
    rg_coll_shm_t        *s  = b->shm;
    uint64_t              e  = b->count + 1, deadline = 0;
    uint32_t              r, i, k = 0;
    char                  name[32];

    for (r = 0; r < rounds; r++) {
        const rg_coll_round_t *rd = &pl->rounds[r];

        deadline = 0;
        for (i = 0; i < rd->nsend; i++, k++) {
            rg__shm_post(&s->lines[(size_t)s->send_line[k] * RG__LINE_WORDS], e);
        }
        for (i = 0; i < rd->nrecv; i++) {
            if (rg__shm_wait(&s->lines[rg__line(s, pl->rank, r, i)], e, s->spin, timeout_ns,
                             &deadline) != RG_OK) {
                rg_coll_barrier_format(&pl->spec, name, sizeof(name));
                return rg_err_set(err, RG_ERR_TIMEOUT,
                                  "barrier %s on %d ranks (shared memory), rank %d, round %u: "
                                  "rank %d did not arrive", name, pl->P, pl->rank, r,
                                  pl->peers[rd->recv_off + i]);
            }
        }
    }
    b->count++;
    return RG_OK;
}

rg_status_t rg_coll_barrier_run_rounds(rg_coll_barrier_t *b, uint32_t rounds,
                                       uint64_t timeout_ns, rg_err_t *err)
{
    const rg_coll_plan_t *pl = &b->plan;
    uint32_t              r, i, k;
    rg_status_t           st;

    if (rounds > pl->nrounds) {
        rounds = pl->nrounds;
    }
    if (b->shm != NULL) {
        return rg__shm_run(b, rounds, timeout_ns, err);
    }
    for (r = 0; r < rounds; r++) {
        const rg_coll_round_t *rd = &pl->rounds[r];
        k = 0;
        /* Receives first, so that a message that comes while the sends are
         * posted lands in its receive, not in the unexpected queue. */
        for (i = 0; i < rd->nrecv; i++, k++) {
            st = rg_proto_irecv(b->proto, pl->peers[rd->recv_off + i], RG_COLL_TAG_BARRIER,
                                &b->token, 0, &b->reqs[k]);
            if (st != RG_OK) {
                return rg__barrier_fail(b, st, r, &b->reqs[k], err);
            }
        }
        for (i = 0; i < rd->nsend; i++, k++) {
            st = rg_proto_isend(b->proto, pl->peers[rd->send_off + i], RG_COLL_TAG_BARRIER,
                                &b->token, 0, &b->reqs[k]);
            if (st != RG_OK) {
                return rg__barrier_fail(b, st, r, &b->reqs[k], err);
            }
        }
        st = rg_proto_waitall(b->proto, k, b->reqs, timeout_ns);
        if (st != RG_OK) {
            const rg_preq_t *bad = NULL;
            for (i = 0; i < k; i++) {
                if (b->reqs[i].status != RG_OK) {
                    bad = &b->reqs[i];
                    break;
                }
            }
            return rg__barrier_fail(b, st, r, bad, err);
        }
    }
    b->count++;
    return RG_OK;
}

rg_status_t rg_coll_barrier_run(rg_coll_barrier_t *b, uint64_t timeout_ns, rg_err_t *err)
{
    return rg_coll_barrier_run_rounds(b, b->plan.nrounds, timeout_ns, err);
}
