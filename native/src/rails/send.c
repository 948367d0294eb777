/*
 * railgauge: the rails transport's send side: the rail requests (a pool),
 * the records of the messages a receiver has not acknowledged yet
 * (failover), headers, pieces, and isend, which places a message on the
 * rails by the policy (policy.c).
 */
#include <stdlib.h>
#include <string.h>

#include "rails/rails_int.h"

/* A header to peer, with this rank's acknowledgement of the peer's messages. */
void rg__rails_hdr(rg__rails_t *rl, int peer, unsigned char *b, uint32_t type,
                   uint64_t seq, uint64_t total, uint64_t off, uint64_t len)
{
    rg__rpeer_t *pp = &rl->peers[peer];

    rg__rails_wire_put(b, type, seq, total, off, len, pp->ack_upto);
    pp->ack_sent = pp->ack_upto;
}

/* A rail request from the pool, with room for stage bytes of header (and
 * inline bytes) in its staging buffer; NULL where memory ran out. */
rg__rsub_t *rg__rsub_get(rg__rails_t *rl, size_t stage)
{
    rg__rsub_t    *s = rl->free_subs;
    unsigned char *b;

    if (s != NULL) {
        rl->free_subs = s->next;
    } else {
        s = calloc(1, sizeof(*s));
        if (s == NULL) {
            return NULL;
        }
    }
    if (s->stage_cap < stage) {
        b = realloc(s->stage, stage);
        if (b == NULL) {
            s->next       = rl->free_subs;
            rl->free_subs = s;
            return NULL;
        }
        s->stage     = b;
        s->stage_cap = stage;
    }
    s->user = NULL;
    s->rout = NULL;
    s->live = 0;
    s->next = NULL;
    return s;
}

static void rg__rsub_put(rg__rails_t *rl, rg__rsub_t *s)
{
    s->next       = rl->free_subs;
    rl->free_subs = s;
}

void rg__rout_free(rg__rails_t *rl, rg__rout_t *o)
{
    if (o->stage != NULL) {
        o->stage->rout = NULL;
        rg__rsub_put(rl, o->stage);
        o->stage = NULL;
    }
    o->next       = rl->free_outs;
    rl->free_outs = o;
}

/* s is off its rail (done, refused or dropped with a failed rail). */
void rg__rsub_done(rg__rails_t *rl, rg__rsub_t *s)
{
    rg__rout_t *o = s->rout;

    s->live = 0;
    s->user = NULL;
    if (o == NULL) {
        rg__rsub_put(rl, s);
        return;
    }
    o->live--;
    if (o->stage != s) {
        s->rout = NULL;
        rg__rsub_put(rl, s);
    }
    if (o->acked && o->live == 0) {
        rg__rout_free(rl, o);
    }
}

/* Posts one rail message (len bytes at buf) for user (NULL: internal). A
 * rail that refuses it has failed (see rg__rails_rail_failed). */
rg_status_t rg__rails_post(rg__rails_t *rl, int r, int peer, rg__rsub_t *s,
                           const void *buf, size_t len, rg_xreq_t *user)
{
    rg_status_t status;

    s->user = user;
    if (s->rout != NULL) {
        s->rout->live++;
    }
    status = rg_xport_isend(rl->rail[r], peer, buf, len, &s->x);
    if (status < 0) {
        rg__rsub_done(rl, s);
        return rg__rails_rail_failed(rl, r, status, NULL);
    }
    if (user != NULL) {
        RG__RAILS_PENDING(user)++;
    }
    s->live            = 1;
    rl->sent_bytes[r] += len;
    s->next            = rl->inflight[r];
    rl->inflight[r]    = s;
    if (rl->fault_at[r] != 0 && rl->sent_bytes[r] >= rl->fault_at[r]) {
        char why[96];

        rl->fault_at[r] = 0;
        snprintf(why, sizeof(why), "fault injected by RG_RAILS_FAULT after %llu bytes",
                 (unsigned long long)rl->sent_bytes[r]);
        return rg__rails_rail_failed(rl, r, RG_ERR_IO, why);
    }
    return RG_OK;
}

static rg__rout_t *rg__rout_get(rg__rails_t *rl, int peer, uint64_t seq, uint64_t total,
                                rg_xreq_t *user)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rout_t  *o  = rl->free_outs;

    if (o != NULL) {
        rl->free_outs = o->next;
    } else if ((o = calloc(1, sizeof(*o))) == NULL) {
        return NULL;
    }
    o->seq      = seq;
    o->total    = total;
    o->user     = user;
    o->ackshare = 0;
    o->acked    = 0;
    o->live     = 0;
    o->stage    = NULL;
    o->nparts   = 0;
    o->next     = NULL;
    if (pp->outs_last != NULL) {
        pp->outs_last->next = o;
    } else {
        pp->outs = o;
    }
    pp->outs_last = o;
    return o;
}

static rg_status_t rg__rout_part(rg__rout_t *o, int r, uint64_t off, uint64_t len)
{
    rg__rpart_t *p;

    if (o->nparts == o->cap) {
        unsigned cap = o->cap == 0 ? 4 : 2 * o->cap;

        if ((p = realloc(o->parts, cap * sizeof(*p))) == NULL) {
            return RG_ERR_NOMEM;
        }
        o->parts = p;
        o->cap   = cap;
    }
    o->parts[o->nparts].rail = r;
    o->parts[o->nparts].off  = off;
    o->parts[o->nparts].len  = len;
    o->nparts++;
    return RG_OK;
}

