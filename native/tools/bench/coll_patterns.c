/*
 * railgauge-bench msgrate, bcast, alltoall: message rate and two collectives
 * over a bare transport, OSU-style (osu_mbw_mr, osu_bcast, osu_alltoall).
 *
 * Rank 0 drives, as in the other patterns: every iteration starts with a
 * control word from rank 0 to every rank (run, or end of this size) and ends
 * with a report from every rank to rank 0 (its time, the bytes that failed
 * verification); rank 0 sends the next control word only when it has every
 * report. That gather and release is the barrier between iterations, so
 * iterations never pipeline, and it is outside what is timed: each rank times
 * its own part from the control word it received to the end of its part
 * (as osu_bcast times MPI_Bcast between barriers).
 *
 *   msgrate   ranks paired 0->1, 2->3, ...; an iteration is a batch of
 *             windows: the sender posts W messages, the receiver receives
 *             them and answers with an 8-byte acknowledgement. Messages/s
 *             per pair (its messages over its sender's time) and summed.
 *   bcast     from --root to every rank, by a binomial tree (or flat: the
 *             root sends to each rank in turn); per broadcast the average,
 *             smallest and largest time over the ranks, medians over the
 *             iterations.
 *   alltoall  pairwise exchange: in step k = 1 .. P-1 rank r sends its block
 *             to (r + k) mod P and receives from (r - k) mod P (its own block
 *             is a copy); times as bcast, and the bandwidth: the bytes that
 *             crossed the transport, P (P - 1) s, over the median of the
 *             largest time.
 *
 * --verify fills every message with a pattern of its sender, iteration and
 * place (verify.h) and checks every byte received. For bcast and alltoall the
 * fill and the check happen outside the timed part (before a rank reports);
 * msgrate fills and checks inside it, as bw does.
 *
 *   railgauge run -n 4 -- railgauge-bench alltoall --size 1MiB --verify
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/stats.h"
#include "base/timer.h"
#include "boot/boot.h"
#include "bench.h"
#include "verify.h"
#include "xport/xport.h"

#define RG__COLL_TIMEOUT_NS (120ull * 1000000000ull)
/* msgrate: a batch of windows is doubled until it takes this long. */
#define RG__COLL_BATCH_NS   (20ull * 1000000ull)
#define RG__COLL_MAX_BATCH  (1u << 20)

enum { RG__COLL_MSGRATE = 0, RG__COLL_BCAST, RG__COLL_ALLTOALL };
enum { RG__COLL_RUN = 1, RG__COLL_END = 2 };

/* Rank 0 to every rank before each iteration. */
typedef struct rg__coll_ctl {
    uint32_t cmd;   /* RG__COLL_RUN or RG__COLL_END (of this size) */
    uint32_t n;     /* msgrate: windows in this batch; else 1 */
} rg__coll_ctl_t;

/* Every rank to rank 0 after each iteration. */
typedef struct rg__coll_report {
    uint64_t ns;    /* this rank's time of the iteration */
    uint64_t bad;   /* bytes that failed verification */
} rg__coll_report_t;

typedef struct rg__coll {
    int             kind;
    const char     *name;
    rg_bench_opts_t opts;         /* transport, out path and sizes */
    int             window;       /* msgrate */
    int             root, flat;   /* bcast */
    int             verify;
    double          time_s, warmup_s;
    long            min_iters, max_iters;
    rg_boot_t      *boot;
    rg_xport_t     *xp;
    rg_err_t        err;
    int             rank, P;
    unsigned char  *sbuf, *rbuf;
    rg_xreq_t      *reqs;         /* window, or P */
    uint64_t        it;           /* iterations (msgrate: windows) of this size so far */
    uint64_t        bad;          /* this rank's bad bytes in this iteration */
    uint64_t        bad_total;    /* rank 0: every rank's, every size's */
    /* Rank 0: every rank's report of this iteration, and per timed iteration
     * the average, smallest and largest time over the ranks (us). */
    rg__coll_report_t *reports;
    double         *t_avg, *t_min, *t_max;
    size_t          nt, cap_t;
    uint64_t       *pair_ns, *pair_windows;   /* msgrate, per pair */
    FILE           *out;
} rg__coll_t;

