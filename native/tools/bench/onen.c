/*
 * The 1:n / n:1 pattern ("onen") of the LoP model (Hoefler and Rehm, "A
 * Communication Model for Small Messages with InfiniBand", and the 1:n n:1
 * microbenchmark of Hoefler's barrier slides): how the round trip to p peers
 * grows with p, and what posting the p messages costs, per posting mode.
 * docs/lop.md defines the records exactly; in short, for p = 1 .. P (P the
 * ranks but one, or --max-p):
 *
 *   1:n  rank 0 takes the time, posts one message of s bytes to each of the
 *        ranks 1 .. p, each answers at once with s bytes, rank 0 has all p
 *        answers and takes the time: one round.
 *   n:1  rank 0 releases the ranks 1 .. p with an untimed empty message;
 *        each takes the time, sends s bytes to rank 0 and waits for its
 *        answer, which rank 0 posts as soon as it has the message; the round
 *        is the longest of the p peers' times (sent to rank 0 after a batch).
 *
 * Modes, the same on both sides of a round (the peers answer in the mode):
 *   single  one rg_xport_isend per message;
 *   list    rg_xport_isend_list: 1:n posts the p sends in one call; n:1
 *           posts, in one call, the answers to every message that is there
 *           when rank 0 looks (one call per round where they come together,
 *           up to p where they come one by one; "posts_per_round" says);
 *   inject  rg_xport_inject (inline, request-free sends);
 *   rma     rg_xport_win_write into the peer's memory window: s bytes, then
 *           an 8-byte flag (the round's number) that the target polls; the
 *           answer is a write too; no receive is posted anywhere.
 * A mode the transport lacks (rg_xport_has) gets no records; the header and
 * footer say why ("modes_unsupported"), and stderr once.
 *
 * Overheads, per round, over rank 0's posting calls only:
 *   o_s  the time rank 0 spends in the calls that post its p sends (1:n) or
 *        its p answers (n:1), divided by p; in 1:n one interval from before
 *        the first call to after the last (the loop does nothing else), in
 *        n:1 the sum of the intervals around each call (or list call);
 *   o_r  the time of the calls that post rank 0's p receives (rg_xport_irecv,
 *        one per peer, for the answers in 1:n and the messages in n:1),
 *        divided by p; they are posted before the round starts (receives can
 *        be posted in advance, as the paper says), so o_r is timed apart
 *        from the round; none in rma mode.
 * Every interval is less the timer's own cost (one read per interval, one
 * more for the read in the middle of a 1:n round).
 *
 * Control: rank 0 decides every point and starts each batch with a control
 * message to the ranks 1 .. p only; ranks above p stay asleep in their wait
 * for the next control message (the transport's block: a futex, poll, or
 * naps), so they take no CPU from the round. Each point runs in batches until
 * the 95% confidence interval of the median round is within --target-rel or
 * its budget is spent, as prtt does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "bench.h"

/* A batch aims at this much time, so control messages cost nothing. */
#define RG_ONEN_BATCH_NS    20e6
/* Fewer rounds than this never give a median CI worth its name. */
#define RG_ONEN_MIN_BATCH   4
/* Untimed rounds before every point (the peers that join are asleep). */
#define RG_ONEN_WARM_ROUNDS 8
/* A rank that polls its window checks this often whether the writer, where
 * it runs on this host, is alive, and gives up after the timeout without the
 * write (a writer on another host that died: the launcher ends the job). */
#define RG_ONEN_POLL_LIVE_NS    (50ull * 1000000ull)
#define RG_ONEN_POLL_TIMEOUT_NS (30ull * 1000000000ull)
#define RG_ONEN_SLOT_ALIGN  64u

enum { RG_ONEN_CMD_END = 0, RG_ONEN_CMD_BATCH = 0x6f6e656e };

static const char *const rg__onen_mode_names[RG_ONEN_NMODES] = {"single", "list", "inject",
                                                                "rma"};
static const char *const rg__onen_dir_names[RG_ONEN_NDIRS] = {"1:n", "n:1"};

/* The control message that starts a batch (or ends the run). */
typedef struct rg_onen_ctl {
    uint32_t cmd;      /* RG_ONEN_CMD_* */
    uint32_t dir;      /* RG_ONEN_DIR_* */
    uint32_t mode;     /* RG_ONEN_MODE_* */
    uint32_t p;        /* peers in each round: ranks 1 .. p */
    uint64_t size;     /* bytes per message */
    uint64_t reps;     /* rounds in this batch */
    uint64_t seq;      /* rma: the flag of the batch's first round */
    uint32_t record;   /* n:1: send the round times to rank 0 after the batch */
    uint32_t pad;
} rg_onen_ctl_t;

/* The results of one point. */
typedef struct rg_onen_point {
    int        dir, mode, p;
    size_t     size;
    rg_stats_t rtt;
    double     os_med, os_min, or_med, or_min, os_mean, or_mean, posts;
    int        stable;
} rg_onen_point_t;

/* The state of a run on every rank. */
typedef struct rg_onen {
    rg_bench_t    *bench;
    rg_xport_t    *xp;
    int            rank, size, maxp;
    unsigned       asked;                   /* modes asked for */
    unsigned       modes;                   /* modes measured */
    unsigned       dirs;
    const char    *why[RG_ONEN_NMODES];     /* asked for but not measured: why */
    char           why_win[512];
    size_t         smax;                    /* the largest size */
    size_t         slot;                    /* receive slot per peer, >= smax */
    unsigned char *sbuf;                    /* the payload: smax bytes (>= 1) */
    unsigned char *rbuf;                    /* size receive slots */
    unsigned char  relbuf[8];               /* the empty release of n:1 */
    rg_xreq_t     *rreq, *sreq, *wreq, *relreq;  /* size entries each */
    rg_xsend_t    *list;                    /* size entries */
    unsigned char *handled;                 /* size entries */
    /* rma: this rank's window holds one slot per writer rank */
    rg_xwin_t     *win;
    unsigned char *wmem;
    size_t         wslot;
    unsigned char *wsrc;                    /* what a write sends: payload, flag */
    uint64_t       seq;                     /* rank 0: the flag of the next round */
    /* samples (rank 0: rtt, os, orr, posts; the others: times) */
    double        *rtt, *os, *orr, *posts, *times;
    size_t         cap;
    double         ovh_us;                  /* the cost of one timer read */
    int            first_point;
    /* every rank's pid and host, for the liveness of window writers */
    int32_t       *pids;
    uint64_t      *hosts;
} rg_onen_t;

/* ---- options ------------------------------------------------------------ */

static int rg__onen_parse_list(const char *text, const char *const *names, int n,
                               unsigned *mask_p, const char **bad_p)
{
    static char copy[512];
    char       *tok, *save = NULL;
    unsigned    mask = 0;
    int         i;

    if (strlen(text) >= sizeof(copy)) {
        *bad_p = "(list too long)";
        return -1;
    }
    strcpy(copy, text);
    for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < n && strcmp(tok, names[i]) != 0; i++) {
        }
        if (i == n) {
            *bad_p = tok;
            return -1;
        }
        mask |= 1u << i;
    }
    if (mask == 0) {
        *bad_p = "";
        return -1;
    }
    *mask_p = mask;
    return 0;
}

int rg_bench_onen_parse_modes(const char *text, unsigned *mask_p, const char **bad_p)
{
    return rg__onen_parse_list(text, rg__onen_mode_names, RG_ONEN_NMODES, mask_p, bad_p);
}

int rg_bench_onen_parse_directions(const char *text, unsigned *mask_p, const char **bad_p)
{
    return rg__onen_parse_list(text, rg__onen_dir_names, RG_ONEN_NDIRS, mask_p, bad_p);
}

