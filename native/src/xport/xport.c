/*
 * railgauge: the transport registry, the posting wrappers and the wait loop
 * shared by every transport.
 */
#include "xport/xport.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/timer.h"

/* Room in the registry and in the list of config tables for the transports
 * that layers above register (rg_xport_register: the rails transport). */
#define RG__XPORT_SLOTS 16

/* One line per transport of this layer (STYLE.md, 4); the ones registered
 * from above follow, in the order of their registration. NULL-terminated:
 * the last slot stays NULL. */
static const rg_xport_ops_t *rg__xport_registry[RG__XPORT_SLOTS + 1] = {
    &rg_xport_shm_ops,
    &rg_xport_tcp_ops,
#ifdef RG_HAVE_OFI
    &rg_xport_ofi_ops,
#endif
    &rg_xport_mpi_ops,
};

static const rg_config_field_t rg__xport_wait_fields[] = {
    {"SPIN_NS", "2us",
     "rg_xport_wait() busy-polls the transport this long (after a first burst "
     "of 64 polls) before it yields; it covers a round trip on one host without "
     "a system call",
     offsetof(rg_xport_wait_config_t, spin_ns), RG_CONFIG_TIME_NS},
    {"YIELD_NS", "50us",
     "then it polls with sched_yield() between tries for this long, which lets "
     "a peer sharing the core run",
     offsetof(rg_xport_wait_config_t, yield_ns), RG_CONFIG_TIME_NS},
    {"BLOCK_NS", "10ms",
     "then it sleeps in the transport (futex, poll) for at most this long at a "
     "time, checking progress and peer liveness in between",
     offsetof(rg_xport_wait_config_t, block_ns), RG_CONFIG_TIME_NS},
    {"PINNED_SPIN", "1",
     "1: a rank pinned to one CPU (railgauge run --bind, mpirun --bind-to core) "
     "polls without sched_yield() in the yield phase: it owns its core, and "
     "yielding only hands it to other work (under load a wake-up then waits for "
     "the scheduler); 0: yield anyway (ranks pinned to a shared core)",
     offsetof(rg_xport_wait_config_t, pinned_spin), RG_CONFIG_INT},
    {NULL, NULL, NULL, 0, 0}
};

static const rg_config_table_t rg__xport_wait_table = {
    "XPORT", rg__xport_wait_fields
};

/* The transports' tables live in their files. */
extern const rg_config_table_t rg_xport_shm_config_table;
extern const rg_config_table_t rg_xport_tcp_config_table;
#ifdef RG_HAVE_OFI
extern const rg_config_table_t rg_xport_ofi_config_table;
#endif

/* The transport a tool opens when its command line names none: RG_TRANSPORT,
 * which `railgauge run --transport` sets for the ranks it starts. */
typedef struct rg__xport_default {
    char transport[RG_CONFIG_STRING_MAX];
} rg__xport_default_t;

static const rg_config_field_t rg__xport_default_fields[] = {
    {"TRANSPORT", "shm",
     "the transport a railgauge tool opens when its command line names none "
     "(shm, tcp, ofi:<provider>, mpi, rails); `railgauge run --transport` sets it",
     offsetof(rg__xport_default_t, transport), RG_CONFIG_STRING},
    {NULL, NULL, NULL, 0, 0}
};

static const rg_config_table_t rg__xport_default_table = {
    "", rg__xport_default_fields
};

/* This layer's tables, then those of the transports registered from above,
 * in the order of their registration. NULL-terminated, as the registry. */
static const rg_config_table_t *rg__xport_tables[RG__XPORT_SLOTS + 1] = {
    &rg__xport_default_table,
    &rg__xport_wait_table,
    &rg_xport_shm_config_table,
    &rg_xport_tcp_config_table,
#ifdef RG_HAVE_OFI
    &rg_xport_ofi_config_table,
#endif
    &rg_boot_mpi_config_table,  /* the mpi transport's plugin (boot/mpi_load.c) */
};

const rg_xport_ops_t *const *rg_xport_registry(void)
{
    return rg__xport_registry;
}

