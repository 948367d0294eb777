/*
 * railgauge-bench bw: streaming bandwidth between ranks 0 and 1, OSU-style
 * (osu_bw, osu_bibw): rank 0 posts a window of messages, rank 1 receives
 * them and answers with one small acknowledgement per window; with --bidir
 * both send a window each way. Batches of windows run until --time has
 * passed after a warm-up; the line rank 0 writes holds the bandwidth and the
 * transport's own account at the end (for rails: the bytes each rail carried
 * and the weights it ended with). --verify fills every message with a
 * pattern of its batch, index and offset and checks every byte received.
 *
 *   railgauge run -n 2 --transport rails -- railgauge-bench bw --size 4MiB --json
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/timer.h"
#include "boot/boot.h"
#include "bench.h"
#include "verify.h"
#include "xport/xport.h"

#define RG__BW_TIMEOUT_NS (120ull * 1000000000ull)

enum { RG__BW_GO = 1, RG__BW_STOP = 2 };

typedef struct rg__bw {
    rg_boot_t     *boot;
    rg_xport_t    *xp;
    rg_err_t       err;
    const char    *transport;
    const char    *out_path;
    size_t         size;
    int            window;
    double         time_s, warmup_s;
    uint64_t       bytes;         /* --bytes: measure this volume, not a time */
    int            bidir, verify;
    int            rank, size_ranks;
    unsigned char *sbuf, *rbuf;   /* window * size each */
    rg_xreq_t     *sreq, *rreq;
    uint64_t       bad;           /* bytes that failed verification */
} rg__bw_t;

static void rg__bw_usage(FILE *f)
{
    fprintf(f,
        "usage: railgauge-bench bw [options]\n"
        "\n"
        "Streaming bandwidth from rank 0 to rank 1 (osu_bw), or both ways (--bidir).\n"
        "\n"
        "  --transport T   as for the other patterns (default: $RG_TRANSPORT, else shm)\n"
        "  --size S        message size, units allowed (default 4MiB)\n"
        "  --window W      messages in flight per batch (default 16)\n"
        "  --time S        seconds measured after the warm-up (default 2)\n"
        "  --bytes B       measure the time of this volume instead (units allowed; whole\n"
        "                  batches, so rounded up to a multiple of window x size)\n"
        "  --warmup S      seconds of warm-up (default 0.3)\n"
        "  --bidir         both ranks send a window per batch\n"
        "  --verify        fill and check every byte of every message\n"
        "  --out FILE      the result line goes there (default: standard output)\n"
        "  -h, --help      this text\n");
}

/* One batch: the window each way the batch goes, then the acknowledgement. */
static rg_status_t rg__bw_batch(rg__bw_t *bw, uint64_t batch)
{
    int         peer = 1 - bw->rank, k, sends, recvs;
    uint64_t    ack = batch, got = 0;
    size_t      len;
    rg_status_t st;

    sends = bw->rank == 0 || bw->bidir;
    recvs = bw->rank == 1 || bw->bidir;
    for (k = 0; recvs && k < bw->window; k++) {
        st = rg_xport_irecv(bw->xp, peer, bw->rbuf + (size_t)k * bw->size, bw->size,
                            &bw->rreq[k]);
        if (st < 0) {
            return st;
        }
    }
    for (k = 0; sends && k < bw->window; k++) {
        if (bw->verify) {
            rg_bench_fill(bw->sbuf + (size_t)k * bw->size, bw->size,
                          rg_bench_seed(bw->rank, batch, (uint64_t)k));
        }
        st = rg_xport_isend(bw->xp, peer, bw->sbuf + (size_t)k * bw->size, bw->size,
                            &bw->sreq[k]);
        if (st < 0) {
            return st;
        }
    }
    for (k = 0; sends && k < bw->window; k++) {
        st = rg_xport_wait(bw->xp, &bw->sreq[k], RG__BW_TIMEOUT_NS);
        if (st != RG_OK) {
            return st;
        }
    }
    for (k = 0; recvs && k < bw->window; k++) {
        st = rg_xport_wait(bw->xp, &bw->rreq[k], RG__BW_TIMEOUT_NS);
        if (st != RG_OK) {
            return st == RG_ERR_TRUNCATED
                       ? rg_err_set(&bw->xp->err, RG_ERR_PARSE, "a message longer than %zu B",
                                    bw->size)
                       : st;
        }
        if (bw->rreq[k].msg_len != bw->size) {
            return rg_err_set(&bw->xp->err, RG_ERR_PARSE, "a message of %zu B, not %zu B",
                              bw->rreq[k].msg_len, bw->size);
        }
        if (bw->verify) {
            bw->bad += rg_bench_check(bw->rbuf + (size_t)k * bw->size, bw->size,
                                      rg_bench_seed(peer, batch, (uint64_t)k));
        }
    }
    /* The receiver's acknowledgement ends the batch at the sender. */
    if (bw->rank == 1) {
        return rg_xport_send(bw->xp, 0, &ack, sizeof(ack));
    }
    st = rg_xport_recv(bw->xp, 1, &got, sizeof(got), &len);
    if (st == RG_OK && (len != sizeof(got) || got != batch)) {
        return rg_err_set(&bw->xp->err, RG_ERR_PARSE, "acknowledgement %llu, expected %llu",
                          (unsigned long long)got, (unsigned long long)batch);
    }
    return st;
}

