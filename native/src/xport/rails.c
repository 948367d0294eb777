/*
 * railgauge: the "rails" transport: several instances of a transport side by
 * side, one per rail (a NIC, a port, a path), and a scheduler that decides
 * for each message which rails carry it (docs/transports.md, "rails").
 *
 * Rails are subchannels: rail r is its own transport instance
 * ("tcp:<where>" from RG_RAILS_LIST), so (rail, peer) is one connection. A
 * message goes on one rail, whole, or is cut into stripes, one per rail, by
 * the policy (RG_RAILS_POLICY):
 *
 *   binding      every message to a peer on one rail, (rank + peer) mod R:
 *                the pairs of a job spread over the rails;
 *   round-robin  whole messages, each on the next rail in turn;
 *   even         below RG_RAILS_STRIPE_MIN on one rail (the best-weighted),
 *                above it stripes of equal size on every rail;
 *   weighted     the same with stripes in proportion to RG_RAILS_WEIGHTS
 *                (the rails' bandwidths, measured by `railgauge gauge
 *                --rails`, or given);
 *   adaptive     weighted, with the weights of each peer updated from the
 *                rate each rail delivered its stripes at, measured by the
 *                receiver and fed back after every striped message,
 *                smoothed (RG_RAILS_ADAPT_ALPHA) and floored
 *                (RG_RAILS_ADAPT_FLOOR) so that a rail slowed down by other
 *                traffic is still probed and taken back when it recovers.
 *
 * Wire format, per rail and peer, as messages of the rail's transport: a
 * 48-byte header (magic, type, the message's per-pair sequence number, its
 * total length, the stripe's offset and length), followed in the same
 * message by the bytes of a message up to RG_RAILS_INLINE (type INLINE,
 * copied once into a staging buffer), or by one more message holding the
 * stripe's bytes (type STRIPE), sent from and received into the user's
 * buffers directly. A RATE header carries the receiver's measured rates.
 *
 * Receiving: every (rail, peer) has a header receive posted. A stripe's
 * header makes that subchannel wait for its payload, which is received
 * straight into the matched receive's buffer; while the message is not
 * matched yet the subchannel stalls (its bytes stay in the rail's own
 * buffers: back-pressure, no copy). Messages of one peer are matched to
 * receives in sequence order, whichever rail brought their first header, so
 * the per-pair order of the transport holds although rails overtake each
 * other. No deadlock: the lowest unmatched message of a peer always heads
 * the rails it is on, since each rail carries a peer's messages in order.
 *
 * A rail that fails fails the transport (the error names the rail); failover
 * is not done here yet.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/timer.h"
#include "xport/xport.h"

#define RG__RAILS_MAX    16
#define RG__RAILS_MAGIC  0x4c524752u  /* "RGRL" */
#define RG__RAILS_HDR    48u
#define RG__RAILS_INLINE_MAX ((size_t)1 << 20)
#define RG__RAILS_BUSY_NS    50000u          /* back to back: within 50 us */
#define RG__RAILS_RATE_MIN   ((size_t)65536) /* stripes shorter say nothing of a rate */
#define RG__RAILS_IDLE_AFTER 64u             /* empty progress calls before a rail idles */
#define RG__RAILS_IDLE_EVERY 8u              /* an idle rail: progressed every 8th call */

enum { RG__T_INLINE = 1, RG__T_STRIPE = 2, RG__T_RATE = 3, RG__T_BYE = 4 };
enum { RG__P_BINDING, RG__P_RR, RG__P_EVEN, RG__P_WEIGHTED, RG__P_ADAPTIVE };
enum { RG__RX_HDR = 0, RG__RX_STALL, RG__RX_DATA, RG__RX_CLOSED };

static const char *const rg__rails_policies[] = {
    "binding", "round-robin", "even", "weighted", "adaptive", NULL
};

typedef struct rg__rails_config {
    char   list[RG_CONFIG_STRING_MAX];
    char   over[RG_CONFIG_STRING_MAX];
    char   policy[RG_CONFIG_STRING_MAX];
    char   weights[RG_CONFIG_STRING_MAX];
    size_t stripe_min;
    size_t inline_max;
    double alpha;
    double floor;
} rg__rails_config_t;

