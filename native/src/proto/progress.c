/*
 * railgauge: the runtime's progress (one call moves every request forward:
 * the transports, the pool's arrivals, refused messages due again, staged
 * sends, rendezvous payloads), its waits (spin, yield, then sleep in the
 * transport that has the work), and its failures: the first error ends the
 * runtime, and a peer of this host that died is named.
 */
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "base/timer.h"
#include "proto/proto_int.h"

/* How often a waiting rank checks that the peers it waits on are alive. */
#define RG__PROTO_LIVENESS_NS 50000000ull

#define RG__PROTO_FIRST_BURST 64
#define RG__PROTO_BURST       32

/* ---- failures and dead peers ---------------------------------------------- */

/* 1 if rank peer runs on this host and has exited. */
static int rg__peer_dead(const rg_proto_t *proto, int peer)
{
    return peer >= 0 && peer != proto->rank && proto->pids[peer] > 0 &&
           rg_xport_pid_dead((pid_t)proto->pids[peer]);
}

rg_status_t rg__proto_fail(rg_proto_t *proto, rg_status_t status, const char *what,
                           const rg_xport_t *xp)
{
    char dead[160] = "";
    int  peer, n = 0, k;

    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    proto->failed = status;
    /* A transport that lost a peer may not know which rank was the cause
     * (a receive from any source): name the ranks of this host that exited.
     * A closed connection can come before its process is gone: wait for it
     * a little (this is the path of a failing run, not of a message). */
    for (k = 0; status == RG_ERR_PEER_DEAD && proto->pids != NULL && k < 40; k++) {
        for (peer = 0; peer < proto->size && !rg__peer_dead(proto, peer); peer++) {
        }
        if (peer < proto->size) {
            break;
        }
        usleep(5000);
    }
    for (peer = 0; status == RG_ERR_PEER_DEAD && proto->pids != NULL && peer < proto->size;
         peer++) {
        if (rg__peer_dead(proto, peer) && (size_t)n < sizeof(dead) - 40) {
            k = snprintf(dead + n, sizeof(dead) - (size_t)n, "%s rank %d (pid %d)",
                         n == 0 ? "; exited:" : ",", peer, (int)proto->pids[peer]);
            n += k > 0 ? k : 0;
        }
    }
    rg_err_set(&proto->err, status, "%s: %s%s", what,
               xp != NULL ? rg_xport_strerror(xp) : rg_status_string(status), dead);
    return proto->failed;
}

/* rg__peer_dead, asked of the system at most once per liveness period per
 * peer (a wait for a window of requests asks for the same peer many times). */
static int rg__peer_dead_cached(rg_proto_t *proto, int peer)
{
    uint64_t now;

    if (peer < 0 || peer == proto->rank || proto->pids[peer] <= 0) {
        return 0;
    }
    if (proto->dead[peer]) {
        return 1;
    }
    now = rg_time_mono_ns();
    if (now - proto->live_ns[peer] < RG__PROTO_LIVENESS_NS) {
        return 0;
    }
    proto->live_ns[peer] = now;
    proto->dead[peer]    = (uint8_t)rg__peer_dead(proto, peer);
    return proto->dead[peer];
}

/* The transports report a dead peer where a transport request waits for it;
 * the runtime's own waits (a receive matched in the runtime while the pool
 * takes messages from any source, a rendezvous waiting for its CTS) are
 * checked here: a request for a dead peer on this host (any peer for a
 * receive from any source: all of them dead) ends the wait with an error
 * that names it. Peers on other hosts: their transport's errors, and the
 * launcher, which ends the job when a rank dies. */
static rg_status_t rg__check_req(rg_proto_t *proto, const rg_preq_t *r)
{
    char others[96];
    int  peer, alive = 0;

    if (r->status != RG_INPROGRESS) {
        return RG_OK;
    }
    if (r->peer != RG_PROTO_ANY_SOURCE) {
        if (!rg__peer_dead_cached(proto, r->peer)) {
            return RG_OK;
        }
        proto->failed = RG_ERR_PEER_DEAD;
        return rg_err_set(&proto->err, RG_ERR_PEER_DEAD,
                          "rank %d (pid %d) died while rank %d waited for its %s", r->peer,
                          (int)proto->pids[r->peer], proto->rank,
                          r->kind == RG_PREQ_SEND ? "receive of a message" : "message");
    }
    for (peer = 0; peer < proto->size && !alive; peer++) {
        alive = peer != proto->rank && !rg__peer_dead_cached(proto, peer);
    }
    if (alive || proto->size < 2) {
        return RG_OK;
    }
    proto->failed = RG_ERR_PEER_DEAD;
    return rg_err_set(&proto->err, RG_ERR_PEER_DEAD,
                      "every other rank died (%s) while rank %d waited for a message from "
                      "any of them",
                      rg_err_others(others, sizeof(others), proto->size, proto->rank),
                      proto->rank);
}

