/*
 * railgauge: the messaging runtime's settings (the config table "PROTO"),
 * open and close, and its facts (see proto.h for the protocol, proto_int.h
 * for the wire format and how the runtime's files divide the work).
 */
#include "proto/proto.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/timer.h"
#include "proto/proto_int.h"

/* ---- settings ----------------------------------------------------------- */

static const rg_config_field_t rg__proto_config_fields[] = {
    {"EAGER_LIMIT", "0",
     "messages up to this many bytes go eagerly, larger ones by rendezvous; "
     "0 takes the transport's own limit below",
     offsetof(rg_proto_config_t, eager_limit), RG_CONFIG_SIZE},
    {"EAGER_SHM", "16KiB", "eager limit over shm",
     offsetof(rg_proto_config_t, eager_shm), RG_CONFIG_SIZE},
    {"EAGER_TCP", "32KiB", "eager limit over tcp",
     offsetof(rg_proto_config_t, eager_tcp), RG_CONFIG_SIZE},
    {"EAGER_OFI", "16KiB", "eager limit over ofi:* (libfabric)",
     offsetof(rg_proto_config_t, eager_ofi), RG_CONFIG_SIZE},
    {"EAGER_MPI", "16KiB", "eager limit over mpi",
     offsetof(rg_proto_config_t, eager_mpi), RG_CONFIG_SIZE},
    {"EAGER_OTHER", "16KiB", "eager limit over any other transport",
     offsetof(rg_proto_config_t, eager_other), RG_CONFIG_SIZE},
    {"POOL_BUFS", "64",
     "eager buffers of the per-process pool posted to the transport as "
     "receives from any source (the shared receive window), 1 to 65536",
     offsetof(rg_proto_config_t, pool_bufs), RG_CONFIG_INT},
    {"SPLIT_MIN", "256KiB",
     "with one-sided reads, a rendezvous payload of at least this many bytes is "
     "moved by both sides at once (the receiver reads the first half, the sender "
     "writes the second), which takes two cores' copy bandwidth; 0: never",
     offsetof(rg_proto_config_t, split_min), RG_CONFIG_SIZE},
    {"RNDV_YIELD_NS", "200ms",
     "while a rendezvous of this rank is under way, a wait polls with "
     "sched_yield() this long before it sleeps: the peer's next control message "
     "is due within microseconds, and a sleeping rank wakes late",
     offsetof(rg_proto_config_t, rndv_yield_ns), RG_CONFIG_TIME_NS},
    {"GET", "1",
     "1: rendezvous payloads are read one-sided from the sender's memory where "
     "the transport can (shm: cross-memory attach, one copy); 0: always over "
     "the data channel (CTS, then the payload as a message)",
     offsetof(rg_proto_config_t, use_get), RG_CONFIG_INT},
    {"RXWIN", "pool",
     "the shared receive window (docs/rxwin.md): fixed:N (N buffers), "
     "adaptive:W_init:W_max (grows to min(2^nlimit * W_init, W_max) at each limit "
     "event, next limit W/2), adaptive:W_init:W_max:reclaim (also shrinks after "
     "quiet periods); pool: fixed:RG_PROTO_POOL_BUFS",
     offsetof(rg_proto_config_t, rxwin), RG_CONFIG_STRING},
    {"RXWIN_LIMIT", "auto",
     "the first limit: a limit event when fewer buffers than this are posted, "
     "1 to W_init; auto: W_init/2 (at least 1)",
     offsetof(rg_proto_config_t, rxwin_limit), RG_CONFIG_STRING},
    {"RXWIN_QUIET_NS", "100ms",
     "reclaim: a window whose use stayed at a quarter or less for this long halves",
     offsetof(rg_proto_config_t, rxwin_quiet_ns), RG_CONFIG_TIME_NS},
    {"RNR", "0",
     "1: a message that arrives while every buffer of the window is taken is "
     "refused back to its sender (receiver not ready), which sends it again after "
     "RG_PROTO_RNR_TIMER_MS; 0: it waits in the transport (back-pressure)",
     offsetof(rg_proto_config_t, rnr), RG_CONFIG_INT},
    {"RNR_TIMER_MS", "1",
     "receiver-not-ready retry timer in milliseconds, 0.01 to 655.36 (InfiniBand's "
     "RNR NAK timer range)",
     offsetof(rg_proto_config_t, rnr_timer_ms), RG_CONFIG_DOUBLE},
    {"RNR_RETRY", "10000",
     "refusals of one message before its sender fails with an error naming the "
     "peer, 1 to 1000000",
     offsetof(rg_proto_config_t, rnr_retry), RG_CONFIG_INT},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_proto_config_table = {"PROTO", rg__proto_config_fields};

#define RG__PROTO_POOL_MAX  65536
#define RG__PROTO_EAGER_MAX ((size_t)1 << 30)
#define RG__PROTO_RNR_RETRY_MAX 1000000
/* How long close keeps delivering control messages still in flight. */
#define RG__PROTO_FLUSH_NS  5000000000ull

/* ---- open and close ------------------------------------------------------ */

static size_t rg__default_eager(const rg_proto_config_t *cfg, const char *name)
{
    if (cfg->eager_limit > 0) {
        return cfg->eager_limit;
    }
    if (strcmp(name, "shm") == 0) {
        return cfg->eager_shm;
    }
    if (strcmp(name, "tcp") == 0) {
        return cfg->eager_tcp;
    }
    if (strncmp(name, "ofi", 3) == 0) {
        return cfg->eager_ofi;
    }
    if (strcmp(name, "mpi") == 0) {
        return cfg->eager_mpi;
    }
    return cfg->eager_other;
}

/* Every rank must use the same eager limit, pool and rendezvous mode: a
 * mismatch is found here rather than as truncated messages later. */
static rg_status_t rg__agree(rg_proto_t *proto, rg_boot_t *boot, rg_err_t *err)
{
    uint64_t    mine[5] = {proto->eager_limit, (uint64_t)proto->cfg.use_get,
                           (uint64_t)getpid(), rg_host_id(), (uint64_t)proto->cfg.rnr};
    uint64_t   *all;
    rg_status_t status;
    int         i;

    all = calloc((size_t)proto->size, sizeof(mine));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d settings", proto->size);
    }
    status = rg_boot_allgather(boot, mine, sizeof(mine), all, err);
    for (i = 0; status == RG_OK && i < proto->size; i++) {
        proto->pids[i] = all[5 * i + 3] == mine[3] ? (int32_t)all[5 * i + 2] : 0;
        if (all[5 * i] != mine[0] || all[5 * i + 1] != mine[1] || all[5 * i + 4] != mine[4]) {
            status = rg_err_set(err, RG_ERR_INVALID,
                                "rank %d uses eager limit %llu, RG_PROTO_GET=%llu and "
                                "RG_PROTO_RNR=%llu, rank %d %llu, %llu and %llu: set RG_PROTO_* "
                                "alike on every rank",
                                i, (unsigned long long)all[5 * i],
                                (unsigned long long)all[5 * i + 1],
                                (unsigned long long)all[5 * i + 4], proto->rank,
                                (unsigned long long)mine[0], (unsigned long long)mine[1],
                                (unsigned long long)mine[4]);
        }
    }
    free(all);
    return status;
}