rg_status_t rg_xport_register(const rg_xport_ops_t *ops, const rg_config_table_t *table)
{
    size_t i, t;

    if (ops == NULL || ops->name == NULL || ops->open == NULL) {
        return RG_ERR_INVALID;
    }
    for (i = 0; rg__xport_registry[i] != NULL; i++) {
        if (rg__xport_registry[i] == ops) {
            return RG_OK;  /* registered already: once is enough */
        }
        if (strcmp(rg__xport_registry[i]->name, ops->name) == 0) {
            return RG_ERR_INVALID;  /* another transport of that name */
        }
    }
    for (t = 0; rg__xport_tables[t] != NULL; t++) {
    }
    if (i >= RG__XPORT_SLOTS || (table != NULL && t >= RG__XPORT_SLOTS)) {
        return RG_ERR_RANGE;
    }
    rg__xport_registry[i] = ops;
    if (table != NULL) {
        rg__xport_tables[t] = table;
    }
    return RG_OK;
}

rg_status_t rg_xport_default_name(char *out, size_t cap, rg_err_t *err)
{
    rg__xport_default_t d;
    rg_status_t         status;

    status = rg_config_load(&rg__xport_default_table, &d, err);
    if (status != RG_OK) {
        return status;
    }
    if (d.transport[0] == '\0') {
        snprintf(d.transport, sizeof(d.transport), "shm");  /* RG_TRANSPORT= */
    }
    if (strlen(d.transport) >= cap) {
        return rg_err_set(err, RG_ERR_RANGE, "RG_TRANSPORT='%s' is too long", d.transport);
    }
    snprintf(out, cap, "%s", d.transport);
    return RG_OK;
}

const rg_config_table_t *const *rg_xport_config_tables(void)
{
    return rg__xport_tables;
}

const rg_xport_ops_t *rg_xport_find(const char *name)
{
    const rg_xport_ops_t *ops;
    size_t                i, n;

    if (name == NULL) {
        return NULL;
    }
    for (i = 0; rg__xport_registry[i] != NULL; i++) {
        ops = rg__xport_registry[i];
        n   = strlen(ops->name);
        if (strcmp(ops->name, name) == 0 ||
            (ops->variants && strncmp(ops->name, name, n) == 0 && name[n] == ':')) {
            return ops;
        }
    }
    return NULL;
}

rg_status_t rg_xport_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                          rg_err_t *err)
{
    const rg_xport_ops_t  *ops;
    rg_xport_wait_config_t wait;
    rg_xport_t            *xp;
    rg_status_t            status;
    char                   known[256];
    size_t                 used = 0;
    size_t                 i;

    if (boot == NULL || xp_p == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_xport_open: NULL argument");
    }
    ops = rg_xport_find(name);
    if (ops == NULL) {
        known[0] = '\0';
        for (i = 0; rg__xport_registry[i] != NULL && used < sizeof(known); i++) {
            used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%s%s",
                                     i > 0 ? ", " : "", rg__xport_registry[i]->name,
                                     rg__xport_registry[i]->variants ? ":<variant>" : "");
        }
        return rg_err_set(err, RG_ERR_NOT_FOUND,
                          "unknown transport '%s'; known transports: %s",
                          name != NULL ? name : "(null)", known);
    }
    /* A bad setting is found before any collective work starts. */
    status = rg_config_load(&rg__xport_wait_table, &wait, err);
    if (status != RG_OK) {
        return status;
    }
    if (wait.pinned_spin != 0 && wait.pinned_spin != 1) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_XPORT_PINNED_SPIN=%d: must be 0 or 1",
                          wait.pinned_spin);
    }
    {
        cpu_set_t set;

        wait.pinned = sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1;
    }
    status = ops->open(name, boot, &xp, err);
    if (status != RG_OK) {
        return status;
    }
    xp->wait = wait;
    rg_err_clear(&xp->err);
    *xp_p = xp;
    return RG_OK;
}

void rg_xport_close(rg_xport_t *xp)
{
    if (xp != NULL) {
        xp->ops->close(xp);
    }
}

static void rg__xport_req_init(rg_xreq_t *req, rg_xreq_kind_t kind, int peer,
                               void *buf, size_t len)
{
    req->kind    = kind;
    req->peer    = peer;
    req->buf     = buf;
    req->len     = len;
    req->done    = 0;
    req->status  = RG_INPROGRESS;
    req->source  = -1;
    req->msg_len = 0;
    req->next    = NULL;
    memset(req->priv, 0, sizeof(req->priv));
}

