/*
 * railgauge: transports behind one small ops table.
 *
 * A transport moves whole messages (0 bytes and up, no upper limit but
 * memory) between the ranks of a job, in order per (sender, receiver) pair,
 * keeping message boundaries. It has no tags and no unexpected-message queue:
 * a receiver takes the next message of a peer only once a receive for that
 * peer (or for any peer) is posted, which is the back-pressure the protocol
 * layer above builds on.
 *
 * Handles and requests (as in libuv): rg_xport_t is a handle, opened once per
 * process and closed; rg_xreq_t is a caller-allocated request for one send or
 * receive, completed by rg_xport_progress() and observed with
 * rg_xport_test()/rg_xport_wait().
 *
 * Every transport fills every mandatory slot of rg_xport_ops_t: operations it
 * lacks point to the shared rg_xport_no_* stubs that return
 * RG_ERR_UNSUPPORTED, so callers never check for NULL (as libfabric's fi_no_*
 * stubs). The optional slots at the end (put, inject, isend_list, the
 * window operations) may be NULL: their rg_xport_* wrappers check, and
 * rg_xport_has() says whether a handle offers one and, if not, why.
 */
#ifndef RG_XPORT_XPORT_H
#define RG_XPORT_XPORT_H

#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/types.h>

#include "base/config.h"
#include "base/error.h"
#include "base/host.h"
#include "boot/boot.h"

#define RG_XPORT_ANY_SOURCE (-1)

typedef struct rg_xport     rg_xport_t;
typedef struct rg_xport_ops rg_xport_ops_t;
typedef struct rg_xreq      rg_xreq_t;

/* A registered memory window for one-sided writes (rg_xport_win_create);
 * each transport defines it. */
typedef struct rg_xwin rg_xwin_t;

typedef enum rg_xreq_kind {
    RG_XREQ_SEND = 1,
    RG_XREQ_RECV = 2
} rg_xreq_kind_t;

/*
 * One send or receive. The caller owns the memory and must not touch it
 * (nor the buffer) between posting and completion. Fields marked "out" are
 * valid after completion; the rest is the transport's.
 */
struct rg_xreq {
    rg_xreq_kind_t kind;
    int            peer;       /* send: destination; recv: source or ANY */
    void          *buf;        /* send: const data; recv: destination */
    size_t         len;        /* send: bytes; recv: capacity */
    size_t         done;       /* bytes moved so far */
    rg_status_t    status;     /* out: RG_INPROGRESS until complete */
    int            source;     /* out (recv): the rank the message came from */
    size_t         msg_len;    /* out (recv): the message's length */
    rg_xreq_t     *next;       /* transport's queue link */
    uint64_t       priv[4];    /* transport's scratch */
};

/* One send of a list (rg_xport_isend_list). */
typedef struct rg_xsend {
    int         peer;
    const void *buf;
    size_t      len;
} rg_xsend_t;

/* The optional operations a handle may lack (rg_xport_has). */
typedef enum rg_xport_opt {
    RG_XPORT_OPT_INJECT = 0,  /* ops->inject */
    RG_XPORT_OPT_LIST   = 1,  /* ops->isend_list */
    RG_XPORT_OPT_WIN    = 2,  /* ops->win_create, win_write, win_free */
    RG_XPORT_OPT_COUNT  = 3
} rg_xport_opt_t;

/* Capabilities and limits a transport declares; they match its ops table. */
typedef struct rg_xport_attr {
    const char *name;          /* the full name: "shm", "tcp", "ofi:shm", ... */
    int         same_host;     /* 1 if all ranks must share one host */
    size_t      max_msg_size;  /* SIZE_MAX where only memory limits it */
    size_t      inject_size;   /* bytes a send completes at post (0: none) */
    /* 1 if ops->get reads peers' memory (single-copy rendezvous); the value
     * is the same on every rank of the job (agreed at open). */
    int         can_get;
    /* Per optional operation (rg_xport_opt_t): why this handle does not
     * offer it (a sentence, static or owned by the handle), or NULL. A
     * transport sets it where its slot is filled but this handle cannot
     * (a provider without FI_RMA, injects turned off, no cross-memory
     * attach), and may set it where the slot is NULL, to say why the
     * transport has no such operation. The same on every rank (agreed at
     * open), so that ranks never disagree on what they can do. */
    const char *why_not[RG_XPORT_OPT_COUNT];
} rg_xport_attr_t;