static rg_status_t rg__check_config(rg_proto_t *proto, rg_err_t *err)
{
    const rg_proto_config_t *cfg = &proto->cfg;
    rg_rxwin_spec_t          spec;
    char                     pool[32];
    const char              *win = cfg->rxwin;
    rg_status_t              status;
    int                      limit;
    const size_t *e[] = {&cfg->eager_limit, &cfg->eager_shm, &cfg->eager_tcp, &cfg->eager_ofi,
                         &cfg->eager_mpi, &cfg->eager_other};
    size_t        i;

    for (i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
        if (*e[i] > RG__PROTO_EAGER_MAX) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "an eager limit of %zu bytes is above the 1GiB maximum", *e[i]);
        }
    }
    if (cfg->pool_bufs < 1 || cfg->pool_bufs > RG__PROTO_POOL_MAX) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_POOL_BUFS=%d: must be 1 to %d",
                          cfg->pool_bufs, RG__PROTO_POOL_MAX);
    }
    if (cfg->use_get != 0 && cfg->use_get != 1) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_GET=%d: must be 0 or 1",
                          cfg->use_get);
    }
    if (cfg->rnr != 0 && cfg->rnr != 1) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_RNR=%d: must be 0 or 1", cfg->rnr);
    }
    if (cfg->rnr && !(cfg->rnr_timer_ms >= 0.01 && cfg->rnr_timer_ms <= 655.36)) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_PROTO_RNR_TIMER_MS=%g: must be 0.01 to 655.36 ms (the range of "
                          "InfiniBand's RNR NAK timer)", cfg->rnr_timer_ms);
    }
    if (cfg->rnr && (cfg->rnr_retry < 1 || cfg->rnr_retry > RG__PROTO_RNR_RETRY_MAX)) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_RNR_RETRY=%d: must be 1 to %d",
                          cfg->rnr_retry, RG__PROTO_RNR_RETRY_MAX);
    }
    /* The window: "pool" (or unset) is a fixed window of RG_PROTO_POOL_BUFS. */
    if (win[0] == '\0' || strcmp(win, "pool") == 0) {
        snprintf(pool, sizeof(pool), "fixed:%d", cfg->pool_bufs);
        win = pool;
    }
    status = rg_rxwin_parse(win, &spec, err);
    if (status == RG_OK) {
        status = rg_rxwin_parse_limit(cfg->rxwin_limit, &spec, &limit, err);
    }
    if (status == RG_OK && spec.reclaim && !(cfg->rxwin_quiet_ns >= 1000.0)) {
        status = rg_err_set(err, RG_ERR_INVALID,
                            "RG_PROTO_RXWIN_QUIET_NS=%g: reclaiming needs a quiet period of "
                            "at least 1us", cfg->rxwin_quiet_ns);
    }
    if (status == RG_OK) {
        status = rg_rxwin_init(&proto->rxwin, &spec, limit, (uint64_t)cfg->rxwin_quiet_ns, err);
    }
    return status;
}