/* ---- small helpers ------------------------------------------------------ */

static inline void rg__onen_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline uint64_t rg__onen_ticks(const rg_onen_t *on)
{
    return rg_timer_ticks(&on->bench->timer);
}

/* An interval of the timer in us, less the cost of `reads` timer reads it
 * holds, and never below 0 (a correction larger than a tiny interval). */
static inline double rg__onen_us(const rg_onen_t *on, uint64_t t0, uint64_t t1, int reads)
{
    double raw = rg_timer_us(&on->bench->timer, t1 - t0);
    double us  = raw - reads * on->ovh_us;

    return us > 0 ? us : 0.0;
}

static rg_status_t rg__onen_fail(rg_onen_t *on, rg_status_t st, const char *what)
{
    return rg_err_set(&on->bench->err, st < 0 ? st : RG_ERR_IO, "%s failed: %s", what,
                      rg_xport_strerror(on->xp));
}

static inline size_t rg__onen_align8(size_t n)
{
    return (n + 7u) & ~(size_t)7u;
}

/* The flag word of writer `from` in this rank's window, for messages of s bytes. */
static inline uint64_t *rg__onen_flag(const rg_onen_t *on, int from, size_t s)
{
    return (uint64_t *)(void *)(on->wmem + (size_t)from * on->wslot + rg__onen_align8(s));
}

static inline uint64_t rg__onen_flag_get(const rg_onen_t *on, int from, size_t s)
{
    return __atomic_load_n(rg__onen_flag(on, from, s), __ATOMIC_ACQUIRE);
}

/* ---- waiting ------------------------------------------------------------- */

/* Inside a round: rg_xport_wait with the bench's settings (spin, then yield,
 * never a sleep while the round is timed). */
static rg_status_t rg__onen_wait(rg_onen_t *on, rg_xreq_t *req, const char *what)
{
    rg_status_t st = rg_xport_wait(on->xp, req, 0);

    return st == RG_OK ? RG_OK : rg__onen_fail(on, st, what);
}

/* Between batches and for ranks above p: a short spin and yield, then up to
 * RG_ONEN_IDLE_BLOCK_NS asleep in the transport (futex, poll), then naps of
 * growing length (up to 1 ms) with a test after each, and every 50 ms one
 * short wait in the transport, whose sleep checks that the peers are alive.
 * So a rank that waits for its next control message takes no CPU from the
 * ranks that measure, also over transports whose sleep is a short nap
 * (ofi: 100 us) or that cannot sleep (mpi). A control message is untimed:
 * the up to 1 ms it may wait costs nothing but wall time. */
#define RG_ONEN_IDLE_BLOCK_NS (5ull * 1000000ull)
#define RG_ONEN_IDLE_LIVE_NS  (50ull * 1000000ull)

static rg_status_t rg__onen_idle_wait(rg_onen_t *on, rg_xreq_t *req, const char *what)
{
    rg_xport_t            *xp    = on->xp;
    rg_xport_wait_config_t saved = xp->wait;
    const int              sleeps = xp->ops->block != rg_xport_no_block;
    struct timespec        nap;
    uint64_t               start, now, live = 0, ns = 20000;
    rg_status_t            st;

    xp->wait.yield_ns = 20e3;
    xp->wait.block_ns = 1e6;
    start = rg_time_mono_ns();
    st    = sleeps ? rg_xport_wait(xp, req, RG_ONEN_IDLE_BLOCK_NS) : RG_ERR_TIMEOUT;
    while (st == RG_ERR_TIMEOUT || st == RG_INPROGRESS) {
        now = rg_time_mono_ns();
        if (!sleeps && now - start < 1000000) {
            rg_xport_wait_yield(&xp->wait);
        } else {
            nap.tv_sec  = 0;
            nap.tv_nsec = (long)ns;
            nanosleep(&nap, NULL);
            ns = ns * 2 > 1000000 ? 1000000 : ns * 2;
        }
        st = rg_xport_test(xp, req);
        if (st == RG_INPROGRESS && sleeps && now - live >= RG_ONEN_IDLE_LIVE_NS) {
            live              = now;
            xp->wait.spin_ns  = 0;
            xp->wait.yield_ns = 0;
            st = rg_xport_wait(xp, req, 100000);
        }
    }
    xp->wait = saved;
    return st == RG_OK ? RG_OK : rg__onen_fail(on, st, what);
}

/* Waits until one of reqs[0..n) not yet handled completes; *idx_p names it.
 * Spins and yields on progress like rg_xport_wait; a wait past its yield
 * phase goes to rg_xport_wait on the first pending request, whose sleep
 * checks that the peers are alive. */
static rg_status_t rg__onen_wait_any(rg_onen_t *on, rg_xreq_t *reqs, size_t n,
                                     const unsigned char *handled, size_t *idx_p)
{
    rg_xport_t            *xp = on->xp;
    rg_xport_wait_config_t saved;
    uint64_t               start = 0, now;
    unsigned               spins = 0;
    size_t                 i, first;
    rg_status_t            st;

    for (;;) {
        first = n;
        for (i = 0; i < n; i++) {
            if (handled[i]) {
                continue;
            }
            if (reqs[i].status != RG_INPROGRESS) {
                if (reqs[i].status != RG_OK) {
                    return rg__onen_fail(on, reqs[i].status, "receive");
                }
                *idx_p = i;
                return RG_OK;
            }
            if (first == n) {
                first = i;
            }
        }
        if (first == n) {
            return rg_err_set(&on->bench->err, RG_ERR_INVALID, "onen: nothing left to wait for");
        }
        st = rg_xport_progress(xp);
        if (st < 0) {
            return rg__onen_fail(on, st, "progress");
        }
        if (++spins < 64) {
            rg__onen_relax();
            continue;
        }
        now = rg_time_mono_ns();
        if (start == 0) {
            start = now;
        }
        if (now - start < (uint64_t)xp->wait.spin_ns) {
            rg__onen_relax();
        } else if (now - start < (uint64_t)xp->wait.yield_ns) {
            rg_xport_wait_yield(&xp->wait);
        } else {
            saved             = xp->wait;
            xp->wait.yield_ns = 0;
            st                = rg_xport_wait(xp, &reqs[first], 0);
            xp->wait          = saved;
            if (st < 0) {
                return rg__onen_fail(on, st, "receive");
            }
        }
    }
}

/* One step of a poll of window memory: progress (which places writes of
 * software providers), then spin, then yield, and give up after
 * RG_ONEN_POLL_TIMEOUT_NS, naming the rank whose write did not come. */
typedef struct rg_onen_poll {
    uint64_t start;
    uint64_t live_check;
    unsigned spins;
} rg_onen_poll_t;