static void rg__coll_usage(FILE *f, const char *name)
{
    fprintf(f,
        "usage: railgauge-bench %s [options]\n"
        "\n", name);
    if (strcmp(name, "msgrate") == 0) {
        fprintf(f,
            "Message rate (osu_mbw_mr): ranks paired 0->1, 2->3, ...; each sender posts a\n"
            "window of messages, its receiver answers each window with an acknowledgement.\n"
            "Messages/s per pair and summed over the pairs (an odd last rank idles).\n");
    } else if (strcmp(name, "bcast") == 0) {
        fprintf(f,
            "Broadcast latency (osu_bcast) from --root to every rank, binomial tree or flat;\n"
            "per broadcast the average, smallest and largest time over the ranks, medians\n"
            "over the iterations. Iterations are separated by a gather to rank 0 and its\n"
            "release (not timed), so they never overlap.\n");
    } else {
        fprintf(f,
            "All-to-all latency (osu_alltoall) by pairwise exchange: in step k rank r sends\n"
            "to (r+k) mod P and receives from (r-k) mod P; times as bcast, and the bandwidth\n"
            "P(P-1) x size / the median largest time. --size is the block per pair.\n");
    }
    fprintf(f,
        "\n"
        "  --transport T     as for the other patterns (default: $RG_TRANSPORT, else shm)\n"
        "  --size S          one message size (units allowed)\n"
        "  --sizes LIST      comma-separated sizes\n"
        "  --min-size S      smallest size of the sweep (default 1)\n"
        "  --max-size S      largest size of the sweep (default 1MiB); the sweep doubles\n"
        "                    (default: %s)\n"
        "  --time S          seconds measured per size after the warm-up (default 0.5)\n"
        "  --warmup S        seconds of warm-up per size, at least one iteration (default 0.1)\n"
        "  --min-iters N     timed iterations at least (default 10; msgrate: windows)\n"
        "  --max-iters N     timed iterations at most (default 100000; msgrate: windows)\n"
        "  --verify          fill and check every byte of every message (JSON: verified,\n"
        "                    bad_bytes)\n",
        strcmp(name, "msgrate") == 0 ? "8 B only" : "1 B .. 1 MiB");
    if (strcmp(name, "msgrate") == 0) {
        fprintf(f, "  --window W        messages per window (default 64)\n");
    }
    if (strcmp(name, "bcast") == 0) {
        fprintf(f,
            "  --root R          the broadcasting rank (default 0)\n"
            "  --algorithm A     binomial (default) or flat\n");
    }
    fprintf(f,
        "  --out FILE        JSON Lines, one line per size (default: standard output)\n"
        "  --json            accepted; the output is always JSON\n"
        "  -h, --help        this text\n");
}

/* One line naming the problem (fmt has one %s, for arg); the usage exit code. */
static int rg__coll_usage_error(const rg__coll_t *c, const char *fmt, const char *arg)
{
    fprintf(stderr, "railgauge-bench %s: ", c->name);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return RG_BENCH_EXIT_USAGE;
}

/* What was given on the command line, for the checks after it. */
typedef struct rg__coll_given {
    const char *sizes_arg;
    size_t      lo, hi;
    int         sweep, root, alg, window;
} rg__coll_given_t;

/* The checks that need every option read (an option of another pattern,
 * limits between options, the transport), then the sizes. */
static int rg__coll_finish_args(rg__coll_t *c, const rg__coll_given_t *g)
{
    if (g->window && c->kind != RG__COLL_MSGRATE) {
        return rg__coll_usage_error(c, "--window is an option of msgrate, not of %s",
                                    c->name);
    }
    if ((g->root || g->alg) && c->kind != RG__COLL_BCAST) {
        return rg__coll_usage_error(c, "--root and --algorithm are options of bcast, not "
                                    "of %s", c->name);
    }
    if (c->min_iters > c->max_iters) {
        return rg__coll_usage_error(c, "--min-iters is above --max-iters%s", "");
    }
    if (g->sizes_arg != NULL && g->sweep) {
        return rg__coll_usage_error(c, "give --size/--sizes or --min-size/--max-size, not "
                                    "both (--sizes '%s')", g->sizes_arg);
    }
    if (rg_xport_find(c->opts.transport) == NULL) {
        return rg__coll_usage_error(c, "unknown transport '%s'", c->opts.transport);
    }
    if (g->sizes_arg != NULL) {
        return rg_bench_parse_sizes(g->sizes_arg, &c->opts);
    }
    if (c->kind == RG__COLL_MSGRATE && !g->sweep) {
        c->opts.sizes[0] = 8;
        c->opts.nsizes   = 1;
        return 0;
    }
    if (g->lo > g->hi) {
        return rg__coll_usage_error(c, "--min-size is above --max-size%s", "");
    }
    return rg_bench_make_sweep(&c->opts, g->lo, g->hi, 1);
}