/* ---- progress ---------------------------------------------------------------- */

/* Staged sends still on their way: those done complete their owners and go
 * back to the staging cache (kept ones stay until acknowledged, RNR). */
static rg_status_t rg__inflight_progress(rg_proto_t *proto)
{
    rg__xop_t  *x, *next, *prev = NULL;
    rg_status_t status;

    for (x = proto->inflight.head; x != NULL; x = next) {
        next = x->next;
        if (x->xreq.status == RG_INPROGRESS) {
            prev = x;
            continue;
        }
        rg__proto_inflight_unlink_after(&proto->inflight, prev, x);
        status = x->xreq.status;
        if (x->retain) {
            /* Kept until acknowledged (RNR); freed here if that came first
             * (a failed send too: nothing else holds it then). */
            x->sending = 0;
            if (x->acked) {
                rg__proto_retained_release(proto, x);
            }
            if (status < 0) {
                return rg__proto_fail(proto, status, "send", proto->chan[0]);
            }
            continue;
        }
        if (status < 0 && x->owner == NULL) {
            /* A failed control message: its staging goes back (it is on no
             * list any more), and the runtime fails. */
            rg__proto_xop_put(proto, x);
            return rg__proto_fail(proto, status, "control message", proto->chan[0]);
        }
        rg__proto_xop_done(proto, x);
    }
    return RG_OK;
}

/* Rendezvous payloads on the data channel. */
static void rg__active_progress(rg_proto_t *proto)
{
    rg_preq_t *r, *next;

    for (r = proto->active.head; r != NULL; r = next) {
        next = r->next;
        if (r->xreq.status != RG_INPROGRESS) {
            rg__proto_preq_unlink(&proto->active, r);
            proto->rndv_busy--;
            if (r->kind == RG_PREQ_RECV) {
                r->msg_len = r->xreq.msg_len;
            }
            rg__proto_complete(r, r->xreq.status);
        }
    }
}

rg_status_t rg_proto_progress(rg_proto_t *proto)
{
    rg_status_t status;
    int         c;

    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    for (c = 0; c < proto->nchan; c++) {
        status = rg_xport_progress(proto->chan[c]);
        if (status < 0) {
            /* A peer that left after its last messages (an ACK, a FIN) ends
             * the transport, but what arrived before still counts: the
             * runtime fails, and then takes those arrivals, so that a wait
             * they complete succeeds. */
            status = rg__proto_fail(proto, status, "transport", proto->chan[c]);
            rg__proto_pool_progress(proto);
            return status;
        }
    }
    status = rg__proto_pool_progress(proto);
    if (status != RG_OK) {
        return status;
    }
    if (proto->rnrq.head != NULL && (status = rg__proto_rnr_progress(proto)) != RG_OK) {
        return status;
    }
    if ((status = rg__inflight_progress(proto)) != RG_OK) {
        return status;
    }
    rg__active_progress(proto);
    return RG_OK;
}

rg_status_t rg_proto_test(rg_proto_t *proto, rg_preq_t *req)
{
    rg_status_t status;

    if (req->status == RG_INPROGRESS) {
        status = rg_proto_progress(proto);
        if (status < 0) {
            return status;
        }
    }
    return req->status;
}

/* ---- waiting ------------------------------------------------------------------ */

/* How long a wait may sleep in the transport now: up to its deadline and
 * the transport's block limit, and no later than the first refused
 * message's retry is due (at least 1 us). */
static uint64_t rg__sleep_ns(const rg_proto_t *proto, const rg_xport_wait_config_t *w,
                             uint64_t now, uint64_t deadline)
{
    uint64_t sleep_ns = deadline - now;
    const rg__xop_t *due = proto->rnrq.head;

    if (sleep_ns > (uint64_t)w->block_ns) {
        sleep_ns = (uint64_t)w->block_ns;
    }
    /* A refused message goes again when its timer runs out. */
    if (due != NULL) {
        sleep_ns = due->due_ns > now && due->due_ns - now < sleep_ns
                       ? due->due_ns - now
                       : (due->due_ns <= now ? 0 : sleep_ns);
    }
    if (sleep_ns < 1000) {
        sleep_ns = 1000;
    }
    return sleep_ns;
}

/* Waits until *done(arg) holds; the loop of rg_xport_wait(): spin, yield,
 * then sleep in the transport that has the work. check(arg) asks, once per
 * liveness period after the spin, whether a peer that arg waits on died. */
