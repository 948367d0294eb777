/*
 * railgauge-bench rxwin: communication patterns of the receive-window paper's
 * applications, written as kernels of ours, run over the messaging runtime
 * with its shared receive window (RG_PROTO_RXWIN, RG_PROTO_RNR, ...; see
 * docs/rxwin.md), timed, with every message's payload verified and the
 * communication memory of every rank reported at the end.
 *
 *   alltoall  every rank sends one message to every other (NAS FT, IS)
 *   halo2d    exchange with 4 neighbours of a periodic 2-D grid (MG, LU)
 *   halo3d    exchange with 6 neighbours of a periodic 3-D grid (MG, CG)
 *   incast    every rank sends a burst of messages to rank 0
 *   mix       computation between phases, then alltoall, halo2d, incast
 *             in turn
 *
 * Rank 0 prints one JSON object: time, memory (min, mean, max over the
 * ranks' high-water marks), limit events, RNR replies, retries, messages,
 * verified, and each rank's figures.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/grid.h"
#include "base/timer.h"
#include "bench.h"
#include "proto/proto.h"

/* Tags: the pattern's messages use iteration * 64 + kind; these are apart. */
#define RG__RXB_TAG_BARRIER 0x7ffffff0
#define RG__RXB_TAG_STATS   0x7ffffff1
/* The checked header at the start of every payload and its checksum at the
 * end. */
#define RG__RXB_MIN_SIZE    24u
#define RG__RXB_TIMEOUT_NS  120000000000ull

enum { RG__RXB_ALLTOALL = 0, RG__RXB_HALO2D, RG__RXB_HALO3D, RG__RXB_INCAST, RG__RXB_MIX };

static const char *const rg__rxb_patterns[] = {"alltoall", "halo2d", "halo3d", "incast",
                                               "mix", NULL};

typedef struct rg__rxb {
    rg_proto_t  *p;
    int          rank, size;
    int          pattern;
    int          iters;
    int          burst;        /* incast: messages per sender and phase */
    size_t       msg_size;
    double       compute_us;   /* busy time before each phase */
    int          dims[3];      /* halo grids */
    rg_preq_t   *sreq, *rreq;  /* one per message of a phase */
    unsigned char *sbuf, *rbuf;
    size_t       max_msgs;
    uint64_t     sent, received;
    uint64_t     bad;          /* payloads that failed their check */
    const char  *out_path;     /* rank 0's JSON (NULL: standard output) */
    char         bad_what[200];
    rg_err_t     err;
} rg__rxb_t;

/* The per-rank figures rank 0 gathers. */
typedef struct rg__rxb_rank {
    uint64_t high_water, pool, unexpected, control;
    uint64_t limit_events, rnr_sent, rnr_recv, retries, shrinks;
    uint64_t sent, received, bad;
    int64_t  window, window_peak;
} rg__rxb_rank_t;

/* ---- payloads ------------------------------------------------------------- */

