/*
 * railgauge: the shared-memory flag engine (coll/flags.h).
 */
#include "coll/flags.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sched.h>
#include <unistd.h>

#define RG__SPIN_POLLS 20000u   /* polls of a line before sleeping on it (CPUs to spare) */
#define RG__YIELD_NS   1000000u /* oversubscribed: yielding between polls, before sleeping */

static size_t rg__line(const rg_coll_flags_t *f, int q, uint32_t r, uint32_t j)
{
    return (((size_t)q * f->nrounds + r) * f->maxin + j) * RG_COLL_FLAGS_LINE_WORDS;
}

static uint64_t rg__now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Rank q's plan, for the layout: recomputed from the spec (a barrier) or
 * taken from the caller's array (rg_coll_flags_layout_plans). */
typedef struct rg__plans {
    const rg_coll_plan_t *given;  /* P plans, or NULL: barrier plans of spec */
    rg_coll_plan_t        other;  /* scratch for a recomputed plan */
} rg__plans_t;

static rg_status_t rg__plan_of(rg__plans_t *ps, const rg_coll_plan_t *pl, int q,
                               const rg_coll_plan_t **out, rg_err_t *err)
{
    if (ps->given != NULL) {
        *out = &ps->given[q];
        if ((*out)->P != pl->P || (*out)->rank != q) {
            return rg_err_set(err, RG_ERR_INVALID, "flags: plan %d is rank %d's of %d ranks, "
                              "not rank %d's of %d", q, (*out)->rank, (*out)->P, q, pl->P);
        }
        return RG_OK;
    }
    *out = &ps->other;
    return rg_coll_barrier_plan(&ps->other, &pl->spec, pl->P, q, err);
}

/* The layout of pl among every rank's plans. The c-th send of a round to a
 * peer (c = 0 unless the round sends to it more than once, as the wrapped
 * distances of the k-dissemination can) takes the line of the peer's c-th
 * receive from this rank in that round. A pair's messages of different
 * rounds have lines of their own (one per round and sender). */
static rg_status_t rg__layout(rg_coll_flags_t *f, const rg_coll_plan_t *pl, rg__plans_t *ps,
                              rg_err_t *err)
{
    const rg_coll_plan_t *other = NULL;
    rg_status_t           st = RG_OK;
    uint32_t              r, i, j, c, k = 0, nsend = 0;
    int                   q, found;

    memset(f, 0, sizeof(*f));
    for (q = 0; q < pl->P && st == RG_OK; q++) {
        st = rg__plan_of(ps, pl, q, &other, err);
        for (r = 0; st == RG_OK && r < other->nrounds; r++) {
            if (other->rounds[r].nrecv > f->maxin) {
                f->maxin = other->rounds[r].nrecv;
            }
        }
        if (st == RG_OK && other->nrounds > f->nrounds) {
            f->nrounds = other->nrounds;
        }
    }
    for (r = 0; r < pl->nrounds; r++) {
        nsend += pl->rounds[r].nsend;
    }
    f->send_line = calloc(nsend ? nsend : 1, sizeof(*f->send_line));
    if (st == RG_OK && f->send_line == NULL) {
        st = rg_err_set(err, RG_ERR_NOMEM, "barrier: no memory for %u sends", nsend);
    }
    for (r = 0; st == RG_OK && r < pl->nrounds; r++) {
        const uint32_t off = pl->rounds[r].send_off;

        for (i = 0; st == RG_OK && i < pl->rounds[r].nsend; i++, k++) {
            q = pl->peers[off + i];
            for (j = 0, c = 0; j < i; j++) {
                c += pl->peers[off + j] == q;
            }
            st = rg__plan_of(ps, pl, q, &other, err);
            for (j = 0, found = 0; st == RG_OK && r < other->nrounds &&
                                   j < other->rounds[r].nrecv; j++) {
                if (other->peers[other->rounds[r].recv_off + j] == pl->rank && c-- == 0) {
                    f->send_line[k] = (uint32_t)(rg__line(f, q, r, j) / RG_COLL_FLAGS_LINE_WORDS);
                    found           = 1;
                    break;
                }
            }
            if (st == RG_OK && !found) {
                st = rg_err_set(err, RG_ERR_INVALID,
                                "barrier: rank %d sends to rank %d in round %u, which does "
                                "not receive from it", pl->rank, q, r);
            }
        }
    }
    if (st != RG_OK) {
        rg_coll_flags_fini(f);
        return st;
    }
    f->spin = RG__SPIN_POLLS;
    return RG_OK;
}

