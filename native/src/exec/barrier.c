/*
 * railgauge: the runtime barrier over proto (exec/barrier.h).
 */
#include "exec/barrier.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/timer.h"
#include "base/host.h"

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
    rg_coll_flags_fini(&s->flags);
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

rg_status_t rg_coll_barrier_use_shm(rg_coll_barrier_t *b, rg_err_t *err)
{
    rg_coll_shm_t *s;
    rg_status_t    st;
    uint64_t       host = rg_host_id(), v = 0, ok = 1, nonce;
    char           name[64];
    int            P = b->plan.P, me = b->plan.rank, q, fd = -1;

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "barrier: no memory");
    }
    st = rg_coll_flags_layout(&s->flags, &b->plan, err);
    if (st != RG_OK) {
        free(s);
        return st;
    }
    s->seg_len = rg_coll_flags_bytes(&s->flags, P);
    if (s->seg_len == 0) {
        /* One rank: a barrier of no rounds needs no segment. */
        b->shm = s;
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
    rg_coll_flags_attach(&s->flags, s->seg, P);
    b->shm = s;
    return RG_OK;
}

static rg_status_t rg__shm_run(rg_coll_barrier_t *b, uint32_t rounds, uint64_t timeout_ns,
                               rg_err_t *err)
{
    const rg_coll_plan_t *pl = &b->plan;
    uint32_t              r  = 0;
    int                   peer = -1;
    char                  name[32];

    if (rg_coll_flags_run(&b->shm->flags, pl, rounds, b->count + 1, timeout_ns, &r, &peer) !=
        RG_OK) {
        rg_coll_barrier_format(&pl->spec, name, sizeof(name));
        return rg_err_set(err, RG_ERR_TIMEOUT,
                          "barrier %s on %d ranks (shared memory), rank %d, round %u: "
                          "rank %d did not arrive", name, pl->P, pl->rank, r, peer);
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
        if (rd->nsend + rd->nrecv == 0) {
            continue; /* most rounds of the double ring */
        }
        /* Receives first, so that a message that comes while the sends are
         * posted lands in its receive, not in the unexpected queue. A
         * pair's messages match in order (one tag, FIFO per source), and
         * only this round's receives are posted, so a pair that carries
         * several messages (coll/sched.h) meets each in its round. */
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