static const rg_config_field_t rg__rails_config_fields[] = {
    {"LIST", "",
     "the rails, comma-separated: each an interface name, a numeric address or a "
     "CIDR subnet that the rail's transport instance binds to (OVER:<item>); two "
     "or more, no duplicates",
     offsetof(rg__rails_config_t, list), RG_CONFIG_STRING},
    {"OVER", "tcp", "the transport of every rail: tcp (rail X is tcp:X) or ofi:<provider> "
     "(rail X is ofi:<provider>@X)",
     offsetof(rg__rails_config_t, over), RG_CONFIG_STRING},
    {"POLICY", "even",
     "binding, round-robin, even, weighted or adaptive (see docs/transports.md)",
     offsetof(rg__rails_config_t, policy), RG_CONFIG_STRING},
    {"WEIGHTS", "",
     "weighted/adaptive: one positive weight per rail (bandwidths, any unit), "
     "comma-separated; empty: equal",
     offsetof(rg__rails_config_t, weights), RG_CONFIG_STRING},
    {"STRIPE_MIN", "256KiB",
     "messages below this stay whole on one rail (even, weighted, adaptive)",
     offsetof(rg__rails_config_t, stripe_min), RG_CONFIG_SIZE},
    {"INLINE", "8KiB",
     "messages up to this travel in one rail message with their header (one copy)",
     offsetof(rg__rails_config_t, inline_max), RG_CONFIG_SIZE},
    {"ADAPT_ALPHA", "0.3",
     "adaptive: weight of a new rate measurement in the smoothed weights (0 < a <= 1)",
     offsetof(rg__rails_config_t, alpha), RG_CONFIG_DOUBLE},
    {"ADAPT_FLOOR", "0.05",
     "adaptive: the smallest share of a message a rail keeps (0 <= f < 1/rails), so "
     "that a slowed rail is still measured and taken back",
     offsetof(rg__rails_config_t, floor), RG_CONFIG_DOUBLE},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_xport_rails_config_table = {"RAILS", rg__rails_config_fields};

/* A request of a rail's transport, with what the rails layer needs of it. */
typedef struct rg__rsub {
    rg_xreq_t        x;
    struct rg__rsub *next;     /* in flight on its rail, or free */
    rg_xreq_t       *user;     /* the send it is part of (NULL: a RATE message) */
    unsigned char   *stage;    /* header (+ inline bytes) */
    size_t           stage_cap;
} rg__rsub_t;

/* A message of a peer known to the receiver (a header of it has arrived). */
typedef struct rg__rmsg {
    uint64_t         seq, total, got;
    unsigned char   *tmp;      /* inline bytes that came before a receive matched */
    rg_xreq_t       *user;     /* the matched receive */
    int              striped;  /* had a stripe: send rates back when complete */
    struct rg__rmsg *next;
} rg__rmsg_t;

/* One (rail, peer) subchannel's receive side. */
typedef struct rg__rrx {
    rg_xreq_t      x;
    int            state;
    unsigned char *hbuf;
    rg__rmsg_t    *msg;        /* the stripe's message (STALL, DATA) */
    uint64_t       off, len;
    uint64_t       t_done_ns;  /* the last stripe's bytes were all in */
    int            busy;       /* this stripe's header was there when they were */
} rg__rrx_t;

typedef struct rg__rpeer {
    uint64_t    send_seq;
    uint64_t    next_match;
    rg__rmsg_t *msgs;          /* known messages, by sequence number */
    double      w[RG__RAILS_MAX];     /* send weights to this peer (sum 1) */
    double      rate[RG__RAILS_MAX];  /* receive rates from this peer, bytes/ns */
    int         byes;                 /* rails on which the peer said goodbye */
} rg__rpeer_t;

typedef struct rg__rails {
    rg_xport_t        super;
    rg__rails_config_t cfg;
    int               policy;
    int               nrails;
    rg_xport_t       *rail[RG__RAILS_MAX];
    char              rname[RG__RAILS_MAX][RG_CONFIG_STRING_MAX + 8];
    rg__rsub_t       *inflight[RG__RAILS_MAX];
    uint64_t          sent_bytes[RG__RAILS_MAX], recv_bytes[RG__RAILS_MAX];
    rg__rrx_t        *rx;      /* [rail * size + peer] */
    rg__rpeer_t      *peers;
    rg_xreq_t        *posted, *posted_last;  /* receives not matched yet, in order */
    rg__rsub_t       *free_subs;
    rg__rmsg_t       *free_msgs;
    unsigned          rr_next;
    int               any_next;
    rg_status_t       failed;
    int               opened;  /* every rail is open (close says goodbye) */
    unsigned char     sink[1];
    struct pollfd    *pfds;    /* block: every rail's sockets */
    size_t            npfds;
    uint64_t          rate_msgs;
    /* Polling: a rail with nothing in flight that brought nothing for a while
     * is progressed only every RG__RAILS_IDLE_EVERY-th call (its sockets are
     * still watched when the rank sleeps), so that the rail that carries the
     * small messages is not slowed by a system call per idle rail. */
    unsigned          idle[RG__RAILS_MAX];
    unsigned          busy_rx[RG__RAILS_MAX];  /* subchannels inside a stripe */
    unsigned          polls;
} rg__rails_t;

/* User request scratch: sends: priv[0] = rail messages still pending;
 * receives: priv[0] = the bound message. */
#define RG__RAILS_PENDING(req) ((req)->priv[0])
#define RG__RAILS_MSG(req)     ((req)->priv[0])

static inline rg__rails_t *rg__rails(rg_xport_t *xp)
{
    return (rg__rails_t *)xp;
}

/* ---- small helpers -------------------------------------------------------- */

static void rg__hdr_put(unsigned char *b, uint32_t type, uint64_t seq, uint64_t total,
                        uint64_t off, uint64_t len)
{
    uint32_t m = htole32(RG__RAILS_MAGIC), t = htole32(type);
    uint64_t v[4] = {htole64(seq), htole64(total), htole64(off), htole64(len)};

    memcpy(b, &m, 4);
    memcpy(b + 4, &t, 4);
    memcpy(b + 8, v, sizeof(v));
    memset(b + 40, 0, 8);
}

static int rg__hdr_get(const unsigned char *b, uint32_t *type, uint64_t v[4])
{
    uint32_t m, t;
    int      i;

    memcpy(&m, b, 4);
    memcpy(&t, b + 4, 4);
    memcpy(v, b + 8, 4 * sizeof(uint64_t));
    for (i = 0; i < 4; i++) {
        v[i] = le64toh(v[i]);
    }
    *type = le32toh(t);
    return le32toh(m) == RG__RAILS_MAGIC;
}

static rg_status_t rg__rails_fail(rg__rails_t *rl, rg_status_t status)
{
    rg_xreq_t  *req;
    rg__rsub_t *s;
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
    }
    return status;
}

