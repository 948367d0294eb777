/*
 * railgauge: the rails transport's receive side. Every (rail, peer)
 * subchannel has a header receive posted; a stripe's header makes it wait
 * for the stripe's bytes, received straight into the matched receive's
 * buffer, or stall while its message is not matched yet. Messages of a peer
 * are matched to receives in sequence order, whichever rail brought their
 * first header (the reorder), and with failover each piece counts once.
 */
#include <stdlib.h>
#include <string.h>

#include "rails/rails_int.h"

rg_status_t rg__rails_post_hdr(rg__rails_t *rl, int r, int peer)
{
    rg__rrx_t  *x = rg__rails_rx(rl, r, peer);
    rg_status_t status;

    if (x->state == RG__RAILS_RX_STALL || x->state == RG__RAILS_RX_DATA ||
        x->state == RG__RAILS_RX_DROP) {
        rl->busy_rx[r]--;
    }
    x->state = RG__RAILS_RX_HDR;
    x->msg   = NULL;
    status   = rg_xport_irecv(rl->rail[r], peer, x->hbuf, rl->hcap, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status, NULL) : RG_OK;
}

/* A piece this rank has already: its bytes are received and dropped. */
static rg_status_t rg__rails_post_drop(rg__rails_t *rl, int r, int peer)
{
    rg__rrx_t  *x = rg__rails_rx(rl, r, peer);
    rg_status_t status;

    rl->dup_pieces++;
    rl->busy_rx[r]++;
    x->state = RG__RAILS_RX_DROP;
    x->msg   = NULL;
    status   = rg_xport_irecv(rl->rail[r], peer, rl->sink, 0, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status, NULL) : RG_OK;
}

/* The stripe's message is matched: receive its bytes into the buffer (the
 * part past the receive's capacity is received and dropped by the rail). */
static rg_status_t rg__rails_post_data(rg__rails_t *rl, int r, int peer)
{
    rg__rrx_t  *x    = rg__rails_rx(rl, r, peer);
    rg_xreq_t  *user = x->msg->user;
    rg_status_t status;
    size_t      cap  = user->len;
    void       *dst  = rl->sink;
    size_t      room = 0;

    if (x->off < cap) {
        dst  = (unsigned char *)user->buf + x->off;
        room = cap - x->off < x->len ? cap - x->off : x->len;
    }
    x->state = RG__RAILS_RX_DATA;
    status   = rg_xport_irecv(rl->rail[r], peer, dst, room, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status, NULL) : RG_OK;
}

static rg__rmsg_t *rg__rails_msg(rg__rails_t *rl, int peer, uint64_t seq, uint64_t total,
                                 int create)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rmsg_t **pm = &pp->msgs, *m;

    for (; (m = *pm) != NULL && m->seq < seq; pm = &m->next) {
    }
    if (m != NULL && m->seq == seq) {
        return m;
    }
    if (!create) {
        return NULL;
    }
    if ((m = rl->free_msgs) != NULL) {
        rl->free_msgs = m->next;
    } else if ((m = calloc(1, sizeof(*m))) == NULL) {
        return NULL;
    }
    {
        uint64_t *offs   = m->offs;
        unsigned  offcap = m->offcap;

        memset(m, 0, sizeof(*m));
        m->offs   = offs;
        m->offcap = offcap;
    }
    m->seq   = seq;
    m->total = total;
    m->next  = *pm;
    *pm      = m;
    return m;
}

static void rg__rails_msg_free(rg__rails_t *rl, int peer, rg__rmsg_t *m)
{
    rg__rmsg_t **pm;

    for (pm = &rl->peers[peer].msgs; *pm != m; pm = &(*pm)->next) {
    }
    *pm = m->next;
    free(m->tmp);
    m->tmp        = NULL;
    m->next       = rl->free_msgs;
    rl->free_msgs = m;
}

/* Failover: whether piece off of m is in already. */
static int rg__rails_piece_in(const rg__rmsg_t *m, uint64_t off)
{
    unsigned i;

    for (i = 0; i < m->noffs && m->offs[i] != off; i++) {
    }
    return i < m->noffs;
}