static uint64_t rg__rxb_fnv(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    size_t   i;

    for (i = 0; i < n; i++) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

/* Message idx of phase it from src to dst: a header (src, dst, it, idx),
 * bytes from a generator seeded by it, and the checksum of all before it in
 * the last 8 bytes. */
static void rg__rxb_fill(unsigned char *b, size_t n, int src, int dst, int it, int idx)
{
    uint32_t h[4] = {(uint32_t)src, (uint32_t)dst, (uint32_t)it, (uint32_t)idx};
    uint64_t x    = ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ (uint64_t)it * 7919u ^
                 (uint64_t)idx * 104729u;
    uint64_t sum;
    size_t   i;

    memcpy(b, h, sizeof(h));
    for (i = sizeof(h); i < n - 8; i++) {
        x    = x * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (unsigned char)(x >> 56);
    }
    sum = rg__rxb_fnv(b, n - 8);
    memcpy(b + n - 8, &sum, 8);
}

/* Checks a received message against what (src, it, idx) must be. */
static void rg__rxb_check(rg__rxb_t *x, const rg_preq_t *r, const unsigned char *b, int src,
                          int it, int idx)
{
    uint32_t h[4];
    uint64_t sum;

    x->received++;
    memcpy(h, b, sizeof(h));
    memcpy(&sum, b + x->msg_size - 8, 8);
    if (r->status != RG_OK || r->msg_len != x->msg_size || r->source != src ||
        h[0] != (uint32_t)src || h[1] != (uint32_t)x->rank || h[2] != (uint32_t)it ||
        h[3] != (uint32_t)idx || sum != rg__rxb_fnv(b, x->msg_size - 8)) {
        if (x->bad++ == 0) {
            snprintf(x->bad_what, sizeof(x->bad_what),
                     "rank %d: message %d of phase %d from rank %d: got status %s, %zu bytes "
                     "from rank %d, header (%u, %u, %u, %u), checksum %s",
                     x->rank, idx, it, src, rg_status_name(r->status), r->msg_len, r->source,
                     h[0], h[1], h[2], h[3],
                     sum == rg__rxb_fnv(b, x->msg_size - 8) ? "right" : "wrong");
        }
    }
}

/* ---- phases --------------------------------------------------------------- */

static void rg__rxb_compute(double us)
{
    uint64_t end;

    if (us <= 0) {
        return;
    }
    end = rg_time_mono_ns() + (uint64_t)(us * 1e3);
    while (rg_time_mono_ns() < end) {
    }
}

/* Posts the receives of the phase first, then the sends, then waits: the
 * shape of an MPI exchange (MPI_Irecv, MPI_Isend, MPI_Waitall). */
static rg_status_t rg__rxb_exchange(rg__rxb_t *x, int it, int kind, const int *to, int nto,
                                    const int *from, int nfrom, int per)
{
    rg_status_t status;
    int         i, k, n;
    int         tag = it * 64 + kind;

    for (i = 0, n = 0; i < nfrom; i++) {
        for (k = 0; k < per; k++, n++) {
            status = rg_proto_irecv(x->p, from[i], tag, x->rbuf + (size_t)n * x->msg_size,
                                    x->msg_size, &x->rreq[n]);
            if (status != RG_OK) {
                return status;
            }
        }
    }
    for (i = 0, n = 0; i < nto; i++) {
        for (k = 0; k < per; k++, n++) {
            unsigned char *b = x->sbuf + (size_t)n * x->msg_size;

            rg__rxb_fill(b, x->msg_size, x->rank, to[i], it, k);
            status = rg_proto_isend(x->p, to[i], tag, b, x->msg_size, &x->sreq[n]);
            if (status != RG_OK) {
                return status;
            }
            x->sent++;
        }
    }
    status = rg_proto_waitall(x->p, (size_t)nfrom * (size_t)per, x->rreq, RG__RXB_TIMEOUT_NS);
    if (status != RG_OK && status != RG_ERR_TRUNCATED) {
        return status;
    }
    /* Messages of one sender and tag arrive in the order they were sent:
     * message k of from[i] must be in receive k. */
    for (i = 0, n = 0; i < nfrom; i++) {
        for (k = 0; k < per; k++, n++) {
            rg__rxb_check(x, &x->rreq[n], x->rbuf + (size_t)n * x->msg_size, from[i], it, k);
        }
    }
    return rg_proto_waitall(x->p, (size_t)nto * (size_t)per, x->sreq, RG__RXB_TIMEOUT_NS);
}

/* Neighbours of this rank in a periodic grid of dims (nd dimensions), two
 * per dimension; a dimension of 1 has none, of 2 one (both sides alike). */
static int rg__rxb_neighbours(const rg__rxb_t *x, int nd, int *nb)
{
    int c[3] = {0, 0, 0}, d, k, n = 0, r = x->rank, peer, j, dup;

    for (d = 0; d < nd; d++) {
        c[d] = r % x->dims[d];
        r /= x->dims[d];
    }
    for (d = 0; d < nd; d++) {
        for (k = -1; k <= 1; k += 2) {
            int cc[3] = {c[0], c[1], c[2]};

            cc[d] = (c[d] + k + x->dims[d]) % x->dims[d];
            peer  = 0;
            for (j = nd - 1; j >= 0; j--) {
                peer = peer * x->dims[j] + cc[j];
            }
            for (j = 0, dup = 0; j < n; j++) {
                dup |= nb[j] == peer;
            }
            if (peer != x->rank && !dup) {
                nb[n++] = peer;
            }
        }
    }
    return n;
}

static rg_status_t rg__rxb_phase(rg__rxb_t *x, int it, int kind)
{
    int nb[6], others[1], n, i;
    int *all = NULL;
    rg_status_t status;

    switch (kind) {
    case RG__RXB_ALLTOALL:
        all = malloc((size_t)x->size * sizeof(int));
        if (all == NULL) {
            return rg_err_set(&x->err, RG_ERR_NOMEM, "cannot allocate %d ranks", x->size);
        }
        for (i = 1, n = 0; i < x->size; i++) {
            all[n++] = (x->rank + i) % x->size;  /* each rank starts with a different peer */
        }
        status = rg__rxb_exchange(x, it, kind, all, n, all, n, 1);
        free(all);
        return status;
    case RG__RXB_HALO2D:
        rg_grid_dims(x->size, 2, x->dims);
        n = rg__rxb_neighbours(x, 2, nb);
        return rg__rxb_exchange(x, it, kind, nb, n, nb, n, 1);
    case RG__RXB_HALO3D:
        rg_grid_dims(x->size, 3, x->dims);
        n = rg__rxb_neighbours(x, 3, nb);
        return rg__rxb_exchange(x, it, kind, nb, n, nb, n, 1);
    default: /* incast */
        if (x->rank == 0) {
            all = malloc((size_t)x->size * sizeof(int));
            if (all == NULL) {
                return rg_err_set(&x->err, RG_ERR_NOMEM, "cannot allocate %d ranks", x->size);
            }
            for (i = 1; i < x->size; i++) {
                all[i - 1] = i;
            }
            status = rg__rxb_exchange(x, it, kind, NULL, 0, all, x->size - 1, x->burst);
            free(all);
            return status;
        }
        others[0] = 0;
        return rg__rxb_exchange(x, it, kind, others, 1, NULL, 0, x->burst);
    }
}

/* A barrier over the runtime (gather to rank 0, release), so that waiting
 * ranks keep taking and acknowledging messages. */
static rg_status_t rg__rxb_barrier(rg__rxb_t *x)
{
    rg_preq_t   r;
    rg_status_t status = RG_OK;
    int         i;
    char        b = 0;

    if (x->rank != 0) {
        status = rg_proto_send(x->p, 0, RG__RXB_TAG_BARRIER, &b, 1);
        return status != RG_OK ? status : rg_proto_recv(x->p, 0, RG__RXB_TAG_BARRIER, &b, 1, &r);
    }
    for (i = 1; i < x->size && status == RG_OK; i++) {
        status = rg_proto_recv(x->p, i, RG__RXB_TAG_BARRIER, &b, 1, &r);
    }
    for (i = 1; i < x->size && status == RG_OK; i++) {
        status = rg_proto_send(x->p, i, RG__RXB_TAG_BARRIER, &b, 1);
    }
    return status;
}

/* ---- the run -------------------------------------------------------------- */

static void rg__rxb_usage(FILE *f)
{
    fprintf(f,
        "usage: railgauge-bench rxwin --pattern P [options]\n"
        "\n"
        "Runs a communication pattern over the messaging runtime with its shared\n"
        "receive window (RG_PROTO_RXWIN, RG_PROTO_RXWIN_LIMIT, RG_PROTO_RNR,\n"
        "RG_PROTO_RNR_TIMER_MS, ...; docs/rxwin.md), verifies every payload and prints\n"
        "one JSON object (rank 0).\n"
        "\n"
        "  --pattern P       alltoall, halo2d, halo3d, incast or mix\n"
        "  --transport T     shm, tcp, ofi:<provider> (default: $RG_TRANSPORT, else shm)\n"
        "  --iters N         phases (default 50)\n"
        "  --size S          bytes per message, at least 24 (default 512)\n"
        "  --burst K         incast and mix: messages per sender and phase (default 32)\n"
        "  --compute-us U    busy time before each phase; mix: before each phase,\n"
        "                    rank r computing U * (1 + r %% 4) / 2 (default 0; mix 200)\n"
        "  --out FILE        write the JSON there (default: standard output)\n"
        "  -h, --help        this text\n");
}

static int rg__rxb_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "railgauge-bench rxwin: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return RG_BENCH_EXIT_USAGE;
}