rg_status_t rg_coll_flags_layout(rg_coll_flags_t *f, const rg_coll_plan_t *pl, rg_err_t *err)
{
    rg__plans_t ps;
    rg_status_t st;

    ps.given = NULL;
    rg_coll_plan_init(&ps.other);
    st = rg__layout(f, pl, &ps, err);
    rg_coll_plan_fini(&ps.other);
    return st;
}

rg_status_t rg_coll_flags_layout_plans(rg_coll_flags_t *f, const rg_coll_plan_t *plans,
                                       int rank, rg_err_t *err)
{
    rg__plans_t ps;

    memset(f, 0, sizeof(*f));
    if (plans == NULL || rank < 0 || rank >= plans[0].P) {
        return rg_err_set(err, RG_ERR_RANGE, "flags: rank %d out of range of the plans", rank);
    }
    ps.given = plans;
    return rg__layout(f, &plans[rank], &ps, err);
}

size_t rg_coll_flags_bytes(const rg_coll_flags_t *f, int P)
{
    if (f->nrounds == 0) {
        return 0;
    }
    return (size_t)P * f->nrounds * (f->maxin ? f->maxin : 1) * RG_COLL_FLAGS_LINE_WORDS *
           sizeof(uint64_t);
}

void rg_coll_flags_attach(rg_coll_flags_t *f, void *seg, int P)
{
    /* Ranks that outnumber the CPUs poll once, then hand their CPU over with
     * sched_yield between polls: the awaited rank may be waiting for the very
     * CPU a poller holds. A yield is a switch to a runnable rank on the same
     * CPU; a futex sleep costs a wake-up through the kernel at every signal
     * (measured here, dissem on 4 ranks and 2 CPUs under the PMPI library:
     * 2.5 us with the yields after 16 polls, 11.4 us sleeping at once; Open
     * MPI's own MPI_Barrier 2.1 us; nway:2 1.75 us yielding after one poll,
     * 2.3 after 16, 5.1 after 64). The yields stop after RG__YIELD_NS so that
     * a long wait (a rank still computing) sleeps instead of taking CPU time
     * from the ranks that compute. */
    const int over = P > sysconf(_SC_NPROCESSORS_ONLN);

    f->lines    = seg;
    f->spin     = over ? 1 : RG__SPIN_POLLS;
    f->yield_ns = over ? RG__YIELD_NS : 0;
}

void rg_coll_flags_fini(rg_coll_flags_t *f)
{
    free(f->send_line);
    memset(f, 0, sizeof(*f));
}

/* A line: word 0 the epoch (its low 32 bits are the futex word, little
 * endian), word 1 the number of sleepers. */
static inline uint64_t rg__epoch(const uint64_t *line)
{
    return atomic_load_explicit((const _Atomic uint64_t *)line, memory_order_seq_cst);
}

/* Waits until the line holds epoch e: polls (spin polls, fewer where ranks
 * share CPUs, and then for yield_ns polls with a sched_yield between them,
 * the clock read every 16th), then sleeps on the line with a futex (shared memory: the
 * address is shared between processes), so that a rank that shares its CPU
 * hands it to the one it waits for. The Dekker pair (sleeper: count, then
 * check, both sequentially consistent; sender: store, full fence, then look
 * at the count) ensures no wake-up is lost; the sleep is bounded anyway. The
 * deadline is read off the clock only once a wait gets that far (a clock
 * read per round was a tenth of a fast barrier). */