/* A rail's transport failed: the rails transport fails, naming it. */
static rg_status_t rg__rails_rail_failed(rg__rails_t *rl, int r, rg_status_t status)
{
    rg_err_set(&rl->super.err, status, "rail %d (%s) failed: %s", r, rl->rname[r],
               rg_xport_strerror(rl->rail[r]));
    return rg__rails_fail(rl, status);
}

static rg__rsub_t *rg__rsub_get(rg__rails_t *rl, size_t stage)
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
    s->next = NULL;
    return s;
}

static void rg__rsub_put(rg__rails_t *rl, rg__rsub_t *s)
{
    s->next       = rl->free_subs;
    rl->free_subs = s;
}

/* ---- sending --------------------------------------------------------------- */

/* Posts one rail message (len bytes at buf) for user (NULL: internal). */
static rg_status_t rg__rails_post(rg__rails_t *rl, int r, int peer, rg__rsub_t *s,
                                  const void *buf, size_t len, rg_xreq_t *user)
{
    rg_status_t status;

    s->user = user;
    status  = rg_xport_isend(rl->rail[r], peer, buf, len, &s->x);
    if (status < 0) {
        rg__rsub_put(rl, s);
        return rg__rails_rail_failed(rl, r, status);
    }
    if (user != NULL) {
        RG__RAILS_PENDING(user)++;
    }
    rl->sent_bytes[r] += len;
    s->next           = rl->inflight[r];
    rl->inflight[r]   = s;
    return RG_OK;
}

/* The rail of a message that goes whole. */
static int rg__rails_one(rg__rails_t *rl, int peer)
{
    const double *w = rl->peers[peer].w;
    int           r, best = 0;

    switch (rl->policy) {
    case RG__P_BINDING:
        return (rl->super.rank + peer) % rl->nrails;
    case RG__P_RR:
        return (int)(rl->rr_next++ % (unsigned)rl->nrails);
    default:
        for (r = 1; r < rl->nrails; r++) {
            if (w[r] > w[best]) {
                best = r;
            }
        }
        return best;
    }
}

static rg_status_t rg__rails_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__rails_t   *rl = rg__rails(xp);
    rg__rpeer_t   *pp = &rl->peers[req->peer];
    rg__rsub_t    *s;
    rg_status_t    status;
    const double  *w  = pp->w;
    uint64_t       seq = pp->send_seq++, off = 0, part;
    size_t         len = req->len, cut[RG__RAILS_MAX];
    int            r, nparts = 0, one;

    if (rl->failed != RG_OK) {
        req->status = rl->failed;
        return rl->failed;
    }
    if (pp->byes > 0) {
        req->status = RG_ERR_PEER_DEAD;
        return rg_err_set(&xp->err, RG_ERR_PEER_DEAD, "rank %d has closed the rails transport",
                          req->peer);
    }
    RG__RAILS_PENDING(req) = 0;
    if (len <= rl->cfg.inline_max) {
        r = rg__rails_one(rl, req->peer);
        s = rg__rsub_get(rl, RG__RAILS_HDR + rl->cfg.inline_max);
        if (s == NULL) {
            goto nomem;
        }
        rg__hdr_put(s->stage, RG__T_INLINE, seq, len, 0, len);
        if (len > 0) {
            memcpy(s->stage + RG__RAILS_HDR, req->buf, len);
        }
        status = rg__rails_post(rl, r, req->peer, s, s->stage, RG__RAILS_HDR + len, req);
        goto posted;
    }
    one = rl->policy == RG__P_BINDING || rl->policy == RG__P_RR || len < rl->cfg.stripe_min;
    memset(cut, 0, sizeof(cut));
    if (one) {
        cut[rg__rails_one(rl, req->peer)] = len;
    } else {
        /* Stripes in proportion to the weights, whole 4 KiB pages but the
         * last; the rounding goes to the last rail with a share. */
        for (r = 0; r < rl->nrails; r++) {
            part   = (uint64_t)floor((double)len * w[r]) & ~(uint64_t)4095;
            cut[r] = off + part > len ? len - off : part;
            off   += cut[r];
        }
        for (r = rl->nrails - 1; r >= 0 && off < len; r--) {
            if (w[r] > 0) {
                cut[r] += len - off;
                off     = len;
            }
        }
    }
    off = 0;
    for (r = 0; r < rl->nrails; r++) {
        if (cut[r] == 0) {
            continue;
        }
        s = rg__rsub_get(rl, RG__RAILS_HDR + rl->cfg.inline_max);
        if (s == NULL) {
            goto nomem;
        }
        rg__hdr_put(s->stage, RG__T_STRIPE, seq, len, off, cut[r]);
        status = rg__rails_post(rl, r, req->peer, s, s->stage, RG__RAILS_HDR, req);
        if (status != RG_OK) {
            goto posted;
        }
        s = rg__rsub_get(rl, 0);
        if (s == NULL) {
            goto nomem;
        }
        status = rg__rails_post(rl, r, req->peer, s, (const unsigned char *)req->buf + off,
                                cut[r], req);
        if (status != RG_OK) {
            goto posted;
        }
        off += cut[r];
        nparts++;
    }
    status = RG_OK;
