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
 * Failover (RG_RAILS_FAILOVER, on by default). Every header carries the
 * sender's cumulative acknowledgement of the other direction: all messages
 * of the peer below that sequence number are complete here. It travels on
 * the traffic there is, and in an ACK message when a striped message
 * completes (its send completes only then: the sender keeps sending from
 * the user's buffer until the bytes are known to be in) and after every
 * RG__RAILS_ACK_EVERY inline messages (their bytes are kept in the staging
 * buffer until acknowledged). Stripes go in pieces of at most RG_RAILS_CHUNK,
 * so that a rail's failure costs at most the pieces in flight on it.
 *
 * A rail fails when its transport errs: a peer reset the connection, or the
 * path is down (tcp: RG_TCP_DEAD_AFTER, from what the peer's kernel has
 * acknowledged, so a peer that is merely busy is not taken for dead). The
 * rank closes that rail's transport instance (no request of it touches a
 * user buffer any more), tells every peer on every remaining rail (DOWN,
 * ahead of what follows on that rail, so the peer closes the rail before
 * the resent pieces arrive) and sends again, on the remaining rails, every
 * unacknowledged piece that the failed rail carried. The receiver counts
 * each piece of a message once (by its offset) and drops messages below its
 * acknowledgement, acknowledging them again, so that nothing is lost or
 * delivered twice. The event goes to stderr and into the transport's info
 * ("events"). With every rail failed the transport fails, naming them.
 *
 * Recovery (RG_RAILS_RETRY): rank 0 tries to take a failed rail back once its
 * end of the rail has a carrier. Every rank opens the rail's transport anew
 * on a thread, with a bootstrap whose allgathers are JOIN messages over the
 * rails still up (rg__rails_rejoin_step moves them), and the rail is back
 * where every rank's open succeeded. Its instances are numbered (epoch): a
 * DOWN names the one it is about.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rails/rails.h"

#include "base/json.h"
#include "base/timer.h"
#include "boot/boot.h"
#include "xport/netaddr.h"
#include "xport/xport.h"

#define RG__RAILS_MAX    16
#define RG__RAILS_MAGIC  0x4c524752u  /* "RGRL" */
#define RG__RAILS_HDR    48u
#define RG__RAILS_INLINE_MAX ((size_t)1 << 20)
#define RG__RAILS_BUSY_NS    50000u          /* back to back: within 50 us */
#define RG__RAILS_RATE_MIN   ((size_t)65536) /* stripes shorter say nothing of a rate */
#define RG__RAILS_IDLE_AFTER 64u             /* empty progress calls before a rail idles */
#define RG__RAILS_IDLE_EVERY 8u              /* an idle rail: progressed every 8th call */
#define RG__RAILS_ACK_EVERY  32u             /* inline messages between two ACKs */
#define RG__RAILS_EVENTS     32              /* failover events kept for info_json */
#define RG__RAILS_BLOB_MAX   512u            /* a rejoin's exchange: bytes per rank and step */
#define RG__RAILS_STEPS      4u              /* ... steps: the transport's, then the outcome */
#define RG__RAILS_STEP_NS    15000000000ull  /* a rejoin's step waits at most this */
#define RG__RAILS_BACKOFF_MAX_NS 30000000000ull

enum {
    RG__T_INLINE = 1, RG__T_STRIPE = 2, RG__T_RATE = 3, RG__T_BYE = 4, RG__T_ACK = 5,
    RG__T_DOWN = 6, RG__T_JOIN = 7
};
/* In a STRIPE header's type: the sender's send waits for the acknowledgement. */
#define RG__T_ACKWANT 0x100u
enum { RG__P_BINDING, RG__P_RR, RG__P_EVEN, RG__P_WEIGHTED, RG__P_ADAPTIVE };
/* DROP: a duplicate piece's bytes go to the sink; DEAD: the rail failed. */
enum { RG__RX_HDR = 0, RG__RX_STALL, RG__RX_DATA, RG__RX_CLOSED, RG__RX_DROP, RG__RX_DEAD };

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
    int    failover;
    size_t chunk;
    double retry_ns;
    char   fault[RG_CONFIG_STRING_MAX];
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
    {"FAILOVER", "1",
     "1: a rail that fails is closed and its unacknowledged traffic sent again on the "
     "others (sends of striped messages complete when the receiver has acknowledged "
     "them); 0: a failed rail fails the transport",
     offsetof(rg__rails_config_t, failover), RG_CONFIG_INT},
    {"CHUNK", "4MiB",
     "stripes go in pieces of at most this (64 KiB or more): what a failed rail's "
     "traffic costs to send again is at most the pieces in flight on it",
     offsetof(rg__rails_config_t, chunk), RG_CONFIG_SIZE},
    {"RETRY", "1s",
     "failover: how long after a rail failed rank 0 first tries to take it back into use "
     "(each rank opens the rail's transport anew, its addresses exchanged over the rails "
     "still up), and again after each failed try, the wait doubling up to 30 s; it tries "
     "only while its own end of the rail has a carrier; 0: a failed rail stays down",
     offsetof(rg__rails_config_t, retry_ns), RG_CONFIG_TIME_NS},
    {"FAULT", "",
     "fault injection for tests: RANK:RAIL:BYTES[,...] fails rail RAIL at rank RANK once it "
     "has sent BYTES bytes, as if its transport had erred",
     offsetof(rg__rails_config_t, fault), RG_CONFIG_STRING},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_rails_config_table = {"RAILS", rg__rails_config_fields};

struct rg__rout;

/* A request of a rail's transport, with what the rails layer needs of it. */
typedef struct rg__rsub {
    rg_xreq_t        x;
    struct rg__rsub *next;     /* in flight on its rail, or free */
    rg_xreq_t       *user;     /* the send it is part of (NULL: a control message) */
    struct rg__rout *rout;     /* the unacknowledged message whose bytes it sends */
    int              live;     /* posted on a rail, not completed */
    unsigned char   *stage;    /* header (+ inline bytes) */
    size_t           stage_cap;
} rg__rsub_t;

/* Where one piece of a sent message went. */
typedef struct rg__rpart {
    int      rail;
    uint64_t off, len;
} rg__rpart_t;

/* A sent message the receiver has not acknowledged yet (failover). Its bytes
 * are a copy (inline: in the staging buffer of its header; below the stripe
 * size: in copy) or the user's buffer (striped: the send then completes with
 * the acknowledgement). It goes when acknowledged and no rail request reads
 * its bytes any more (live). */
typedef struct rg__rout {
    uint64_t         seq, total;
    rg_xreq_t       *user;     /* the send, until it completes */
    int              ackshare; /* the user's send waits for the ACK too */
    int              acked;
    unsigned         live;     /* rail requests that read its bytes */
    rg__rsub_t      *stage;    /* inline: header and bytes */
    unsigned char   *copy;     /* staged: the bytes */
    size_t           copy_cap;
    rg__rpart_t     *parts;
    unsigned         nparts, cap;
    struct rg__rout *next;
} rg__rout_t;