/* Posting errors are recorded in the request too, so that a later test or
 * wait on it reports them instead of waiting forever. */
static rg_status_t rg__xport_post_fail(rg_xreq_t *req, rg_status_t status)
{
    req->status = status;
    return status;
}

rg_status_t rg_xport_isend(rg_xport_t *xp, int peer, const void *buf, size_t len,
                           rg_xreq_t *req)
{
    if (req == NULL) {
        return rg_err_set(&xp->err, RG_ERR_INVALID, "rg_xport_isend: req is NULL");
    }
    /* The request keeps a non-const pointer for both kinds; a send never
     * writes through it. */
    rg__xport_req_init(req, RG_XREQ_SEND, peer, (void *)(uintptr_t)buf, len);
    if (peer < 0 || peer >= xp->size || peer == xp->rank) {
        rg_err_set(&xp->err, RG_ERR_RANGE,
                   "send to rank %d: the peer must be another rank in [0, %d)",
                   peer, xp->size);
        return rg__xport_post_fail(req, RG_ERR_RANGE);
    }
    if (buf == NULL && len > 0) {
        rg_err_set(&xp->err, RG_ERR_INVALID, "send of %zu bytes from a NULL buffer",
                   len);
        return rg__xport_post_fail(req, RG_ERR_INVALID);
    }
    return xp->ops->isend(xp, req);
}

rg_status_t rg_xport_irecv(rg_xport_t *xp, int peer, void *buf, size_t cap,
                           rg_xreq_t *req)
{
    if (req == NULL) {
        return rg_err_set(&xp->err, RG_ERR_INVALID, "rg_xport_irecv: req is NULL");
    }
    rg__xport_req_init(req, RG_XREQ_RECV, peer, buf, cap);
    if (peer != RG_XPORT_ANY_SOURCE &&
        (peer < 0 || peer >= xp->size || peer == xp->rank)) {
        rg_err_set(&xp->err, RG_ERR_RANGE,
                   "receive from rank %d: the peer must be another rank in [0, %d) "
                   "or RG_XPORT_ANY_SOURCE", peer, xp->size);
        return rg__xport_post_fail(req, RG_ERR_RANGE);
    }
    if (buf == NULL && cap > 0) {
        rg_err_set(&xp->err, RG_ERR_INVALID, "receive into a NULL buffer of %zu bytes",
                   cap);
        return rg__xport_post_fail(req, RG_ERR_INVALID);
    }
    return xp->ops->irecv(xp, req);
}

rg_status_t rg_xport_progress(rg_xport_t *xp)
{
    return xp->ops->progress(xp);
}

rg_status_t rg_xport_test(rg_xport_t *xp, rg_xreq_t *req)
{
    rg_status_t status;

    if (req->status != RG_INPROGRESS) {
        return req->status;
    }
    status = xp->ops->progress(xp);
    if (status < 0) {
        return status;
    }
    return req->status;
}

/* Tells the core a spin-wait is running: it saves power and, on SMT cores,
 * gives the sibling thread the pipeline. */
static inline void rg__xport_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Polls between two clock reads while spinning. A clock read costs as much
 * as several polls (more in a VM), and data that lands during one waits for
 * it, so the first burst, which covers a round trip on one host (64 polls
 * with a pause each take 1-2 us), reads no clock at all. */
#define RG__XPORT_FIRST_BURST 64
#define RG__XPORT_BURST       32

void rg_xport_wait_yield(const rg_xport_wait_config_t *w)
{
    unsigned i;

    if (w->pinned && w->pinned_spin) {
        for (i = 0; i < 16; i++) {
            rg__xport_cpu_relax();
        }
        return;
    }
    sched_yield();
}