/* The queues and caches that close frees (the window's buffers and kept
 * messages: rg__proto_window_free). */
static void rg__free_lists(rg_proto_t *proto)
{
    rg__uxm_t *u;
    rg__xop_t *x;
    int        c;

    while ((u = proto->unexpected.head) != NULL) {
        rg__proto_uxm_unlink(&proto->unexpected, u);
        free(u);
    }
    while ((u = proto->parked.head) != NULL) {
        rg__proto_uxm_unlink(&proto->parked, u);
        free(u);
    }
    for (c = 0; c < 3; c++) {
        while ((x = proto->xop_free[c]) != NULL) {
            proto->xop_free[c] = x->next;
            free(x);
        }
    }
    while ((x = rg__proto_inflight_pop(&proto->inflight)) != NULL) {
        free(x);
    }
}

void rg_proto_close(rg_proto_t *proto)
{
    uint64_t end;
    int      c;

    if (proto == NULL) {
        return;
    }
    /* Control messages still on their way (a FIN the peer waits for) and
     * refused messages waiting for their retry are delivered before the
     * transport goes. */
    if (proto->failed == RG_OK && (proto->inflight.head != NULL || proto->nunacked > 0)) {
        end = rg_time_mono_ns() + RG__PROTO_FLUSH_NS +
              (uint64_t)proto->cfg.rnr_retry * proto->rnr_timer_ns;
        while ((proto->inflight.head != NULL || proto->nunacked > 0) &&
               rg_proto_progress(proto) == RG_OK && rg_time_mono_ns() < end) {
            sched_yield();
        }
    }
    for (c = proto->nchan - 1; c >= 0; c--) {
        rg_xport_close(proto->chan[c]);
    }
    rg__proto_window_free(proto);
    rg__free_lists(proto);
    free(proto->send_seq);
    free(proto->recv_seq);
    free(proto->pids);
    free(proto->live_ns);
    free(proto->dead);
    free(proto);
}

/* The per-rank tables of matching order, and with RNR those of the ACKs. */
static rg_status_t rg__alloc_tables(rg_proto_t *proto, rg_err_t *err)
{
    proto->send_seq = calloc((size_t)proto->size, sizeof(uint32_t));
    proto->recv_seq = calloc((size_t)proto->size, sizeof(uint32_t));
    if (proto->cfg.rnr) {
        proto->unacked  = calloc((size_t)proto->size, sizeof(*proto->unacked));
        proto->ack_due  = calloc((size_t)proto->size, sizeof(*proto->ack_due));
        proto->ack_list = calloc((size_t)proto->size, sizeof(*proto->ack_list));
    }
    if (proto->send_seq == NULL || proto->recv_seq == NULL ||
        (proto->cfg.rnr && (proto->unacked == NULL || proto->ack_due == NULL ||
                            proto->ack_list == NULL))) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the runtime's tables");
    }
    return RG_OK;
}