static int rg__rxb_parse(int argc, char **argv, rg__rxb_t *x, char *transport, size_t tcap)
{
    static const struct option longopts[] = {
        {"pattern", required_argument, NULL, 'p'},
        {"transport", required_argument, NULL, 't'},
        {"iters", required_argument, NULL, 'i'},
        {"size", required_argument, NULL, 's'},
        {"burst", required_argument, NULL, 'b'},
        {"compute-us", required_argument, NULL, 'c'},
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    char       *end;
    rg_err_t    err;
    int         c, i, compute_given = 0;
    long        v;

    if (rg_xport_default_name(transport, tcap, &err) != RG_OK) {
        return rg__rxb_usage_error("%s", rg_err_message(&err));
    }
    x->pattern    = -1;
    x->iters      = 50;
    x->msg_size   = 512;
    x->burst      = 32;
    x->compute_us = 0;
    optind        = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            for (i = 0; rg__rxb_patterns[i] != NULL; i++) {
                if (strcmp(optarg, rg__rxb_patterns[i]) == 0) {
                    x->pattern = i;
                }
            }
            if (x->pattern < 0) {
                return rg__rxb_usage_error("unknown pattern '%s' (known: alltoall, halo2d, "
                                           "halo3d, incast, mix)", optarg);
            }
            break;
        case 't':
            snprintf(transport, tcap, "%s", optarg);
            break;
        case 'o':
            x->out_path = optarg;
            break;
        case 'i':
        case 'b':
            v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 1 || v > 1000000) {
                return rg__rxb_usage_error("--iters and --burst take a count from 1 to "
                                           "1000000, not '%s'", optarg);
            }
            *(c == 'i' ? &x->iters : &x->burst) = (int)v;
            break;
        case 's':
            if (rg_parse_size(optarg, &x->msg_size, &err) != RG_OK ||
                x->msg_size < RG__RXB_MIN_SIZE || x->msg_size > ((size_t)1 << 26)) {
                return rg__rxb_usage_error("--size must be 24 bytes to 64MiB, not '%s'",
                                           optarg);
            }
            break;
        case 'c':
            x->compute_us = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(x->compute_us >= 0) ||
                x->compute_us > 1e7) {
                return rg__rxb_usage_error("--compute-us must be 0 to 1e7, not '%s'", optarg);
            }
            compute_given = 1;
            break;
        case 'h':
            rg__rxb_usage(stdout);
            return -1;
        default:
            rg__rxb_usage(stderr);
            return RG_BENCH_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        return rg__rxb_usage_error("unexpected argument '%s'", argv[optind]);
    }
    if (x->pattern < 0) {
        return rg__rxb_usage_error("%s", "--pattern is missing (alltoall, halo2d, halo3d, "
                                         "incast, mix)");
    }
    if (x->pattern == RG__RXB_MIX && !compute_given) {
        x->compute_us = 200;
    }
    return 0;
}