rg_status_t rg_xport_wait(rg_xport_t *xp, rg_xreq_t *req, uint64_t timeout_ns)
{
    rg_status_t status;
    uint64_t    start, now, spin_end, yield_end, deadline, sleep_ns;
    unsigned    i, burst = RG__XPORT_FIRST_BURST;

    if (req->status != RG_INPROGRESS) {
        return req->status;
    }
    start = 0;
    spin_end = yield_end = deadline = 0;
    for (;;) {
        for (i = 0; i < burst; i++) {
            status = xp->ops->progress(xp);
            if (status < 0) {
                return status;
            }
            if (req->status != RG_INPROGRESS) {
                return req->status;
            }
            rg__xport_cpu_relax();
        }
        burst = RG__XPORT_BURST;
        now   = rg_time_mono_ns();
        if (start == 0) {
            start     = now;
            spin_end  = start + (uint64_t)xp->wait.spin_ns;
            yield_end = spin_end + (uint64_t)xp->wait.yield_ns;
            deadline  = timeout_ns > 0 ? start + timeout_ns : UINT64_MAX;
        }
        if (now >= deadline) {
            goto timeout;
        }
        if (now >= spin_end) {
            break;
        }
    }

    /* Past the spin: yield the core to whoever shares it, then sleep in the
     * transport until it has news, checking the clock at every step. */
    for (;;) {
        if (now < yield_end) {
            rg_xport_wait_yield(&xp->wait);
        } else {
            sleep_ns = deadline - now;
            if (sleep_ns > (uint64_t)xp->wait.block_ns) {
                sleep_ns = (uint64_t)xp->wait.block_ns;
            }
            if (sleep_ns < 1000) {
                sleep_ns = 1000;
            }
            status = xp->ops->block(xp, sleep_ns);
            if (status == RG_ERR_UNSUPPORTED) {
                /* A transport without a way to sleep keeps yielding. */
                sched_yield();
            } else if (status < 0) {
                return status;
            }
        }
        status = xp->ops->progress(xp);
        if (status < 0) {
            return status;
        }
        if (req->status != RG_INPROGRESS) {
            return req->status;
        }
        now = rg_time_mono_ns();
        if (now >= deadline) {
            goto timeout;
        }
    }

timeout:
    return rg_err_set(&xp->err, RG_ERR_TIMEOUT,
                      "%s request to/from rank %d still pending after %.3f s",
                      req->kind == RG_XREQ_SEND ? "send" : "receive", req->peer,
                      (double)timeout_ns * 1e-9);
}

rg_status_t rg_xport_send(rg_xport_t *xp, int peer, const void *buf, size_t len)
{
    rg_xreq_t   req;
    rg_status_t status;

    status = rg_xport_isend(xp, peer, buf, len, &req);
    if (status < 0) {
        return status;
    }
    return rg_xport_wait(xp, &req, 0);
}

rg_status_t rg_xport_recv(rg_xport_t *xp, int peer, void *buf, size_t cap,
                          size_t *len_p)
{
    rg_xreq_t   req;
    rg_status_t status;

    status = rg_xport_irecv(xp, peer, buf, cap, &req);
    if (status < 0) {
        return status;
    }
    status = rg_xport_wait(xp, &req, 0);
    if ((status == RG_OK || status == RG_ERR_TRUNCATED) && len_p != NULL) {
        *len_p = req.msg_len;
    }
    return status;
}

const char *rg_xport_strerror(const rg_xport_t *xp)
{
    if (xp == NULL) {
        return "no transport";
    }
    return rg_err_message(&xp->err);
}

rg_status_t rg_xport_no_block(rg_xport_t *xp, uint64_t timeout_ns)
{
    (void)xp;
    (void)timeout_ns;
    return RG_ERR_UNSUPPORTED;
}

rg_status_t rg_xport_no_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    (void)xp;
    if (buf != NULL && cap > 0) {
        buf[0] = '\0';
    }
    return RG_ERR_UNSUPPORTED;
}

rg_status_t rg_xport_no_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf,
                            size_t len)
{
    (void)peer;
    (void)raddr;
    (void)buf;
    (void)len;
    return rg_err_set(&xp->err, RG_ERR_UNSUPPORTED,
                      "transport %s has no one-sided read", xp->attr.name);
}

rg_status_t rg_xport_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf, size_t len)
{
    if (peer < 0 || peer >= xp->size || peer == xp->rank) {
        return rg_err_set(&xp->err, RG_ERR_RANGE, "one-sided read from rank %d of %d", peer,
                          xp->size);
    }
    return xp->ops->get(xp, peer, raddr, buf, len);
}