static int rg__coll_parse_args(int argc, char **argv, rg__coll_t *c)
{
    enum { O_TRANSPORT = 256, O_SIZE, O_SIZES, O_MIN, O_MAX, O_TIME, O_WARMUP, O_MINIT,
           O_MAXIT, O_VERIFY, O_WINDOW, O_ROOT, O_ALG, O_OUT, O_JSON };
    static const struct option longopts[] = {
        {"transport", required_argument, NULL, O_TRANSPORT},
        {"size", required_argument, NULL, O_SIZE},
        {"sizes", required_argument, NULL, O_SIZES},
        {"min-size", required_argument, NULL, O_MIN},
        {"max-size", required_argument, NULL, O_MAX},
        {"time", required_argument, NULL, O_TIME},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"min-iters", required_argument, NULL, O_MINIT},
        {"max-iters", required_argument, NULL, O_MAXIT},
        {"verify", no_argument, NULL, O_VERIFY},
        {"window", required_argument, NULL, O_WINDOW},
        {"root", required_argument, NULL, O_ROOT},
        {"algorithm", required_argument, NULL, O_ALG},
        {"out", required_argument, NULL, O_OUT},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    const char      *sizes_arg = NULL;
    size_t           lo = 1, hi = (size_t)1 << 20, v;
    int              c_opt;
    rg__coll_given_t given;
    char       *end;
    double      d;
    long        l;
    rg_err_t    perr;

    if (rg_xport_default_name(c->opts.transport, sizeof(c->opts.transport), &perr) != RG_OK) {
        return rg_bench_usage_error("%s", rg_err_message(&perr));
    }
    memset(&given, 0, sizeof(given));
    c->window    = 64;
    c->time_s    = 0.5;
    c->warmup_s  = 0.1;
    c->min_iters = 10;
    c->max_iters = 100000;
    optind = 2;
    opterr = 0;
    while ((c_opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c_opt) {
        case O_TRANSPORT:
            if (strlen(optarg) >= sizeof(c->opts.transport)) {
                return rg__coll_usage_error(c, "--transport: name too long '%s'", optarg);
            }
            snprintf(c->opts.transport, sizeof(c->opts.transport), "%s", optarg);
            break;
        case O_SIZE:
        case O_SIZES:
            if (sizes_arg != NULL) {
                return rg__coll_usage_error(c, "give --size or --sizes once, not again "
                                            "with '%s'", optarg);
            }
            sizes_arg = optarg;
            break;
        case O_MIN:
        case O_MAX:
            if (rg_parse_size(optarg, &v, &perr) != RG_OK || v > ((size_t)1 << 30)) {
                return rg__coll_usage_error(
                    c, c_opt == O_MIN ? "--min-size is not a size of 0 B .. 1 GiB: '%s'"
                                      : "--max-size is not a size of 0 B .. 1 GiB: '%s'",
                    optarg);
            }
            *(c_opt == O_MIN ? &lo : &hi) = v;
            given.sweep = 1;
            break;
        case O_TIME:
        case O_WARMUP:
            d = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(d >= 0 && d <= 3600) ||
                (c_opt == O_TIME && d == 0)) {
                return rg__coll_usage_error(
                    c, c_opt == O_TIME ? "--time is not seconds in (0, 3600]: '%s'"
                                       : "--warmup is not seconds in [0, 3600]: '%s'",
                    optarg);
            }
            *(c_opt == O_TIME ? &c->time_s : &c->warmup_s) = d;
            break;
        case O_MINIT:
        case O_MAXIT:
            l = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || l < 1 || l > 100000000) {
                return rg__coll_usage_error(
                    c, c_opt == O_MINIT ? "--min-iters is not an integer 1 .. 1e8: '%s'"
                                        : "--max-iters is not an integer 1 .. 1e8: '%s'",
                    optarg);
            }
            *(c_opt == O_MINIT ? &c->min_iters : &c->max_iters) = l;
            break;
        case O_VERIFY:
            c->verify = 1;
            break;
        case O_WINDOW:
            l = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || l < 1 || l > 1024) {
                return rg__coll_usage_error(c, "--window is not an integer 1 .. 1024: '%s'",
                                            optarg);
            }
            c->window    = (int)l;
            given.window = 1;
            break;
        case O_ROOT:
            l = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || l < 0 || l > 1 << 20) {
                return rg__coll_usage_error(c, "--root is not a rank: '%s'", optarg);
            }
            c->root    = (int)l;
            given.root = 1;
            break;
        case O_ALG:
            if (strcmp(optarg, "binomial") != 0 && strcmp(optarg, "flat") != 0) {
                return rg__coll_usage_error(c, "--algorithm is binomial or flat, not '%s'",
                                            optarg);
            }
            c->flat   = strcmp(optarg, "flat") == 0;
            given.alg = 1;
            break;
        case O_OUT:
            c->opts.out_path = optarg;
            break;
        case O_JSON:
            break;
        case 'h':
            rg__coll_usage(stdout, c->name);
            return -1;
        default:
            fprintf(stderr, "railgauge-bench %s: unknown option or missing value '%s'\n",
                    c->name, argv[optind - 1]);
            rg__coll_usage(stderr, c->name);
            return RG_BENCH_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        return rg__coll_usage_error(c, "unexpected argument '%s'", argv[optind]);
    }
    given.sizes_arg = sizes_arg;
    given.lo        = lo;
    given.hi        = hi;
    return rg__coll_finish_args(c, &given);
}

