/*
 * railgauge: the messaging runtime. Tagged point-to-point messages over any
 * transport of xport/, as MPI's point-to-point layer does over its BTLs or
 * UCX's tag API over its transports:
 *
 *   - eager: a message of up to the eager limit travels with its header in
 *     one transport message into a receiver-side buffer of the eager pool,
 *     and is copied into the matching receive (or kept as unexpected);
 *   - rendezvous: a larger message sends a request-to-send (RTS) over the
 *     eager path; once it matches a receive, the payload moves into the
 *     posted buffer directly: the receiver reads it from the sender's memory
 *     where the transport can (shm with cross-memory attach, then a FIN), or
 *     asks for it with a clear-to-send (CTS) and receives it on the data
 *     channel, a second instance of the transport that carries only payloads
 *     into posted buffers;
 *   - matching on (source, tag) with wildcards, in posting order, messages
 *     of one sender matched in the order they were sent, an unexpected
 *     queue in arrival order;
 *   - requests and one progress call, as in the transport layer.
 *
 * Hooks for the later parts of the runtime:
 *   - the eager pool (one per process, rg_proto_mem_t counts its bytes
 *     exactly): its buffers are posted to the transport as receives from any
 *     source, so it is a shared receive queue; its size is the shared
 *     receive window of rxwin.h (fixed or adaptive, with receiver-not-ready
 *     refusals and retries: docs/rxwin.md);
 *   - every transport send and receive goes through rg__proto_sched_*() in
 *     proto_int.h, the one scheduling point: it chooses the channel (the
 *     eager path or the data channel). Rails are chosen one layer down:
 *     multirail is a transport (`--transport rails`) that the runtime runs
 *     over unchanged, and the scheduling point stays for per-message
 *     decisions that need tags.
 */
#ifndef RG_PROTO_PROTO_H
#define RG_PROTO_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/error.h"
#include "boot/boot.h"
#include "xport/xport.h"

#define RG_PROTO_ANY_SOURCE (-1)
#define RG_PROTO_ANY_TAG    (-1)
/* Tags of sends are 0 .. RG_PROTO_TAG_MAX. */
#define RG_PROTO_TAG_MAX    INT32_MAX

typedef struct rg_proto rg_proto_t;
typedef struct rg_preq  rg_preq_t;

typedef enum rg_preq_kind {
    RG_PREQ_SEND = 1,
    RG_PREQ_RECV = 2
} rg_preq_kind_t;

/* One send or receive, allocated by the caller, untouched (with its buffer)
 * between posting and completion. Fields marked "out" are valid once the
 * request has completed; the rest belongs to the runtime. */
struct rg_preq {
    rg_preq_kind_t kind;
    int            peer;      /* send: destination; recv: source or ANY */
    int            tag;       /* send: tag; recv: tag or ANY */
    void          *buf;
    size_t         len;       /* send: bytes; recv: capacity */
    rg_status_t    status;    /* out: RG_INPROGRESS until complete */
    int            source;    /* out (recv): the sender */
    int            msg_tag;   /* out (recv): the message's tag */
    size_t         msg_len;   /* out (recv): the message's length */
    /* runtime's */
    int            state;
    int            chan;      /* channel of the payload (rendezvous) */
    rg_preq_t     *next, *prev;
    uint64_t       rid;       /* the peer's request handle (rendezvous) */
    rg_xreq_t      xreq;      /* the payload's transport request */
};

/* Communication memory of this process, in bytes, counted exactly at every
 * allocation and release (what the receive-window paper profiles). */
typedef struct rg_proto_mem {
    size_t pool;        /* eager pool buffers, posted or being processed */
    size_t unexpected;  /* unexpected messages held (entries and payloads) */
    size_t control;     /* send staging and control messages in flight */
    size_t total;       /* the sum of the above */
    size_t high_water;  /* the largest total so far */
} rg_proto_mem_t;

typedef struct rg_proto_stats {
    uint64_t       eager_sent, rndv_sent, self_sent;
    uint64_t       eager_recv, rndv_recv;
    uint64_t       unexpected;       /* messages that arrived before their receive */
    uint64_t       out_of_order;     /* arrivals parked until earlier ones came */
    uint64_t       rndv_get;         /* rendezvous payloads read one-sided */
    rg_proto_mem_t mem;
    /* The shared receive window (rxwin.h, docs/rxwin.md). */
    uint64_t       limit_events;     /* posted buffers fell below the limit */
    uint64_t       rnr_sent;         /* arrivals refused: receiver-not-ready replies */
    uint64_t       rnr_recv;         /* own messages refused by a peer */
    uint64_t       retries;          /* refused messages sent again */
    uint64_t       rxwin_shrinks;    /* reclaim steps */
    int            window;           /* buffers of the window now */
    int            window_peak;      /* the largest window so far */
} rg_proto_stats_t;