/* Failover: piece off of m is counted once; 0 if it was already. */
static int rg__rails_piece_new(rg__rmsg_t *m, uint64_t off)
{
    uint64_t *o;

    if (rg__rails_piece_in(m, off)) {
        return 0;
    }
    if (m->noffs == m->offcap) {
        unsigned cap = m->offcap == 0 ? 8 : 2 * m->offcap;

        if ((o = realloc(m->offs, cap * sizeof(*o))) == NULL) {
            return -1;
        }
        m->offs   = o;
        m->offcap = cap;
    }
    m->offs[m->noffs++] = off;
    return 1;
}

/* Ends message m of peer if all its bytes are in. With failover, moves the
 * acknowledgement over the messages complete in sequence, keeping their
 * records until then (a piece sent again after a failover is known for a
 * copy by them), and acknowledges at once when a striped message is passed
 * (its sender waits for that: at the end of the progress call, once for all
 * it completed) or every RG__RAILS_ACK_EVERY messages. */
static rg_status_t rg__rails_msg_check(rg__rails_t *rl, int peer, rg__rmsg_t *m)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg_xreq_t   *u  = m->user;
    int          striped = 0;   /* fo: an ACK (or RATE) is due */

    if (m->got < m->total) {
        return RG_OK;
    }
    if (u != NULL && !m->delivered) {
        u->done      = m->total < u->len ? m->total : u->len;
        u->status    = m->total > u->len ? RG_ERR_TRUNCATED : RG_OK;
        m->delivered = 1;
    }
    if (!rl->fo) {
        if (m->delivered) {
            striped = m->striped;
            rg__rails_msg_free(rl, peer, m);
            if (striped && rl->policy == RG__RAILS_P_ADAPTIVE) {
                return rg__rails_send_rates(rl, peer);
            }
        }
        return RG_OK;
    }
    if (m->seq < pp->ack_upto) {
        if (m->delivered) {
            rg__rails_msg_free(rl, peer, m);  /* acknowledged already, now received */
        }
        return RG_OK;
    }
    while ((m = rg__rails_msg(rl, peer, pp->ack_upto, 0, 0)) != NULL && m->got >= m->total) {
        pp->ack_upto++;
        striped |= m->ackwant || (m->striped && rl->policy == RG__RAILS_P_ADAPTIVE);
        if (m->delivered) {
            rg__rails_msg_free(rl, peer, m);
        }
    }
    if (striped && !pp->ack_due) {
        pp->ack_due = 1;   /* one ACK for what this progress call completes */
        rl->acks_due++;
        return RG_OK;
    }
    if (pp->ack_upto - pp->ack_sent >= RG__RAILS_ACK_EVERY) {
        return rg__rails_send_ack(rl, peer);
    }
    return RG_OK;
}

/* Binds receive u to message m of peer. */
static rg_status_t rg__rails_bind(rg__rails_t *rl, rg_xreq_t *u, int peer, rg__rmsg_t *m)
{
    rg__rrx_t  *x;
    rg_status_t status;
    int         r;

    m->user              = u;
    u->source            = peer;
    u->msg_len           = (size_t)m->total;
    RG__RAILS_MSG(u)     = (uint64_t)(uintptr_t)m;
    if (m->tmp != NULL) {
        memcpy(u->buf, m->tmp, m->total < u->len ? (size_t)m->total : u->len);
        if (m->tmp_live == 0) {   /* else: freed when the last piece is in */
            free(m->tmp);
            m->tmp = NULL;
        }
    }
    for (r = 0; r < rl->nrails; r++) {
        x = rg__rails_rx(rl, r, peer);
        if (x->state == RG__RAILS_RX_STALL && x->msg == m) {
            status = rg__rails_post_data(rl, r, peer);
            if (status != RG_OK) {
                return status;
            }
        }
    }
    return rg__rails_msg_check(rl, peer, m);
}

/* Takes u (behind prev, or first) out of the posted receives. */
static void rg__rails_unpost(rg__rails_t *rl, rg_xreq_t *prev, rg_xreq_t *u)
{
    if (prev != NULL) {
        prev->next = u->next;
    } else {
        rl->posted = u->next;
    }
    if (rl->posted_last == u) {
        rl->posted_last = prev;
    }
}

/* Matches posted receives, in posting order, to the next message of each
 * peer whose header has arrived (one pass: a match creates no message, so a
 * receive that found none finds none later in the pass). */