static rg_status_t rg__bw_ctl(rg__bw_t *bw, uint32_t *cmd)
{
    size_t len;

    if (bw->rank == 0) {
        return rg_xport_send(bw->xp, 1, cmd, sizeof(*cmd));
    }
    return rg_xport_recv(bw->xp, 0, cmd, sizeof(*cmd), &len);
}

static rg_status_t rg__bw_run(rg__bw_t *bw, FILE *out)
{
    uint64_t    batch = 0, counted = 0, t0 = 0, t_end = 0, start = rg_time_mono_ns(), now;
    uint32_t    cmd;
    rg_status_t st;
    rg_json_t   js;
    char        line[16384], info[12288];
    int         measuring = 0;

    for (;;) {
        if (bw->rank == 0) {
            now = rg_time_mono_ns();
            if (!measuring && (double)(now - start) >= bw->warmup_s * 1e9) {
                measuring = 1;
                t0        = now;
                counted   = 0;
            }
            if (bw->bytes > 0) {
                cmd = measuring && counted * (uint64_t)bw->window * bw->size *
                                           (bw->bidir ? 2u : 1u) >= bw->bytes
                          ? RG__BW_STOP : RG__BW_GO;
            } else {
                cmd = measuring && (double)(now - t0) >= bw->time_s * 1e9 ? RG__BW_STOP
                                                                           : RG__BW_GO;
            }
            if (cmd == RG__BW_STOP) {
                t_end = now;
            }
        }
        st = rg__bw_ctl(bw, &cmd);
        if (st != RG_OK) {
            return st;
        }
        if (cmd == RG__BW_STOP) {
            break;
        }
        st = rg__bw_batch(bw, batch++);
        if (st != RG_OK) {
            return st;
        }
        counted++;
    }
    /* Rank 1 reports its verification to rank 0. */
    if (bw->rank == 1) {
        st = rg_xport_send(bw->xp, 0, &bw->bad, sizeof(bw->bad));
    } else {
        uint64_t bad1 = 0;
        size_t   len;

        st = rg_xport_recv(bw->xp, 1, &bad1, sizeof(bad1), &len);
        bw->bad += bad1;
    }
    if (st != RG_OK || bw->rank != 0) {
        return st;
    }
    {
        double secs  = (double)(t_end - t0) * 1e-9;
        double bytes = (double)counted * (double)bw->window * (double)bw->size *
                       (bw->bidir ? 2.0 : 1.0);

        rg_json_init(&js, line, sizeof(line));
        rg_json_object_begin(&js);
        rg_json_kv_string(&js, "type", "bw");
        rg_json_kv_string(&js, "transport", bw->xp->attr.name);
        rg_json_kv_uint(&js, "size_bytes", bw->size);
        rg_json_kv_int(&js, "window", bw->window);
        rg_json_kv_bool(&js, "bidir", bw->bidir);
        rg_json_kv_uint(&js, "batches", counted);
        rg_json_kv_double(&js, "bytes", bytes);
        rg_json_kv_double(&js, "seconds", secs);
        rg_json_kv_double(&js, "bandwidth_MBps", secs > 0 ? bytes / secs / 1e6 : 0.0);
        if (bw->verify) {
            rg_json_kv_bool(&js, "verified", bw->bad == 0);
            rg_json_kv_uint(&js, "bad_bytes", bw->bad);
        }
        if (bw->xp->ops->info_json(bw->xp, info, sizeof(info)) == RG_OK) {
            rg_json_key(&js, "transport_info");
            rg_json_raw(&js, info);
        }
        rg_json_object_end(&js);
        st = rg_json_write_line(&js, out, &bw->err);
        if (st == RG_OK && bw->verify && bw->bad != 0) {
            st = rg_err_set(&bw->err, RG_ERR_PARSE, "%llu bytes arrived wrong",
                            (unsigned long long)bw->bad);
        }
    }
    return st;
}