posted:
    if (status != RG_OK) {
        req->status = status;
        return status;
    }
    (void)nparts;
    return RG_OK;
nomem:
    rg_err_set(&xp->err, RG_ERR_NOMEM, "cannot allocate a rail request");
    req->status = rg__rails_fail(rl, RG_ERR_NOMEM);
    return RG_ERR_NOMEM;
}

/* Sends this rank's measured rates from peer back to it (adaptive). */
static rg_status_t rg__rails_send_rates(rg__rails_t *rl, int peer)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rsub_t  *s;
    double       v;
    int          r;

    s = rg__rsub_get(rl, RG__RAILS_HDR + (size_t)rl->nrails * sizeof(double));
    if (s == NULL) {
        rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot allocate a rail request");
        return rg__rails_fail(rl, RG_ERR_NOMEM);
    }
    rg__hdr_put(s->stage, RG__T_RATE, 0, 0, 0, (uint64_t)rl->nrails);
    for (r = 0; r < rl->nrails; r++) {
        v = pp->rate[r];
        memcpy(s->stage + RG__RAILS_HDR + (size_t)r * sizeof(double), &v, sizeof(v));
    }
    rl->rate_msgs++;
    return rg__rails_post(rl, rg__rails_one(rl, peer), peer, s, s->stage,
                          RG__RAILS_HDR + (size_t)rl->nrails * sizeof(double), NULL);
}

/* A RATE message from peer: new send weights to it. */
static void rg__rails_take_rates(rg__rails_t *rl, int peer, const unsigned char *b, size_t n)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    double       rate[RG__RAILS_MAX], sum = 0, share, fl = rl->cfg.floor, tot = 0;
    int          r;

    if (rl->policy != RG__P_ADAPTIVE || n != (size_t)rl->nrails * sizeof(double)) {
        return;
    }
    for (r = 0; r < rl->nrails; r++) {
        memcpy(&rate[r], b + (size_t)r * sizeof(double), sizeof(double));
        if (!(rate[r] > 0) || !isfinite(rate[r])) {
            return;  /* a rail not measured yet: keep the weights */
        }
        sum += rate[r];
    }
    for (r = 0; r < rl->nrails; r++) {
        share    = rate[r] / sum;
        pp->w[r] = rl->cfg.alpha * share + (1.0 - rl->cfg.alpha) * pp->w[r];
        if (pp->w[r] < fl) {
            pp->w[r] = fl;
        }
        tot += pp->w[r];
    }
    for (r = 0; r < rl->nrails; r++) {
        pp->w[r] /= tot;
    }
}

/* ---- receiving ------------------------------------------------------------- */

static rg_status_t rg__rails_post_hdr(rg__rails_t *rl, int r, int peer)
{
    rg__rrx_t  *x = &rl->rx[(size_t)r * (size_t)rl->super.size + (size_t)peer];
    rg_status_t status;

    if (x->state == RG__RX_STALL || x->state == RG__RX_DATA) {
        rl->busy_rx[r]--;
    }
    x->state = RG__RX_HDR;
    x->msg   = NULL;
    status   = rg_xport_irecv(rl->rail[r], peer, x->hbuf, RG__RAILS_HDR + rl->cfg.inline_max,
                              &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status) : RG_OK;
}

/* The stripe's message is matched: receive its bytes into the buffer (the
 * part past the receive's capacity is received and dropped by the rail). */
static rg_status_t rg__rails_post_data(rg__rails_t *rl, int r, int peer)
{
    rg__rrx_t  *x    = &rl->rx[(size_t)r * (size_t)rl->super.size + (size_t)peer];
    rg_xreq_t  *user = x->msg->user;
    rg_status_t status;
    size_t      cap  = user->len;
    void       *dst  = rl->sink;
    size_t      room = 0;

    if (x->off < cap) {
        dst  = (unsigned char *)user->buf + x->off;
        room = cap - x->off < x->len ? cap - x->off : x->len;
    }
    x->state = RG__RX_DATA;
    status   = rg_xport_irecv(rl->rail[r], peer, dst, room, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status) : RG_OK;
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
    } else if ((m = malloc(sizeof(*m))) == NULL) {
        return NULL;
    }
    memset(m, 0, sizeof(*m));
    m->seq   = seq;
    m->total = total;
    m->next  = *pm;
    *pm      = m;
    return m;
}