rg_status_t rg__rails_match(rg__rails_t *rl)
{
    rg_xreq_t  *u, *prev = NULL, *next;
    rg__rmsg_t *m;
    rg_status_t status;
    int         size = rl->super.size, i, peer = -1;

    for (u = rl->posted; u != NULL; u = next) {
        next = u->next;
        m    = NULL;
        if (u->peer == RG_XPORT_ANY_SOURCE) {
            for (i = 0; i < size && m == NULL; i++) {
                peer = (rl->any_next + i) % size;
                if (peer != rl->super.rank) {
                    m = rg__rails_msg(rl, peer, rl->peers[peer].next_match, 0, 0);
                }
            }
        } else {
            peer = u->peer;
            m    = rg__rails_msg(rl, peer, rl->peers[peer].next_match, 0, 0);
        }
        if (m == NULL) {
            prev = u;
            continue;
        }
        rg__rails_unpost(rl, prev, u);
        u->next = NULL;
        rl->peers[peer].next_match++;
        if (u->peer == RG_XPORT_ANY_SOURCE) {
            rl->any_next = (peer + 1) % size;
        }
        status = rg__rails_bind(rl, u, peer, m);
        if (status != RG_OK) {
            return status;
        }
    }
    return RG_OK;
}

static rg_status_t rg__rails_protocol(rg__rails_t *rl, int r, int peer, const char *what)
{
    rg_err_set(&rl->super.err, RG_ERR_PARSE,
               "rail %d (%s): rank %d sent %s; is every rank's railgauge and RG_RAILS_* "
               "the same?", r, rl->rname[r], peer, what);
    return rg__rails_fail(rl, RG_ERR_PARSE);
}

/* After a failover a rail may bring a lower message (sent again) behind the
 * stripe that stalls (r, peer), waiting for its message to be matched:
 * stalling could then wait forever, so the piece is taken into the
 * message's buffer instead. */
static rg_status_t rg__rails_unstall(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rmsg_t *m = x->msg;
    rg_status_t status;

    if (m->tmp == NULL && (m->tmp = malloc(m->total)) == NULL) {
        rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot buffer a message of %llu B",
                   (unsigned long long)m->total);
        return rg__rails_fail(rl, RG_ERR_NOMEM);
    }
    x->intmp = 1;
    x->state = RG__RAILS_RX_DATA;
    m->tmp_live++;
    status = rg_xport_irecv(rl->rail[r], peer, m->tmp + x->off, (size_t)x->len, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status, NULL) : RG_OK;
}

/* After a failover: the stalls from before it that a lower message (sent
 * again) may now queue behind take their pieces (rg__rails_unstall).
 * rl->failed where one could not. */
rg_status_t rg__rails_unstall_all(rg__rails_t *rl)
{
    rg__rrx_t *x;
    int        k, peer, size = rl->super.size;

    for (k = 0; k < rl->nrails; k++) {
        for (peer = 0; peer < size && rg__rails_up(rl, k); peer++) {
            x = rg__rails_rx(rl, k, peer);
            if (x->state == RG__RAILS_RX_STALL && x->msg != NULL &&
                x->msg->seq > rl->peers[peer].next_match &&
                rg__rails_unstall(rl, k, peer, x) != RG_OK) {
                return rl->failed;
            }
        }
    }
    return RG_OK;
}

/* A control message on (r, peer) (v and n as rg__rails_on_hdr has them; its
 * acknowledgement is taken already): BYE, RATE, ACK, DOWN or JOIN. */
static rg_status_t rg__rails_on_control(rg__rails_t *rl, int r, int peer, rg__rrx_t *x,
                                        uint32_t type, const uint64_t v[5], size_t n)
{
    rg_status_t status;

    switch (type) {
    case RG__RAILS_T_BYE:
        /* The peer closes: nothing more comes on this rail, so no receive is
         * posted (its end of file is then no error of the rail). */
        x->state = RG__RAILS_RX_CLOSED;
        rl->peers[peer].byes |= 1u << r;
        return RG_OK;
    case RG__RAILS_T_RATE:
        rg__rails_take_rates(rl, peer, x->hbuf + RG__RAILS_HDR, n - RG__RAILS_HDR);
        break;
    case RG__RAILS_T_DOWN:
        rg__rails_take_down(rl, peer, v);
        break;
    case RG__RAILS_T_JOIN:
        /* v = rail, epoch, step, length: a try to take a rail back. */
        status = n - RG__RAILS_HDR != v[3]
                     ? RG_ERR_PARSE
                     : rg__rails_take_join(rl, peer, v, x->hbuf + RG__RAILS_HDR);
        if (status == RG_ERR_PARSE) {
            return rg__rails_protocol(rl, r, peer, "a JOIN out of bounds");
        }
        if (status != RG_OK) {
            return status;
        }
        break;
    default:
        break;  /* ACK: the acknowledgement is all it says */
    }
    return rg__rails_post_hdr(rl, r, peer);
}