static rg_status_t rg__wait(rg_proto_t *proto, int (*done)(void *), void *arg,
                            rg_status_t (*check)(rg_proto_t *, void *), uint64_t timeout_ns)
{
    uint64_t    next_check = 0;
    const rg_xport_wait_config_t *w = &proto->chan[0]->wait;
    rg_xport_t *xp;
    rg_status_t status;
    uint64_t    start = 0, now, spin_end = 0, yield_end = 0, deadline = 0;
    unsigned    i, burst = RG__PROTO_FIRST_BURST;

    for (;;) {
        for (i = 0; i < burst; i++) {
            status = rg_proto_progress(proto);
            if (status < 0) {
                return done(arg) ? RG_OK : status;
            }
            if (done(arg)) {
                return RG_OK;
            }
        }
        burst = RG__PROTO_BURST;
        now   = rg_time_mono_ns();
        if (start == 0) {
            start     = now;
            spin_end  = start + (uint64_t)w->spin_ns;
            yield_end = spin_end + (uint64_t)w->yield_ns;
            deadline  = timeout_ns > 0 ? start + timeout_ns : UINT64_MAX;
        }
        if (now >= deadline) {
            return rg_err_set(&proto->err, RG_ERR_TIMEOUT, "still pending after %.3f s",
                              (double)timeout_ns * 1e-9);
        }
        if (now < spin_end) {
            continue;
        }
        if (now >= next_check) {
            next_check = now + RG__PROTO_LIVENESS_NS;
            status     = check(proto, arg);
            if (status != RG_OK) {
                return status;
            }
        }
        if (now < yield_end ||
            (proto->rndv_busy > 0 && now < yield_end + (uint64_t)proto->cfg.rndv_yield_ns)) {
            rg_xport_wait_yield(w);
            continue;
        }
        /* Sleep where the work is: payloads on the data channel, else the
         * eager path. */
        xp     = proto->active.head != NULL ? proto->chan[proto->active.head->chan]
                                            : proto->chan[0];
        status = xp->ops->block(xp, rg__sleep_ns(proto, w, now, deadline));
        if (status == RG_ERR_UNSUPPORTED) {
            sched_yield();
        } else if (status < 0) {
            return rg__proto_fail(proto, status, "transport", xp);
        }
    }
}

static int rg__req_done(void *arg)
{
    return ((rg_preq_t *)arg)->status != RG_INPROGRESS;
}

static rg_status_t rg__req_check(rg_proto_t *proto, void *arg)
{
    return rg__check_req(proto, arg);
}

rg_status_t rg_proto_wait(rg_proto_t *proto, rg_preq_t *req, uint64_t timeout_ns)
{
    rg_status_t status;

    if (req->status != RG_INPROGRESS) {
        return req->status;
    }
    status = rg__wait(proto, rg__req_done, req, rg__req_check, timeout_ns);
    return status != RG_OK ? status : req->status;
}

typedef struct rg__all {
    rg_preq_t *reqs;
    size_t     n, first;  /* reqs before first are complete */
} rg__all_t;

static int rg__all_done(void *arg)
{
    rg__all_t *a = arg;

    while (a->first < a->n && a->reqs[a->first].status != RG_INPROGRESS) {
        a->first++;
    }
    return a->first == a->n;
}

static rg_status_t rg__all_check(rg_proto_t *proto, void *arg)
{
    rg__all_t  *a = arg;
    rg_status_t status = RG_OK;
    size_t      i;

    for (i = a->first; i < a->n && status == RG_OK; i++) {
        status = rg__check_req(proto, &a->reqs[i]);
    }
    return status;
}

rg_status_t rg_proto_waitall(rg_proto_t *proto, size_t n, rg_preq_t *reqs,
                             uint64_t timeout_ns)
{
    rg__all_t   a = {reqs, n, 0};
    rg_status_t status;
    size_t      i;

    if (!rg__all_done(&a)) {
        status = rg__wait(proto, rg__all_done, &a, rg__all_check, timeout_ns);
        if (status != RG_OK) {
            return status;
        }
    }
    for (i = 0; i < n; i++) {
        if (reqs[i].status != RG_OK) {
            return reqs[i].status;
        }
    }
    return RG_OK;
}

rg_status_t rg_proto_send(rg_proto_t *proto, int peer, int tag, const void *buf, size_t len)
{
    rg_preq_t   req;
    rg_status_t status = rg_proto_isend(proto, peer, tag, buf, len, &req);

    return status != RG_OK ? status : rg_proto_wait(proto, &req, 0);
}

rg_status_t rg_proto_recv(rg_proto_t *proto, int peer, int tag, void *buf, size_t cap,
                          rg_preq_t *out)
{
    rg_status_t status = rg_proto_irecv(proto, peer, tag, buf, cap, out);

    return status != RG_OK ? status : rg_proto_wait(proto, out, 0);
}