/* Ends message m of peer if all its bytes are in. */
static rg_status_t rg__rails_msg_check(rg__rails_t *rl, int peer, rg__rmsg_t *m)
{
    rg__rmsg_t **pm;
    rg_xreq_t   *u = m->user;
    int          striped = m->striped;

    if (u == NULL || m->got < m->total) {
        return RG_OK;
    }
    u->done   = m->total < u->len ? m->total : u->len;
    u->status = m->total > u->len ? RG_ERR_TRUNCATED : RG_OK;
    for (pm = &rl->peers[peer].msgs; *pm != m; pm = &(*pm)->next) {
    }
    *pm          = m->next;
    free(m->tmp);
    m->next       = rl->free_msgs;
    rl->free_msgs = m;
    if (striped && rl->policy == RG__P_ADAPTIVE) {
        return rg__rails_send_rates(rl, peer);
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
        free(m->tmp);
        m->tmp = NULL;
    }
    for (r = 0; r < rl->nrails; r++) {
        x = &rl->rx[(size_t)r * (size_t)rl->super.size + (size_t)peer];
        if (x->state == RG__RX_STALL && x->msg == m) {
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
static rg_status_t rg__rails_match(rg__rails_t *rl)
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

/* A header arrived on (r, peer). */
static rg_status_t rg__rails_on_hdr(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rmsg_t  *m;
    uint64_t     v[4];
    uint32_t     type;
    size_t       n = x->x.msg_len;

    if (x->x.status != RG_OK || n < RG__RAILS_HDR || !rg__hdr_get(x->hbuf, &type, v)) {
        return rg__rails_protocol(rl, r, peer, "a message that is not a rails header");
    }
    rl->recv_bytes[r] += n;
    if (type == RG__T_BYE) {
        /* The peer closes: nothing more comes on this rail, so no receive is
         * posted (its end of file is then no error of the rail). */
        x->state = RG__RX_CLOSED;
        rl->peers[peer].byes++;
        return RG_OK;
    }
    if (type == RG__T_RATE) {
        rg__rails_take_rates(rl, peer, x->hbuf + RG__RAILS_HDR, n - RG__RAILS_HDR);
        return rg__rails_post_hdr(rl, r, peer);
    }
    /* v = seq, total, off, len */
    if ((type != RG__T_INLINE && type != RG__T_STRIPE) || v[2] > v[1] || v[3] > v[1] - v[2] ||
        (type == RG__T_INLINE && n - RG__RAILS_HDR != v[3]) ||
        (type == RG__T_STRIPE && n != RG__RAILS_HDR)) {
        return rg__rails_protocol(rl, r, peer, "a header out of sequence or out of bounds");
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
    if (type == RG__T_INLINE) {
        if (m->user != NULL) {
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
        m->got += v[3];
        if (rg__rails_post_hdr(rl, r, peer) != RG_OK) {
            return rl->failed;
        }
        return rg__rails_msg_check(rl, peer, m);
    }
    m->striped = 1;
    x->state   = RG__RX_STALL;
    rl->busy_rx[r]++;
    x->msg     = m;
    x->off     = v[2];
    x->len     = v[3];
    /* The rail was busy if this stripe queued right behind the last one: its
     * bytes then arrive at the rail's own pace (see rg__rails_on_data). */
    x->busy    = x->t_done_ns != 0 && rg_time_mono_ns() - x->t_done_ns < RG__RAILS_BUSY_NS;
    if (m->user != NULL) {
        return rg__rails_post_data(rl, r, peer);
    }
    return RG_OK;
}

/* A stripe's bytes arrived on (r, peer). */
static rg_status_t rg__rails_on_data(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rmsg_t  *m  = x->msg;
    uint64_t     now;
    double       dt, rate;

    if ((x->x.status != RG_OK && x->x.status != RG_ERR_TRUNCATED) || x->x.msg_len != x->len) {
        return rg__rails_protocol(rl, r, peer, "a stripe of the wrong length");
    }
    rl->recv_bytes[r] += x->len;
    /* The rate of a rail is measured by dispersion, as packet trains are:
     * the time between the ends of two stripes that followed each other on
     * the rail without a gap. Timing one stripe from its header would count
     * bytes that waited in the kernel's buffers as arriving at memory speed. */
    now = rg_time_mono_ns();
    dt  = (double)(now - x->t_done_ns);
    if (x->busy && dt > 0 && x->len >= RG__RAILS_RATE_MIN) {
        rate        = (double)x->len / dt;
        pp->rate[r] = pp->rate[r] > 0 ? 0.5 * rate + 0.5 * pp->rate[r] : rate;
    }
    x->t_done_ns = now;
    m->got += x->len;
    if (rg__rails_post_hdr(rl, r, peer) != RG_OK) {
        return rl->failed;
    }
    return rg__rails_msg_check(rl, peer, m);
}

static rg_status_t rg__rails_irecv(rg_xport_t *xp, rg_xreq_t *req)
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

/* Receives that wait for a peer that has closed on every rail and left no
 * message to match end with RG_ERR_PEER_DEAD. */
static rg_status_t rg__rails_gone(rg__rails_t *rl)
{
    rg_xreq_t *u, *prev = NULL, *next;
    int        p;

    for (u = rl->posted; u != NULL; u = next) {
        next = u->next;
        p    = u->peer;
        if (p == RG_XPORT_ANY_SOURCE || rl->peers[p].byes < rl->nrails ||
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

/* ---- progress --------------------------------------------------------------- */

static rg_status_t rg__rails_progress(rg_xport_t *xp)
{
    rg__rails_t *rl = rg__rails(xp);
    rg__rsub_t **ps, *s;
    rg__rrx_t   *x;
    rg_status_t  status;
    int          r, peer, size = xp->size, again;

    if (rl->failed != RG_OK) {
        return rl->failed;
    }
    rl->polls++;
    for (r = 0; r < rl->nrails; r++) {
        if (rl->idle[r] >= RG__RAILS_IDLE_AFTER && rl->inflight[r] == NULL &&
            rl->busy_rx[r] == 0 && rl->polls % RG__RAILS_IDLE_EVERY != 0) {
            continue;
        }
        rl->idle[r]++;
        status = rg_xport_progress(rl->rail[r]);
        if (status < 0) {
            return rg__rails_rail_failed(rl, r, status);
        }
        for (ps = &rl->inflight[r]; (s = *ps) != NULL;) {
            if (s->x.status == RG_INPROGRESS) {
                ps = &s->next;
                continue;
            }
            rl->idle[r] = 0;
            if (s->x.status != RG_OK) {
                return rg__rails_rail_failed(rl, r, s->x.status);
            }
            *ps = s->next;
            if (s->user != NULL && --RG__RAILS_PENDING(s->user) == 0 &&
                s->user->status == RG_INPROGRESS) {
                s->user->done   = s->user->len;
                s->user->status = RG_OK;
            }
            rg__rsub_put(rl, s);
        }
        for (peer = 0; peer < size; peer++) {
            if (peer == xp->rank) {
                continue;
            }
            x = &rl->rx[(size_t)r * (size_t)size + (size_t)peer];
            do {
                again = 0;
                if (x->state == RG__RX_STALL || x->state == RG__RX_CLOSED ||
                    x->x.status == RG_INPROGRESS) {
                    break;
                }
                rl->idle[r] = 0;
                status = x->state == RG__RX_HDR ? rg__rails_on_hdr(rl, r, peer, x)
                                                : rg__rails_on_data(rl, r, peer, x);
                if (status != RG_OK) {
                    return status;
                }
                again = 1;
            } while (again);
        }
    }
    status = rg__rails_match(rl);
    if (status != RG_OK) {
        return status;
    }
    return rg__rails_gone(rl);
}

/* Sleeps on every rail's sockets at once (ops->wait_fds of the rails'
 * transport), so that a waiting rank leaves the cores to the network stack. */
static rg_status_t rg__rails_block(rg_xport_t *xp, uint64_t timeout_ns)
{
    rg__rails_t    *rl = rg__rails(xp);
    struct timespec ts;
    size_t          n = 0, k;
    rg_status_t     status;
    int             r;

    if (rl->failed != RG_OK) {
        return rl->failed;
    }
    for (r = 0; r < rl->nrails; r++) {
        if (rl->rail[r]->ops->wait_fds == NULL) {
            return RG_ERR_UNSUPPORTED;
        }
        status = rl->rail[r]->ops->wait_fds(rl->rail[r], rl->pfds + n, rl->npfds - n, &k);
        if (status != RG_OK) {
            return status == RG_ERR_RANGE ? RG_ERR_UNSUPPORTED
                                          : rg__rails_rail_failed(rl, r, status);
        }
        n += k;
    }
    ts.tv_sec  = (time_t)(timeout_ns / 1000000000ull);
    ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
    if (ppoll(rl->pfds, (nfds_t)n, &ts, NULL) < 0 && errno != EINTR) {
        rg_err_set_errno(&xp->err, RG_ERR_SYSTEM, errno, "ppoll on %zu sockets failed", n);
        return rg__rails_fail(rl, RG_ERR_SYSTEM);
    }
    return RG_OK;
}

/* ---- open and close ---------------------------------------------------------- */

static rg_status_t rg__rails_parse(rg__rails_t *rl, rg_err_t *err)
{
    rg__rails_config_t *cfg = &rl->cfg;
    char                buf[RG_CONFIG_STRING_MAX], *item, *save = NULL, *end;
    double              w[RG__RAILS_MAX], sum = 0;
    int                 i, j, nw = 0;

    for (i = 0; rg__rails_policies[i] != NULL; i++) {
        if (strcmp(cfg->policy, rg__rails_policies[i]) == 0) {
            break;
        }
    }
    if (rg__rails_policies[i] == NULL) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_RAILS_POLICY='%s' is not a policy; the policies are binding, "
                          "round-robin, even, weighted and adaptive", cfg->policy);
    }
    rl->policy = i;
    if (strcmp(cfg->over, "tcp") != 0 &&
        (strncmp(cfg->over, "ofi:", 4) != 0 || cfg->over[4] == '\0' ||
         strchr(cfg->over, '@') != NULL)) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_RAILS_OVER='%s': rails run over tcp or ofi:<provider> (one "
                          "instance per rail)", cfg->over);
    }
    if (cfg->list[0] == '\0') {
        return rg_err_set(err, RG_ERR_INVALID,
                          "the rails transport needs RG_RAILS_LIST, its rails (interfaces, "
                          "addresses or subnets), e.g. RG_RAILS_LIST=rail0,rail1");
    }
    memcpy(buf, cfg->list, sizeof(buf));
    for (item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ') {
            item++;
        }
        if (*item == '\0') {
            return rg_err_set(err, RG_ERR_INVALID, "RG_RAILS_LIST='%s' has an empty item",
                              cfg->list);
        }
        if (rl->nrails == RG__RAILS_MAX) {
            return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_LIST has more than %d rails",
                              RG__RAILS_MAX);
        }
        snprintf(rl->rname[rl->nrails], sizeof(rl->rname[0]), "%s%s%s", cfg->over,
                 strcmp(cfg->over, "tcp") == 0 ? ":" : "@", item);
        for (j = 0; j < rl->nrails; j++) {
            if (strcmp(rl->rname[j], rl->rname[rl->nrails]) == 0) {
                return rg_err_set(err, RG_ERR_INVALID,
                                  "RG_RAILS_LIST='%s' names rail '%s' twice", cfg->list, item);
            }
        }
        rl->nrails++;
    }
    if (cfg->weights[0] != '\0') {
        memcpy(buf, cfg->weights, sizeof(buf));
        for (item = strtok_r(buf, ",", &save); item != NULL;
             item = strtok_r(NULL, ",", &save)) {
            if (nw == RG__RAILS_MAX) {
                break;
            }
            w[nw] = strtod(item, &end);
            if (end == item || *end != '\0' || !(w[nw] > 0) || !isfinite(w[nw])) {
                return rg_err_set(err, RG_ERR_INVALID,
                                  "RG_RAILS_WEIGHTS='%s': '%s' is not a weight above zero",
                                  cfg->weights, item);
            }
            sum += w[nw++];
        }
        if (nw != rl->nrails) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_RAILS_WEIGHTS='%s' has %d weights for %d rails",
                              cfg->weights, nw, rl->nrails);
        }
    } else {
        for (i = 0; i < rl->nrails; i++) {
            w[i] = 1.0;
        }
        sum = rl->nrails;
    }
    if (rl->policy == RG__P_EVEN) {
        for (i = 0; i < rl->nrails; i++) {
            w[i] = 1.0;
        }
        sum = rl->nrails;
    }
    for (i = 0; i < rl->super.size; i++) {
        for (j = 0; j < rl->nrails; j++) {
            rl->peers[i].w[j] = w[j] / sum;
        }
    }
    if (cfg->inline_max > RG__RAILS_INLINE_MAX) {
        return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_INLINE=%zu is above 1 MiB",
                          cfg->inline_max);
    }
    if (!(cfg->alpha > 0 && cfg->alpha <= 1)) {
        return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_ADAPT_ALPHA=%g is outside (0, 1]",
                          cfg->alpha);
    }
    if (!(cfg->floor >= 0 && cfg->floor * rl->nrails < 1)) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_RAILS_ADAPT_FLOOR=%g: the floor times the %d rails must be "
                          "below 1", cfg->floor, rl->nrails);
    }
    return RG_OK;
}