/* An INLINE message m arrived on (r, peer) (v: its header), its bytes in
 * the header receive's buffer: they go to the matched receive, or to m->tmp
 * until one matches. */
static rg_status_t rg__rails_on_inline(rg__rails_t *rl, int r, int peer, rg__rrx_t *x,
                                       rg__rmsg_t *m, const uint64_t v[5])
{
    int fresh;

    fresh = rl->fo ? rg__rails_piece_new(m, v[2]) : 1;
    if (fresh < 0) {
        rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot allocate a message record");
        return rg__rails_fail(rl, RG_ERR_NOMEM);
    }
    if (fresh == 0) {
        rl->dup_pieces++;
    } else if (m->user != NULL) {
        if (v[2] < m->user->len) {
            memcpy((unsigned char *)m->user->buf + v[2], x->hbuf + RG__RAILS_HDR,
                   m->user->len - v[2] < v[3] ? m->user->len - v[2] : v[3]);
        }
    } else if (v[3] > 0) {
        if (m->tmp == NULL && (m->tmp = malloc(m->total)) == NULL) {
            rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot buffer a message of %llu B",
                       (unsigned long long)m->total);
            return rg__rails_fail(rl, RG_ERR_NOMEM);
        }
        memcpy(m->tmp + v[2], x->hbuf + RG__RAILS_HDR, v[3]);
    }
    if (fresh == 1) {
        m->got += v[3];
    }
    if (rg__rails_post_hdr(rl, r, peer) != RG_OK) {
        return rl->failed;
    }
    return rg__rails_msg_check(rl, peer, m);
}

/* A header arrived on (r, peer): a control message, or an INLINE message's
 * bytes, or a STRIPE's header, after which the subchannel waits for the
 * stripe's bytes (into the matched receive's buffer) or stalls until a
 * receive matches its message. */
rg_status_t rg__rails_on_hdr(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rmsg_t  *m;
    uint64_t     v[5];
    uint32_t     type;
    size_t       n = x->x.msg_len;
    int          ackwant;

    if (x->x.status < 0 && x->x.status != RG_ERR_TRUNCATED) {
        return rg__rails_rail_failed(rl, r, x->x.status, NULL);
    }
    if (x->x.status != RG_OK || n < RG__RAILS_HDR || !rg__rails_wire_get(x->hbuf, &type, v)) {
        return rg__rails_protocol(rl, r, peer, "a message that is not a rails header");
    }
    ackwant = (type & RG__RAILS_T_ACKWANT) != 0;
    type   &= ~RG__RAILS_T_ACKWANT;
    rl->recv_bytes[r] += n;
    rg__rails_take_ack(rl, peer, v[4]);
    if (rg__rails_wire_control(type)) {
        return rg__rails_on_control(rl, r, peer, x, type, v, n);
    }
    /* v = seq, total, off, len */
    if ((type != RG__RAILS_T_INLINE && type != RG__RAILS_T_STRIPE) || v[2] > v[1] ||
        v[3] > v[1] - v[2] ||
        (type == RG__RAILS_T_INLINE && n - RG__RAILS_HDR != v[3]) ||
        (type == RG__RAILS_T_STRIPE && n != RG__RAILS_HDR)) {
        return rg__rails_protocol(rl, r, peer, "a header out of sequence or out of bounds");
    }
    if (rl->fo && v[0] < pp->ack_upto) {
        /* Sent again after a failover, but complete here: acknowledged again
         * (the first acknowledgement may have gone down with the rail). */
        if (type == RG__RAILS_T_STRIPE) {
            if (rg__rails_post_drop(rl, r, peer) != RG_OK) {
                return rl->failed;
            }
        } else {
            rl->dup_pieces++;
            if (rg__rails_post_hdr(rl, r, peer) != RG_OK) {
                return rl->failed;
            }
        }
        return rg__rails_send_ack(rl, peer);
    }
    /* A message below next_match is matched already: it must still be
     * waiting for this part. */
    m = rg__rails_msg(rl, peer, v[0], v[1], v[0] >= pp->next_match);
    if (m == NULL && v[0] < pp->next_match) {
        return rg__rails_protocol(rl, r, peer, "a part of a message that is complete");
    }
    if (m == NULL) {
        rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot allocate a message record");
        return rg__rails_fail(rl, RG_ERR_NOMEM);
    }
    if (m->total != v[1]) {
        return rg__rails_protocol(rl, r, peer, "two lengths for one message");
    }
    if (type == RG__RAILS_T_INLINE) {
        return rg__rails_on_inline(rl, r, peer, x, m, v);
    }
    if (rl->fo && rg__rails_piece_in(m, v[2])) {
        return rg__rails_post_drop(rl, r, peer);  /* this piece is in already */
    }
    m->striped = 1;
    m->ackwant |= ackwant;
    x->state   = RG__RAILS_RX_STALL;
    rl->busy_rx[r]++;
    x->msg     = m;
    x->off     = v[2];
    x->len     = v[3];
    x->busy    = rg__rails_rate_busy(x);
    x->intmp   = 0;
    if (m->user != NULL) {
        return rg__rails_post_data(rl, r, peer);
    }
    if (rl->failovers > 0 && m->seq > pp->next_match) {
        return rg__rails_unstall(rl, r, peer, x);
    }
    return RG_OK;
}