/* ---- sending, receiving ---------------------------------------------------------- */

static rg_status_t rg__coll_wait(rg__coll_t *c, rg_xreq_t *req, size_t len)
{
    rg_status_t st = rg_xport_wait(c->xp, req, RG__COLL_TIMEOUT_NS);

    if (st == RG_ERR_TRUNCATED || (st == RG_OK && req->kind == RG_XREQ_RECV &&
                                   req->msg_len != len)) {
        return rg_err_set(&c->err, RG_ERR_PARSE, "a message of %zu B from rank %d, not %zu B",
                          req->msg_len, req->source, len);
    }
    return st;
}

static rg_status_t rg__coll_waitall(rg__coll_t *c, rg_xreq_t *reqs, int n, size_t len)
{
    rg_status_t st;
    int         i;

    for (i = 0; i < n; i++) {
        st = rg__coll_wait(c, &reqs[i], len);
        if (st != RG_OK) {
            return st;
        }
    }
    return RG_OK;
}

static rg_status_t rg__coll_recv(rg__coll_t *c, int peer, void *buf, size_t len)
{
    rg_xreq_t   req;
    rg_status_t st = rg_xport_irecv(c->xp, peer, buf, len, &req);

    return st < 0 ? st : rg__coll_wait(c, &req, len);
}

/* ---- the patterns: one iteration each -------------------------------------------- */

/* msgrate: n windows of pair (rank & ~1, rank | 1), windows it .. it + n - 1. */
static rg_status_t rg__msgrate_run(rg__coll_t *c, size_t s, uint32_t n)
{
    int         sender = c->rank % 2 == 0, peer = c->rank ^ 1, k, W = c->window;
    uint64_t    win, ack;
    rg_status_t st;

    if (peer >= c->P) {
        return RG_OK;   /* the odd last rank */
    }
    for (win = c->it; win < c->it + n; win++) {
        for (k = 0; k < W; k++) {
            unsigned char *b = (sender ? c->sbuf : c->rbuf) + (size_t)k * s;

            if (sender) {
                if (c->verify) {
                    rg_bench_fill(b, s, rg_bench_seed(c->rank, win, (uint64_t)k));
                }
                st = rg_xport_isend(c->xp, peer, b, s, &c->reqs[k]);
            } else {
                st = rg_xport_irecv(c->xp, peer, b, s, &c->reqs[k]);
            }
            if (st < 0) {
                return st;
            }
        }
        st = rg__coll_waitall(c, c->reqs, W, s);
        if (st != RG_OK) {
            return st;
        }
        if (!sender) {
            for (k = 0; c->verify && k < W; k++) {
                c->bad += rg_bench_check(c->rbuf + (size_t)k * s, s,
                                         rg_bench_seed(peer, win, (uint64_t)k));
            }
            st = rg_xport_send(c->xp, peer, &win, sizeof(win));
        } else {
            st = rg__coll_recv(c, peer, &ack, sizeof(ack));
            if (st == RG_OK && ack != win) {
                st = rg_err_set(&c->err, RG_ERR_PARSE, "acknowledgement of window %llu, "
                                "expected %llu", (unsigned long long)ack,
                                (unsigned long long)win);
            }
        }
        if (st != RG_OK) {
            return st;
        }
    }
    return RG_OK;
}

/* bcast: the root's message (sbuf) to every rank (into rbuf, which a rank of
 * the tree then sends on). Ranks are renumbered so that the root is 0. */
static rg_status_t rg__bcast_run(rg__coll_t *c, size_t s)
{
    int            P = c->P, vr = (c->rank - c->root + P) % P, mask, n = 0, v;
    unsigned char *buf = vr == 0 ? c->sbuf : c->rbuf;
    rg_status_t    st;

    if (c->flat) {
        if (vr != 0) {
            return rg__coll_recv(c, c->root, buf, s);
        }
        for (v = 1; v < P; v++) {
            st = rg_xport_isend(c->xp, (v + c->root) % P, buf, s, &c->reqs[n++]);
            if (st < 0) {
                return st;
            }
        }
        return rg__coll_waitall(c, c->reqs, n, s);
    }
    /* Binomial: receive from the rank that differs in the lowest set bit,
     * then send to vr + 2^j for every 2^j below that bit. */
    for (mask = 1; mask < P; mask <<= 1) {
        if (vr & mask) {
            st = rg__coll_recv(c, (vr - mask + c->root) % P, buf, s);
            if (st != RG_OK) {
                return st;
            }
            break;
        }
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < P) {
            st = rg_xport_isend(c->xp, (vr + mask + c->root) % P, buf, s, &c->reqs[n++]);
            if (st < 0) {
                return st;
            }
        }
    }
    return rg__coll_waitall(c, c->reqs, n, s);
}