static void rg__rxb_summary(rg_json_t *js, const char *key, const rg__rxb_rank_t *all, int n,
                            size_t off)
{
    uint64_t mn = UINT64_MAX, mx = 0, v;
    double   sum = 0;
    int      i;

    for (i = 0; i < n; i++) {
        memcpy(&v, (const unsigned char *)&all[i] + off, sizeof(v));
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        sum += (double)v;
    }
    rg_json_key(js, key);
    rg_json_object_begin(js);
    rg_json_kv_uint(js, "min", mn);
    rg_json_kv_double(js, "mean", sum / n);
    rg_json_kv_uint(js, "max", mx);
    rg_json_object_end(js);
}

static rg_status_t rg__rxb_report(rg__rxb_t *x, double secs, const char *transport)
{
    rg_proto_stats_t st;
    rg__rxb_rank_t   mine, *all = NULL;
    rg_preq_t        r;
    rg_status_t      status = RG_OK;
    rg_json_t        js;
    char            *buf = NULL, info[512];
    FILE            *out;
    size_t           cap;
    uint64_t         lim = 0, rnr = 0, retries = 0, msgs = 0, bad = 0;
    int              i;

    /* The profile is taken before the gather, which adds nothing to it. */
    rg_proto_get_stats(x->p, &st);
    memset(&mine, 0, sizeof(mine));
    mine.high_water   = st.mem.high_water;
    mine.pool         = st.mem.pool;
    mine.unexpected   = st.mem.unexpected;
    mine.control      = st.mem.control;
    mine.limit_events = st.limit_events;
    mine.rnr_sent     = st.rnr_sent;
    mine.rnr_recv     = st.rnr_recv;
    mine.retries      = st.retries;
    mine.shrinks      = st.rxwin_shrinks;
    mine.sent         = x->sent;
    mine.received     = x->received;
    mine.bad          = x->bad;
    mine.window       = st.window;
    mine.window_peak  = st.window_peak;
    if (x->rank != 0) {
        return rg_proto_send(x->p, 0, RG__RXB_TAG_STATS, &mine, sizeof(mine));
    }
    all = calloc((size_t)x->size, sizeof(*all));
    cap = 4096 + (size_t)x->size * 512;
    buf = malloc(cap);
    if (all == NULL || buf == NULL) {
        free(all);
        free(buf);
        return rg_err_set(&x->err, RG_ERR_NOMEM, "cannot allocate the report");
    }
    all[0] = mine;
    for (i = 1; i < x->size && status == RG_OK; i++) {
        status = rg_proto_recv(x->p, i, RG__RXB_TAG_STATS, &all[i], sizeof(all[i]), &r);
    }
    if (status == RG_OK) {
        for (i = 0; i < x->size; i++) {
            lim += all[i].limit_events;
            rnr += all[i].rnr_sent;
            retries += all[i].retries;
            msgs += all[i].sent;
            bad += all[i].bad;
        }
        rg_json_init(&js, buf, cap);
        rg_json_object_begin(&js);
        rg_json_kv_string(&js, "type", "rxwin");
        rg_json_kv_string(&js, "pattern", rg__rxb_patterns[x->pattern]);
        rg_json_kv_string(&js, "transport", transport);
        rg_json_kv_int(&js, "ranks", x->size);
        rg_json_kv_int(&js, "iters", x->iters);
        rg_json_kv_uint(&js, "size", x->msg_size);
        rg_json_kv_int(&js, "burst", x->burst);
        rg_json_kv_double(&js, "compute_us", x->compute_us);
        if (rg_proto_info_json(x->p, info, sizeof(info)) == RG_OK) {
            rg_json_key(&js, "runtime");
            rg_json_raw(&js, info);
        }
        rg_json_kv_double(&js, "time_s", secs);
        rg__rxb_summary(&js, "mem_bytes", all, x->size, offsetof(rg__rxb_rank_t, high_water));
        rg_json_kv_uint(&js, "limit_events", lim);
        rg_json_kv_uint(&js, "rnr", rnr);
        rg_json_kv_uint(&js, "retries", retries);
        rg_json_kv_uint(&js, "messages", msgs);
        rg_json_kv_bool(&js, "verified", bad == 0);
        rg_json_key(&js, "per_rank");
        rg_json_array_begin(&js);
        for (i = 0; i < x->size; i++) {
            rg_json_object_begin(&js);
            rg_json_kv_int(&js, "rank", i);
            rg_json_kv_uint(&js, "mem_high_water", all[i].high_water);
            rg_json_kv_uint(&js, "mem_pool", all[i].pool);
            rg_json_kv_uint(&js, "mem_unexpected", all[i].unexpected);
            rg_json_kv_uint(&js, "mem_control", all[i].control);
            rg_json_kv_int(&js, "window", all[i].window);
            rg_json_kv_int(&js, "window_peak", all[i].window_peak);
            rg_json_kv_uint(&js, "limit_events", all[i].limit_events);
            rg_json_kv_uint(&js, "rnr_sent", all[i].rnr_sent);
            rg_json_kv_uint(&js, "rnr_recv", all[i].rnr_recv);
            rg_json_kv_uint(&js, "retries", all[i].retries);
            rg_json_kv_uint(&js, "shrinks", all[i].shrinks);
            rg_json_kv_uint(&js, "sent", all[i].sent);
            rg_json_kv_uint(&js, "received", all[i].received);
            rg_json_kv_uint(&js, "bad", all[i].bad);
            rg_json_object_end(&js);
        }
        rg_json_array_end(&js);
        rg_json_object_end(&js);
        out = x->out_path != NULL ? fopen(x->out_path, "w") : stdout;
        if (out == NULL) {
            status = rg_err_set_errno(&x->err, RG_ERR_IO, errno, "cannot open '%s' for writing",
                                      x->out_path);
        } else {
            status = rg_json_write_line(&js, out, &x->err);
            if (out != stdout && fclose(out) != 0 && status == RG_OK) {
                status = rg_err_set_errno(&x->err, RG_ERR_IO, errno, "cannot write '%s'",
                                          x->out_path);
            }
            fflush(stdout);
        }
        if (status == RG_OK && bad > 0) {
            status = rg_err_set(&x->err, RG_ERR_IO, "%llu messages failed their check; the "
                                "first: %s", (unsigned long long)bad,
                                x->bad > 0 ? x->bad_what : "on another rank");
        }
    }
    free(all);
    free(buf);
    return status;
}