/* Posts piece [off, off + len) of message seq (total bytes) to peer on rail
 * r: a header, then the bytes, from src (the message's first byte: the
 * user's buffer, or the copy of o), for user (NULL: a send that is
 * complete). */
rg_status_t rg__rails_piece(rg__rails_t *rl, int r, int peer, uint64_t seq,
                            uint64_t total, uint64_t off, uint64_t len,
                            const unsigned char *src, rg_xreq_t *user, rg__rout_t *o)
{
    rg__rsub_t *s = rg__rsub_get(rl, RG__RAILS_HDR + rl->cfg.inline_max);
    rg_status_t status;

    if (s == NULL) {
        return RG_ERR_NOMEM;
    }
    rg__rails_hdr(rl, peer, s->stage,
                  RG__RAILS_T_STRIPE | (rl->fo && o == NULL ? RG__RAILS_T_ACKWANT : 0u), seq,
                  total, off, len);
    s->rout = o;   /* whichever of the two completes the send clears o->user */
    status  = rg__rails_post(rl, r, peer, s, s->stage, RG__RAILS_HDR, user);
    if (status != RG_OK || !rg__rails_up(rl, r)) {
        return status;
    }
    if ((s = rg__rsub_get(rl, 0)) == NULL) {
        return RG_ERR_NOMEM;
    }
    s->rout = o;
    return rg__rails_post(rl, r, peer, s, src + off, (size_t)len, user);
}

/* Sends a message: inline (up to RG_RAILS_INLINE) in one rail message with
 * its header, else in pieces of at most RG_RAILS_CHUNK on the rails the
 * policy cut it for (rg__rails_cut), each a header and the bytes. */
rg_status_t rg__rails_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__rails_t   *rl = rg__rails(xp);
    rg__rpeer_t   *pp = &rl->peers[req->peer];
    rg__rsub_t    *s;
    rg__rout_t    *o = NULL;
    rg_status_t    status;
    const unsigned char *src;
    uint64_t       seq, off, k, piece;
    size_t         len = req->len, cut[RG__RAILS_MAX];
    int            r;

    if (rl->down_pending != 0 && rl->failed == RG_OK) {
        (void)rg__rails_reap(rl);
    }
    if (rl->failed != RG_OK) {
        req->status = rl->failed;
        return rl->failed;
    }
    if (pp->byes != 0) {
        req->status = RG_ERR_PEER_DEAD;
        return rg_err_set(&xp->err, RG_ERR_PEER_DEAD, "rank %d has closed the rails transport",
                          req->peer);
    }
    seq = pp->send_seq++;
    RG__RAILS_PENDING(req) = 0;
    if (rl->fo && (o = rg__rout_get(rl, req->peer, seq, len, req)) == NULL) {
        goto nomem;
    }
    if (len <= rl->cfg.inline_max) {
        r = rg__rails_one(rl, req->peer);
        s = rg__rsub_get(rl, RG__RAILS_HDR + rl->cfg.inline_max);
        if (s == NULL) {
            goto nomem;
        }
        rg__rails_hdr(rl, req->peer, s->stage, RG__RAILS_T_INLINE, seq, len, 0, len);
        if (len > 0) {
            memcpy(s->stage + RG__RAILS_HDR, req->buf, len);
        }
        if (o != NULL) {
            o->stage = s;
            s->rout  = o;
            if (rg__rout_part(o, r, 0, len) != RG_OK) {
                goto nomem;
            }
        }
        status = rg__rails_post(rl, r, req->peer, s, s->stage, RG__RAILS_HDR + len, req);
        goto posted;
    }
    rg__rails_cut(rl, req->peer, len, cut);
    src = req->buf;
    if (o != NULL && len < rl->cfg.stripe_min) {
        /* Below the stripe size a copy costs less than waiting for the
         * acknowledgement: the send completes when the rail has taken it. */
        if (o->copy_cap < len) {
            unsigned char *b = realloc(o->copy, len);

            if (b == NULL) {
                goto nomem;
            }
            o->copy     = b;
            o->copy_cap = len;
        }
        memcpy(o->copy, req->buf, len);
        src = o->copy;
    } else if (o != NULL) {
        /* From the user's buffer: the send completes once the receiver has
         * acknowledged it, too. */
        o->ackshare = 1;
        RG__RAILS_PENDING(req)++;
    }
    off    = 0;
    status = RG_OK;
    for (r = 0; r < rl->nrails && status == RG_OK; r++) {
        for (k = 0; k < cut[r] && status == RG_OK; k += piece) {
            piece = cut[r] - k < rl->cfg.chunk ? cut[r] - k : rl->cfg.chunk;
            if (o != NULL && rg__rout_part(o, r, off + k, piece) != RG_OK) {
                goto nomem;
            }
            /* A rail that failed while posting: its pieces are recorded and
             * go again on the others at the reaping below. */
            if (rg__rails_up(rl, r)) {
                status = rg__rails_piece(rl, r, req->peer, seq, len, off + k, piece, src, req,
                                         src == req->buf ? NULL : o);
                if (status == RG_ERR_NOMEM) {
                    goto nomem;
                }
            }
        }
        off += cut[r];
    }
posted:
    if (status == RG_OK && rl->down_pending != 0) {
        status = rg__rails_reap(rl);
    }
    if (status != RG_OK) {
        req->status = status;
        return status;
    }
    return RG_OK;
nomem:
    req->status = rg__rails_nomem(rl);
    return RG_ERR_NOMEM;
}