/* A message of a peer known to the receiver (a header of it has arrived). */
typedef struct rg__rmsg {
    uint64_t         seq, total, got;
    unsigned char   *tmp;      /* inline bytes that came before a receive matched */
    rg_xreq_t       *user;     /* the matched receive */
    int              striped;  /* had a stripe: send rates back when complete */
    int              ackwant;  /* its sender waits for the acknowledgement */
    unsigned         tmp_live; /* pieces being received into tmp */
    int              delivered;
    uint64_t        *offs;     /* failover: offsets of the pieces counted in got */
    unsigned         noffs, offcap;
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
    int            intmp;      /* DATA: the bytes go to msg->tmp (not matched yet) */
} rg__rrx_t;

typedef struct rg__rpeer {
    uint64_t    send_seq;
    uint64_t    next_match;
    rg__rmsg_t *msgs;          /* known messages, by sequence number */
    double      w[RG__RAILS_MAX];     /* send weights to this peer (sum 1) */
    double      rate[RG__RAILS_MAX];  /* receive rates from this peer, bytes/ns */
    unsigned    byes;                 /* rails on which the peer said goodbye (bits) */
    /* Failover: messages from the peer below ack_upto are complete here
     * (ack_sent: the last value told); the peer has all of ours below acked. */
    uint64_t    ack_upto, ack_sent, acked;
    int         ack_due;              /* a striped message passed: tell it this call */
    rg__rout_t *outs, *outs_last;     /* ours, not acknowledged, by sequence */
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
    /* Failover. */
    int               fo;
    int               acks_due;                /* peers with ack_due set */
    unsigned          alive;                   /* rails up (bits) */
    unsigned          down_pending;            /* failed, not torn down yet (bits) */
    char              down_why[RG__RAILS_MAX][320];
    rg__rout_t       *free_outs;
    uint64_t          fault_at[RG__RAILS_MAX];  /* RG_RAILS_FAULT here; 0: none */
    uint64_t          failovers, resent_bytes, resent_pieces, dup_pieces, acks_sent;
    /* Taking a failed rail back (RG_RAILS_RETRY): rank 0 starts a try, a
     * rank joins one when its first JOIN comes; epoch numbers the rail's
     * instances (0: the one of the open) and the tries. */
    struct rg__rejoin *rj[RG__RAILS_MAX];     /* the try running, if any */
    uint64_t          epoch[RG__RAILS_MAX];  /* of the rail's instance */
    uint64_t          epoch_seen[RG__RAILS_MAX];
    uint64_t          down_ns[RG__RAILS_MAX], next_try_ns[RG__RAILS_MAX];
    uint64_t          backoff_ns[RG__RAILS_MAX];
    double            w0[RG__RAILS_MAX];     /* the weights of the open */
    uint64_t          recoveries, rejoin_tries;
    int               closing;
    size_t            hcap;                  /* a header receive's bytes */
    struct {
        double      t_s;
        int         rail;
        const char *what;     /* "down", "up", "retry" */
        char        why[320];
    }                 events[RG__RAILS_EVENTS];
    int               nevents;
    uint64_t          t0_ns;
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
                        uint64_t off, uint64_t len, uint64_t ack)
{
    uint32_t m = htole32(RG__RAILS_MAGIC), t = htole32(type);
    uint64_t v[5] = {htole64(seq), htole64(total), htole64(off), htole64(len), htole64(ack)};

    memcpy(b, &m, 4);
    memcpy(b + 4, &t, 4);
    memcpy(b + 8, v, sizeof(v));
}

/* v = seq, total, off, len, ack. */
static int rg__hdr_get(const unsigned char *b, uint32_t *type, uint64_t v[5])
{
    uint32_t m, t;
    int      i;

    memcpy(&m, b, 4);
    memcpy(&t, b + 4, 4);
    memcpy(v, b + 8, 5 * sizeof(uint64_t));
    for (i = 0; i < 5; i++) {
        v[i] = le64toh(v[i]);
    }
    *type = le32toh(t);
    return le32toh(m) == RG__RAILS_MAGIC;
}

/* A header to peer, with this rank's acknowledgement of the peer's messages. */
static void rg__rails_hdr(rg__rails_t *rl, int peer, unsigned char *b, uint32_t type,
                          uint64_t seq, uint64_t total, uint64_t off, uint64_t len)
{
    rg__rpeer_t *pp = &rl->peers[peer];

    rg__hdr_put(b, type, seq, total, off, len, pp->ack_upto);
    pp->ack_sent = pp->ack_upto;
}

static int rg__rails_up(const rg__rails_t *rl, int r)
{
    return ((rl->alive & ~rl->down_pending) >> r) & 1u;
}