struct rg_xport_ops {
    const char *name;
    const char *description;
    /* 1 if names "<name>:<variant>" open this transport too (ofi:tcp, ...);
     * the transport reads the variant from the full name open gets. */
    int         variants;
    /* Collective over the bootstrap: every rank opens the same transport.
     * name is the full name asked for ("shm", "ofi:tcp"); the handle's
     * attr.name must equal it. */
    rg_status_t (*open)(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                        rg_err_t *err);
    void        (*close)(rg_xport_t *xp);
    rg_status_t (*isend)(rg_xport_t *xp, rg_xreq_t *req);
    rg_status_t (*irecv)(rg_xport_t *xp, rg_xreq_t *req);
    /* Moves data for posted requests without blocking. Returns RG_OK, or an
     * error that ends the transport (a dead peer): the message names it. */
    rg_status_t (*progress)(rg_xport_t *xp);
    /* Sleeps until something may have changed or timeout_ns passed; used by
     * rg_xport_wait() after its spinning phase. */
    rg_status_t (*block)(rg_xport_t *xp, uint64_t timeout_ns);
    /* Key/value facts for the measurement header, as a JSON object text. */
    rg_status_t (*info_json)(rg_xport_t *xp, char *buf, size_t cap);
    /* One-sided read: copies len bytes at address raddr of peer's process
     * into buf, synchronously (the peer does not take part). Only where
     * attr.can_get is 1; the protocol layer uses it for single-copy
     * rendezvous (the sender's buffer address travels in its request). */
    rg_status_t (*get)(rg_xport_t *xp, int peer, uint64_t raddr, void *buf, size_t len);
    /* One-sided write, the mirror of get: copies len bytes of buf to address
     * raddr of peer's process. Where can_get is 1; the protocol layer lets
     * sender and receiver each move half of a large message at once.
     * Optional: NULL means unsupported (rg_xport_put checks). */
    rg_status_t (*put)(rg_xport_t *xp, int peer, uint64_t raddr, const void *buf, size_t len);
    /* Optional (NULL: unsupported, rg_xport_inject checks): sends the
     * message hdr (hlen bytes) followed by buf (len bytes) at once and
     * without a request, if that can be done now (room in the ring, no send
     * queued before it), else returns RG_ERR_AGAIN and sends nothing. The
     * protocol layer sends small eager messages so, without staging. */
    rg_status_t (*inject)(rg_xport_t *xp, int peer, const void *hdr, size_t hlen,
                          const void *buf, size_t len);
    /* Optional (NULL: unsupported, rg_xport_isend_list checks): posts the n
     * sends reqs[0..n) at once. The result is that of n isend calls in this
     * order (the same per-pair order, completion and error rules), but the
     * transport may hold every message back until the last is posted and
     * then make them visible together, with one release and one wake-up
     * (shm), or chain the posts with FI_MORE on all but the last (ofi). The
     * wrapper has filled in and checked every request (kind, peer, buf,
     * len). Sends that cannot go now (a full ring, an older send queued) are
     * queued, in order, as isend queues them. */
    rg_status_t (*isend_list)(rg_xport_t *xp, rg_xreq_t *reqs, size_t n);
    /* Optional, all three or none (rg_xport_win_* check): one-sided writes
     * into registered memory windows.
     * win_create is collective: every rank registers len bytes at base
     * (len may differ between ranks, 0 included) and learns every other
     * rank's window (addresses and keys travel over the bootstrap); a
     * failure on one rank fails it on all.
     * win_write starts a write of len bytes of buf to offset off of peer's
     * window; req (filled in by the wrapper as a send to peer) completes
     * when buf may be reused, which may be at once. RG_ERR_AGAIN: not
     * posted now (the provider pushed back; call progress and try again).
     * The target takes no part: it sees the bytes by reading its window,
     * calling rg_xport_progress between reads (providers that carry writes
     * in software place them there). Of one write of more than 8 bytes,
     * the last 8 become visible only after all the bytes before them, so a
     * target may poll a flag word at its end (8-aligned in the window)
     * (shm: a second iovec of process_vm_writev; ofi's software providers
     * place a write during the target's own progress; RDMA hardware is
     * assumed to place one write in address order, as last-byte polling
     * on InfiniBand does). Writes of one rank to one peer are not ordered
     * with each other nor with its messages.
     * win_free is collective too: every rank calls it after its own writes
     * into the window are complete and no other rank writes any more. */
    rg_status_t (*win_create)(rg_xport_t *xp, void *base, size_t len, rg_xwin_t **win_p);
    rg_status_t (*win_write)(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                             rg_xreq_t *req);
    void        (*win_free)(rg_xport_t *xp, rg_xwin_t *win);
    /* Optional (NULL: the handle cannot say): the file descriptors, with
     * poll events, that ops->block would sleep on now, so that a layer over
     * several handles (the rails transport) can sleep on all of them in one
     * ppoll. Fills at most cap entries and sets *n; RG_ERR_RANGE when cap is
     * too small (*n then says how many are needed). */
    rg_status_t (*wait_fds)(rg_xport_t *xp, struct pollfd *pfds, size_t cap, size_t *n);
};