/* The command line into bw: 0, -1 after --help, else the usage exit code. */
static int rg__bw_parse_args(int argc, char **argv, rg__bw_t *bw)
{
    static const struct option opts[] = {
        {"transport", required_argument, NULL, 't'}, {"size", required_argument, NULL, 's'},
        {"window", required_argument, NULL, 'w'},    {"time", required_argument, NULL, 'T'},
        {"warmup", required_argument, NULL, 'W'},    {"bidir", no_argument, NULL, 'b'},
        {"verify", no_argument, NULL, 'v'},          {"out", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'j'},            {"help", no_argument, NULL, 'h'},
        {"bytes", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0}};
    char    *end;
    int      c;
    rg_err_t perr;

    optind = 2;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': bw->transport = optarg; break;
        case 's':
            if (rg_parse_size(optarg, &bw->size, &perr) != RG_OK || bw->size == 0 ||
                bw->size > ((size_t)1 << 30)) {
                fprintf(stderr, "railgauge-bench bw: --size '%s' is not a size of 1 B .. 1 GiB\n",
                        optarg);
                return RG_BENCH_EXIT_USAGE;
            }
            break;
        case 'w':
            bw->window = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || bw->window < 1 || bw->window > 1024) {
                fprintf(stderr, "railgauge-bench bw: --window '%s' is not 1 .. 1024\n", optarg);
                return RG_BENCH_EXIT_USAGE;
            }
            break;
        case 'T':
        case 'W': {
            double v = strtod(optarg, &end);

            if (*end != '\0' || !(v >= 0 && v <= 3600) || (c == 'T' && v == 0)) {
                fprintf(stderr, "railgauge-bench bw: --%s '%s' is not a time in seconds\n",
                        c == 'T' ? "time" : "warmup", optarg);
                return RG_BENCH_EXIT_USAGE;
            }
            *(c == 'T' ? &bw->time_s : &bw->warmup_s) = v;
            break;
        }
        case 'B': {
            size_t v;

            if (rg_parse_size(optarg, &v, &perr) != RG_OK || v == 0) {
                fprintf(stderr, "railgauge-bench bw: --bytes '%s' is not a size above 0\n",
                        optarg);
                return RG_BENCH_EXIT_USAGE;
            }
            bw->bytes = v;
            break;
        }
        case 'b': bw->bidir = 1; break;
        case 'v': bw->verify = 1; break;
        case 'o': bw->out_path = optarg; break;
        case 'j': break;  /* the output is always JSON */
        case 'h': rg__bw_usage(stdout); return -1;
        default: rg__bw_usage(stderr); return RG_BENCH_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "railgauge-bench bw: unexpected argument '%s'\n", argv[optind]);
        return RG_BENCH_EXIT_USAGE;
    }
    if ((size_t)bw->window * bw->size > ((size_t)1 << 31)) {
        fprintf(stderr, "railgauge-bench bw: --window times --size is above 2 GiB\n");
        return RG_BENCH_EXIT_USAGE;
    }
    return 0;
}