/* Says goodbye on every (rail, peer), so that the peers take this rank's
 * end of file as a close, not a failure; gives up after a second. */
static void rg__rails_bye(rg__rails_t *rl)
{
    rg__rsub_t *s;
    uint64_t    deadline = rg_time_mono_ns() + 1000000000ull;
    int         r, peer, pending;

    for (r = 0; r < rl->nrails && rl->rail[r] != NULL; r++) {
        for (peer = 0; peer < rl->super.size; peer++) {
            if (peer == rl->super.rank || (s = rg__rsub_get(rl, RG__RAILS_HDR)) == NULL) {
                continue;
            }
            rg__hdr_put(s->stage, RG__T_BYE, 0, 0, 0, 0);
            if (rg__rails_post(rl, r, peer, s, s->stage, RG__RAILS_HDR, NULL) != RG_OK) {
                return;
            }
        }
    }
    do {
        pending = 0;
        for (r = 0; r < rl->nrails; r++) {
            if (rg_xport_progress(rl->rail[r]) < 0) {
                return;
            }
            for (s = rl->inflight[r]; s != NULL; s = s->next) {
                pending |= s->x.status == RG_INPROGRESS;
            }
        }
    } while (pending && rg_time_mono_ns() < deadline);
}

static void rg__rails_close(rg_xport_t *xp)
{
    rg__rails_t *rl = rg__rails(xp);
    rg__rsub_t  *s;
    rg__rmsg_t  *m;
    int          r, i;

    if (rl->opened && rl->failed == RG_OK) {
        rg__rails_bye(rl);
    }

    for (r = 0; r < RG__RAILS_MAX; r++) {
        if (rl->rail[r] != NULL) {
            rg_xport_close(rl->rail[r]);
        }
        while ((s = rl->inflight[r]) != NULL) {
            rl->inflight[r] = s->next;
            free(s->stage);
            free(s);
        }
    }
    while ((s = rl->free_subs) != NULL) {
        rl->free_subs = s->next;
        free(s->stage);
        free(s);
    }
    for (i = 0; rl->peers != NULL && i < xp->size; i++) {
        while ((m = rl->peers[i].msgs) != NULL) {
            rl->peers[i].msgs = m->next;
            free(m->tmp);
            free(m);
        }
    }
    while ((m = rl->free_msgs) != NULL) {
        rl->free_msgs = m->next;
        free(m);
    }
    for (i = 0; rl->rx != NULL && i < rl->nrails * xp->size; i++) {
        free(rl->rx[i].hbuf);
    }
    free(rl->rx);
    free(rl->pfds);
    free(rl->peers);
    free(rl);
}

