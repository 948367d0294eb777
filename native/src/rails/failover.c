/*
 * railgauge: the rails transport's failures and failover: a rail whose
 * transport errs is torn down at the next safe point, every peer is told
 * (DOWN) and what the rail carried unacknowledged goes again on the rails
 * left; the cumulative acknowledgements (ACK, and every header's ack field)
 * say what a sender may forget. Without failover (RG_RAILS_FAILOVER=0) a
 * failed rail fails the transport.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "rails/rails_int.h"

rg_status_t rg__rails_fail(rg__rails_t *rl, rg_status_t status)
{
    rg_xreq_t  *req;
    rg__rsub_t *s;
    rg__rout_t *o;
    int         r;

    if (rl->failed != RG_OK) {
        return rl->failed;
    }
    rl->failed = status;
    for (r = 0; r < rl->nrails; r++) {
        for (s = rl->inflight[r]; s != NULL; s = s->next) {
            if (s->user != NULL && s->user->status == RG_INPROGRESS) {
                s->user->status = status;
            }
        }
    }
    while ((req = rl->posted) != NULL) {
        rl->posted  = req->next;
        req->status = status;
    }
    for (r = 0; r < rl->super.size; r++) {
        rg__rmsg_t *m;

        for (m = rl->peers[r].msgs; m != NULL; m = m->next) {
            if (m->user != NULL && m->user->status == RG_INPROGRESS) {
                m->user->status = status;
            }
        }
        for (o = rl->peers[r].outs; o != NULL; o = o->next) {
            if (o->user != NULL && o->user->status == RG_INPROGRESS) {
                o->user->status = status;
            }
        }
    }
    return status;
}

/* A rail's transport failed (why: NULL for its own message). Without
 * failover the rails transport fails, naming the rail. With it, the rail is
 * torn down at the next safe point (rg__rails_reap: not inside a walk of the
 * rail's lists) and RG_OK returned, so that the caller goes on. */
rg_status_t rg__rails_rail_failed(rg__rails_t *rl, int r, rg_status_t status,
                                  const char *why)
{
    if (why == NULL) {
        why = rl->rail[r] != NULL ? rg_xport_strerror(rl->rail[r]) : rg_status_name(status);
    }
    if (!rl->fo) {
        rg_err_set(&rl->super.err, status, "rail %d (%s) failed: %s", r, rl->rname[r], why);
        return rg__rails_fail(rl, status);
    }
    if (rg__rails_up(rl, r)) {
        snprintf(rl->down_why[r], sizeof(rl->down_why[r]), "%s", why);
        rl->down_pending |= 1u << r;
    }
    return rl->failed;
}

rg_status_t rg__rails_nomem(rg__rails_t *rl)
{
    rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot allocate a rail request");
    return rg__rails_fail(rl, RG_ERR_NOMEM);
}

/* Tells peer how far its messages are complete here. */
rg_status_t rg__rails_send_ack(rg__rails_t *rl, int peer)
{
    rg__rsub_t *s;

    if (rl->peers[peer].byes != 0) {
        return RG_OK;  /* it is closing: it waits for nothing more */
    }
    if ((s = rg__rsub_get(rl, RG__RAILS_HDR)) == NULL) {
        return rg__rails_nomem(rl);
    }
    rg__rails_hdr(rl, peer, s->stage, RG__RAILS_T_ACK, 0, 0, 0, 0);
    rl->acks_sent++;
    return rg__rails_post(rl, rg__rails_best(rl, peer), peer, s, s->stage, RG__RAILS_HDR,
                          NULL);
}

/* The peer has all our messages below ack: their sends may complete and
 * their staging buffers go. */
void rg__rails_take_ack(rg__rails_t *rl, int peer, uint64_t ack)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rout_t  *o;
    rg_xreq_t   *u;

    if (!rl->fo || ack <= pp->acked) {
        return;
    }
    pp->acked = ack;
    while ((o = pp->outs) != NULL && o->seq < ack) {
        pp->outs = o->next;
        if (pp->outs == NULL) {
            pp->outs_last = NULL;
        }
        u = o->user;
        if (u != NULL && o->ackshare && --RG__RAILS_PENDING(u) == 0 &&
            u->status == RG_INPROGRESS) {
            u->done   = u->len;
            u->status = RG_OK;
        }
        o->user  = NULL;
        o->acked = 1;
        if (o->live == 0) {
            rg__rout_free(rl, o);
        }
    }
}

/* A DOWN from peer (v as its header has it: epoch v[1], rail v[3]): the peer
 * found the rail down, so it is closed here too, before the pieces the peer
 * sends again behind this notice arrive; not for a notice about an instance
 * before this one. */
void rg__rails_take_down(rg__rails_t *rl, int peer, const uint64_t v[5])
{
    if (v[3] < (uint64_t)rl->nrails && rg__rails_up(rl, (int)v[3]) &&
        v[1] >= rl->epoch[v[3]]) {
        char why[96];

        snprintf(why, sizeof(why), "rank %d reported it down", peer);
        (void)rg__rails_rail_failed(rl, (int)v[3], RG_ERR_PEER_DEAD, why);
    }
}