/* The other ranks wait for rank 0's word before they close, so that no
 * connection of the transport goes away while ranks 0 and 1 run. */
static rg_status_t rg__bw_release_others(rg__bw_t *bw)
{
    uint32_t    done = 0;
    size_t      len;
    int         r;
    rg_status_t st = RG_OK;

    for (r = 2; bw->rank == 0 && r < bw->size_ranks && st == RG_OK; r++) {
        st = rg_xport_send(bw->xp, r, &done, sizeof(done));
    }
    if (bw->rank >= 2) {
        st = rg_xport_recv(bw->xp, 0, &done, sizeof(done), &len);
    }
    if (st != RG_OK) {
        rg_err_set(&bw->err, st, "%s", rg_xport_strerror(bw->xp));
    }
    return st;
}

int rg_bench_bw_main(int argc, char **argv)
{
    rg__bw_t    bw;
    FILE       *out = stdout;
    int         c, rc = RG_BENCH_EXIT_FAIL;
    rg_err_t    perr;
    char        env_transport[RG_CONFIG_STRING_MAX];

    memset(&bw, 0, sizeof(bw));
    if (rg_xport_default_name(env_transport, sizeof(env_transport), &perr) != RG_OK) {
        return rg_bench_usage_error("%s", rg_err_message(&perr));
    }
    bw.transport = env_transport;
    bw.size      = (size_t)4 << 20;
    bw.window    = 16;
    bw.time_s    = 2.0;
    bw.warmup_s  = 0.3;
    c = rg__bw_parse_args(argc, argv, &bw);
    if (c != 0) {
        return c < 0 ? RG_BENCH_EXIT_OK : c;
    }
    if (rg_boot_init(&bw.boot, &bw.err) != RG_OK) {
        goto out;
    }
    bw.rank       = rg_boot_rank(bw.boot);
    bw.size_ranks = rg_boot_size(bw.boot);
    if (bw.size_ranks < 2) {
        rg_err_set(&bw.err, RG_ERR_INVALID, "bw needs 2 ranks: railgauge run -n 2 -- "
                   "railgauge-bench bw");
        rc = RG_BENCH_EXIT_USAGE;
        goto out;
    }
    if (rg_xport_open(bw.transport, bw.boot, &bw.xp, &bw.err) != RG_OK) {
        goto out;
    }
    if (bw.rank <= 1) {
        bw.sbuf = calloc((size_t)bw.window, bw.size);
        bw.rbuf = calloc((size_t)bw.window, bw.size);
        bw.sreq = calloc((size_t)bw.window, sizeof(*bw.sreq));
        bw.rreq = calloc((size_t)bw.window, sizeof(*bw.rreq));
        if (bw.sbuf == NULL || bw.rbuf == NULL || bw.sreq == NULL || bw.rreq == NULL) {
            rg_err_set(&bw.err, RG_ERR_NOMEM, "cannot allocate 2 x %d x %zu B", bw.window,
                       bw.size);
            goto out;
        }
        if (bw.rank == 0 && bw.out_path != NULL && (out = fopen(bw.out_path, "w")) == NULL) {
            rg_err_set_errno(&bw.err, RG_ERR_IO, errno, "cannot open '%s'", bw.out_path);
            out = stdout;
            goto out;
        }
        if (rg__bw_run(&bw, out) != RG_OK) {
            if (bw.err.status == RG_OK) {
                rg_err_set(&bw.err, bw.xp->err.status, "%s", rg_xport_strerror(bw.xp));
            }
            goto out;
        }
    }
    if (rg__bw_release_others(&bw) != RG_OK) {
        goto out;
    }
    rc = RG_BENCH_EXIT_OK;
out:
    if (rc != RG_BENCH_EXIT_OK) {
        fprintf(stderr, "railgauge-bench: rank %d: %s\n", bw.rank, rg_err_message(&bw.err));
    }
    if (out != stdout) {
        fclose(out);
    }
    free(bw.sbuf);
    free(bw.rbuf);
    free(bw.sreq);
    free(bw.rreq);
    rg_xport_close(bw.xp);
    rg_boot_fini(bw.boot);
    return rc;
}