static rg_status_t rg__rails_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                                  rg_err_t *err)
{
    rg__rails_t *rl;
    rg_status_t  status;
    int          size = rg_boot_size(boot), r, peer;

    (void)name;
    rl = calloc(1, sizeof(*rl));
    if (rl == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the rails transport");
    }
    rl->super.ops               = &rg_xport_rails_ops;
    rl->super.attr.name         = "rails";
    rl->super.attr.max_msg_size = SIZE_MAX;
    rl->super.attr.why_not[RG_XPORT_OPT_LIST] =
        "the rails transport posts each message by its policy; it has no list post";
    rl->super.attr.why_not[RG_XPORT_OPT_INJECT] =
        "the rails transport has no inline send (small messages are one rail message)";
    rl->super.attr.why_not[RG_XPORT_OPT_WIN] =
        "the rails transport has no one-sided writes";
    rl->super.boot = boot;
    rl->super.rank = rg_boot_rank(boot);
    rl->super.size = size;
    rl->peers      = calloc((size_t)size, sizeof(*rl->peers));
    if (rl->peers == NULL) {
        free(rl);
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d rails peers", size);
    }
    /* Settings are checked on every rank before the collective opens; a
     * rank with a bad setting fails here, the others in the first rail's
     * open when it does not come (the bootstrap reports the dead rank). */
    status = rg_config_load(&rg_xport_rails_config_table, &rl->cfg, err);
    if (status == RG_OK) {
        status = rg__rails_parse(rl, err);
    }
    if (status != RG_OK) {
        rg__rails_close(&rl->super);
        return status;
    }
    rl->rx    = calloc((size_t)rl->nrails * (size_t)size, sizeof(*rl->rx));
    rl->npfds = (size_t)rl->nrails * (size_t)size;
    rl->pfds  = calloc(rl->npfds, sizeof(*rl->pfds));
    if (rl->rx == NULL || rl->pfds == NULL) {
        rg__rails_close(&rl->super);
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the rails receive state");
    }
    for (r = 0; r < rl->nrails; r++) {
        status = rg_xport_open(rl->rname[r], boot, &rl->rail[r], err);
        if (status != RG_OK) {
            rg_err_set(err, status, "rail %d (%s): %s", r, rl->rname[r], rg_err_message(err));
            rg__rails_close(&rl->super);
            return status;
        }
    }
    for (r = 0; r < rl->nrails; r++) {
        for (peer = 0; peer < size; peer++) {
            rg__rrx_t *x = &rl->rx[(size_t)r * (size_t)size + (size_t)peer];

            if (peer == rl->super.rank) {
                continue;
            }
            x->hbuf = malloc(RG__RAILS_HDR + rl->cfg.inline_max);
            if (x->hbuf == NULL) {
                rg__rails_close(&rl->super);
                return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate rails header buffers");
            }
            status = rg__rails_post_hdr(rl, r, peer);
            if (status != RG_OK) {
                rg_err_set(err, status, "%s", rg_err_message(&rl->super.err));
                rg__rails_close(&rl->super);
                return status;
            }
        }
    }
    rl->opened = 1;
    *xp_p      = &rl->super;
    return RG_OK;
}