/* alltoall: block j of sbuf to rank j, block j of rbuf from rank j. */
static rg_status_t rg__alltoall_run(rg__coll_t *c, size_t s)
{
    int         r = c->rank, P = c->P, k, to, from;
    rg_status_t st;

    memcpy(c->rbuf + (size_t)r * s, c->sbuf + (size_t)r * s, s);
    for (k = 1; k < P; k++) {
        to   = (r + k) % P;
        from = (r - k + P) % P;
        st = rg_xport_irecv(c->xp, from, c->rbuf + (size_t)from * s, s, &c->reqs[0]);
        if (st < 0) {
            return st;
        }
        st = rg_xport_isend(c->xp, to, c->sbuf + (size_t)to * s, s, &c->reqs[1]);
        if (st < 0) {
            return st;
        }
        st = rg__coll_waitall(c, c->reqs, 2, s);
        if (st != RG_OK) {
            return st;
        }
    }
    return RG_OK;
}

/* Before iteration c->it (outside its timing): what this rank sends in it. */
static void rg__coll_fill(rg__coll_t *c, size_t s)
{
    int j;

    if (!c->verify) {
        return;
    }
    if (c->kind == RG__COLL_BCAST && c->rank == c->root) {
        rg_bench_fill(c->sbuf, s, rg_bench_seed(c->root, c->it, 0));
    } else if (c->kind == RG__COLL_ALLTOALL) {
        for (j = 0; j < c->P; j++) {
            rg_bench_fill(c->sbuf + (size_t)j * s, s,
                          rg_bench_seed(c->rank, c->it, (uint64_t)j));
        }
    }
}

/* After iteration c->it (outside its timing): what this rank received. */
static void rg__coll_check(rg__coll_t *c, size_t s)
{
    int j;

    if (!c->verify) {
        return;
    }
    if (c->kind == RG__COLL_BCAST && c->rank != c->root) {
        c->bad += rg_bench_check(c->rbuf, s, rg_bench_seed(c->root, c->it, 0));
    } else if (c->kind == RG__COLL_ALLTOALL) {
        for (j = 0; j < c->P; j++) {
            c->bad += rg_bench_check(c->rbuf + (size_t)j * s, s,
                                     rg_bench_seed(j, c->it, (uint64_t)c->rank));
        }
    }
}

/* One iteration of this rank, timed from the control word to its end. */
static rg_status_t rg__coll_iteration(rg__coll_t *c, size_t s, uint32_t n,
                                      rg__coll_report_t *rep)
{
    uint64_t    t0 = rg_time_mono_ns();
    rg_status_t st;

    c->bad = 0;
    if (c->kind == RG__COLL_MSGRATE) {
        st = rg__msgrate_run(c, s, n);
    } else if (c->kind == RG__COLL_BCAST) {
        st = rg__bcast_run(c, s);
    } else {
        st = rg__alltoall_run(c, s);
    }
    rep->ns = rg_time_mono_ns() - t0;
    if (st != RG_OK) {
        return st;
    }
    rg__coll_check(c, s);
    rep->bad = c->bad;
    c->it += c->kind == RG__COLL_MSGRATE ? n : 1;
    rg__coll_fill(c, s);
    return RG_OK;
}

/* ---- rank 0: the run of one size ------------------------------------------------- */

static int rg__coll_grow(double **x_p, size_t cap)
{
    double *x = realloc(*x_p, cap * sizeof(double));

    if (x == NULL) {
        return -1;
    }
    *x_p = x;
    return 0;
}

static rg_status_t rg__coll_push(rg__coll_t *c, double avg, double lo, double hi)
{
    if (c->nt == c->cap_t) {
        size_t cap = c->cap_t ? 2 * c->cap_t : 1024;

        if (rg__coll_grow(&c->t_avg, cap) != 0 || rg__coll_grow(&c->t_min, cap) != 0 ||
            rg__coll_grow(&c->t_max, cap) != 0) {
            return rg_err_set(&c->err, RG_ERR_NOMEM, "out of memory for %zu iterations", cap);
        }
        c->cap_t = cap;
    }
    c->t_avg[c->nt] = avg;
    c->t_min[c->nt] = lo;
    c->t_max[c->nt] = hi;
    c->nt++;
    return RG_OK;
}

/* Rank 0's record of one iteration, from every rank's report: the bad
 * bytes always, the times where the iteration is timed (not a warm-up). */
