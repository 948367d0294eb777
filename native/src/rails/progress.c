/*
 * railgauge: the rails transport's progress engine (every rail's transport
 * progressed, what completed handled, failed rails torn down, rails taken
 * back) and its sleep on every rail's sockets at once.
 */
#include <errno.h>
#include <time.h>

#include "base/timer.h"
#include "rails/rails_int.h"

#define RG__RAILS_IDLE_AFTER 64u  /* empty progress calls before a rail idles */
#define RG__RAILS_IDLE_EVERY 8u   /* an idle rail: progressed every 8th call */

/* The rail requests of rail r that completed: the sends they end complete.
 * A failed one fails the rail (rg__rails_rail_failed). */
static rg_status_t rg__rails_sends_done(rg__rails_t *rl, int r)
{
    rg__rsub_t **ps, *s;
    rg_status_t  status;

    for (ps = &rl->inflight[r]; (s = *ps) != NULL;) {
        if (s->x.status == RG_INPROGRESS) {
            ps = &s->next;
            continue;
        }
        rl->idle[r] = 0;
        if (s->x.status != RG_OK) {
            status = rg__rails_rail_failed(rl, r, s->x.status, NULL);
            if (status != RG_OK) {
                return status;
            }
            break;
        }
        *ps = s->next;
        if (s->user != NULL && --RG__RAILS_PENDING(s->user) == 0 &&
            s->user->status == RG_INPROGRESS) {
            s->user->done   = s->user->len;
            s->user->status = RG_OK;
            if (s->rout != NULL && !s->rout->ackshare) {
                s->rout->user = NULL;
            }
        }
        rg__rsub_done(rl, s);
    }
    return RG_OK;
}

/* What rail r brought: the completed receives of every subchannel, in turn,
 * while the rail is up. */
static rg_status_t rg__rails_recvs_done(rg__rails_t *rl, int r)
{
    rg__rrx_t  *x;
    rg_status_t status;
    int         peer, again;

    for (peer = 0; peer < rl->super.size && rg__rails_up(rl, r); peer++) {
        if (peer == rl->super.rank) {
            continue;
        }
        x = rg__rails_rx(rl, r, peer);
        do {
            again = 0;
            if (x->state == RG__RAILS_RX_STALL || x->state == RG__RAILS_RX_CLOSED ||
                x->state == RG__RAILS_RX_DEAD || x->x.status == RG_INPROGRESS) {
                break;
            }
            rl->idle[r] = 0;
            status = x->state == RG__RAILS_RX_HDR ? rg__rails_on_hdr(rl, r, peer, x)
                                                  : rg__rails_on_data(rl, r, peer, x);
            if (status != RG_OK) {
                return status;
            }
            again = rg__rails_up(rl, r);
        } while (again);
    }
    return RG_OK;
}

/* The acknowledgements that this call's completed messages made due (with
 * the adaptive policy: the rates, which carry them), one per peer (see
 * rg__rails_msg_check). */
static rg_status_t rg__rails_flush_acks(rg__rails_t *rl)
{
    rg_status_t status;
    int         peer;

    for (peer = 0; peer < rl->super.size && rl->acks_due > 0; peer++) {
        rg__rpeer_t *pp = &rl->peers[peer];

        if (!pp->ack_due) {
            continue;
        }
        pp->ack_due = 0;
        rl->acks_due--;
        if (rl->policy == RG__RAILS_P_ADAPTIVE) {
            status = rg__rails_send_rates(rl, peer);
        } else {
            status = pp->ack_sent < pp->ack_upto ? rg__rails_send_ack(rl, peer) : RG_OK;
        }
        if (status != RG_OK) {
            return status;
        }
    }
    return RG_OK;
}

/* One progress call: every rail up is progressed (an idle one only every
 * RG__RAILS_IDLE_EVERY-th call), its completed sends and receives handled,
 * the rails that failed torn down, the tries to take rails back moved on,
 * the acknowledgements due sent, and the posted receives matched. */