int rg_bench_rxwin_main(int argc, char **argv)
{
    rg__rxb_t   x;
    rg_boot_t  *boot = NULL;
    char        transport[64];
    rg_status_t status;
    uint64_t    t0;
    double      secs;
    int         rc, it, kind, nd;
    size_t      per_phase;

    memset(&x, 0, sizeof(x));
    rc = rg__rxb_parse(argc - 1, argv + 1, &x, transport, sizeof(transport));
    if (rc != 0) {
        return rc < 0 ? 0 : rc;
    }
    rc = RG_BENCH_EXIT_FAIL;
    if (rg_boot_init(&boot, &x.err) != RG_OK) {
        goto out;
    }
    x.rank = rg_boot_rank(boot);
    x.size = rg_boot_size(boot);
    if (x.size < 2) {
        rg_err_set(&x.err, RG_ERR_INVALID, "rxwin needs at least 2 ranks; start it with "
                   "`railgauge run -n 4 -- railgauge-bench rxwin --pattern %s`",
                   rg__rxb_patterns[x.pattern]);
        rc = RG_BENCH_EXIT_USAGE;
        goto out;
    }
    if (rg_proto_open(transport, boot, NULL, &x.p, &x.err) != RG_OK) {
        /* Bad RG_PROTO_* settings are the user's. */
        rc = x.err.status == RG_ERR_INVALID || x.err.status == RG_ERR_NOT_FOUND
                 ? RG_BENCH_EXIT_USAGE : RG_BENCH_EXIT_FAIL;
        goto out;
    }
    /* Messages of one phase: the most a rank sends or receives. */
    per_phase   = (size_t)x.size;
    if ((size_t)x.burst * (size_t)x.size > per_phase) {
        per_phase = (size_t)x.burst * (size_t)x.size;
    }
    x.max_msgs = per_phase;
    x.sreq     = calloc(per_phase, sizeof(rg_preq_t));
    x.rreq     = calloc(per_phase, sizeof(rg_preq_t));
    x.sbuf     = malloc(per_phase * x.msg_size);
    x.rbuf     = malloc(per_phase * x.msg_size);
    if (x.sreq == NULL || x.rreq == NULL || x.sbuf == NULL || x.rbuf == NULL) {
        rg_err_set(&x.err, RG_ERR_NOMEM, "cannot allocate %zu messages of %zu bytes",
                   per_phase, x.msg_size);
        goto out;
    }
    status = rg__rxb_barrier(&x);
    t0     = rg_time_mono_ns();
    for (it = 0; it < x.iters && status == RG_OK; it++) {
        if (x.pattern == RG__RXB_MIX) {
            /* Ranks compute unequally, so that early ranks' messages meet
             * busy receivers, as between an application's phases. */
            rg__rxb_compute(x.compute_us * (1 + x.rank % 4) / 2);
            nd   = it % 3;
            kind = nd == 0 ? RG__RXB_ALLTOALL : nd == 1 ? RG__RXB_HALO2D : RG__RXB_INCAST;
        } else {
            rg__rxb_compute(x.compute_us);
            kind = x.pattern;
        }
        status = rg__rxb_phase(&x, it, kind);
    }
    if (status == RG_OK) {
        status = rg__rxb_barrier(&x);
    }
    secs = (double)(rg_time_mono_ns() - t0) * 1e-9;
    if (status != RG_OK) {
        if (x.err.status == RG_OK) {
            rg_err_set(&x.err, status, "%s", rg_proto_strerror(x.p));
        }
        goto out;
    }
    if (rg__rxb_report(&x, secs, transport) != RG_OK) {
        if (x.err.status == RG_OK) {
            rg_err_set(&x.err, RG_ERR_IO, "%s", rg_proto_strerror(x.p));
        }
        goto out;
    }
    rc = RG_BENCH_EXIT_OK;

out:
    if (rc == RG_BENCH_EXIT_USAGE && x.rank != 0) {
        rc = -rc;
    }
    if (rc > RG_BENCH_EXIT_OK) {
        fprintf(stderr, "railgauge-bench rxwin: rank %d: %s\n", x.rank,
                rg_err_message(&x.err));
    }
    free(x.sreq);
    free(x.rreq);
    free(x.sbuf);
    free(x.rbuf);
    rg_proto_close(x.p);
    rg_boot_fini(boot);
    return rc < 0 ? -rc : rc;
}