static rg_status_t rg__onen_poll_step(rg_onen_t *on, rg_onen_poll_t *ps, int from)
{
    uint64_t    now;
    rg_status_t st;
    pid_t       pid;

    st = rg_xport_progress(on->xp);
    if (st < 0) {
        return rg__onen_fail(on, st, "progress");
    }
    if (++ps->spins < 64) {
        rg__onen_relax();
        return RG_OK;
    }
    now = rg_time_mono_ns();
    if (ps->start == 0) {
        ps->start = now;
    }
    if (now - ps->start < (uint64_t)on->xp->wait.spin_ns) {
        rg__onen_relax();
    } else {
        rg_xport_wait_yield(&on->xp->wait);
    }
    if (now - ps->live_check >= RG_ONEN_POLL_LIVE_NS) {
        ps->live_check = now;
        pid = (pid_t)on->pids[from];
        if (on->hosts[from] == on->hosts[on->rank] && rg_xport_pid_dead(pid)) {
            return rg_err_set(&on->bench->err, RG_ERR_PEER_DEAD,
                              "rank %d (pid %d) died while rank %d polled its window for "
                              "that rank's one-sided write (rma mode, %s)", from, (int)pid,
                              on->rank, on->xp->attr.name);
        }
    }
    if (now - ps->start > RG_ONEN_POLL_TIMEOUT_NS) {
        return rg_err_set(&on->bench->err, RG_ERR_TIMEOUT,
                          "rank %d: no one-sided write from rank %d within %.0f s (rma mode, "
                          "%s): is that rank alive?", on->rank, from,
                          (double)RG_ONEN_POLL_TIMEOUT_NS * 1e-9, on->xp->attr.name);
    }
    return RG_OK;
}

/* ---- posting ------------------------------------------------------------- */

/* An inline send of s bytes (the payload goes as the "header": the
 * transports copy it whole), retried while the transport has no room. */
static rg_status_t rg__onen_inject(rg_onen_t *on, int peer, size_t s)
{
    rg_status_t st;

    for (;;) {
        st = rg_xport_inject(on->xp, peer, on->sbuf, s, NULL, 0);
        if (st != RG_ERR_AGAIN) {
            return st == RG_OK ? RG_OK : rg__onen_fail(on, st, "inject");
        }
        st = rg_xport_progress(on->xp);
        if (st < 0) {
            return rg__onen_fail(on, st, "progress");
        }
    }
}

/* A one-sided write of s bytes and the flag into peer's window, slot of
 * this rank; the flag was set in wsrc by the caller. */
static rg_status_t rg__onen_write(rg_onen_t *on, int peer, size_t s, rg_xreq_t *req)
{
    size_t      len = rg__onen_align8(s) + 8;
    rg_status_t st;

    for (;;) {
        st = rg_xport_win_write(on->xp, on->win, peer, (size_t)on->rank * on->wslot, on->wsrc,
                                len, req);
        if (st != RG_ERR_AGAIN) {
            return st == RG_OK ? RG_OK : rg__onen_fail(on, st, "one-sided write");
        }
        st = rg_xport_progress(on->xp);
        if (st < 0) {
            return rg__onen_fail(on, st, "progress");
        }
    }
}

static void rg__onen_set_flag(rg_onen_t *on, size_t s, uint64_t v)
{
    memcpy(on->wsrc + rg__onen_align8(s), &v, sizeof(v));
}

/* An answer of a peer (or of rank 0 in n:1) to `to` in `mode`; req is used
 * by single and list (waited for by the caller) and rma. */
static rg_status_t rg__onen_answer(rg_onen_t *on, int mode, int to, size_t s, rg_xreq_t *req)
{
    rg_xsend_t  one = {to, on->sbuf, s};
    rg_status_t st;

    switch (mode) {
    case RG_ONEN_MODE_SINGLE:
        st = rg_xport_isend(on->xp, to, on->sbuf, s, req);
        return st == RG_OK ? RG_OK : rg__onen_fail(on, st, "send");
    case RG_ONEN_MODE_LIST:
        st = rg_xport_isend_list(on->xp, &one, 1, req);
        return st == RG_OK ? RG_OK : rg__onen_fail(on, st, "list send");
    case RG_ONEN_MODE_INJECT:
        req->status = RG_OK;
        return rg__onen_inject(on, to, s);
    default:
        return rg__onen_write(on, to, s, req);
    }
}

/* ---- rounds on rank 0 ---------------------------------------------------- */

/* 1:n with messages: receives posted (o_r), then the timed round. */
static rg_status_t rg__onen_root_1n(rg_onen_t *on, int mode, int p, size_t s, double *rtt_p,
                                    double *os_p, double *or_p)
{
    rg_xport_t *xp = on->xp;
    uint64_t    ta, tb, t0, ts, t1;
    rg_status_t st = RG_OK;
    int         i;

    ta = rg__onen_ticks(on);
    for (i = 1; i <= p && st == RG_OK; i++) {
        st = rg_xport_irecv(xp, i, on->rbuf + (size_t)i * on->slot, on->slot, &on->rreq[i]);
    }
    tb = rg__onen_ticks(on);
    if (st != RG_OK) {
        return rg__onen_fail(on, st, "posting a receive");
    }
    if (mode == RG_ONEN_MODE_LIST) {
        for (i = 0; i < p; i++) {
            on->list[i].peer = i + 1;
            on->list[i].buf  = on->sbuf;
            on->list[i].len  = s;
        }
    }

    t0 = rg__onen_ticks(on);
    switch (mode) {
    case RG_ONEN_MODE_SINGLE:
        for (i = 1; i <= p && st == RG_OK; i++) {
            st = rg_xport_isend(xp, i, on->sbuf, s, &on->sreq[i]);
        }
        break;
    case RG_ONEN_MODE_LIST:
        st = rg_xport_isend_list(xp, on->list, (size_t)p, &on->sreq[1]);
        break;
    default:
        for (i = 1; i <= p && st == RG_OK; i++) {
            st = rg_xport_inject(xp, i, on->sbuf, s, NULL, 0);
            if (st == RG_ERR_AGAIN) {
                st = rg__onen_inject(on, i, s);
            }
        }
        break;
    }
    ts = rg__onen_ticks(on);
    if (st != RG_OK) {
        return rg__onen_fail(on, st, "send");
    }
    for (i = 1; i <= p; i++) {
        st = rg__onen_wait(on, &on->rreq[i], "receiving an answer");
        if (st != RG_OK) {
            return st;
        }
    }
    t1 = rg__onen_ticks(on);

    *rtt_p = rg__onen_us(on, t0, t1, 2);
    *os_p  = rg__onen_us(on, t0, ts, 1) / p;
    *or_p  = rg__onen_us(on, ta, tb, 1) / p;
    if (mode != RG_ONEN_MODE_INJECT) {
        for (i = 1; i <= p; i++) {
            st = rg__onen_wait(on, &on->sreq[i], "send");
            if (st != RG_OK) {
                return st;
            }
        }
    }
    return RG_OK;
}

/* 1:n with one-sided writes: p writes, then polling the p flags. */
static rg_status_t rg__onen_root_1n_rma(rg_onen_t *on, int p, size_t s, uint64_t v,
                                        double *rtt_p, double *os_p)
{
    rg_onen_poll_t ps = {0, 0, 0};
    uint64_t       t0, ts, t1;
    rg_status_t    st = RG_OK;
    int            i, left = p;

    rg__onen_set_flag(on, s, v);
    memset(on->handled, 0, (size_t)on->size);
    t0 = rg__onen_ticks(on);
    for (i = 1; i <= p && st == RG_OK; i++) {
        st = rg__onen_write(on, i, s, &on->wreq[i]);
    }
    ts = rg__onen_ticks(on);
    if (st != RG_OK) {
        return st;
    }
    while (left > 0) {
        for (i = 1; i <= p; i++) {
            if (!on->handled[i] && rg__onen_flag_get(on, i, s) == v) {
                on->handled[i] = 1;
                left--;
            }
        }
        if (left > 0) {
            for (i = 1; i <= p && on->handled[i]; i++) {
            }
            st = rg__onen_poll_step(on, &ps, i);
            if (st != RG_OK) {
                return st;
            }
        }
    }
    t1 = rg__onen_ticks(on);
    *rtt_p = rg__onen_us(on, t0, t1, 2);
    *os_p  = rg__onen_us(on, t0, ts, 1) / p;
    for (i = 1; i <= p; i++) {
        st = rg__onen_wait(on, &on->wreq[i], "one-sided write");
        if (st != RG_OK) {
            return st;
        }
    }
    return RG_OK;
}