static rg_status_t rg__coll_record(rg__coll_t *c, uint32_t n, int timed, uint64_t *bad)
{
    double sum = 0, lo = 0, hi = 0, t;
    int    r;

    for (r = 0; r < c->P; r++) {
        *bad += c->reports[r].bad;
    }
    if (!timed) {
        return RG_OK;
    }
    if (c->kind == RG__COLL_MSGRATE) {
        for (r = 0; r + 1 < c->P; r += 2) {
            c->pair_ns[r / 2] += c->reports[r].ns;
            c->pair_windows[r / 2] += n;
        }
        c->nt += n;
        return RG_OK;
    }
    for (r = 0; r < c->P; r++) {
        t = (double)c->reports[r].ns * 1e-3;
        sum += t;
        lo = r == 0 || t < lo ? t : lo;
        hi = r == 0 || t > hi ? t : hi;
    }
    return rg__coll_push(c, sum / c->P, lo, hi);
}

static double rg__coll_median(rg__coll_t *c, double *x)
{
    rg_stats_t st;

    return rg_stats_compute(x, c->nt, &st, &c->err) == RG_OK ? st.median : 0.0;
}

static rg_status_t rg__coll_write(rg__coll_t *c, size_t s, uint64_t warm, double secs,
                                  uint64_t bad)
{
    char      line[16384], info[12288];
    rg_json_t js;
    int       p, npairs = c->P / 2;

    rg_json_init(&js, line, sizeof(line));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "type", c->name);
    rg_json_kv_string(&js, "transport", c->xp->attr.name);
    rg_json_kv_int(&js, "ranks", c->P);
    rg_json_kv_uint(&js, "size_bytes", s);
    rg_json_kv_uint(&js, "warmup_iterations", warm);
    rg_json_kv_double(&js, "seconds", secs);
    if (c->kind == RG__COLL_MSGRATE) {
        double total = 0, bytes = 0;

        rg_json_kv_int(&js, "window", c->window);
        rg_json_kv_uint(&js, "windows", c->nt);
        rg_json_key(&js, "pairs");
        rg_json_array_begin(&js);
        for (p = 0; p < npairs; p++) {
            double msgs = (double)c->pair_windows[p] * c->window;
            double t    = (double)c->pair_ns[p] * 1e-9;
            double rate = t > 0 ? msgs / t : 0.0;

            total += rate;
            bytes += rate * (double)s;
            rg_json_object_begin(&js);
            rg_json_kv_int(&js, "sender", 2 * p);
            rg_json_kv_int(&js, "receiver", 2 * p + 1);
            rg_json_kv_double(&js, "messages", msgs);
            rg_json_kv_double(&js, "seconds", t);
            rg_json_kv_double(&js, "msgs_per_s", rate);
            rg_json_object_end(&js);
        }
        rg_json_array_end(&js);
        rg_json_kv_double(&js, "msgs_per_s", total);
        rg_json_kv_double(&js, "bandwidth_MBps", bytes / 1e6);
    } else {
        double avg = rg__coll_median(c, c->t_avg);
        double lo  = rg__coll_median(c, c->t_min);
        double hi  = rg__coll_median(c, c->t_max);

        if (c->kind == RG__COLL_BCAST) {
            rg_json_kv_int(&js, "root", c->root);
            rg_json_kv_string(&js, "algorithm", c->flat ? "flat" : "binomial");
        }
        rg_json_kv_uint(&js, "iterations", c->nt);
        rg_json_kv_double(&js, "avg_us", avg);
        rg_json_kv_double(&js, "min_us", lo);
        rg_json_kv_double(&js, "max_us", hi);
        if (c->kind == RG__COLL_ALLTOALL) {
            double moved = (double)c->P * (c->P - 1) * (double)s;

            rg_json_kv_double(&js, "bytes_per_alltoall", moved);
            rg_json_kv_double(&js, "bandwidth_MBps", hi > 0 ? moved / hi : 0.0);
        }
    }
    if (c->verify) {
        rg_json_kv_bool(&js, "verified", bad == 0);
        rg_json_kv_uint(&js, "bad_bytes", bad);
    }
    if (c->xp->ops->info_json(c->xp, info, sizeof(info)) == RG_OK) {
        rg_json_key(&js, "transport_info");
        rg_json_raw(&js, info);
    }
    rg_json_object_end(&js);
    return rg_json_write_line(&js, c->out, &c->err);
}