rg_status_t rg_xport_put(rg_xport_t *xp, int peer, uint64_t raddr, const void *buf,
                         size_t len)
{
    if (peer < 0 || peer >= xp->size || peer == xp->rank) {
        return rg_err_set(&xp->err, RG_ERR_RANGE, "one-sided write to rank %d of %d", peer,
                          xp->size);
    }
    if (xp->ops->put == NULL) {
        return rg_err_set(&xp->err, RG_ERR_UNSUPPORTED,
                          "transport %s has no one-sided write", xp->attr.name);
    }
    return xp->ops->put(xp, peer, raddr, buf, len);
}

rg_status_t rg_xport_inject(rg_xport_t *xp, int peer, const void *hdr, size_t hlen,
                            const void *buf, size_t len)
{
    if (xp->ops->inject == NULL || xp->attr.why_not[RG_XPORT_OPT_INJECT] != NULL) {
        return RG_ERR_UNSUPPORTED;
    }
    if (peer < 0 || peer >= xp->size || peer == xp->rank) {
        return rg_err_set(&xp->err, RG_ERR_RANGE, "send to rank %d of %d", peer, xp->size);
    }
    return xp->ops->inject(xp, peer, hdr, hlen, buf, len);
}

/* ---- optional operations ---------------------------------------------- */

int rg_xport_has(const rg_xport_t *xp, rg_xport_opt_t opt, const char **why_p)
{
    static const char *const generic[RG_XPORT_OPT_COUNT] = {
        "the transport has no inline (inject) send",
        "the transport has no list post",
        "the transport has no one-sided writes into memory windows",
    };
    const rg_xport_ops_t *ops = xp->ops;
    int                   slot;
    const char           *why;

    if ((unsigned)opt >= RG_XPORT_OPT_COUNT) {
        if (why_p != NULL) {
            *why_p = "unknown optional operation";
        }
        return 0;
    }
    switch (opt) {
    case RG_XPORT_OPT_INJECT:
        slot = ops->inject != NULL;
        break;
    case RG_XPORT_OPT_LIST:
        slot = ops->isend_list != NULL;
        break;
    default:
        slot = ops->win_create != NULL && ops->win_write != NULL && ops->win_free != NULL;
        break;
    }
    why = xp->attr.why_not[opt];
    if (slot && why == NULL) {
        return 1;
    }
    if (why_p != NULL) {
        *why_p = why != NULL ? why : generic[opt];
    }
    return 0;
}

static rg_status_t rg__xport_lacks(rg_xport_t *xp, rg_xport_opt_t opt, const char *what)
{
    const char *why = "";

    (void)rg_xport_has(xp, opt, &why);
    return rg_err_set(&xp->err, RG_ERR_UNSUPPORTED, "%s: transport %s: %s", what,
                      xp->attr.name, why);
}

rg_status_t rg_xport_isend_list(rg_xport_t *xp, const rg_xsend_t *sends, size_t n,
                                rg_xreq_t *reqs)
{
    rg_status_t status = RG_OK;
    size_t      i;

    if (n == 0) {
        return rg_xport_has(xp, RG_XPORT_OPT_LIST, NULL)
                   ? RG_OK : rg__xport_lacks(xp, RG_XPORT_OPT_LIST, "list post");
    }
    if (reqs == NULL || sends == NULL) {
        return rg_err_set(&xp->err, RG_ERR_INVALID, "rg_xport_isend_list: NULL argument");
    }
    for (i = 0; i < n; i++) {
        rg__xport_req_init(&reqs[i], RG_XREQ_SEND, sends[i].peer,
                           (void *)(uintptr_t)sends[i].buf, sends[i].len);
    }
    if (!rg_xport_has(xp, RG_XPORT_OPT_LIST, NULL)) {
        status = rg__xport_lacks(xp, RG_XPORT_OPT_LIST, "list post");
    }
    for (i = 0; i < n && status == RG_OK; i++) {
        if (sends[i].peer < 0 || sends[i].peer >= xp->size || sends[i].peer == xp->rank) {
            status = rg_err_set(&xp->err, RG_ERR_RANGE,
                                "send %zu of a list to rank %d: the peer must be another "
                                "rank in [0, %d)", i, sends[i].peer, xp->size);
        } else if (sends[i].buf == NULL && sends[i].len > 0) {
            status = rg_err_set(&xp->err, RG_ERR_INVALID,
                                "send %zu of a list: %zu bytes from a NULL buffer", i,
                                sends[i].len);
        }
    }
    if (status != RG_OK) {
        for (i = 0; i < n; i++) {
            reqs[i].status = status;
        }
        return status;
    }
    return xp->ops->isend_list(xp, reqs, n);
}