static rg_status_t rg__wait(uint64_t *line, uint64_t e, unsigned spin, uint64_t yield_ns,
                            uint64_t timeout_ns,
                            uint64_t *deadline_ns)
{
    struct timespec ts = {0, 2000000};  /* 2 ms: the deadline is checked between sleeps */
    uint64_t        v;
    unsigned        k = 0;
    uint64_t        yield_end = 0;

    while ((v = rg__epoch(line)) < e) {
        if (++k < spin) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        if (yield_ns != 0) {
            if (yield_end == 0) {
                yield_end = rg__now_ns() + yield_ns;
            }
            if ((k & 15u) != 0 || rg__now_ns() < yield_end) {
                sched_yield();
                continue;
            }
            yield_ns = 0;  /* the yields are over: sleep from now on */
        }
        if (timeout_ns != 0 && *deadline_ns == 0) {
            *deadline_ns = rg__now_ns() + timeout_ns;
        }
        atomic_fetch_add_explicit((_Atomic uint64_t *)&line[1], 1, memory_order_seq_cst);
        if ((v = rg__epoch(line)) < e) {
            syscall(SYS_futex, (uint32_t *)line, FUTEX_WAIT, (uint32_t)v, &ts, NULL, 0);
        }
        atomic_fetch_sub_explicit((_Atomic uint64_t *)&line[1], 1, memory_order_seq_cst);
        if (*deadline_ns != 0 && rg__now_ns() > *deadline_ns) {
            return rg__epoch(line) >= e ? RG_OK : RG_ERR_TIMEOUT;
        }
    }
    return RG_OK;
}

/* A round's signals: every epoch stored first (release stores, which the
 * CPU's store buffer sends to their lines in parallel), then one full fence,
 * then each line's sleeper count looked at. The fence pairs with the
 * sleeper's locked increment (Dekker, as above); one sequentially consistent
 * store per line instead would wait for each line in turn. */
static inline void rg__post_round(const rg_coll_flags_t *f, uint32_t k, uint32_t n,
                                  uint64_t e)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        atomic_store_explicit(
            (_Atomic uint64_t *)&f->lines[(size_t)f->send_line[k + i] * RG_COLL_FLAGS_LINE_WORDS],
            e, memory_order_release);
    }
    atomic_thread_fence(memory_order_seq_cst);
    for (i = 0; i < n; i++) {
        uint64_t *line = &f->lines[(size_t)f->send_line[k + i] * RG_COLL_FLAGS_LINE_WORDS];
        if (atomic_load_explicit((_Atomic uint64_t *)&line[1], memory_order_relaxed) != 0) {
            syscall(SYS_futex, (uint32_t *)line, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
        }
    }
}

rg_status_t rg_coll_flags_run_range(const rg_coll_flags_t *f, const rg_coll_plan_t *pl,
                                    uint32_t first, uint32_t end, uint64_t epoch,
                                    uint64_t timeout_ns, uint32_t *round, int *peer)
{
    uint64_t deadline;
    uint32_t r, i, k = 0;

    for (r = 0; r < first && r < pl->nrounds; r++) {
        k += pl->rounds[r].nsend;
    }
    for (r = first; r < end && r < pl->nrounds; r++) {
        const rg_coll_round_t *rd = &pl->rounds[r];

        deadline = 0;
        if (rd->nsend > 0) {
            rg__post_round(f, k, rd->nsend, epoch);
            k += rd->nsend;
        }
        for (i = 0; i < rd->nrecv; i++) {
            if (rg__wait(&f->lines[rg__line(f, pl->rank, r, i)], epoch, f->spin, f->yield_ns,
                         timeout_ns,
                         &deadline) != RG_OK) {
                *round = r;
                *peer  = pl->peers[rd->recv_off + i];
                return RG_ERR_TIMEOUT;
            }
        }
    }
    return RG_OK;
}

rg_status_t rg_coll_flags_run(const rg_coll_flags_t *f, const rg_coll_plan_t *pl,
                              uint32_t rounds, uint64_t epoch, uint64_t timeout_ns,
                              uint32_t *round, int *peer)
{
    return rg_coll_flags_run_range(f, pl, 0, rounds, epoch, timeout_ns, round, peer);
}