rg_status_t rg__rails_progress(rg_xport_t *xp)
{
    rg__rails_t *rl = rg__rails(xp);
    rg_status_t  status;
    int          r;

    if (rl->failed != RG_OK) {
        return rl->failed;
    }
    rl->polls++;
    for (r = 0; r < rl->nrails; r++) {
        if (rl->down_pending != 0) {
            status = rg__rails_reap(rl);
            if (status != RG_OK) {
                return status;
            }
        }
        if (!rg__rails_up(rl, r)) {
            continue;
        }
        if (rl->idle[r] >= RG__RAILS_IDLE_AFTER && rl->inflight[r] == NULL &&
            rl->busy_rx[r] == 0 && rl->polls % RG__RAILS_IDLE_EVERY != 0) {
            continue;
        }
        rl->idle[r]++;
        status = rg_xport_progress(rl->rail[r]);
        if (status < 0) {
            status = rg__rails_rail_failed(rl, r, status, NULL);
            if (status != RG_OK) {
                return status;
            }
            continue;
        }
        status = rg__rails_sends_done(rl, r);
        if (status == RG_OK) {
            status = rg__rails_recvs_done(rl, r);
        }
        if (status != RG_OK) {
            return status;
        }
    }
    if (rl->down_pending != 0) {
        status = rg__rails_reap(rl);
        if (status != RG_OK) {
            return status;
        }
    }
    if (rl->fo && rl->alive != (1u << rl->nrails) - 1u) {
        status = rg__rails_rejoin_step(rl);
        if (status != RG_OK) {
            return status;
        }
    }
    status = rg__rails_flush_acks(rl);
    if (status != RG_OK) {
        return status;
    }
    status = rg__rails_match(rl);
    if (status != RG_OK) {
        return status;
    }
    return rg__rails_gone(rl);
}

/* A rail request that completed after the progress call looked at it (a
 * receive posted by the matching at its end, or by rg__rails_irecv, may
 * complete at once from bytes the rail holds): no socket will say so, so
 * the rank must not sleep on them. Measured on the testbed: 16 KiB messages
 * (header and bytes, two rail messages) at 51 MB/s instead of 238, the
 * receiver sleeping out RG_XPORT_BLOCK_NS on a completed stripe receive. */
static int rg__rails_has_news(const rg__rails_t *rl)
{
    const rg__rrx_t  *x;
    const rg__rsub_t *s;
    int               r, peer, size = rl->super.size;

    for (r = 0; r < rl->nrails; r++) {
        if (!rg__rails_up(rl, r)) {
            continue;
        }
        for (s = rl->inflight[r]; s != NULL; s = s->next) {
            if (s->x.status != RG_INPROGRESS) {
                return 1;
            }
        }
        for (peer = 0; peer < size; peer++) {
            x = rg__rails_rx(rl, r, peer);
            if (peer != rl->super.rank && x->x.status != RG_INPROGRESS &&
                (x->state == RG__RAILS_RX_HDR || x->state == RG__RAILS_RX_DATA ||
                 x->state == RG__RAILS_RX_DROP)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Sleeps on every rail's sockets at once (ops->wait_fds of the rails'
 * transport), so that a waiting rank leaves the cores to the network stack. */
rg_status_t rg__rails_block(rg_xport_t *xp, uint64_t timeout_ns)
{
    rg__rails_t    *rl = rg__rails(xp);
    struct timespec ts;
    size_t          n = 0, k;
    rg_status_t     status;
    int             r;

    if (rl->failed != RG_OK) {
        return rl->failed;
    }
    if (rl->down_pending != 0) {
        return rg__rails_reap(rl);  /* no sleep: the progress after this has work */
    }
    if (rg__rails_has_news(rl)) {
        return RG_OK;
    }
    for (r = 0; r < rl->nrails; r++) {
        if (!rg__rails_up(rl, r)) {
            continue;
        }
        if (rl->rail[r]->ops->wait_fds == NULL) {
            return RG_ERR_UNSUPPORTED;
        }
        status = rl->rail[r]->ops->wait_fds(rl->rail[r], rl->pfds + n, rl->npfds - n, &k);
        if (status != RG_OK) {
            if (status == RG_ERR_RANGE) {
                return RG_ERR_UNSUPPORTED;
            }
            return rg__rails_rail_failed(rl, r, status, NULL);
        }
        n += k;
    }
    if (rl->fo && rl->alive != (1u << rl->nrails) - 1u) {
        /* A rail is down: a try to take it back moves on (or starts) in the
         * progress calls, not on a socket this sleep watches. */
        uint64_t now = rg_time_mono_ns(), wake = UINT64_MAX, t;

        for (r = 0; r < rl->nrails; r++) {
            if (rl->rj[r] != NULL) {
                t = 5000000u;   /* the try's thread may have bytes to send */
            } else if (rl->super.rank == 0 && !rl->closing && rl->cfg.retry_ns > 0 &&
                       !((rl->alive >> r) & 1u)) {
                t = rl->next_try_ns[r] > now ? rl->next_try_ns[r] - now : 0;
            } else {
                continue;
            }
            wake = t < wake ? t : wake;
        }
        timeout_ns = timeout_ns < wake ? timeout_ns : wake;
    }
    ts.tv_sec  = (time_t)(timeout_ns / 1000000000ull);
    ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
    if (ppoll(rl->pfds, (nfds_t)n, &ts, NULL) < 0 && errno != EINTR) {
        rg_err_set_errno(&xp->err, RG_ERR_SYSTEM, errno, "ppoll on %zu sockets failed", n);
        return rg__rails_fail(rl, RG_ERR_SYSTEM);
    }
    return RG_OK;
}