/* How rg_xport_wait() waits (config table "XPORT", see xport.c). */
typedef struct rg_xport_wait_config {
    double spin_ns;   /* RG_XPORT_SPIN_NS: busy-poll this long first */
    double yield_ns;  /* RG_XPORT_YIELD_NS: then poll with sched_yield() */
    double block_ns;  /* RG_XPORT_BLOCK_NS: then ops->block for at most this */
    int    pinned_spin; /* RG_XPORT_PINNED_SPIN: see xport.c */
    int    pinned;    /* set at open: this process may run on one CPU only */
} rg_xport_wait_config_t;

/* One step of the yield phase of a wait: sched_yield(), or a pause where the
 * rank owns its core (w->pinned and w->pinned_spin), where yielding only
 * hands the core to unrelated work and the wake-up comes late. */
void rg_xport_wait_yield(const rg_xport_wait_config_t *w);

/* Every transport handle starts with this (the "base class"). */
struct rg_xport {
    const rg_xport_ops_t  *ops;
    rg_xport_attr_t        attr;
    rg_boot_t             *boot;
    int                    rank;
    int                    size;
    rg_err_t               err;  /* the last error, with its cause */
    rg_xport_wait_config_t wait; /* filled by rg_xport_open() */
};

/* Registry: NULL-terminated list of the built transports, this layer's
 * first, then those registered from above. */
const rg_xport_ops_t *const *rg_xport_registry(void);

/* Adds a transport of a layer above this one (the rails transport, which
 * stacks on this layer's transports and registers itself) to the
 * registry, and its config table (NULL: none) to
 * rg_xport_config_tables(), both after those already there, so that
 * rg_xport_open() opens it by name and --print-config lists its settings.
 * The layer above calls it, through a register function of its own, for
 * the tools that offer its transport, at their start: before any transport
 * is opened and while one thread runs (the registry is not locked). Once is
 * enough: registering the same ops again changes nothing and gives RG_OK.
 * RG_ERR_INVALID: ops lacks a name or an open, or another transport has its
 * name; RG_ERR_RANGE: the registry is full (16 slots in all). */
rg_status_t rg_xport_register(const rg_xport_ops_t *ops, const rg_config_table_t *table);

/* The ops of a transport by name ("shm", or "ofi:tcp" for a transport with
 * variants), or NULL. */
const rg_xport_ops_t *rg_xport_find(const char *name);

/* Opens transport `name` over boot. An unknown name gives RG_ERR_NOT_FOUND
 * with a message listing the known ones. */
rg_status_t rg_xport_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                          rg_err_t *err);
void        rg_xport_close(rg_xport_t *xp);

/* Posting: fills in req and starts it. Out-of-range peers (and the rank
 * itself) give RG_ERR_RANGE. RG_OK means posted: req->status is then
 * RG_INPROGRESS, or already final where the transport finished it at once.
 * A transport is driven by one thread at a time. */
rg_status_t rg_xport_isend(rg_xport_t *xp, int peer, const void *buf, size_t len,
                           rg_xreq_t *req);
rg_status_t rg_xport_irecv(rg_xport_t *xp, int peer, void *buf, size_t cap,
                           rg_xreq_t *req);
rg_status_t rg_xport_progress(rg_xport_t *xp);

/* RG_INPROGRESS while pending, else the request's final status (a receive
 * whose message was longer than its buffer ends with RG_ERR_TRUNCATED, the
 * first len bytes filled and msg_len the real length; the transport stays
 * usable). An error of the transport itself (a dead peer) is returned too. */
rg_status_t rg_xport_test(rg_xport_t *xp, rg_xreq_t *req);

/* Progresses until req completes: spins briefly, then yields, then sleeps in
 * ops->block, so that two ranks on two busy cores do not fall into scheduler
 * ticks. timeout_ns of 0 means no limit; on RG_ERR_TIMEOUT the request is
 * still pending. */
rg_status_t rg_xport_wait(rg_xport_t *xp, rg_xreq_t *req, uint64_t timeout_ns);

/* One-sided read and write (see ops->get, ops->put): RG_ERR_UNSUPPORTED
 * where the transport has none. */
rg_status_t rg_xport_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf, size_t len);
rg_status_t rg_xport_put(rg_xport_t *xp, int peer, uint64_t raddr, const void *buf,
                         size_t len);
/* See ops->inject: RG_OK sent, RG_ERR_AGAIN not now, RG_ERR_UNSUPPORTED never. */
rg_status_t rg_xport_inject(rg_xport_t *xp, int peer, const void *hdr, size_t hlen,
                            const void *buf, size_t len);