static rg_status_t rg__coll_size_root(rg__coll_t *c, size_t s)
{
    uint64_t       start = rg_time_mono_ns(), t_start = 0, now, warm = 0, bad = 0, slow;
    uint32_t       n = 1;
    int            measuring = 0, r;
    size_t         len;
    rg__coll_ctl_t ctl;
    rg_status_t    st;

    c->nt = 0;
    if (c->kind == RG__COLL_MSGRATE) {
        memset(c->pair_ns, 0, (size_t)(c->P / 2) * sizeof(uint64_t));
        memset(c->pair_windows, 0, (size_t)(c->P / 2) * sizeof(uint64_t));
    }
    for (;;) {
        now = rg_time_mono_ns();
        if (!measuring && c->it > 0 && (double)(now - start) >= c->warmup_s * 1e9) {
            measuring = 1;
            t_start   = now;
            warm      = c->it;
        }
        ctl.cmd = RG__COLL_RUN;
        if (measuring && ((c->nt >= (size_t)c->min_iters &&
                           (double)(now - t_start) >= c->time_s * 1e9) ||
                          c->nt >= (size_t)c->max_iters)) {
            ctl.cmd = RG__COLL_END;
        }
        if (measuring && c->kind == RG__COLL_MSGRATE &&
            (uint64_t)n > (uint64_t)c->max_iters - c->nt) {
            n = (uint32_t)((uint64_t)c->max_iters - c->nt);
        }
        ctl.n = c->kind == RG__COLL_MSGRATE ? n : 1;
        for (r = 1; r < c->P; r++) {
            st = rg_xport_send(c->xp, r, &ctl, sizeof(ctl));
            if (st != RG_OK) {
                return st;
            }
        }
        if (ctl.cmd == RG__COLL_END) {
            break;
        }
        st = rg__coll_iteration(c, s, ctl.n, &c->reports[0]);
        if (st != RG_OK) {
            return st;
        }
        for (r = 1; r < c->P; r++) {
            st = rg_xport_recv(c->xp, r, &c->reports[r], sizeof(c->reports[r]), &len);
            if (st == RG_OK && len != sizeof(c->reports[r])) {
                st = rg_err_set(&c->err, RG_ERR_PARSE, "a report of %zu B from rank %d", len,
                                r);
            }
            if (st != RG_OK) {
                return st;
            }
        }
        st = rg__coll_record(c, ctl.n, measuring, &bad);
        if (st != RG_OK) {
            return st;
        }
        if (c->kind == RG__COLL_MSGRATE) {
            /* Batches grow until the slowest pair's takes RG__COLL_BATCH_NS, so
             * that the barrier between batches is a small share of the run. */
            for (slow = 0, r = 0; r + 1 < c->P; r += 2) {
                slow = c->reports[r].ns > slow ? c->reports[r].ns : slow;
            }
            if (slow < RG__COLL_BATCH_NS && n < RG__COLL_MAX_BATCH) {
                n *= 2;
            }
        }
    }
    c->bad_total += bad;
    return rg__coll_write(c, s, warm, (double)(now - t_start) * 1e-9, bad);
}

static rg_status_t rg__coll_size_follow(rg__coll_t *c, size_t s)
{
    rg__coll_ctl_t    ctl;
    rg__coll_report_t rep;
    size_t            len;
    rg_status_t       st;

    for (;;) {
        st = rg_xport_recv(c->xp, 0, &ctl, sizeof(ctl), &len);
        if (st == RG_OK && (len != sizeof(ctl) || (ctl.cmd != RG__COLL_RUN &&
                                                   ctl.cmd != RG__COLL_END))) {
            st = rg_err_set(&c->err, RG_ERR_PARSE, "a control word of %zu B (command %u) "
                            "from rank 0", len, ctl.cmd);
        }
        if (st != RG_OK || ctl.cmd == RG__COLL_END) {
            return st;
        }
        st = rg__coll_iteration(c, s, ctl.n, &rep);
        if (st != RG_OK) {
            return st;
        }
        st = rg_xport_send(c->xp, 0, &rep, sizeof(rep));
        if (st != RG_OK) {
            return st;
        }
    }
}

static rg_status_t rg__coll_alloc(rg__coll_t *c)
{
    size_t s = c->opts.sizes[c->opts.nsizes - 1], nbuf = 1, nreq = (size_t)c->P;

    if (c->kind == RG__COLL_MSGRATE) {
        nbuf = nreq = (size_t)c->window;
    } else if (c->kind == RG__COLL_ALLTOALL) {
        nbuf = (size_t)c->P;
    }
    if (s > 0 && nbuf > ((size_t)1 << 31) / s) {
        return rg_err_set(&c->err, RG_ERR_INVALID, "%s of %zu B needs %zu x %zu B per "
                          "buffer, above 2 GiB", c->name, s, nbuf, s);
    }
    /* At least one byte each, so that a run of 0-byte messages has buffers. */
    c->sbuf = calloc(nbuf, s > 0 ? s : 1);
    c->rbuf = calloc(nbuf, s > 0 ? s : 1);
    c->reqs = calloc(nreq + 2, sizeof(*c->reqs));
    c->reports = calloc((size_t)c->P, sizeof(*c->reports));
    c->pair_ns = calloc((size_t)c->P / 2 + 1, sizeof(uint64_t));
    c->pair_windows = calloc((size_t)c->P / 2 + 1, sizeof(uint64_t));
    if (!c->sbuf || !c->rbuf || !c->reqs || !c->reports || !c->pair_ns || !c->pair_windows) {
        return rg_err_set(&c->err, RG_ERR_NOMEM, "cannot allocate 2 x %zu x %zu B", nbuf, s);
    }
    return RG_OK;
}