/* Posts the answers to the messages that are there (list mode: all of them
 * in one call; else the one at idx), timing the posting calls. */
static rg_status_t rg__onen_root_answer(rg_onen_t *on, int mode, int p, size_t s, size_t idx,
                                        size_t *done_p, double *sum_p, double *calls_p)
{
    uint64_t    ta, tb;
    rg_status_t st;
    size_t      j, m = 0, first = *done_p;
    int         src;

    if (mode == RG_ONEN_MODE_LIST) {
        for (j = 0; j < (size_t)p; j++) {
            if (on->handled[j] || on->rreq[j].status == RG_INPROGRESS) {
                continue;
            }
            if (on->rreq[j].status != RG_OK) {
                return rg__onen_fail(on, on->rreq[j].status, "receive");
            }
            src = on->rreq[j].source;
            if (src < 1 || src > p) {
                return rg_err_set(&on->bench->err, RG_ERR_PARSE,
                                  "onen n:1: a message from rank %d, which is not in this "
                                  "round (p = %d)", src, p);
            }
            on->list[m].peer = src;
            on->list[m].buf  = on->sbuf;
            on->list[m].len  = s;
            on->handled[j]   = 1;
            m++;
        }
        ta = rg__onen_ticks(on);
        st = rg_xport_isend_list(on->xp, on->list, m, &on->sreq[first]);
        tb = rg__onen_ticks(on);
        if (st != RG_OK) {
            return rg__onen_fail(on, st, "list send");
        }
    } else {
        src = on->rreq[idx].source;
        if (src < 1 || src > p) {
            return rg_err_set(&on->bench->err, RG_ERR_PARSE,
                              "onen n:1: a message from rank %d, which is not in this round "
                              "(p = %d)", src, p);
        }
        on->handled[idx] = 1;
        m  = 1;
        ta = rg__onen_ticks(on);
        if (mode == RG_ONEN_MODE_SINGLE) {
            st = rg_xport_isend(on->xp, src, on->sbuf, s, &on->sreq[first]);
        } else {
            st = rg_xport_inject(on->xp, src, on->sbuf, s, NULL, 0);
            on->sreq[first].status = RG_OK;
        }
        tb = rg__onen_ticks(on);
        if (st == RG_ERR_AGAIN) {
            st = rg__onen_inject(on, src, s);
            tb = rg__onen_ticks(on);
        }
        if (st != RG_OK) {
            return rg__onen_fail(on, st, "send");
        }
    }
    *sum_p  += rg__onen_us(on, ta, tb, 1);
    *calls_p += 1;
    *done_p += m;
    return RG_OK;
}

static rg_status_t rg__onen_release(rg_onen_t *on, int p)
{
    rg_status_t st;
    int         i;

    for (i = 1; i <= p; i++) {
        st = rg_xport_isend(on->xp, i, on->relbuf, 0, &on->relreq[i]);
        if (st != RG_OK) {
            return rg__onen_fail(on, st, "sending a release");
        }
    }
    return RG_OK;
}

static rg_status_t rg__onen_wait_releases(rg_onen_t *on, int p)
{
    rg_status_t st;
    int         i;

    for (i = 1; i <= p; i++) {
        st = rg__onen_wait(on, &on->relreq[i], "sending a release");
        if (st != RG_OK) {
            return st;
        }
    }
    return RG_OK;
}

/* n:1 with messages: one receive per peer posted (o_r), the release, then
 * each message answered as soon as it is there (o_s). The receives name
 * their peer: a peer done with the batch sends its round times at once, and
 * a receive from any source could take them while others still answer. */
static rg_status_t rg__onen_root_n1(rg_onen_t *on, int mode, int p, size_t s, double *os_p,
                                    double *or_p, double *posts_p)
{
    rg_xport_t *xp = on->xp;
    uint64_t    ta, tb;
    rg_status_t st = RG_OK;
    double      sum = 0, calls = 0;
    size_t      done = 0, idx = 0;
    int         k;

    ta = rg__onen_ticks(on);
    for (k = 0; k < p && st == RG_OK; k++) {
        st = rg_xport_irecv(xp, k + 1, on->rbuf + (size_t)(k + 1) * on->slot, on->slot,
                            &on->rreq[k]);
    }
    tb = rg__onen_ticks(on);
    if (st != RG_OK) {
        return rg__onen_fail(on, st, "posting a receive");
    }
    *or_p = rg__onen_us(on, ta, tb, 1) / p;
    memset(on->handled, 0, (size_t)on->size);
    st = rg__onen_release(on, p);
    while (st == RG_OK && done < (size_t)p) {
        st = rg__onen_wait_any(on, on->rreq, (size_t)p, on->handled, &idx);
        if (st == RG_OK) {
            st = rg__onen_root_answer(on, mode, p, s, idx, &done, &sum, &calls);
        }
    }
    if (st != RG_OK) {
        return st;
    }
    *os_p    = sum / p;
    *posts_p = calls;
    if (mode != RG_ONEN_MODE_INJECT) {
        for (k = 0; k < p; k++) {
            st = rg__onen_wait(on, &on->sreq[k], "send");
            if (st != RG_OK) {
                return st;
            }
        }
    }
    return rg__onen_wait_releases(on, p);
}

/* n:1 with one-sided writes: the release, then every flag polled and
 * answered by a write as soon as it is there. */
static rg_status_t rg__onen_root_n1_rma(rg_onen_t *on, int p, size_t s, uint64_t v,
                                        double *os_p)
{
    rg_onen_poll_t ps = {0, 0, 0};
    uint64_t       ta, tb;
    rg_status_t    st;
    double         sum = 0;
    int            i, left = p;

    rg__onen_set_flag(on, s, v);
    memset(on->handled, 0, (size_t)on->size);
    st = rg__onen_release(on, p);
    while (st == RG_OK && left > 0) {
        for (i = 1; i <= p && st == RG_OK; i++) {
            if (on->handled[i] || rg__onen_flag_get(on, i, s) != v) {
                continue;
            }
            on->handled[i] = 1;
            left--;
            ta = rg__onen_ticks(on);
            st = rg__onen_write(on, i, s, &on->wreq[i]);
            tb = rg__onen_ticks(on);
            sum += rg__onen_us(on, ta, tb, 1);
        }
        if (st == RG_OK && left > 0) {
            for (i = 1; i <= p && on->handled[i]; i++) {
            }
            st = rg__onen_poll_step(on, &ps, i);
        }
    }
    if (st != RG_OK) {
        return st;
    }
    *os_p = sum / p;
    for (i = 1; i <= p; i++) {
        st = rg__onen_wait(on, &on->wreq[i], "one-sided write");
        if (st != RG_OK) {
            return st;
        }
    }
    return rg__onen_wait_releases(on, p);
}

/* ---- batches ------------------------------------------------------------- */

static rg_status_t rg__onen_send_ctl(rg_onen_t *on, int peer, const rg_onen_ctl_t *ctl)
{
    rg_status_t st = rg_xport_send(on->xp, peer, ctl, sizeof(*ctl));

    return st == RG_OK ? RG_OK : rg__onen_fail(on, st, "sending a control message");
}

/* Runs reps rounds of a point with the ranks 1 .. p (who are told first),
 * appending the samples from index *count_p on unless record is 0. */