/* A stripe's bytes arrived on (r, peer). */
rg_status_t rg__rails_on_data(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rmsg_t *m = x->msg;
    int         fresh;

    if (x->x.status < 0 && x->x.status != RG_ERR_TRUNCATED) {
        return rg__rails_rail_failed(rl, r, x->x.status, NULL);
    }
    if (x->state == RG__RAILS_RX_DROP) {
        return rg__rails_post_hdr(rl, r, peer);
    }
    if ((x->x.status != RG_OK && x->x.status != RG_ERR_TRUNCATED) || x->x.msg_len != x->len) {
        return rg__rails_protocol(rl, r, peer, "a stripe of the wrong length");
    }
    rl->recv_bytes[r] += x->len;
    rg__rails_rate_sample(rl, r, peer, x);
    if (x->intmp) {
        x->intmp = 0;
        m->tmp_live--;
        if (m->user != NULL && x->off < m->user->len) {  /* bound meanwhile */
            memcpy((unsigned char *)m->user->buf + x->off, m->tmp + x->off,
                   m->user->len - x->off < x->len ? m->user->len - x->off : (size_t)x->len);
        }
        if (m->user != NULL && m->tmp_live == 0) {
            free(m->tmp);
            m->tmp = NULL;
        }
    }
    fresh = rl->fo ? rg__rails_piece_new(m, x->off) : 1;
    if (fresh < 0) {
        rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot allocate a message record");
        return rg__rails_fail(rl, RG_ERR_NOMEM);
    }
    if (fresh == 1) {
        m->got += x->len;
    } else {
        rl->dup_pieces++;
    }
    if (rg__rails_post_hdr(rl, r, peer) != RG_OK) {
        return rl->failed;
    }
    return rg__rails_msg_check(rl, peer, m);
}

rg_status_t rg__rails_irecv(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__rails_t *rl = rg__rails(xp);

    if (rl->failed != RG_OK) {
        req->status = rl->failed;
        return rl->failed;
    }
    req->next = NULL;
    if (rl->posted_last != NULL) {
        rl->posted_last->next = req;
    } else {
        rl->posted = req;
    }
    rl->posted_last = req;
    return rg__rails_match(rl);
}

/* Receives that wait for a peer that has closed on every rail up and left
 * no message to match end with RG_ERR_PEER_DEAD. */
rg_status_t rg__rails_gone(rg__rails_t *rl)
{
    rg_xreq_t *u, *prev = NULL, *next;
    int        p;

    for (u = rl->posted; u != NULL; u = next) {
        next = u->next;
        p    = u->peer;
        if (p == RG_XPORT_ANY_SOURCE || (rl->peers[p].byes & rl->alive) != rl->alive ||
            rg__rails_msg(rl, p, rl->peers[p].next_match, 0, 0) != NULL) {
            prev = u;
            continue;
        }
        rg__rails_unpost(rl, prev, u);
        u->status = RG_ERR_PEER_DEAD;
        rg_err_set(&rl->super.err, RG_ERR_PEER_DEAD,
                   "rank %d closed the rails transport while rank %d waited to receive "
                   "from it", p, rl->super.rank);
    }
    return RG_OK;
}