rg_status_t rg_xport_win_create(rg_xport_t *xp, void *base, size_t len, rg_xwin_t **win_p)
{
    if (win_p == NULL || (base == NULL && len > 0)) {
        return rg_err_set(&xp->err, RG_ERR_INVALID, "rg_xport_win_create: NULL argument");
    }
    *win_p = NULL;
    if (!rg_xport_has(xp, RG_XPORT_OPT_WIN, NULL)) {
        return rg__xport_lacks(xp, RG_XPORT_OPT_WIN, "memory window");
    }
    return xp->ops->win_create(xp, base, len, win_p);
}

rg_status_t rg_xport_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                               const void *buf, size_t len, rg_xreq_t *req)
{
    if (req == NULL) {
        return rg_err_set(&xp->err, RG_ERR_INVALID, "rg_xport_win_write: req is NULL");
    }
    rg__xport_req_init(req, RG_XREQ_SEND, peer, (void *)(uintptr_t)buf, len);
    if (win == NULL || !rg_xport_has(xp, RG_XPORT_OPT_WIN, NULL)) {
        rg__xport_lacks(xp, RG_XPORT_OPT_WIN, "one-sided write");
        return rg__xport_post_fail(req, RG_ERR_UNSUPPORTED);
    }
    if (peer < 0 || peer >= xp->size || peer == xp->rank) {
        rg_err_set(&xp->err, RG_ERR_RANGE,
                   "one-sided write to rank %d: the peer must be another rank in [0, %d)",
                   peer, xp->size);
        return rg__xport_post_fail(req, RG_ERR_RANGE);
    }
    if (buf == NULL && len > 0) {
        rg_err_set(&xp->err, RG_ERR_INVALID, "one-sided write of %zu bytes from a NULL buffer",
                   len);
        return rg__xport_post_fail(req, RG_ERR_INVALID);
    }
    return xp->ops->win_write(xp, win, peer, off, req);
}

void rg_xport_win_free(rg_xport_t *xp, rg_xwin_t *win)
{
    if (win != NULL && xp->ops->win_free != NULL) {
        xp->ops->win_free(xp, win);
    }
}

rg_status_t rg_xport_win_range(rg_xport_t *xp, uint64_t win_len, int peer, size_t off,
                               rg_xreq_t *req)
{
    if (off <= win_len && req->len <= win_len - off) {
        return RG_OK;
    }
    req->status = RG_ERR_RANGE;
    return rg_err_set(&xp->err, RG_ERR_RANGE,
                      "one-sided write of %zu bytes at offset %zu into rank %d's window of %llu "
                      "bytes", req->len, off, peer, (unsigned long long)win_len);
}

int rg_xport_wait_given(const char *name)
{
    return rg_config_given(&rg__xport_wait_table, NULL, name);
}

rg_status_t rg_xport_join_setup(rg_boot_t *boot, rg_status_t setup, const rg_err_t *setup_err,
                                const void *own, size_t len, void *all, rg_err_t *err)
{
    rg_status_t status = rg_boot_allgather(boot, own, len, all, err);

    if (status != RG_OK) {
        return status;
    }
    if (setup != RG_OK && err != NULL) {
        *err = *setup_err;
    }
    return setup;
}

/* A pid is dead when it is gone or a zombie (exited, not yet reaped). */
int rg_xport_pid_dead(pid_t pid)
{
    char  path[64], buf[512];
    char *paren;
    FILE *f;
    int   dead = 0;

    if (pid <= 0) {
        return 0;
    }
    if (kill(pid, 0) == -1 && errno == ESRCH) {
        return 1;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return errno == ENOENT;
    }
    if (fgets(buf, sizeof(buf), f) != NULL) {
        /* "pid (comm) S ...": comm may hold spaces and parentheses. */
        paren = strrchr(buf, ')');
        if (paren != NULL && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X')) {
            dead = 1;
        }
    }
    fclose(f);
    return dead;
}