static rg_status_t rg__onen_batch(rg_onen_t *on, const rg_onen_point_t *pt, uint64_t reps,
                                  int record, size_t *count_p)
{
    rg_onen_ctl_t ctl;
    rg_status_t   st;
    double        rtt = 0, os = 0, orr = NAN, posts;
    size_t        c0 = *count_p, c = c0, len;
    uint64_t      r, v;
    int           i;

    if (record && c0 + reps > on->cap) {
        reps = on->cap - c0;
    }
    memset(&ctl, 0, sizeof(ctl));
    ctl.cmd    = RG_ONEN_CMD_BATCH;
    ctl.dir    = (uint32_t)pt->dir;
    ctl.mode   = (uint32_t)pt->mode;
    ctl.p      = (uint32_t)pt->p;
    ctl.size   = pt->size;
    ctl.reps   = reps;
    ctl.seq    = on->seq;
    ctl.record = (uint32_t)record;
    for (i = 1; i <= pt->p; i++) {
        st = rg__onen_send_ctl(on, i, &ctl);
        if (st != RG_OK) {
            return st;
        }
    }
    for (r = 0; r < reps; r++) {
        v     = on->seq + r;
        posts = pt->p;
        if (pt->dir == RG_ONEN_DIR_1N) {
            posts = pt->mode == RG_ONEN_MODE_LIST ? 1 : pt->p;
            st = pt->mode == RG_ONEN_MODE_RMA
                     ? rg__onen_root_1n_rma(on, pt->p, pt->size, v, &rtt, &os)
                     : rg__onen_root_1n(on, pt->mode, pt->p, pt->size, &rtt, &os, &orr);
        } else {
            st = pt->mode == RG_ONEN_MODE_RMA
                     ? rg__onen_root_n1_rma(on, pt->p, pt->size, v, &os)
                     : rg__onen_root_n1(on, pt->mode, pt->p, pt->size, &os, &orr, &posts);
            rtt = 0;
        }
        if (st != RG_OK) {
            return st;
        }
        if (record) {
            on->rtt[c]   = rtt;
            on->os[c]    = os;
            on->orr[c]   = orr;
            on->posts[c] = posts;
            c++;
        }
    }
    on->seq += reps;
    if (record && pt->dir == RG_ONEN_DIR_N1) {
        /* The round is the longest of the p peers' times. */
        for (i = 1; i <= pt->p; i++) {
            st = rg_xport_recv(on->xp, i, on->times, reps * sizeof(double), &len);
            if (st != RG_OK) {
                return rg__onen_fail(on, st, "receiving the round times");
            }
            if (len != reps * sizeof(double)) {
                return rg_err_set(&on->bench->err, RG_ERR_PARSE,
                                  "rank %d sent %zu bytes of round times, expected %zu", i,
                                  len, (size_t)(reps * sizeof(double)));
            }
            for (r = 0; r < reps; r++) {
                if (on->times[r] > on->rtt[c0 + r]) {
                    on->rtt[c0 + r] = on->times[r];
                }
            }
        }
    }
    *count_p = c;
    return RG_OK;
}

/* ---- rounds on the ranks 1 .. p ------------------------------------------ */

static rg_status_t rg__onen_follow_batch(rg_onen_t *on, const rg_onen_ctl_t *ctl)
{
    const int   mode = (int)ctl->mode, rma = mode == RG_ONEN_MODE_RMA;
    const size_t s   = (size_t)ctl->size;
    rg_onen_poll_t ps;
    rg_xreq_t   rq, aq, sq;
    rg_status_t st;
    uint64_t    r, v, t0, t1;

    rq.status = aq.status = RG_OK;
    for (r = 0; r < ctl->reps; r++) {
        v = ctl->seq + r;
        if (ctl->dir == RG_ONEN_DIR_1N) {
            if (rma) {
                memset(&ps, 0, sizeof(ps));
                while (rg__onen_flag_get(on, 0, s) != v) {
                    st = rg__onen_poll_step(on, &ps, 0);
                    if (st != RG_OK) {
                        return st;
                    }
                }
                rg__onen_set_flag(on, s, v);
            } else {
                if (r == 0) {
                    st = rg_xport_irecv(on->xp, 0, on->rbuf, on->slot, &rq);
                    if (st != RG_OK) {
                        return rg__onen_fail(on, st, "posting a receive");
                    }
                }
                st = rg__onen_wait(on, &rq, "receiving a round's message");
                if (st != RG_OK) {
                    return st;
                }
            }
            st = rg__onen_answer(on, mode, 0, s, &sq);
            if (st == RG_OK && !rma && r + 1 < ctl->reps) {
                st = rg_xport_irecv(on->xp, 0, on->rbuf, on->slot, &rq);
                if (st != RG_OK) {
                    return rg__onen_fail(on, st, "posting a receive");
                }
            }
        } else {
            /* The release and (with messages) the answer's receive are
             * posted before the round. */
            if (r == 0) {
                st = rg_xport_irecv(on->xp, 0, on->relbuf, sizeof(on->relbuf), &rq);
                if (st == RG_OK && !rma) {
                    st = rg_xport_irecv(on->xp, 0, on->rbuf, on->slot, &aq);
                }
                if (st != RG_OK) {
                    return rg__onen_fail(on, st, "posting a receive");
                }
            }
            st = rg__onen_wait(on, &rq, "receiving a release");
            if (st != RG_OK) {
                return st;
            }
            if (rma) {
                rg__onen_set_flag(on, s, v);
            }
            t0 = rg__onen_ticks(on);
            st = rg__onen_answer(on, mode, 0, s, &sq);
            if (st != RG_OK) {
                return st;
            }
            if (rma) {
                memset(&ps, 0, sizeof(ps));
                while (rg__onen_flag_get(on, 0, s) != v) {
                    st = rg__onen_poll_step(on, &ps, 0);
                    if (st != RG_OK) {
                        return st;
                    }
                }
            } else {
                st = rg__onen_wait(on, &aq, "receiving an answer");
                if (st != RG_OK) {
                    return st;
                }
            }
            t1 = rg__onen_ticks(on);
            on->times[r] = rg__onen_us(on, t0, t1, 1);
            if (r + 1 < ctl->reps) {
                st = rg_xport_irecv(on->xp, 0, on->relbuf, sizeof(on->relbuf), &rq);
                if (st == RG_OK && !rma) {
                    st = rg_xport_irecv(on->xp, 0, on->rbuf, on->slot, &aq);
                }
                if (st != RG_OK) {
                    return rg__onen_fail(on, st, "posting a receive");
                }
            }
        }
        if (st != RG_OK) {
            return st;
        }
        if (mode != RG_ONEN_MODE_INJECT) {
            st = rg__onen_wait(on, &sq, rma ? "one-sided write" : "send");
            if (st != RG_OK) {
                return st;
            }
        }
    }
    if (ctl->dir == RG_ONEN_DIR_N1 && ctl->record) {
        st = rg_xport_send(on->xp, 0, on->times, ctl->reps * sizeof(double));
        if (st != RG_OK) {
            return rg__onen_fail(on, st, "sending the round times");
        }
    }
    return RG_OK;
}

static rg_status_t rg__onen_recv_ctl(void *ctx, void *ctl, size_t cap, size_t *len)
{
    rg_onen_t  *on = ctx;
    rg_xreq_t   req;
    rg_status_t st;

    st = rg_xport_irecv(on->xp, 0, ctl, cap, &req);
    if (st != RG_OK) {
        return rg__onen_fail(on, st, "posting a receive");
    }
    st = rg__onen_idle_wait(on, &req, "receiving a control message");
    *len = req.msg_len;
    return st;
}