void rg__rails_event(rg__rails_t *rl, int r, const char *what, const char *why)
{
    size_t n;

    if (rl->nevents < RG__RAILS_EVENTS) {
        rl->events[rl->nevents].t_s  = (double)(rg_time_mono_ns() - rl->t0_ns) * 1e-9;
        rl->events[rl->nevents].rail = r;
        rl->events[rl->nevents].what = what;
        n = strnlen(why, sizeof(rl->events[0].why) - 1);
        memmove(rl->events[rl->nevents].why, why, n);
        rl->events[rl->nevents].why[n] = '\0';
        rl->nevents++;
    }
}

/* Marks rail r down, says so (stderr, the events), schedules the first try
 * to take it back and closes its transport: none of its requests touches a
 * user buffer after that. Returns how many rails are left. */
static int rg__rails_down(rg__rails_t *rl, int r)
{
    int k, left;

    rl->alive        &= ~(1u << r);
    rl->down_pending &= ~(1u << r);
    rl->failovers++;
    for (left = 0, k = 0; k < rl->nrails; k++) {
        left += (int)((rl->alive >> k) & 1u);
    }
    fprintf(stderr, "railgauge: rank %d: rail %d (%s) is down: %s; %s\n", rl->super.rank, r,
            rl->rname[r], rl->down_why[r],
            left > 0 ? "its traffic goes on the other rails" : "no rail is left");
    rg__rails_event(rl, r, "down", rl->down_why[r]);
    rl->down_ns[r]     = rg_time_mono_ns();
    rl->backoff_ns[r]  = (uint64_t)rl->cfg.retry_ns;
    rl->next_try_ns[r] = rl->down_ns[r] + rl->backoff_ns[r];
    if (rl->rail[r] != NULL) {
        rg_xport_close(rl->rail[r]);
        rl->rail[r] = NULL;
    }
    return left;
}

/* Drops what was in flight on rail r. The sends it leaves with nothing
 * pending are complete unless a piece of them goes again (then it is
 * pending again): they go into *users_p (*nu_p of them, to be freed) and
 * are checked at the end of the teardown. */
static rg_status_t rg__rails_drop_inflight(rg__rails_t *rl, int r, rg_xreq_t ***users_p,
                                           size_t *nu_p)
{
    rg__rsub_t *s, *next;
    rg_xreq_t **users = NULL;
    size_t      n, nu = 0;

    for (n = 0, s = rl->inflight[r]; s != NULL; s = s->next) {
        n++;
    }
    if (n > 0 && (users = malloc(n * sizeof(*users))) == NULL) {
        return rg__rails_nomem(rl);
    }
    for (s = rl->inflight[r]; s != NULL; s = next) {
        next = s->next;
        if (s->user != NULL && s->user->status == RG_INPROGRESS &&
            --RG__RAILS_PENDING(s->user) == 0) {
            users[nu++] = s->user;
        }
        rg__rsub_done(rl, s);
    }
    rl->inflight[r] = NULL;
    *users_p = users;
    *nu_p    = nu;
    return RG_OK;
}

/* The receive sides of rail r are dead; a piece that was coming into a
 * message's buffer comes again on another rail. */
static void rg__rails_rx_dead(rg__rails_t *rl, int r)
{
    rg__rrx_t *x;
    int        peer, size = rl->super.size;

    for (peer = 0; peer < size; peer++) {
        x = rg__rails_rx(rl, r, peer);
        if (x->state == RG__RAILS_RX_DATA && x->intmp && x->msg != NULL) {
            x->msg->tmp_live--;   /* that piece comes again on another rail */
            if (x->msg->user != NULL && x->msg->tmp_live == 0) {
                free(x->msg->tmp);
                x->msg->tmp = NULL;
            }
        }
        x->intmp = 0;
        if (x->state != RG__RAILS_RX_CLOSED) {
            x->state = RG__RAILS_RX_DEAD;
        }
        x->msg = NULL;
    }
    rl->busy_rx[r] = 0;
}

/* No rail is left: the transport fails, naming every rail and why it went;
 * the sends of users (nu of them, freed here) fail with it. */
static rg_status_t rg__rails_all_down(rg__rails_t *rl, rg_xreq_t **users, size_t nu)
{
    char     all[RG__RAILS_MAX * 200];
    size_t   len = 0;
    unsigned i;
    int      k;

    for (k = 0; k < rl->nrails && len < sizeof(all); k++) {
        len += (size_t)snprintf(all + len, sizeof(all) - len, "%srail %d (%s): %.160s",
                                k > 0 ? "; " : "", k, rl->rname[k], rl->down_why[k]);
    }
    rg_err_set(&rl->super.err, RG_ERR_PEER_DEAD, "every rail has failed: %s", all);
    for (i = 0; i < nu; i++) {
        if (users[i]->status == RG_INPROGRESS) {
            users[i]->status = RG_ERR_PEER_DEAD;
        }
    }
    free(users);
    return rg__rails_fail(rl, RG_ERR_PEER_DEAD);
}