rg_status_t rg_proto_open(const char *xport_name, rg_boot_t *boot,
                          const rg_proto_config_t *cfg, rg_proto_t **proto_p,
                          rg_err_t *err)
{
    rg_proto_t *proto;
    rg_status_t status;
    rg_xport_t *xp;

    proto = calloc(1, sizeof(*proto));
    if (proto == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the runtime");
    }
    if (cfg != NULL) {
        proto->cfg = *cfg;
        status     = RG_OK;
    } else {
        status = rg_config_load(&rg_proto_config_table, &proto->cfg, err);
    }
    if (status == RG_OK) {
        status = rg__check_config(proto, err);
    }
    if (status != RG_OK) {
        free(proto);
        return status;
    }
    proto->rnr_timer_ns = (uint64_t)(proto->cfg.rnr_timer_ms * 1e6 + 0.5);
    proto->rnr          = proto->cfg.rnr;
    proto->rank      = rg_boot_rank(boot);
    proto->size      = rg_boot_size(boot);
    proto->data_chan = -1;
    status = rg_xport_open(xport_name, boot, &proto->chan[0], err);
    if (status != RG_OK) {
        free(proto);
        return status;
    }
    proto->nchan = 1;
    xp           = proto->chan[0];
    proto->can_inject = xp->ops->inject != NULL;
    proto->eager_limit = rg__default_eager(&proto->cfg, xp->attr.name);
    if (xp->attr.max_msg_size < RG__PHDR ||
        proto->eager_limit > xp->attr.max_msg_size - RG__PHDR) {
        proto->eager_limit = xp->attr.max_msg_size < RG__PHDR ? 0
                                                             : xp->attr.max_msg_size - RG__PHDR;
    }
    proto->pbuf_size = RG__PHDR + proto->eager_limit;
    proto->pids      = calloc((size_t)proto->size, sizeof(int32_t));
    proto->live_ns   = calloc((size_t)proto->size, sizeof(uint64_t));
    proto->dead      = calloc((size_t)proto->size, sizeof(uint8_t));
    if (proto->pids == NULL || proto->live_ns == NULL || proto->dead == NULL) {
        status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d pids", proto->size);
        goto err_close;
    }
    status = rg__agree(proto, boot, err);
    if (status != RG_OK) {
        goto err_close;
    }
    /* Rendezvous payloads: one-sided reads, or a second instance of the
     * transport that carries only payloads (collective: every rank agreed
     * on can_get when the transport opened, and on RG_PROTO_GET above). */
    if (!(xp->attr.can_get && proto->cfg.use_get == 1) && proto->size > 1) {
        status = rg_xport_open(xport_name, boot, &proto->chan[1], err);
        if (status != RG_OK) {
            goto err_close;
        }
        proto->nchan     = 2;
        proto->data_chan = 1;
    }
    status = rg__alloc_tables(proto, err);
    if (status != RG_OK) {
        goto err_close;
    }
    /* The window's first buffers, and the refusal buffer behind them. Alone,
     * nothing arrives on the transport: the buffers are not posted (and not
     * allocated), the window does nothing. */
    proto->stats.window      = proto->rxwin.window;
    proto->stats.window_peak = proto->rxwin.window;
    if (proto->size > 1 && (status = rg__proto_window_open(proto, err)) != RG_OK) {
        goto err_close;
    }
    *proto_p = proto;
    return RG_OK;

err_close:
    rg_proto_close(proto);
    return status;
}

/* ---- facts --------------------------------------------------------------- */

int rg_proto_rank(const rg_proto_t *proto)
{
    return proto->rank;
}

int rg_proto_size(const rg_proto_t *proto)
{
    return proto->size;
}

size_t rg_proto_eager_limit(const rg_proto_t *proto)
{
    return proto->eager_limit;
}

rg_xport_t *rg_proto_xport(rg_proto_t *proto)
{
    return proto->chan[0];
}

void rg_proto_get_stats(const rg_proto_t *proto, rg_proto_stats_t *stats)
{
    *stats = proto->stats;
}

const char *rg_proto_strerror(const rg_proto_t *proto)
{
    return rg_err_message(&proto->err);
}

rg_status_t rg_proto_info_json(rg_proto_t *proto, char *buf, size_t cap)
{
    rg_json_t js;
    char      win[64];

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_uint(&js, "eager_limit", proto->eager_limit);
    rg_json_kv_int(&js, "pool_bufs", proto->rxwin.window);
    rg_rxwin_format(&proto->rxwin.spec, win, sizeof(win));
    rg_json_kv_string(&js, "rxwin", win);
    rg_json_kv_int(&js, "rxwin_limit", proto->rxwin.first_limit);
    rg_json_kv_int(&js, "rnr", proto->cfg.rnr);
    if (proto->cfg.rnr) {
        rg_json_kv_double(&js, "rnr_timer_ms", proto->cfg.rnr_timer_ms);
        rg_json_kv_int(&js, "rnr_retry", proto->cfg.rnr_retry);
    }
    rg_json_kv_uint(&js, "pool_buf_size", proto->pbuf_size);
    /* What one buffer of the window counts in mem.pool: its descriptor too. */
    rg_json_kv_uint(&js, "pool_buf_bytes", sizeof(rg__pbuf_t) + proto->pbuf_size);
    rg_json_kv_string(&js, "rendezvous", proto->data_chan < 0 ? "get" : "data-channel");
    rg_json_kv_int(&js, "channels", proto->nchan);
    rg_json_object_end(&js);
    return js.status;
}