/* One control message: 1 the end, 0 a batch followed, -1 failed. */
static int rg__onen_on_ctl(void *ctx, const void *msg)
{
    rg_onen_t           *on  = ctx;
    const rg_onen_ctl_t *ctl = msg;

    if (ctl->cmd == RG_ONEN_CMD_END) {
        return 1;
    }
    if (ctl->cmd != RG_ONEN_CMD_BATCH || ctl->dir >= RG_ONEN_NDIRS ||
        ctl->mode >= RG_ONEN_NMODES || !(on->modes & (1u << ctl->mode)) || ctl->p < 1 ||
        ctl->p > (uint32_t)(on->size - 1) || (uint32_t)on->rank > ctl->p ||
        ctl->size > on->smax || ctl->reps > on->cap) {
        rg_err_set(&on->bench->err, RG_ERR_PARSE,
                   "bad control message (cmd %#x, direction %u, mode %u, p %u, size %llu, "
                   "rounds %llu)", ctl->cmd, ctl->dir, ctl->mode, ctl->p,
                   (unsigned long long)ctl->size, (unsigned long long)ctl->reps);
        return -1;
    }
    return rg__onen_follow_batch(on, ctl) == RG_OK ? 0 : -1;
}

/* The ranks 1 .. P: follow control messages until the end. */
static int rg__onen_follow(rg_onen_t *on)
{
    rg_onen_ctl_t ctl;

    return rg_bench_follow(&on->bench->err, &ctl, sizeof(ctl), rg__onen_recv_ctl,
                           rg__onen_on_ctl, on);
}

/* ---- points ---------------------------------------------------------------- */

static int rg__onen_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median and minimum of the finite x (NaN marks "not measured": o_r in
 * rma mode); x is reordered. */
static double rg__onen_median_min(double *x, size_t n, double *min_p)
{
    size_t i, k = 0;

    for (i = 0; i < n; i++) {
        if (x[i] == x[i]) {
            x[k++] = x[i];
        }
    }
    if (k == 0) {
        *min_p = NAN;
        return NAN;
    }
    qsort(x, k, sizeof(*x), rg__onen_cmp);
    *min_p = x[0];
    return rg_stats_quantile_sorted(x, k, 0.5);
}

static double rg__onen_mean(const double *x, size_t n)
{
    double sum = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        sum += x[i];
    }
    return n > 0 ? sum / (double)n : NAN;
}

/* Measures one point until it is stable or out of budget. */
static rg_status_t rg__onen_measure(rg_onen_t *on, rg_onen_point_t *pt)
{
    const rg_bench_opts_t *o = &on->bench->opts;
    uint64_t    t_start, t_first, warm_until;
    size_t      count = 0, unused = 0, want;
    double      per_rep_ns, spent_s;
    rg_status_t st;

    /* Warm-up: the peers that join were asleep, caches are cold; the first
     * point warms up longer (the peers may still be starting). */
    warm_until = rg_time_mono_ns() + (uint64_t)((on->first_point ? 0.05 : 0) * 1e9 +
                                                o->warmup_s * 1e9);
    on->first_point = 0;
    do {
        st = rg__onen_batch(on, pt, RG_ONEN_WARM_ROUNDS, 0, &unused);
        if (st != RG_OK) {
            return st;
        }
    } while (rg_time_mono_ns() < warm_until);

    t_start = rg_time_mono_ns();
    st = rg__onen_batch(on, pt, RG_ONEN_MIN_BATCH, 1, &count);
    if (st != RG_OK) {
        return st;
    }
    per_rep_ns = (double)(rg_time_mono_ns() - t_start) / RG_ONEN_MIN_BATCH;
    pt->stable = 0;
    for (;;) {
        spent_s = (double)(rg_time_mono_ns() - t_start) * 1e-9;
        if (count >= (size_t)o->min_reps && spent_s >= o->point_min_s) {
            st = rg_bench_point_stable(on->rtt, count, o->target_rel, &pt->rtt,
                                       &on->bench->err, &pt->stable);
            if (st != RG_OK) {
                return st;
            }
            if (pt->stable) {
                break;
            }
        }
        spent_s = (double)(rg_time_mono_ns() - t_start) * 1e-9;
        if (spent_s >= o->point_budget_s || count >= (size_t)o->max_reps ||
            count >= on->cap) {
            break;
        }
        if (o->budget_s > 0 && rg_bench_elapsed_s(on->bench) >= o->budget_s) {
            break;
        }
        want = rg_bench_next_batch(count, per_rep_ns, RG_ONEN_BATCH_NS, RG_ONEN_MIN_BATCH,
                                   (size_t)o->min_reps,
                                   (size_t)o->max_reps < on->cap ? (size_t)o->max_reps : on->cap,
                                   o->point_budget_s - spent_s);
        if (want == 0) {
            break;
        }
        t_first = rg_time_mono_ns();
        st = rg__onen_batch(on, pt, want, 1, &count);
        if (st != RG_OK) {
            return st;
        }
        per_rep_ns = (double)(rg_time_mono_ns() - t_first) / (double)want;
    }
    if (!pt->stable) {
        st = rg_stats_compute(on->rtt, count, &pt->rtt, &on->bench->err);
        if (st != RG_OK) {
            return st;
        }
        pt->stable = rg_stats_median_rel_halfwidth(&pt->rtt) <= o->target_rel;
    }
    pt->posts   = rg__onen_mean(on->posts, count);
    pt->os_mean = rg__onen_mean(on->os, count);
    pt->or_mean = rg__onen_mean(on->orr, count);
    pt->os_med = rg__onen_median_min(on->os, count, &pt->os_min);
    pt->or_med = rg__onen_median_min(on->orr, count, &pt->or_min);
    return RG_OK;
}

/* ---- output ----------------------------------------------------------------- */

static void rg__onen_kv_time(rg_json_t *js, const char *key, double v)
{
    rg_json_key(js, key);
    if (v == v) {
        rg_json_double(js, v);
    } else {
        rg_json_null(js);
    }
}

static rg_status_t rg__onen_write_point(rg_onen_t *on, const rg_onen_point_t *pt)
{
    char      buf[2048];
    rg_json_t js;

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "type", "onen");
    rg_json_kv_string(&js, "direction", rg__onen_dir_names[pt->dir]);
    rg_json_kv_string(&js, "mode", rg__onen_mode_names[pt->mode]);
    rg_json_kv_int(&js, "p", pt->p);
    rg_json_kv_uint(&js, "s", pt->size);
    rg_json_kv_double(&js, "rtt_min_us", pt->rtt.min);
    rg_json_kv_double(&js, "rtt_median_us", pt->rtt.median);
    rg_json_kv_uint(&js, "count", pt->rtt.count);
    rg_json_key(&js, "ci95_median_us");
    rg_json_array_begin(&js);
    rg_json_double(&js, pt->rtt.median_ci_lo);
    rg_json_double(&js, pt->rtt.median_ci_hi);
    rg_json_array_end(&js);
    rg__onen_kv_time(&js, "os_us", pt->os_med);
    rg__onen_kv_time(&js, "os_min_us", pt->os_min);
    rg__onen_kv_time(&js, "or_us", pt->or_med);
    rg__onen_kv_time(&js, "or_min_us", pt->or_min);
    rg_json_kv_bool(&js, "stable", pt->stable);
    /* Beyond docs/lop.md's keys (readers ignore them): more of the round's
     * distribution, the per-peer time the model fits, and the posting calls
     * per round that o_s was spread over. */
    rg_json_kv_double(&js, "rtt_mean_us", pt->rtt.mean);
    rg_json_kv_double(&js, "rtt_p99_us", pt->rtt.p99);
    rg_json_kv_double(&js, "rtt_max_us", pt->rtt.max);
    rg_json_kv_double(&js, "per_peer_median_us", pt->rtt.median / pt->p);
    rg_json_kv_double(&js, "posts_per_round", pt->posts);
    /* Where a posting call is shorter than the timer's step (a few ns on a VM
     * whose TSC moves in 10-20 ns steps) the median sits on that grid and
     * the mean, dithered by the jitter, is the finer estimate. */
    rg__onen_kv_time(&js, "os_mean_us", pt->os_mean);
    rg__onen_kv_time(&js, "or_mean_us", pt->or_mean);
    rg_json_object_end(&js);
    return rg_json_write_line(&js, on->bench->out, &on->bench->err);
}