/* Tells peer on every rail up that rail r (its current instance) is down. */
static rg_status_t rg__rails_tell_down(rg__rails_t *rl, int peer, int r)
{
    rg__rsub_t *s;
    rg_status_t status;
    int         k;

    for (k = 0; k < rl->nrails; k++) {
        if (!rg__rails_up(rl, k) || (s = rg__rsub_get(rl, RG__RAILS_HDR)) == NULL) {
            continue;
        }
        rg__rails_hdr(rl, peer, s->stage, RG__RAILS_T_DOWN, 0, rl->epoch[r], 0, (uint64_t)r);
        status = rg__rails_post(rl, k, peer, s, s->stage, RG__RAILS_HDR, NULL);
        if (status != RG_OK) {
            return status;
        }
    }
    return RG_OK;
}

/* Sends again, on the best rail up, every piece to peer that rail r carried
 * and that peer has not acknowledged. */
static rg_status_t rg__rails_resend(rg__rails_t *rl, int peer, int r)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rout_t  *o;
    rg_status_t  status;
    unsigned     i;
    int          t;

    for (o = pp->outs; o != NULL; o = o->next) {
        for (i = 0; i < o->nparts; i++) {
            if (o->parts[i].rail != r) {
                continue;
            }
            t                 = rg__rails_best(rl, peer);
            o->parts[i].rail  = t;
            rl->resent_bytes += o->parts[i].len;
            rl->resent_pieces++;
            if (!rg__rails_up(rl, t)) {
                continue;  /* torn down next; this piece moves again then */
            }
            if (o->stage != NULL) {
                status = rg__rails_post(rl, t, peer, o->stage, o->stage->stage,
                                        RG__RAILS_HDR + (size_t)o->total, o->user);
            } else if (o->ackshare) {
                status = rg__rails_piece(rl, t, peer, o->seq, o->total, o->parts[i].off,
                                         o->parts[i].len, o->user->buf, o->user, NULL);
            } else {
                status = rg__rails_piece(rl, t, peer, o->seq, o->total, o->parts[i].off,
                                         o->parts[i].len, o->copy, o->user, o);
            }
            if (status == RG_ERR_NOMEM) {
                return rg__rails_nomem(rl);
            }
            if (status != RG_OK) {
                return status;
            }
        }
    }
    return RG_OK;
}

/* The sends that the teardown left with nothing pending (users, nu of them)
 * and that no piece sent again made pending again are complete. */
static void rg__rails_sends_left_done(rg__rails_t *rl, rg_xreq_t **users, size_t nu)
{
    rg__rout_t *o;
    int         k;

    for (k = 0; k < (int)nu; k++) {
        rg_xreq_t *u = users[k];

        if (RG__RAILS_PENDING(u) != 0 || u->status != RG_INPROGRESS) {
            continue;
        }
        u->done   = u->len;
        u->status = RG_OK;
        for (o = rl->peers[u->peer].outs; o != NULL; o = o->next) {
            if (o->user == u) {
                o->user = NULL;
            }
        }
    }
}

/* Takes failed rail r out: closes its transport, drops what was in flight
 * on it, tells every peer on every rail left and sends again there what r
 * carried and the peer has not acknowledged. */
static rg_status_t rg__rails_teardown(rg__rails_t *rl, int r)
{
    rg_xreq_t **users = NULL;
    size_t      nu    = 0;
    int         peer, left;
    rg_status_t status;

    left   = rg__rails_down(rl, r);
    status = rg__rails_drop_inflight(rl, r, &users, &nu);
    if (status != RG_OK) {
        return status;
    }
    rg__rails_rx_dead(rl, r);
    if (left == 0) {
        return rg__rails_all_down(rl, users, nu);
    }
    for (peer = 0; peer < rl->super.size; peer++) {
        rg__rails_weights_down(rl, &rl->peers[peer], r, left);
        if (peer == rl->super.rank || rl->peers[peer].byes != 0) {
            continue;
        }
        status = rg__rails_tell_down(rl, peer, r);
        if (status == RG_OK) {
            status = rg__rails_resend(rl, peer, r);
        }
        if (status != RG_OK) {
            free(users);
            return status;
        }
    }
    /* Stalls from before the failover that a lower message may now queue
     * behind (see rg__rails_unstall_all). */
    status = rg__rails_unstall_all(rl);
    if (status == RG_OK) {
        rg__rails_sends_left_done(rl, users, nu);
    }
    free(users);
    return status;
}

/* Tears down the rails that failed since the last call (a teardown may
 * find another rail failed). */
rg_status_t rg__rails_reap(rg__rails_t *rl)
{
    rg_status_t status = RG_OK;
    int         r;

    while (rl->down_pending != 0 && status == RG_OK && rl->failed == RG_OK) {
        for (r = 0; r < rl->nrails && !((rl->down_pending >> r) & 1u); r++) {
        }
        status = rg__rails_teardown(rl, r);
    }
    return rl->failed != RG_OK ? rl->failed : status;
}