static rg_status_t rg__rails_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    rg__rails_t *rl = rg__rails(xp);
    rg_json_t    js;
    char         sub[512];
    int          r, peer = xp->rank == 0 ? 1 : 0;

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "policy", rl->cfg.policy);
    rg_json_kv_uint(&js, "stripe_min", rl->cfg.stripe_min);
    rg_json_kv_uint(&js, "inline", rl->cfg.inline_max);
    rg_json_kv_uint(&js, "rate_messages", rl->rate_msgs);
    rg_json_key(&js, "rails");
    rg_json_array_begin(&js);
    for (r = 0; r < rl->nrails; r++) {
        rg_json_object_begin(&js);
        rg_json_kv_string(&js, "name", rl->rname[r]);
        rg_json_kv_uint(&js, "bytes_sent", rl->sent_bytes[r]);
        rg_json_kv_uint(&js, "bytes_received", rl->recv_bytes[r]);
        if (peer < xp->size) {
            rg_json_kv_double(&js, "weight", rl->peers[peer].w[r]);
            rg_json_kv_double(&js, "receive_rate_MBps", rl->peers[peer].rate[r] * 1e3);
        }
        if (rl->rail[r]->ops->info_json(rl->rail[r], sub, sizeof(sub)) == RG_OK) {
            rg_json_key(&js, "transport_info");
            rg_json_raw(&js, sub);
        }
        rg_json_object_end(&js);
    }
    rg_json_array_end(&js);
    rg_json_object_end(&js);
    return js.status;
}

const rg_xport_ops_t rg_xport_rails_ops = {
    .name        = "rails",
    .description = "several tcp rails side by side (RG_RAILS_LIST), messages striped or "
                   "placed by a policy (RG_RAILS_POLICY)",
    .open        = rg__rails_open,
    .close       = rg__rails_close,
    .isend       = rg__rails_isend,
    .irecv       = rg__rails_irecv,
    .progress    = rg__rails_progress,
    .block       = rg__rails_block,
    .info_json   = rg__rails_info_json,
    .get         = rg_xport_no_get,
};