static void rg__onen_json_unsupported(rg_json_t *js, void *ctx)
{
    const rg_onen_t *on = ctx;
    int              m;

    rg_json_key(js, "modes_unsupported");
    rg_json_object_begin(js);
    for (m = 0; m < RG_ONEN_NMODES; m++) {
        if (on->why[m] != NULL) {
            rg_json_kv_string(js, rg__onen_mode_names[m], on->why[m]);
        }
    }
    rg_json_object_end(js);
}

static rg_status_t rg__onen_write_header(rg_onen_t *on, size_t planned)
{
    const rg_bench_opts_t *o = &on->bench->opts;
    char        buf[16384];
    rg_json_t   js;
    time_t      now = time(NULL);
    struct tm   tm;
    char        when[64];
    size_t      i;
    int         m;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_bench_header_common(on->bench, &js);
    rg_json_key(&js, "params");
    rg_json_object_begin(&js);
    rg_json_kv_uint(&js, "s", o->sizes[0]);
    rg_json_key(&js, "sizes");
    rg_json_array_begin(&js);
    for (i = 0; i < o->nsizes; i++) {
        rg_json_uint(&js, o->sizes[i]);
    }
    rg_json_array_end(&js);
    rg_json_key(&js, "modes");
    rg_json_array_begin(&js);
    for (m = 0; m < RG_ONEN_NMODES; m++) {
        if (on->modes & (1u << m)) {
            rg_json_string(&js, rg__onen_mode_names[m]);
        }
    }
    rg_json_array_end(&js);
    rg_json_key(&js, "directions");
    rg_json_array_begin(&js);
    for (m = 0; m < RG_ONEN_NDIRS; m++) {
        if (on->dirs & (1u << m)) {
            rg_json_string(&js, rg__onen_dir_names[m]);
        }
    }
    rg_json_array_end(&js);
    rg_json_kv_int(&js, "max_p", on->maxp);
    rg_json_kv_double(&js, "target_rel", o->target_rel);
    rg_json_kv_int(&js, "min_reps", o->min_reps);
    rg_json_kv_int(&js, "max_reps", o->max_reps);
    rg_json_kv_double(&js, "point_budget_s", o->point_budget_s);
    rg_json_kv_double(&js, "point_min_s", o->point_min_s);
    rg_json_kv_double(&js, "budget_s", o->budget_s);
    rg_json_kv_double(&js, "warmup_s", o->warmup_s);
    rg_json_object_end(&js);
    rg__onen_json_unsupported(&js, on);
    rg_json_kv_uint(&js, "planned_points", planned);
    rg_json_kv_string(&js, "started_utc", when);
    rg_json_object_end(&js);
    return rg_json_write_line(&js, on->bench->out, &on->bench->err);
}

/* ---- set-up ----------------------------------------------------------------- */

static void *rg__onen_alloc(size_t n)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, n > 0 ? n : 1) != 0) {
        return NULL;
    }
    memset(p, 0, n > 0 ? n : 1);
    return p;
}

static void rg__onen_free(rg_onen_t *on)
{
    free(on->sbuf);
    free(on->rbuf);
    free(on->rreq);
    free(on->sreq);
    free(on->wreq);
    free(on->relreq);
    free(on->list);
    free(on->handled);
    free(on->wmem);
    free(on->wsrc);
    free(on->pids);
    free(on->hosts);
    free(on->rtt);
    free(on->os);
    free(on->orr);
    free(on->posts);
    free(on->times);
}

/* Every rank's pid and host (collective). */
static rg_status_t rg__onen_exchange_ids(rg_onen_t *on)
{
    uint64_t    mine[2], *all;
    rg_status_t st;
    int         i;

    mine[0] = (uint64_t)getpid();
    mine[1] = rg_host_id();
    all       = calloc((size_t)on->size, sizeof(mine));
    on->pids  = calloc((size_t)on->size, sizeof(*on->pids));
    on->hosts = calloc((size_t)on->size, sizeof(*on->hosts));
    if (all == NULL || on->pids == NULL || on->hosts == NULL) {
        free(all);
        return rg_err_set(&on->bench->err, RG_ERR_NOMEM, "cannot allocate %d pids", on->size);
    }
    st = rg_boot_allgather(on->bench->boot, mine, sizeof(mine), all, &on->bench->err);
    for (i = 0; i < on->size && st == RG_OK; i++) {
        on->pids[i]  = (int32_t)all[2 * i];
        on->hosts[i] = all[2 * i + 1];
    }
    free(all);
    return st;
}

static rg_status_t rg__onen_setup(rg_onen_t *on)
{
    const rg_bench_opts_t *o = &on->bench->opts;
    size_t n = (size_t)on->size, i;

    on->smax = 0;
    for (i = 0; i < o->nsizes; i++) {
        on->smax = o->sizes[i] > on->smax ? o->sizes[i] : on->smax;
    }
    on->slot  = (on->smax + RG_ONEN_SLOT_ALIGN - 1) / RG_ONEN_SLOT_ALIGN * RG_ONEN_SLOT_ALIGN;
    on->slot  = on->slot > 0 ? on->slot : RG_ONEN_SLOT_ALIGN;
    on->wslot = (rg__onen_align8(on->smax) + 8 + RG_ONEN_SLOT_ALIGN - 1) / RG_ONEN_SLOT_ALIGN *
                RG_ONEN_SLOT_ALIGN;
    on->cap   = (size_t)o->max_reps + RG_ONEN_MIN_BATCH;
    on->sbuf    = rg__onen_alloc(on->smax);
    on->rbuf    = rg__onen_alloc(n * on->slot);
    on->wsrc    = rg__onen_alloc(rg__onen_align8(on->smax) + 8);
    on->rreq    = calloc(n, sizeof(rg_xreq_t));
    on->sreq    = calloc(n, sizeof(rg_xreq_t));
    on->wreq    = calloc(n, sizeof(rg_xreq_t));
    on->relreq  = calloc(n, sizeof(rg_xreq_t));
    on->list    = calloc(n, sizeof(rg_xsend_t));
    on->handled = calloc(n, 1);
    if (on->rank == 0) {
        on->rtt   = calloc(on->cap, sizeof(double));
        on->os    = calloc(on->cap, sizeof(double));
        on->orr   = calloc(on->cap, sizeof(double));
        on->posts = calloc(on->cap, sizeof(double));
    }
    on->times = calloc(on->cap, sizeof(double));
    if (on->sbuf == NULL || on->rbuf == NULL || on->wsrc == NULL || on->rreq == NULL ||
        on->sreq == NULL || on->wreq == NULL || on->relreq == NULL || on->list == NULL ||
        on->handled == NULL || on->times == NULL ||
        (on->rank == 0 && (on->rtt == NULL || on->os == NULL || on->orr == NULL ||
                           on->posts == NULL))) {
        return rg_err_set(&on->bench->err, RG_ERR_NOMEM,
                          "cannot allocate the buffers of onen (%d ranks, %zu bytes, %zu "
                          "rounds)", on->size, on->smax, on->cap);
    }
    /* Every page is touched now (calloc, memset), so page faults never land
     * in a measurement. */
    memset(on->sbuf, 0xa5, on->smax);
    memcpy(on->wsrc, on->sbuf, on->smax);
    on->seq         = 1;
    on->first_point = 1;
    on->ovh_us      = on->bench->timer.overhead_ns * 1e-3;
    return RG_OK;
}