/* Settings (config table "PROTO", see proto.c and --print-config). */
typedef struct rg_proto_config {
    size_t eager_limit;      /* RG_PROTO_EAGER_LIMIT: 0 = the transport's below */
    size_t eager_shm, eager_tcp, eager_ofi, eager_mpi, eager_other;
    int    pool_bufs;        /* RG_PROTO_POOL_BUFS: eager buffers posted */
    int    use_get;          /* RG_PROTO_GET: 1 = one-sided reads where offered */
    size_t split_min;        /* RG_PROTO_SPLIT_MIN: both sides copy from this size */
    double rndv_yield_ns;    /* RG_PROTO_RNDV_YIELD_NS: poll, not sleep, meanwhile */
    /* The shared receive window and receiver-not-ready (docs/rxwin.md);
     * zeroed fields mean: window of pool_bufs, first limit auto, no RNR. */
    char   rxwin[RG_CONFIG_STRING_MAX];       /* RG_PROTO_RXWIN */
    char   rxwin_limit[RG_CONFIG_STRING_MAX]; /* RG_PROTO_RXWIN_LIMIT */
    double rxwin_quiet_ns;   /* RG_PROTO_RXWIN_QUIET_NS: reclaim's quiet period */
    int    rnr;              /* RG_PROTO_RNR: 1 = refuse arrivals the window cannot take */
    double rnr_timer_ms;     /* RG_PROTO_RNR_TIMER_MS: retry after this */
    int    rnr_retry;        /* RG_PROTO_RNR_RETRY: refusals of one message at most */
} rg_proto_config_t;

/* Opens the runtime over transport `xport_name` (collective over boot). cfg
 * NULL reads the settings from the environment. */
rg_status_t rg_proto_open(const char *xport_name, rg_boot_t *boot,
                          const rg_proto_config_t *cfg, rg_proto_t **proto_p,
                          rg_err_t *err);
void        rg_proto_close(rg_proto_t *proto);

int         rg_proto_rank(const rg_proto_t *proto);
int         rg_proto_size(const rg_proto_t *proto);
size_t      rg_proto_eager_limit(const rg_proto_t *proto);
/* The transport of the eager path (for its name and info_json). */
rg_xport_t *rg_proto_xport(rg_proto_t *proto);

/* Posting. A peer or tag out of range gives RG_ERR_RANGE (a wildcard only
 * where allowed: ANY_SOURCE and ANY_TAG on receives); the request is then
 * not posted. Sends to the rank itself are allowed. */
rg_status_t rg_proto_isend(rg_proto_t *proto, int peer, int tag, const void *buf,
                           size_t len, rg_preq_t *req);
rg_status_t rg_proto_irecv(rg_proto_t *proto, int peer, int tag, void *buf, size_t cap,
                           rg_preq_t *req);

/* Moves every request forward without blocking; RG_OK or the error that
 * ended the runtime (a dead peer: the message names it). */
rg_status_t rg_proto_progress(rg_proto_t *proto);

/* RG_INPROGRESS while pending, else the request's final status (a receive
 * of a longer message: RG_ERR_TRUNCATED, msg_len the real length). */
rg_status_t rg_proto_test(rg_proto_t *proto, rg_preq_t *req);

/* Waits (spin, yield, then sleep in the transport) until req completes or
 * timeout_ns passes (0: no limit; RG_ERR_TIMEOUT leaves it pending). */
rg_status_t rg_proto_wait(rg_proto_t *proto, rg_preq_t *req, uint64_t timeout_ns);
/* Waits for all n; returns the first error status among them, else RG_OK. */
rg_status_t rg_proto_waitall(rg_proto_t *proto, size_t n, rg_preq_t *reqs,
                             uint64_t timeout_ns);

rg_status_t rg_proto_send(rg_proto_t *proto, int peer, int tag, const void *buf,
                          size_t len);
rg_status_t rg_proto_recv(rg_proto_t *proto, int peer, int tag, void *buf, size_t cap,
                          rg_preq_t *out);

void        rg_proto_get_stats(const rg_proto_t *proto, rg_proto_stats_t *stats);
/* Facts for a measurement header (eager limit, channels, pool), JSON object. */
rg_status_t rg_proto_info_json(rg_proto_t *proto, char *buf, size_t cap);

/* The last error's message. */
const char *rg_proto_strerror(const rg_proto_t *proto);

extern const rg_config_table_t rg_proto_config_table;

#endif /* RG_PROTO_PROTO_H */
