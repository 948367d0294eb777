/*
 * railgauge: the rails transport's objects and the names its files share
 * (rg__rails_*; not public: the layer's interface is rails.h). The design is
 * in rails.h, the wire format in wire.h.
 */
#ifndef RG_RAILS_RAILS_INT_H
#define RG_RAILS_RAILS_INT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/error.h"
#include "rails/rails.h"
#include "rails/wire.h"
#include "xport/xport.h"

#define RG__RAILS_MAX       16   /* rails (bits of the masks below) */
#define RG__RAILS_ACK_EVERY 32u  /* inline messages between two ACKs */
#define RG__RAILS_EVENTS    32   /* failover events kept for info_json */

/* The policies (RG_RAILS_POLICY), in the order of their names (policy.c). */
enum {
    RG__RAILS_P_BINDING, RG__RAILS_P_RR, RG__RAILS_P_EVEN, RG__RAILS_P_WEIGHTED,
    RG__RAILS_P_ADAPTIVE
};
/* A subchannel's receive side: a header receive is posted (HDR), a stripe
 * waits for its message to be matched (STALL) or its bytes are coming
 * (DATA); CLOSED: the peer said goodbye; DROP: a duplicate piece's bytes go
 * to the sink; DEAD: the rail failed. */
enum {
    RG__RAILS_RX_HDR = 0, RG__RAILS_RX_STALL, RG__RAILS_RX_DATA, RG__RAILS_RX_CLOSED,
    RG__RAILS_RX_DROP, RG__RAILS_RX_DEAD
};

/* The settings (config.c). */
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

/* Whether rail r is up and not failed since the last teardown. */
static inline int rg__rails_up(const rg__rails_t *rl, int r)
{
    return ((rl->alive & ~rl->down_pending) >> r) & 1u;
}

/* The receive side of subchannel (r, peer). */
static inline rg__rrx_t *rg__rails_rx(const rg__rails_t *rl, int r, int peer)
{
    return &rl->rx[(size_t)r * (size_t)rl->super.size + (size_t)peer];
}

/* ---- config.c ---- */
rg_status_t rg__rails_parse(rg__rails_t *rl, rg_err_t *err);

/* ---- policy.c ---- */
/* The RG__RAILS_P_* of a policy's name, or -1. */
int  rg__rails_policy_find(const char *name);
int  rg__rails_best(rg__rails_t *rl, int peer);
int  rg__rails_one(rg__rails_t *rl, int peer);
void rg__rails_cut(rg__rails_t *rl, int peer, size_t len, size_t cut[RG__RAILS_MAX]);
void rg__rails_weights_init(rg__rails_t *rl, const double *w, double sum);
void rg__rails_weights_down(const rg__rails_t *rl, rg__rpeer_t *pp, int r, int left);
void rg__rails_weights_back(const rg__rails_t *rl, rg__rpeer_t *pp, int r);

/* ---- send.c ---- */
void        rg__rails_hdr(rg__rails_t *rl, int peer, unsigned char *b, uint32_t type,
                          uint64_t seq, uint64_t total, uint64_t off, uint64_t len);
rg__rsub_t *rg__rsub_get(rg__rails_t *rl, size_t stage);
void        rg__rsub_done(rg__rails_t *rl, rg__rsub_t *s);
void        rg__rout_free(rg__rails_t *rl, rg__rout_t *o);
rg_status_t rg__rails_post(rg__rails_t *rl, int r, int peer, rg__rsub_t *s, const void *buf,
                           size_t len, rg_xreq_t *user);
rg_status_t rg__rails_piece(rg__rails_t *rl, int r, int peer, uint64_t seq, uint64_t total,
                            uint64_t off, uint64_t len, const unsigned char *src,
                            rg_xreq_t *user, rg__rout_t *o);
rg_status_t rg__rails_isend(rg_xport_t *xp, rg_xreq_t *req);

/* ---- recv.c ---- */
rg_status_t rg__rails_post_hdr(rg__rails_t *rl, int r, int peer);
rg_status_t rg__rails_match(rg__rails_t *rl);
rg_status_t rg__rails_unstall_all(rg__rails_t *rl);
rg_status_t rg__rails_on_hdr(rg__rails_t *rl, int r, int peer, rg__rrx_t *x);
rg_status_t rg__rails_on_data(rg__rails_t *rl, int r, int peer, rg__rrx_t *x);
rg_status_t rg__rails_irecv(rg_xport_t *xp, rg_xreq_t *req);
rg_status_t rg__rails_gone(rg__rails_t *rl);

/* ---- feedback.c ---- */
int         rg__rails_rate_busy(const rg__rrx_t *x);
void        rg__rails_rate_sample(rg__rails_t *rl, int r, int peer, rg__rrx_t *x);
rg_status_t rg__rails_send_rates(rg__rails_t *rl, int peer);
void        rg__rails_take_rates(rg__rails_t *rl, int peer, const unsigned char *b, size_t n);

/* ---- failover.c ---- */
rg_status_t rg__rails_fail(rg__rails_t *rl, rg_status_t status);
rg_status_t rg__rails_rail_failed(rg__rails_t *rl, int r, rg_status_t status,
                                  const char *why);
rg_status_t rg__rails_nomem(rg__rails_t *rl);
rg_status_t rg__rails_send_ack(rg__rails_t *rl, int peer);
void        rg__rails_take_ack(rg__rails_t *rl, int peer, uint64_t ack);
void        rg__rails_take_down(rg__rails_t *rl, int peer, const uint64_t v[5]);
void        rg__rails_event(rg__rails_t *rl, int r, const char *what, const char *why);
rg_status_t rg__rails_reap(rg__rails_t *rl);

/* ---- rejoin.c ---- */
rg_status_t rg__rails_take_join(rg__rails_t *rl, int peer, const uint64_t v[5],
                                const unsigned char *b);
void        rg__rails_rejoin_drop(rg__rails_t *rl, int r);
rg_status_t rg__rails_rejoin_step(rg__rails_t *rl);

/* ---- progress.c ---- */
rg_status_t rg__rails_progress(rg_xport_t *xp);
rg_status_t rg__rails_block(rg_xport_t *xp, uint64_t timeout_ns);

#endif /* RG_RAILS_RAILS_INT_H */