/* Which modes are measured: those asked for that the transport has; the rma
 * mode also needs its window, whose creation is collective (every rank
 * decides the same from the same options and the agreed attributes). */
static rg_status_t rg__onen_modes(rg_onen_t *on)
{
    const rg_bench_opts_t *o = &on->bench->opts;
    static const rg_xport_opt_t need[RG_ONEN_NMODES] = {
        RG_XPORT_OPT_COUNT, RG_XPORT_OPT_LIST, RG_XPORT_OPT_INJECT, RG_XPORT_OPT_WIN};
    const char *why;
    rg_status_t st;
    int         m;

    on->asked = o->modes != 0 ? o->modes : (1u << RG_ONEN_NMODES) - 1;
    on->dirs  = o->directions != 0 ? o->directions : (1u << RG_ONEN_NDIRS) - 1;
    on->modes = 0;
    for (m = 0; m < RG_ONEN_NMODES; m++) {
        if (!(on->asked & (1u << m))) {
            continue;
        }
        if (need[m] != RG_XPORT_OPT_COUNT && !rg_xport_has(on->xp, need[m], &why)) {
            on->why[m] = why;
            continue;
        }
        on->modes |= 1u << m;
    }
    if (on->modes & (1u << RG_ONEN_MODE_RMA)) {
        on->wmem = rg__onen_alloc((size_t)on->size * on->wslot);
        if (on->wmem == NULL) {
            return rg_err_set(&on->bench->err, RG_ERR_NOMEM, "cannot allocate a window");
        }
        st = rg_xport_win_create(on->xp, on->wmem, (size_t)on->size * on->wslot, &on->win);
        if (st != RG_OK) {
            /* The transport has windows, but not here (a registration the
             * provider refused, an MPI library without the unified model):
             * reported like a missing operation. The creation is collective
             * and fails on every rank when it fails on one, so all ranks go
             * on without rma alike. */
            snprintf(on->why_win, sizeof(on->why_win), "creating the memory window failed: %s",
                     rg_xport_strerror(on->xp));
            on->why[RG_ONEN_MODE_RMA] = on->why_win;
            on->modes &= ~(1u << RG_ONEN_MODE_RMA);
            on->win = NULL;
        }
    }
    return RG_OK;
}

static int rg__onen_end(rg_onen_t *on, size_t points, const char *status)
{
    rg_onen_ctl_t ctl;
    int           peer;

    memset(&ctl, 0, sizeof(ctl));
    ctl.cmd = RG_ONEN_CMD_END;
    for (peer = 1; peer < on->size; peer++) {
        if (rg__onen_send_ctl(on, peer, &ctl) != RG_OK) {
            return RG_BENCH_EXIT_FAIL;
        }
    }
    if (rg_bench_write_footer_with(on->bench, points, status, rg__onen_json_unsupported, on) !=
        RG_OK) {
        return RG_BENCH_EXIT_FAIL;
    }
    return RG_BENCH_EXIT_OK;
}

static int rg__onen_drive(rg_onen_t *on)
{
    const rg_bench_opts_t *o = &on->bench->opts;
    rg_onen_point_t pt;
    const char     *status = "ok";
    size_t          i, points = 0, planned;
    int             d, m, p, nmodes = 0, ndirs = 0, rc;

    for (m = 0; m < RG_ONEN_NMODES; m++) {
        nmodes += (on->modes >> m) & 1u;
        if (on->why[m] != NULL) {
            fprintf(stderr, "railgauge-bench: onen: mode %s is not measured over %s: %s\n",
                    rg__onen_mode_names[m], on->xp->attr.name, on->why[m]);
        }
    }
    for (d = 0; d < RG_ONEN_NDIRS; d++) {
        ndirs += (on->dirs >> d) & 1u;
    }
    planned = o->nsizes * (size_t)nmodes * (size_t)ndirs * (size_t)on->maxp;
    on->bench->start_ns = rg_time_mono_ns();
    if (rg__onen_write_header(on, planned) != RG_OK) {
        return RG_BENCH_EXIT_FAIL;
    }
    for (i = 0; i < o->nsizes; i++) {
        for (d = 0; d < RG_ONEN_NDIRS; d++) {
            if (!(on->dirs & (1u << d))) {
                continue;
            }
            for (m = 0; m < RG_ONEN_NMODES; m++) {
                if (!(on->modes & (1u << m))) {
                    continue;
                }
                for (p = 1; p <= on->maxp; p++) {
                    if (o->budget_s > 0 && rg_bench_elapsed_s(on->bench) >= o->budget_s) {
                        status = "budget";
                        goto done;
                    }
                    memset(&pt, 0, sizeof(pt));
                    pt.dir  = d;
                    pt.mode = m;
                    pt.p    = p;
                    pt.size = o->sizes[i];
                    if (rg__onen_measure(on, &pt) != RG_OK ||
                        rg__onen_write_point(on, &pt) != RG_OK) {
                        return RG_BENCH_EXIT_FAIL;
                    }
                    points++;
                }
            }
        }
    }
done:
    rc = rg__onen_end(on, points, status);
    if (rc == RG_BENCH_EXIT_OK) {
        fflush(on->bench->out);
    }
    return rc;
}

int rg_bench_onen_run(rg_bench_t *bench)
{
    rg_onen_t on;
    int       rc = RG_BENCH_EXIT_FAIL, m;
    char      names[64];

    memset(&on, 0, sizeof(on));
    on.bench = bench;
    on.xp    = bench->xp;
    on.rank  = bench->rank;
    on.size  = bench->size;
    on.maxp  = bench->opts.max_p > 0 ? bench->opts.max_p : bench->size - 1;
    if (on.maxp > bench->size - 1) {
        rg_err_set(&bench->err, RG_ERR_RANGE,
                   "--max-p %d is above the %d peers that %d ranks have", on.maxp,
                   bench->size - 1, bench->size);
        return RG_BENCH_EXIT_USAGE;
    }
    if (rg__onen_setup(&on) != RG_OK || rg__onen_exchange_ids(&on) != RG_OK ||
        rg__onen_modes(&on) != RG_OK) {
        goto out;
    }
    if (on.modes == 0) {
        /* Nothing to measure: every mode asked for is missing here. */
        names[0] = '\0';
        for (m = 0; m < RG_ONEN_NMODES; m++) {
            if (on.why[m] != NULL) {
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                         names[0] != '\0' ? ", " : "", rg__onen_mode_names[m]);
            }
        }
        for (m = 0; m < RG_ONEN_NMODES && on.why[m] == NULL; m++) {
        }
        rg_err_set(&bench->err, RG_ERR_UNSUPPORTED,
                   "onen: transport %s has none of the modes asked for (%s); %s: %s",
                   bench->xp->attr.name, names, rg__onen_mode_names[m], on.why[m]);
        rc = RG_BENCH_EXIT_USAGE;
        goto out;
    }
    rc = on.rank == 0 ? rg__onen_drive(&on) : rg__onen_follow(&on);
out:
    if (on.win != NULL) {
        rg_xport_win_free(on.xp, on.win);
    }
    rg__onen_free(&on);
    return rc;
}