int rg_bench_coll_main(int argc, char **argv)
{
    rg__coll_t c;
    size_t     i;
    int        rc;

    memset(&c, 0, sizeof(c));
    c.name = argv[1];
    c.kind = strcmp(c.name, "msgrate") == 0 ? RG__COLL_MSGRATE
             : strcmp(c.name, "bcast") == 0 ? RG__COLL_BCAST : RG__COLL_ALLTOALL;
    c.out  = stdout;
    rc = rg__coll_parse_args(argc, argv, &c);
    if (rc != 0) {
        return rc < 0 ? RG_BENCH_EXIT_OK : rc;
    }
    rc = RG_BENCH_EXIT_FAIL;
    if (rg_boot_init(&c.boot, &c.err) != RG_OK) {
        goto out;
    }
    c.rank = rg_boot_rank(c.boot);
    c.P    = rg_boot_size(c.boot);
    /* User errors known only now are the same on every rank: rank 0 says so. */
    if (c.P < 2) {
        rg_err_set(&c.err, RG_ERR_INVALID, "%s needs at least 2 ranks, not %d: railgauge run "
                   "-n 2 (or more) -- railgauge-bench %s", c.name, c.P, c.name);
        rc = RG_BENCH_EXIT_USAGE;
        goto out;
    }
    if (c.kind == RG__COLL_BCAST && c.root >= c.P) {
        rg_err_set(&c.err, RG_ERR_INVALID, "--root %d is not a rank of %d", c.root, c.P);
        rc = c.rank == 0 ? RG_BENCH_EXIT_USAGE : -RG_BENCH_EXIT_USAGE;
        goto out;
    }
    if (rg__coll_alloc(&c) != RG_OK) {
        if (c.err.status == RG_ERR_INVALID) {
            rc = c.rank == 0 ? RG_BENCH_EXIT_USAGE : -RG_BENCH_EXIT_USAGE;
        }
        goto out;
    }
    if (rg_xport_open(c.opts.transport, c.boot, &c.xp, &c.err) != RG_OK) {
        goto out;
    }
    if (c.rank == 0 && c.opts.out_path != NULL &&
        (c.out = fopen(c.opts.out_path, "w")) == NULL) {
        rg_err_set_errno(&c.err, RG_ERR_IO, errno, "cannot open '%s' for writing",
                         c.opts.out_path);
        c.out = stdout;
        goto out;
    }
    for (i = 0; i < c.opts.nsizes; i++) {
        rg_status_t st;

        c.it = 0;
        rg__coll_fill(&c, c.opts.sizes[i]);
        st = c.rank == 0 ? rg__coll_size_root(&c, c.opts.sizes[i])
                         : rg__coll_size_follow(&c, c.opts.sizes[i]);
        if (st != RG_OK) {
            if (c.err.status == RG_OK) {
                rg_err_set(&c.err, st, "%s", rg_xport_strerror(c.xp));
            }
            goto out;
        }
    }
    rc = RG_BENCH_EXIT_OK;
    if (c.bad_total != 0) {
        /* The lines say at which sizes; the exit status that bytes were wrong. */
        rg_err_set(&c.err, RG_ERR_PARSE, "%llu bytes arrived wrong",
                   (unsigned long long)c.bad_total);
        rc = RG_BENCH_EXIT_FAIL;
    }
out:
    if (rc > RG_BENCH_EXIT_OK) {
        fprintf(stderr, "railgauge-bench %s: rank %d: %s\n", c.name, c.rank,
                rg_err_message(&c.err));
    }
    if ((rc == RG_BENCH_EXIT_USAGE || rc == -RG_BENCH_EXIT_USAGE) && c.boot != NULL && c.P > 1) {
        /* A user error every rank found alike, said by rank 0 alone: the others
         * leave only after it has said it (a launcher ends the job at the first
         * exit). */
        rg_err_t berr;

        (void)rg_boot_barrier(c.boot, &berr);
    }
    if (c.out != stdout) {
        fclose(c.out);
    }
    free(c.sbuf);
    free(c.rbuf);
    free(c.reqs);
    free(c.reports);
    free(c.pair_ns);
    free(c.pair_windows);
    free(c.t_avg);
    free(c.t_min);
    free(c.t_max);
    rg_xport_close(c.xp);
    rg_boot_fini(c.boot);
    return rc < 0 ? -rc : rc;
}