/* 1 if the handle offers optional operation opt; else 0, and *why_p (when
 * not NULL) is a sentence saying why, which names no transport. */
int rg_xport_has(const rg_xport_t *xp, rg_xport_opt_t opt, const char **why_p);

/* See ops->isend_list: posts sends[0..n) at once, each with its request
 * reqs[i]. Every peer and buffer is checked first: on a bad one nothing is
 * posted and every request ends with the error. RG_ERR_UNSUPPORTED where the
 * handle has no list post (rg_xport_has). */
rg_status_t rg_xport_isend_list(rg_xport_t *xp, const rg_xsend_t *sends, size_t n,
                                rg_xreq_t *reqs);

/* See ops->win_create, win_write, win_free. Where the handle has no windows
 * (rg_xport_has), create gives RG_ERR_UNSUPPORTED on every rank without
 * communicating. */
rg_status_t rg_xport_win_create(rg_xport_t *xp, void *base, size_t len, rg_xwin_t **win_p);
rg_status_t rg_xport_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                               const void *buf, size_t len, rg_xreq_t *req);
void        rg_xport_win_free(rg_xport_t *xp, rg_xwin_t *win);

/* Blocking helpers built on the above; *len_p is set on RG_OK and on
 * RG_ERR_TRUNCATED. */
rg_status_t rg_xport_send(rg_xport_t *xp, int peer, const void *buf, size_t len);
rg_status_t rg_xport_recv(rg_xport_t *xp, int peer, void *buf, size_t cap,
                          size_t *len_p);

/* The config tables of this layer (XPORT, SHM, TCP, OFI where built, and
 * MPI, the plugin choice of the mpi transport and the MPI bootstrap), then
 * those of the transports registered from above (RAILS),
 * NULL-terminated, for --print-config and generated docs. */
const rg_config_table_t *const *rg_xport_config_tables(void);

/* The last error's message. */
const char *rg_xport_strerror(const rg_xport_t *xp);

/* For transports: a one-sided write of req->len bytes at off into peer's
 * window of win_len bytes must lie inside it. RG_OK, else RG_ERR_RANGE in
 * req->status and xp's error. */
rg_status_t rg_xport_win_range(rg_xport_t *xp, uint64_t win_len, int peer, size_t off,
                               rg_xreq_t *req);

/* For transports: the address exchange of an open that every rank joins,
 * with the status of its own set-up (setup, and setup_err where it failed),
 * so that a failure on one rank fails the open on all instead of leaving
 * them waiting: the allgather of own (len bytes a rank) into all, then the
 * set-up's failure. RG_OK when both went well; else the error, in err. */
rg_status_t rg_xport_join_setup(rg_boot_t *boot, rg_status_t setup, const rg_err_t *setup_err,
                                const void *own, size_t len, void *all, rg_err_t *err);

/* 1 when the user set the wait setting `name` ("SPIN_NS", "YIELD_NS", ...:
 * RG_XPORT_<name>), so that a tool that tunes the wait for its purpose
 * leaves the user's value alone. */
int rg_xport_wait_given(const char *name);

/* For transports: 1 when pid is gone or a zombie (exited, not yet reaped),
 * which is how peers on this host are found dead while a rank waits. */
int rg_xport_pid_dead(pid_t pid);

/* The transport a tool opens when its command line names none, into out:
 * RG_TRANSPORT (set by `railgauge run --transport`), else "shm". The one
 * place that reads it; it is a config table of rg_xport_config_tables(). */
rg_status_t rg_xport_default_name(char *out, size_t cap, rg_err_t *err);

/* Ranks whose rg_host_id() (base/host.h) are equal can check each other's
 * pids with rg_xport_pid_dead(). */

/* Stubs for slots a transport does not offer. */
rg_status_t rg_xport_no_block(rg_xport_t *xp, uint64_t timeout_ns);
rg_status_t rg_xport_no_info_json(rg_xport_t *xp, char *buf, size_t cap);
rg_status_t rg_xport_no_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf,
                            size_t len);

/* The transports of this layer (one registry line each, see xport.c). */
extern const rg_xport_ops_t rg_xport_shm_ops;
extern const rg_xport_ops_t rg_xport_tcp_ops;
#ifdef RG_HAVE_OFI
extern const rg_xport_ops_t rg_xport_ofi_ops;
#endif
/* Forwards to the MPI plugin that an MPI bootstrap loaded (mpi_forward.c). */
extern const rg_xport_ops_t rg_xport_mpi_ops;

#endif /* RG_XPORT_XPORT_H */