static rg_status_t rg__rails_fail(rg__rails_t *rl, rg_status_t status)
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
static rg_status_t rg__rails_rail_failed(rg__rails_t *rl, int r, rg_status_t status,
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

static void rg__rout_free(rg__rails_t *rl, rg__rout_t *o)
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
static void rg__rsub_done(rg__rails_t *rl, rg__rsub_t *s)
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

/* ---- sending --------------------------------------------------------------- */

/* Posts one rail message (len bytes at buf) for user (NULL: internal). A
 * rail that refuses it has failed (see rg__rails_rail_failed). */
static rg_status_t rg__rails_post(rg__rails_t *rl, int r, int peer, rg__rsub_t *s,
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

/* The best rail up for a control message or a piece sent again. */
static int rg__rails_best(rg__rails_t *rl, int peer)
{
    const double *w = rl->peers[peer].w;
    int           r, best = -1;

    for (r = 0; r < rl->nrails; r++) {
        if (rg__rails_up(rl, r) && (best < 0 || w[r] > w[best])) {
            best = r;
        }
    }
    return best < 0 ? 0 : best;
}

/* The rail of a message that goes whole. */
static int rg__rails_one(rg__rails_t *rl, int peer)
{
    int r, k;

    switch (rl->policy) {
    case RG__P_BINDING:
        r = (rl->super.rank + peer) % rl->nrails;
        for (k = 0; k < rl->nrails && !rg__rails_up(rl, (r + k) % rl->nrails); k++) {
        }
        return (r + k) % rl->nrails;
    case RG__P_RR:
        for (k = 0; k < rl->nrails; k++) {
            r = (int)(rl->rr_next++ % (unsigned)rl->nrails);
            if (rg__rails_up(rl, r)) {
                return r;
            }
        }
        return 0;
    default:
        return rg__rails_best(rl, peer);
    }
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
static rg_status_t rg__rails_piece(rg__rails_t *rl, int r, int peer, uint64_t seq,
                                   uint64_t total, uint64_t off, uint64_t len,
                                   const unsigned char *src, rg_xreq_t *user, rg__rout_t *o)
{
    rg__rsub_t *s = rg__rsub_get(rl, RG__RAILS_HDR + rl->cfg.inline_max);
    rg_status_t status;

    if (s == NULL) {
        return RG_ERR_NOMEM;
    }
    rg__rails_hdr(rl, peer, s->stage,
                  RG__T_STRIPE | (rl->fo && o == NULL ? RG__T_ACKWANT : 0u), seq, total, off,
                  len);
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

static rg_status_t rg__rails_nomem(rg__rails_t *rl)
{
    rg_err_set(&rl->super.err, RG_ERR_NOMEM, "cannot allocate a rail request");
    return rg__rails_fail(rl, RG_ERR_NOMEM);
}

static rg_status_t rg__rails_reap(rg__rails_t *rl);
static rg_status_t rg__rails_take_join(rg__rails_t *rl, int peer, const uint64_t v[5],
                                       const unsigned char *b);

static rg_status_t rg__rails_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__rails_t   *rl = rg__rails(xp);
    rg__rpeer_t   *pp = &rl->peers[req->peer];
    rg__rsub_t    *s;
    rg__rout_t    *o = NULL;
    rg_status_t    status;
    const unsigned char *src;
    const double  *w  = pp->w;
    uint64_t       seq, off = 0, part, k, piece;
    size_t         len = req->len, cut[RG__RAILS_MAX];
    int            r, one;

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
        rg__rails_hdr(rl, req->peer, s->stage, RG__T_INLINE, seq, len, 0, len);
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

/* Tells peer how far its messages are complete here. */
static rg_status_t rg__rails_send_ack(rg__rails_t *rl, int peer)
{
    rg__rsub_t *s;

    if (rl->peers[peer].byes != 0) {
        return RG_OK;  /* it is closing: it waits for nothing more */
    }
    if ((s = rg__rsub_get(rl, RG__RAILS_HDR)) == NULL) {
        return rg__rails_nomem(rl);
    }
    rg__rails_hdr(rl, peer, s->stage, RG__T_ACK, 0, 0, 0, 0);
    rl->acks_sent++;
    return rg__rails_post(rl, rg__rails_best(rl, peer), peer, s, s->stage, RG__RAILS_HDR,
                          NULL);
}

/* The peer has all our messages below ack: their sends may complete and
 * their staging buffers go. */
static void rg__rails_take_ack(rg__rails_t *rl, int peer, uint64_t ack)
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

/* Sends this rank's measured rates from peer back to it (adaptive). */
static rg_status_t rg__rails_send_rates(rg__rails_t *rl, int peer)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rsub_t  *s;
    double       v;
    int          r;

    if (pp->byes != 0) {
        return RG_OK;
    }
    s = rg__rsub_get(rl, RG__RAILS_HDR + (size_t)rl->nrails * sizeof(double));
    if (s == NULL) {
        return rg__rails_nomem(rl);
    }
    rg__rails_hdr(rl, peer, s->stage, RG__T_RATE, 0, 0, 0, (uint64_t)rl->nrails);
    for (r = 0; r < rl->nrails; r++) {
        v = pp->rate[r];
        memcpy(s->stage + RG__RAILS_HDR + (size_t)r * sizeof(double), &v, sizeof(v));
    }
    rl->rate_msgs++;
    return rg__rails_post(rl, rg__rails_best(rl, peer), peer, s, s->stage,
                          RG__RAILS_HDR + (size_t)rl->nrails * sizeof(double), NULL);
}

/* A RATE message from peer: new send weights to it (over the rails up). */
static void rg__rails_take_rates(rg__rails_t *rl, int peer, const unsigned char *b, size_t n)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    double       rate[RG__RAILS_MAX], sum = 0, share, fl = rl->cfg.floor, tot = 0;
    int          r;

    if (rl->policy != RG__P_ADAPTIVE || n != (size_t)rl->nrails * sizeof(double)) {
        return;
    }
    for (r = 0; r < rl->nrails; r++) {
        if (!rg__rails_up(rl, r)) {
            continue;
        }
        memcpy(&rate[r], b + (size_t)r * sizeof(double), sizeof(double));
        if (!(rate[r] > 0) || !isfinite(rate[r])) {
            return;  /* a rail not measured yet: keep the weights */
        }
        sum += rate[r];
    }
    if (!(sum > 0)) {
        return;
    }
    for (r = 0; r < rl->nrails; r++) {
        if (!rg__rails_up(rl, r)) {
            continue;
        }
        share    = rate[r] / sum;
        pp->w[r] = rl->cfg.alpha * share + (1.0 - rl->cfg.alpha) * pp->w[r];
        if (pp->w[r] < fl) {
            pp->w[r] = fl;
        }
        tot += pp->w[r];
    }
    for (r = 0; r < rl->nrails; r++) {
        pp->w[r] = rg__rails_up(rl, r) ? pp->w[r] / tot : 0.0;
    }
}

/* ---- receiving ------------------------------------------------------------- */

static rg_status_t rg__rails_post_hdr(rg__rails_t *rl, int r, int peer)
{
    rg__rrx_t  *x = &rl->rx[(size_t)r * (size_t)rl->super.size + (size_t)peer];
    rg_status_t status;

    if (x->state == RG__RX_STALL || x->state == RG__RX_DATA || x->state == RG__RX_DROP) {
        rl->busy_rx[r]--;
    }
    x->state = RG__RX_HDR;
    x->msg   = NULL;
    status   = rg_xport_irecv(rl->rail[r], peer, x->hbuf, rl->hcap, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status, NULL) : RG_OK;
}

/* A piece this rank has already: its bytes are received and dropped. */
static rg_status_t rg__rails_post_drop(rg__rails_t *rl, int r, int peer)
{
    rg__rrx_t  *x = &rl->rx[(size_t)r * (size_t)rl->super.size + (size_t)peer];
    rg_status_t status;

    rl->dup_pieces++;
    rl->busy_rx[r]++;
    x->state = RG__RX_DROP;
    x->msg   = NULL;
    status   = rg_xport_irecv(rl->rail[r], peer, rl->sink, 0, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status, NULL) : RG_OK;
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
            if (striped && rl->policy == RG__P_ADAPTIVE) {
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
        striped |= m->ackwant || (m->striped && rl->policy == RG__P_ADAPTIVE);
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
    x->state = RG__RX_DATA;
    m->tmp_live++;
    status = rg_xport_irecv(rl->rail[r], peer, m->tmp + x->off, (size_t)x->len, &x->x);
    return status < 0 ? rg__rails_rail_failed(rl, r, status, NULL) : RG_OK;
}

/* A header arrived on (r, peer). */
static rg_status_t rg__rails_on_hdr(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rmsg_t  *m;
    uint64_t     v[5];
    uint32_t     type;
    size_t       n = x->x.msg_len;
    int          fresh, ackwant;

    if (x->x.status < 0 && x->x.status != RG_ERR_TRUNCATED) {
        return rg__rails_rail_failed(rl, r, x->x.status, NULL);
    }
    if (x->x.status != RG_OK || n < RG__RAILS_HDR || !rg__hdr_get(x->hbuf, &type, v)) {
        return rg__rails_protocol(rl, r, peer, "a message that is not a rails header");
    }
    ackwant = (type & RG__T_ACKWANT) != 0;
    type   &= ~RG__T_ACKWANT;
    rl->recv_bytes[r] += n;
    rg__rails_take_ack(rl, peer, v[4]);
    if (type == RG__T_BYE) {
        /* The peer closes: nothing more comes on this rail, so no receive is
         * posted (its end of file is then no error of the rail). */
        x->state = RG__RX_CLOSED;
        rl->peers[peer].byes |= 1u << r;
        return RG_OK;
    }
    if (type == RG__T_RATE) {
        rg__rails_take_rates(rl, peer, x->hbuf + RG__RAILS_HDR, n - RG__RAILS_HDR);
        return rg__rails_post_hdr(rl, r, peer);
    }
    if (type == RG__T_ACK) {
        return rg__rails_post_hdr(rl, r, peer);
    }
    if (type == RG__T_DOWN) {
        /* The peer found rail v[3] down: close it here too, before the
         * pieces it sends again behind this notice arrive. */
        if (v[3] < (uint64_t)rl->nrails && rg__rails_up(rl, (int)v[3]) &&
            v[1] >= rl->epoch[v[3]]) {  /* not about an instance before this one */
            char why[96];

            snprintf(why, sizeof(why), "rank %d reported it down", peer);
            (void)rg__rails_rail_failed(rl, (int)v[3], RG_ERR_PEER_DEAD, why);
        }
        return rg__rails_post_hdr(rl, r, peer);
    }
    if (type == RG__T_JOIN) {
        /* v = rail, epoch, step, length: a try to take a rail back. */
        rg_status_t status = n - RG__RAILS_HDR != v[3]
                                 ? RG_ERR_PARSE
                                 : rg__rails_take_join(rl, peer, v, x->hbuf + RG__RAILS_HDR);

        if (status == RG_ERR_PARSE) {
            return rg__rails_protocol(rl, r, peer, "a JOIN out of bounds");
        }
        if (status != RG_OK) {
            return status;
        }
        return rg__rails_post_hdr(rl, r, peer);
    }
    /* v = seq, total, off, len */
    if ((type != RG__T_INLINE && type != RG__T_STRIPE) || v[2] > v[1] || v[3] > v[1] - v[2] ||
        (type == RG__T_INLINE && n - RG__RAILS_HDR != v[3]) ||
        (type == RG__T_STRIPE && n != RG__RAILS_HDR)) {
        return rg__rails_protocol(rl, r, peer, "a header out of sequence or out of bounds");
    }
    if (rl->fo && v[0] < pp->ack_upto) {
        /* Sent again after a failover, but complete here: acknowledged again
         * (the first acknowledgement may have gone down with the rail). */
        if (type == RG__T_STRIPE) {
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
    if (type == RG__T_INLINE) {
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
    if (rl->fo && rg__rails_piece_in(m, v[2])) {
        return rg__rails_post_drop(rl, r, peer);  /* this piece is in already */
    }
    m->striped = 1;
    m->ackwant |= ackwant;
    x->state   = RG__RX_STALL;
    rl->busy_rx[r]++;
    x->msg     = m;
    x->off     = v[2];
    x->len     = v[3];
    /* The rail was busy if this stripe queued right behind the last one: its
     * bytes then arrive at the rail's own pace (see rg__rails_on_data). */
    x->busy    = x->t_done_ns != 0 && rg_time_mono_ns() - x->t_done_ns < RG__RAILS_BUSY_NS;
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
static rg_status_t rg__rails_on_data(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rmsg_t  *m  = x->msg;
    uint64_t     now;
    double       dt, rate;
    int          fresh;

    if (x->x.status < 0 && x->x.status != RG_ERR_TRUNCATED) {
        return rg__rails_rail_failed(rl, r, x->x.status, NULL);
    }
    if (x->state == RG__RX_DROP) {
        return rg__rails_post_hdr(rl, r, peer);
    }
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

/* Receives that wait for a peer that has closed on every rail up and left
 * no message to match end with RG_ERR_PEER_DEAD. */
static rg_status_t rg__rails_gone(rg__rails_t *rl)
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

/* ---- failover ---------------------------------------------------------------- */

static void rg__rails_event(rg__rails_t *rl, int r, const char *what, const char *why)
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

/* Takes failed rail r out: closes its transport (none of its requests
 * touches a user buffer after that), drops what was in flight on it, tells
 * every peer on every rail left and sends again there what r carried and
 * the peer has not acknowledged. */
static rg_status_t rg__rails_teardown(rg__rails_t *rl, int r)
{
    rg__rsub_t *s, *next;
    rg__rout_t *o;
    rg__rrx_t  *x;
    rg_xreq_t **users = NULL;
    double      tot;
    unsigned    i;
    size_t      n, nu = 0;
    int         peer, t, k, size = rl->super.size, left;
    rg_status_t status;

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
    /* What was in flight on r is dropped; the sends it leaves with nothing
     * pending are complete unless a piece of them goes again below (then
     * it is pending again): they are checked at the end. */
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
    for (peer = 0; peer < size; peer++) {
        x = &rl->rx[(size_t)r * (size_t)size + (size_t)peer];
        if (x->state == RG__RX_DATA && x->intmp && x->msg != NULL) {
            x->msg->tmp_live--;   /* that piece comes again on another rail */
            if (x->msg->user != NULL && x->msg->tmp_live == 0) {
                free(x->msg->tmp);
                x->msg->tmp = NULL;
            }
        }
        x->intmp = 0;
        if (x->state != RG__RX_CLOSED) {
            x->state = RG__RX_DEAD;
        }
        x->msg = NULL;
    }
    rl->busy_rx[r] = 0;
    if (left == 0) {
        char   all[RG__RAILS_MAX * 200];
        size_t len = 0;

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
    for (peer = 0; peer < size; peer++) {
        rg__rpeer_t *pp = &rl->peers[peer];

        tot = 0;
        pp->w[r] = 0;
        for (k = 0; k < rl->nrails; k++) {
            tot += pp->w[k];
        }
        for (k = 0; k < rl->nrails; k++) {
            pp->w[k] = tot > 0 ? pp->w[k] / tot : (double)((rl->alive >> k) & 1u) / left;
        }
        if (peer == rl->super.rank || pp->byes != 0) {
            continue;
        }
        for (k = 0; k < rl->nrails; k++) {
            if (!rg__rails_up(rl, k) || (s = rg__rsub_get(rl, RG__RAILS_HDR)) == NULL) {
                continue;
            }
            rg__rails_hdr(rl, peer, s->stage, RG__T_DOWN, 0, rl->epoch[r], 0, (uint64_t)r);
            status = rg__rails_post(rl, k, peer, s, s->stage, RG__RAILS_HDR, NULL);
            if (status != RG_OK) {
                free(users);
                return status;
            }
        }
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
                    free(users);
                    return rg__rails_nomem(rl);
                }
                if (status != RG_OK) {
                    free(users);
                    return status;
                }
            }
        }
    }
    /* Stalls from before the failover that a lower message may now queue
     * behind (see rg__rails_unstall). */
    for (k = 0; k < rl->nrails; k++) {
        for (peer = 0; peer < size && rg__rails_up(rl, k); peer++) {
            x = &rl->rx[(size_t)k * (size_t)size + (size_t)peer];
            if (x->state == RG__RX_STALL && x->msg != NULL &&
                x->msg->seq > rl->peers[peer].next_match &&
                rg__rails_unstall(rl, k, peer, x) != RG_OK) {
                free(users);
                return rl->failed;
            }
        }
    }
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
    free(users);
    return RG_OK;
}

/* Tears down the rails that failed since the last call (a teardown may
 * find another rail failed). */
static rg_status_t rg__rails_reap(rg__rails_t *rl)
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


/* ---- taking a failed rail back ---------------------------------------------- */

/* One try to take rail `rail` back: a thread opens the rail's transport anew
 * (its own bootstrap's allgathers are messages over the rails still up, JOIN:
 * the rail, the try's epoch, the step and a rank's bytes), then every rank
 * tells the others whether its open succeeded (the last step); the rail is
 * back where all did. The thread never touches the rails transport: the
 * progress engine moves its bytes through this record, under mu. */
typedef struct rg__rejoin {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int             refs;       /* the transport, the thread */
    int             abandoned;  /* the transport let go of it */
    int             done;
    int             rail, rank, size;
    uint64_t        epoch;
    char            name[RG_CONFIG_STRING_MAX + 8];
    char            job[64];
    unsigned        step;       /* the step the thread is in */
    unsigned char   out[RG__RAILS_STEPS][RG__RAILS_BLOB_MAX];
    size_t          outlen[RG__RAILS_STEPS];
    int             out_ready[RG__RAILS_STEPS], out_sent[RG__RAILS_STEPS];
    unsigned char  *in;         /* [step][rank][RG__RAILS_BLOB_MAX] */
    size_t         *inlen;      /* [step][rank]; SIZE_MAX: not come */
    rg_status_t     result;
    char            why[RG_ERR_MSG_MAX];
    rg_xport_t     *xp;         /* the new instance, when result is RG_OK */
} rg__rejoin_t;

static void rg__rejoin_unref(rg__rejoin_t *j)
{
    int last;

    pthread_mutex_lock(&j->mu);
    last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (last) {
        if (j->xp != NULL) {
            rg_xport_close(j->xp);
        }
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j->in);
        free(j->inlen);
        free(j);
    }
}

/* The bootstrap allgather of the thread (rg_boot_custom). */
static rg_status_t rg__rejoin_allgather(void *ctx, const void *mine, size_t len, void *all,
                                        rg_err_t *err)
{
    rg__rejoin_t   *j = ctx;
    struct timespec ts;
    rg_status_t     status = RG_OK;
    unsigned        k;
    int             p, missing = -1, rc = 0;

    pthread_mutex_lock(&j->mu);
    k = j->step++;
    if (k >= RG__RAILS_STEPS || len > RG__RAILS_BLOB_MAX) {
        pthread_mutex_unlock(&j->mu);
        return rg_err_set(err, RG_ERR_UNSUPPORTED,
                          "step %u of %zu B: a rail is taken back in at most %u steps of %u B",
                          k + 1, len, RG__RAILS_STEPS, RG__RAILS_BLOB_MAX);
    }
    if (len > 0) {
        memcpy(j->out[k], mine, len);
    }
    j->outlen[k]    = len;
    j->out_ready[k] = 1;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(RG__RAILS_STEP_NS / 1000000000ull);
    for (;;) {
        for (missing = -1, p = 0; p < j->size && missing < 0; p++) {
            if (p != j->rank && j->inlen[(size_t)k * (size_t)j->size + (size_t)p] == SIZE_MAX) {
                missing = p;
            }
        }
        if (missing < 0 || j->abandoned || rc == ETIMEDOUT) {
            break;
        }
        rc = pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    if (j->abandoned) {
        status = rg_err_set(err, RG_ERR_CANCELED, "the rails transport let go of the try");
    } else if (missing >= 0) {
        status = rg_err_set(err, RG_ERR_TIMEOUT, "rank %d did not take part within %llu s",
                            missing, (unsigned long long)(RG__RAILS_STEP_NS / 1000000000ull));
    }
    for (p = 0; p < j->size && status == RG_OK; p++) {
        size_t n = p == j->rank ? len : j->inlen[(size_t)k * (size_t)j->size + (size_t)p];

        if (n != len) {
            status = rg_err_set(err, RG_ERR_BOOTSTRAP, "rank %d gave %zu B to step %u, not %zu",
                                p, n, k + 1, len);
        } else if (len > 0) {
            memcpy((unsigned char *)all + (size_t)p * len,
                   p == j->rank ? mine
                                : j->in + ((size_t)k * (size_t)j->size + (size_t)p) *
                                              RG__RAILS_BLOB_MAX, len);
        }
    }
    pthread_mutex_unlock(&j->mu);
    return status;
}

static void *rg__rejoin_main(void *arg)
{
    rg__rejoin_t  *j = arg;
    rg_boot_t     *boot = NULL;
    rg_xport_t    *xp = NULL;
    rg_err_t       err;
    rg_status_t    status;
    unsigned char  ok, *oks;
    int            p;

    rg_err_clear(&err);
    oks    = malloc((size_t)j->size);
    status = oks == NULL ? rg_err_set(&err, RG_ERR_NOMEM, "cannot allocate %d bytes", j->size)
                         : rg_boot_custom(j->rank, j->size, j->job, rg__rejoin_allgather, j,
                                          &boot, &err);
    if (status == RG_OK) {
        status = rg_xport_open(j->name, boot, &xp, &err);
    }
    if (status != RG_OK) {
        snprintf(j->why, sizeof(j->why), "%s", rg_err_message(&err));
    }
    ok = status == RG_OK;
    if (boot != NULL) {
        /* The last step, whatever the open's steps were: the outcome. */
        pthread_mutex_lock(&j->mu);
        j->step = RG__RAILS_STEPS - 1;
        pthread_mutex_unlock(&j->mu);
        rg_err_clear(&err);
        if (rg_boot_allgather(boot, &ok, 1, oks, &err) != RG_OK) {
            if (ok) {
                snprintf(j->why, sizeof(j->why), "%s", rg_err_message(&err));
            }
            ok = 0;
        }
        for (p = 0; p < j->size && ok; p++) {
            if (!oks[p]) {
                snprintf(j->why, sizeof(j->why), "rank %d could not open it", p);
                ok = 0;
            }
        }
        rg_boot_fini(boot);
    }
    free(oks);
    if (xp != NULL) {
        xp->boot = NULL;  /* the rails transport gives it its own */
        if (!ok) {
            rg_xport_close(xp);
            xp = NULL;
        }
    }
    pthread_mutex_lock(&j->mu);
    j->xp     = xp;
    j->result = ok ? RG_OK : RG_ERR_PEER_DEAD;
    j->done   = 1;
    pthread_mutex_unlock(&j->mu);
    rg__rejoin_unref(j);
    return NULL;
}

/* The item of RG_RAILS_LIST that rail r binds to. */
static const char *rg__rails_where(const rg__rails_t *rl, int r)
{
    const char *w = strchr(rl->rname[r], strcmp(rl->cfg.over, "tcp") == 0 ? ':' : '@');

    return w != NULL ? w + 1 : rl->rname[r];
}

/* Starts a try to take rail r back as epoch (JOINs of it may be in). */
static rg_status_t rg__rails_rejoin_start(rg__rails_t *rl, int r, uint64_t epoch)
{
    rg__rejoin_t      *j;
    pthread_attr_t     attr;
    pthread_condattr_t ca;
    size_t             cells = (size_t)RG__RAILS_STEPS * (size_t)rl->super.size, i;
    pthread_t          th;
    int                rc;

    j = calloc(1, sizeof(*j));
    if (j == NULL || (j->in = malloc(cells * RG__RAILS_BLOB_MAX)) == NULL ||
        (j->inlen = malloc(cells * sizeof(size_t))) == NULL) {
        if (j != NULL) {
            free(j->in);
        }
        free(j);
        return rg__rails_nomem(rl);
    }
    for (i = 0; i < cells; i++) {
        j->inlen[i] = SIZE_MAX;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->refs  = 2;
    j->rail  = r;
    j->rank  = rl->super.rank;
    j->size  = rl->super.size;
    j->epoch = epoch;
    snprintf(j->name, sizeof(j->name), "%s", rl->rname[r]);
    snprintf(j->job, sizeof(j->job), "%s",
             rl->super.boot != NULL ? rg_boot_job_id(rl->super.boot) : "");
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, rg__rejoin_main, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        j->refs = 1;
        rg__rejoin_unref(j);
        fprintf(stderr, "railgauge: rank %d: cannot start a thread to take rail %d back: %s\n",
                rl->super.rank, r, strerror(rc));
        return RG_OK;  /* the rail stays down; the transport goes on */
    }
    rl->rj[r]         = j;
    rl->epoch_seen[r] = epoch;
    rl->rejoin_tries++;
    return RG_OK;
}

/* The transport lets go of rail r's try (the thread ends on its own). */
static void rg__rails_rejoin_drop(rg__rails_t *rl, int r)
{
    rg__rejoin_t *j = rl->rj[r];

    if (j == NULL) {
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->abandoned = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    rl->rj[r] = NULL;
    rg__rejoin_unref(j);
}

/* A JOIN from peer: step k of the try epoch to take rail r back. A newer try
 * than any seen here starts this rank's part of it (closing rail r first if
 * it is still up here: the peer's notice that it failed is still on its
 * way); an older one is over. */
static rg_status_t rg__rails_take_join(rg__rails_t *rl, int peer, const uint64_t v[5],
                                       const unsigned char *b)
{
    int           r = (int)v[0];
    unsigned      k = (unsigned)v[2];
    rg__rejoin_t *j;
    rg_status_t   status;

    if (v[0] >= (uint64_t)rl->nrails || v[2] >= RG__RAILS_STEPS || v[3] > RG__RAILS_BLOB_MAX) {
        return RG_ERR_PARSE;
    }
    if (rl->closing || !rl->fo) {
        return RG_OK;
    }
    if (v[1] > rl->epoch_seen[r]) {
        rg__rails_rejoin_drop(rl, r);
        if (rg__rails_up(rl, r)) {
            char why[96];

            snprintf(why, sizeof(why), "rank %d is taking it back into use", peer);
            (void)rg__rails_rail_failed(rl, r, RG_ERR_PEER_DEAD, why);
        }
        status = rg__rails_rejoin_start(rl, r, v[1]);
        if (status != RG_OK) {
            return status;
        }
    }
    j = rl->rj[r];
    if (j == NULL || j->epoch != v[1]) {
        return RG_OK;
    }
    pthread_mutex_lock(&j->mu);
    memcpy(j->in + ((size_t)k * (size_t)j->size + (size_t)peer) * RG__RAILS_BLOB_MAX, b,
           (size_t)v[3]);
    j->inlen[(size_t)k * (size_t)j->size + (size_t)peer] = (size_t)v[3];
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return RG_OK;
}

/* Rail r's new instance xp joins the others. */
static rg_status_t rg__rails_install(rg__rails_t *rl, int r, rg_xport_t *xp, uint64_t epoch)
{
    rg__rrx_t *x;
    double     tot;
    int        peer, k, size = rl->super.size;
    char       why[96];

    xp->boot           = rl->super.boot;
    rl->rail[r]        = xp;
    rl->epoch[r]       = epoch;
    rl->alive         |= 1u << r;
    rl->idle[r]        = 0;
    rl->busy_rx[r]     = 0;
    rl->recoveries++;
    for (peer = 0; peer < size; peer++) {
        rg__rpeer_t *pp = &rl->peers[peer];

        pp->byes &= ~(1u << r);
        /* The weights of the open over the rails up; adaptive keeps what
         * it learnt of the others and gives the rail back its first share. */
        for (k = 0; k < rl->nrails; k++) {
            if (k == r || rl->policy != RG__P_ADAPTIVE) {
                pp->w[k] = rl->w0[k];
            }
        }
        for (tot = 0, k = 0; k < rl->nrails; k++) {
            tot += rg__rails_up(rl, k) ? pp->w[k] : 0.0;
        }
        for (k = 0; k < rl->nrails; k++) {
            pp->w[k] = rg__rails_up(rl, k) && tot > 0 ? pp->w[k] / tot : 0.0;
        }
        if (peer == rl->super.rank) {
            continue;
        }
        x            = &rl->rx[(size_t)r * (size_t)size + (size_t)peer];
        x->state     = RG__RX_HDR;
        x->msg       = NULL;
        x->t_done_ns = 0;
        x->intmp     = 0;
        if (rg__rails_post_hdr(rl, r, peer) != RG_OK) {
            return rl->failed;
        }
    }
    snprintf(why, sizeof(why), "back after %.2f s (try %llu)",
             (double)(rg_time_mono_ns() - rl->down_ns[r]) * 1e-9, (unsigned long long)epoch);
    fprintf(stderr, "railgauge: rank %d: rail %d (%s) is in use again: %s\n", rl->super.rank, r,
            rl->rname[r], why);
    rg__rails_event(rl, r, "up", why);
    return RG_OK;
}

/* Moves the tries on: sends the bytes their threads gave, takes in the rails
 * whose try succeeded, and (rank 0) starts a try for a rail down long
 * enough whose end here has a carrier. */
static rg_status_t rg__rails_rejoin_step(rg__rails_t *rl)
{
    rg__rejoin_t *j;
    rg__rsub_t   *s;
    unsigned char blob[RG__RAILS_BLOB_MAX];
    size_t        len;
    uint64_t      now = 0;
    unsigned      k;
    int           r, peer, send, done;
    rg_status_t   status;

    for (r = 0; r < rl->nrails; r++) {
        if ((j = rl->rj[r]) == NULL) {
            if (rl->super.rank != 0 || rl->closing || rl->cfg.retry_ns <= 0 ||
                ((rl->alive | rl->down_pending) >> r) & 1u || rl->alive == 0) {
                continue;
            }
            if (now == 0) {
                now = rg_time_mono_ns();
            }
            if (now < rl->next_try_ns[r]) {
                continue;
            }
            if (!rg_netaddr_carrier(rg__rails_where(rl, r))) {
                rl->next_try_ns[r] = now + (uint64_t)rl->cfg.retry_ns;  /* look again then */
                continue;
            }
            rl->backoff_ns[r]  = rl->backoff_ns[r] * 2 < RG__RAILS_BACKOFF_MAX_NS
                                     ? rl->backoff_ns[r] * 2 : RG__RAILS_BACKOFF_MAX_NS;
            rl->next_try_ns[r] = now + rl->backoff_ns[r];
            status = rg__rails_rejoin_start(rl, r, rl->epoch_seen[r] + 1);
            if (status != RG_OK) {
                return status;
            }
            continue;
        }
        for (k = 0; k < RG__RAILS_STEPS; k++) {
            pthread_mutex_lock(&j->mu);
            send = j->out_ready[k] && !j->out_sent[k];
            len  = j->outlen[k];
            if (send) {
                memcpy(blob, j->out[k], len);
                j->out_sent[k] = 1;
            }
            pthread_mutex_unlock(&j->mu);
            for (peer = 0; send && peer < rl->super.size; peer++) {
                if (peer == rl->super.rank || rl->alive == 0) {
                    continue;
                }
                s = rg__rsub_get(rl, RG__RAILS_HDR + len);
                if (s == NULL) {
                    return rg__rails_nomem(rl);
                }
                rg__rails_hdr(rl, peer, s->stage, RG__T_JOIN, (uint64_t)r, j->epoch, k, len);
                memcpy(s->stage + RG__RAILS_HDR, blob, len);
                status = rg__rails_post(rl, rg__rails_best(rl, peer), peer, s, s->stage,
                                        RG__RAILS_HDR + len, NULL);
                if (status != RG_OK) {
                    return status;
                }
            }
        }
        pthread_mutex_lock(&j->mu);
        done = j->done;
        pthread_mutex_unlock(&j->mu);
        if (!done || ((rl->down_pending >> r) & 1u)) {
            continue;  /* (the old instance goes first, at the next reap) */
        }
        rl->rj[r] = NULL;
        if (j->result == RG_OK && !rg__rails_up(rl, r)) {
            rg_xport_t *xp = j->xp;

            j->xp = NULL;
            rg__rejoin_unref(j);
            status = rg__rails_install(rl, r, xp, rl->epoch_seen[r]);
            if (status != RG_OK) {
                return status;
            }
            continue;
        }
        if (rl->super.rank == 0) {
            char why[RG_ERR_MSG_MAX + 64];

            snprintf(why, sizeof(why), "try %llu failed: %s", (unsigned long long)j->epoch,
                     j->why);
            fprintf(stderr, "railgauge: rank %d: rail %d (%s) is still down: %s; next try in "
                    "%.0f s\n", rl->super.rank, r, rl->rname[r], why,
                    (double)rl->backoff_ns[r] * 1e-9);
            rg__rails_event(rl, r, "retry", why);
        }
        rg__rejoin_unref(j);
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
        for (peer = 0; peer < size && rg__rails_up(rl, r); peer++) {
            if (peer == xp->rank) {
                continue;
            }
            x = &rl->rx[(size_t)r * (size_t)size + (size_t)peer];
            do {
                again = 0;
                if (x->state == RG__RX_STALL || x->state == RG__RX_CLOSED ||
                    x->state == RG__RX_DEAD || x->x.status == RG_INPROGRESS) {
                    break;
                }
                rl->idle[r] = 0;
                status = x->state == RG__RX_HDR ? rg__rails_on_hdr(rl, r, peer, x)
                                                : rg__rails_on_data(rl, r, peer, x);
                if (status != RG_OK) {
                    return status;
                }
                again = rg__rails_up(rl, r);
            } while (again);
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
    for (peer = 0; peer < size && rl->acks_due > 0; peer++) {
        rg__rpeer_t *pp = &rl->peers[peer];

        if (!pp->ack_due) {
            continue;
        }
        pp->ack_due = 0;
        rl->acks_due--;
        if (rl->policy == RG__P_ADAPTIVE) {
            status = rg__rails_send_rates(rl, peer);
        } else {
            status = pp->ack_sent < pp->ack_upto ? rg__rails_send_ack(rl, peer) : RG_OK;
        }
        if (status != RG_OK) {
            return status;
        }
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
            x = &rl->rx[(size_t)r * (size_t)size + (size_t)peer];
            if (peer != rl->super.rank && x->x.status != RG_INPROGRESS &&
                (x->state == RG__RX_HDR || x->state == RG__RX_DATA ||
                 x->state == RG__RX_DROP)) {
                return 1;
            }
        }
    }
    return 0;
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
    for (j = 0; j < rl->nrails; j++) {
        rl->w0[j] = w[j] / sum;
    }
    for (i = 0; i < rl->super.size; i++) {
        for (j = 0; j < rl->nrails; j++) {
            rl->peers[i].w[j] = rl->w0[j];
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
    if (cfg->failover != 0 && cfg->failover != 1) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_RAILS_FAILOVER=%d: 1 (on) or 0 (off)",
                          cfg->failover);
    }
    rl->fo = cfg->failover;
    if (!(cfg->retry_ns == 0 || (cfg->retry_ns >= 10e6 && cfg->retry_ns <= 3600e9))) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_RAILS_RETRY=%gns is outside 10ms .. 1h (0: a failed rail stays "
                          "down)", cfg->retry_ns);
    }
    if (cfg->chunk < 65536) {
        return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_CHUNK=%zu is below 64 KiB", cfg->chunk);
    }
    if (cfg->fault[0] != '\0') {
        char   fbuf[RG_CONFIG_STRING_MAX], *it, *sv = NULL, *e1, *e2, *e3;
        long   fr, fl;
        int    ok;
        unsigned long long fb;

        memcpy(fbuf, cfg->fault, sizeof(fbuf));
        for (it = strtok_r(fbuf, ",", &sv); it != NULL; it = strtok_r(NULL, ",", &sv)) {
            fl = -1;
            fb = 0;
            fr = strtol(it, &e1, 10);
            ok = e1 != it && *e1 == ':' && fr >= 0;
            if (ok) {
                fl = strtol(e1 + 1, &e2, 10);
                ok = e2 != e1 + 1 && *e2 == ':' && fl >= 0 && fl < rl->nrails;
            }
            if (ok) {
                fb = strtoull(e2 + 1, &e3, 10);
                ok = e3 != e2 + 1 && *e3 == '\0';
            }
            if (!ok) {
                return rg_err_set(err, RG_ERR_INVALID,
                                  "RG_RAILS_FAULT='%s': '%s' is not RANK:RAIL:BYTES with RAIL "
                                  "below %d", cfg->fault, it, rl->nrails);
            }
            if (fr == rl->super.rank) {
                rl->fault_at[fl] = fb > 0 ? fb : 1;
            }
        }
    }
    return RG_OK;
}

/* Says goodbye on every (rail up, peer), so that the peers take this rank's
 * end of file as a close, not a failure, and waits for the peers' goodbyes
 * (what this rank sent them is then in: a closed socket with bytes unread
 * resets the connection, which would look like a failed rail to a peer
 * still at work); gives up after a second. */
static void rg__rails_bye(rg__rails_t *rl)
{
    rg__rsub_t *s;
    uint64_t    deadline = rg_time_mono_ns() + 1000000000ull;
    int         r, peer, pending;

    for (r = 0; r < rl->nrails; r++) {
        for (peer = 0; peer < rl->super.size && rg__rails_up(rl, r); peer++) {
            if (peer == rl->super.rank || (s = rg__rsub_get(rl, RG__RAILS_HDR)) == NULL) {
                continue;
            }
            rg__rails_hdr(rl, peer, s->stage, RG__T_BYE, 0, 0, 0, 0);
            if (rg__rails_post(rl, r, peer, s, s->stage, RG__RAILS_HDR, NULL) != RG_OK) {
                return;
            }
        }
    }
    do {
        if (rg__rails_progress(&rl->super) != RG_OK) {
            return;
        }
        pending = 0;
        for (r = 0; r < rl->nrails; r++) {
            for (s = rl->inflight[r]; s != NULL; s = s->next) {
                pending |= s->x.status == RG_INPROGRESS;
            }
        }
        for (peer = 0; peer < rl->super.size && !pending; peer++) {
            pending = peer != rl->super.rank &&
                      (rl->peers[peer].byes & rl->alive) != rl->alive;
        }
    } while (pending && rg_time_mono_ns() < deadline);
}

static void rg__rails_close(rg_xport_t *xp)
{
    rg__rails_t *rl = rg__rails(xp);
    rg__rsub_t  *s;
    rg__rmsg_t  *m;
    rg__rout_t  *o;
    int          r, i;

    rl->closing = 1;
    for (r = 0; r < rl->nrails; r++) {
        rg__rails_rejoin_drop(rl, r);
    }
    if (rl->opened && rl->failed == RG_OK) {
        rg__rails_bye(rl);
    }
    /* Acknowledged messages that requests in flight still read go with the
     * last of them; the others with their peer's list. */
    for (r = 0; r < RG__RAILS_MAX; r++) {
        for (s = rl->inflight[r]; s != NULL; s = s->next) {
            if ((o = s->rout) != NULL && o->acked && --o->live == 0) {
                free(o->copy);
                free(o->parts);
                free(o);
            }
        }
    }
    for (i = 0; rl->peers != NULL && i < xp->size; i++) {
        while ((o = rl->peers[i].outs) != NULL) {
            rl->peers[i].outs = o->next;
            if (o->stage != NULL && !o->stage->live) {
                free(o->stage->stage);
                free(o->stage);
            }
            free(o->copy);
            free(o->parts);
            free(o);
        }
    }
    while ((o = rl->free_outs) != NULL) {
        rl->free_outs = o->next;
        free(o->copy);
        free(o->parts);
        free(o);
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
            free(m->offs);
            free(m);
        }
    }
    while ((m = rl->free_msgs) != NULL) {
        rl->free_msgs = m->next;
        free(m->offs);
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
    rl->super.ops               = &rg_rails_ops;
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
    status = rg_config_load(&rg_rails_config_table, &rl->cfg, err);
    if (status == RG_OK) {
        status = rg__rails_parse(rl, err);
    }
    if (status != RG_OK) {
        rg__rails_close(&rl->super);
        return status;
    }
    rl->hcap  = RG__RAILS_HDR + (rl->cfg.inline_max > RG__RAILS_BLOB_MAX ? rl->cfg.inline_max
                                                                         : RG__RAILS_BLOB_MAX);
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
            char why[RG_ERR_MSG_MAX];

            /* Copied first: the message is formatted into the same err. */
            snprintf(why, sizeof(why), "%s", rg_err_message(err));
            rg_err_set(err, status, "rail %d (%s): %s", r, rl->rname[r], why);
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
            x->hbuf = malloc(rl->hcap);
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
    rl->alive  = (1u << rl->nrails) - 1u;
    rl->t0_ns  = rg_time_mono_ns();
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
    rg_json_kv_bool(&js, "failover", rl->fo);
    if (rl->fo) {
        rg_json_kv_uint(&js, "chunk", rl->cfg.chunk);
        rg_json_kv_uint(&js, "acks_sent", rl->acks_sent);
        rg_json_kv_uint(&js, "failovers", rl->failovers);
        rg_json_kv_uint(&js, "resent_bytes", rl->resent_bytes);
        rg_json_kv_uint(&js, "resent_pieces", rl->resent_pieces);
        rg_json_kv_uint(&js, "duplicate_pieces", rl->dup_pieces);
        rg_json_kv_double(&js, "retry_s", rl->cfg.retry_ns * 1e-9);
        rg_json_kv_uint(&js, "rejoin_tries", rl->rejoin_tries);
        rg_json_kv_uint(&js, "recoveries", rl->recoveries);
        rg_json_key(&js, "events");
        rg_json_array_begin(&js);
        for (r = 0; r < rl->nevents; r++) {
            rg_json_object_begin(&js);
            rg_json_kv_double(&js, "t_s", rl->events[r].t_s);
            rg_json_kv_int(&js, "rail", rl->events[r].rail);
            rg_json_kv_string(&js, "what", rl->events[r].what);
            rg_json_kv_string(&js, "why", rl->events[r].why);
            rg_json_object_end(&js);
        }
        rg_json_array_end(&js);
    }
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
        rg_json_kv_string(&js, "state", (rl->alive >> r) & 1u ? "up" : "down");
        rg_json_kv_uint(&js, "epoch", rl->epoch[r]);
        if (rl->rail[r] != NULL &&
            rl->rail[r]->ops->info_json(rl->rail[r], sub, sizeof(sub)) == RG_OK) {
            rg_json_key(&js, "transport_info");
            rg_json_raw(&js, sub);
        }
        rg_json_object_end(&js);
    }
    rg_json_array_end(&js);
    rg_json_object_end(&js);
    return js.status;
}

const rg_xport_ops_t rg_rails_ops = {
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

rg_status_t rg_rails_register(void)
{
    return rg_xport_register(&rg_rails_ops, &rg_rails_config_table);
}
