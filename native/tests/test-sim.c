/*
 * railgauge: tests of the LogGOPS simulator on small schedules whose end
 * times are worked out by hand in the comments (semantics: docs/sim.md).
 */
#include <math.h>
#include <stdlib.h>

#include "sim/goal.h"
#include "sim/queue.h"
#include "sim/rails.h"
#include "sim/rxwin_work.h"
#include "sim/sim.h"
#include "mutate.h"
#include "task.h"

/* Parses `text` as GOAL (calc in microseconds) and simulates it; the result
 * status is returned, finish times copied into fin (up to n ranks). */
static rg_status_t sim_text(const char *text, const rg_sim_params_t *p, double *fin, size_t n,
                            rg_err_t *err)
{
    rg_sim_sched_t  s;
    rg_sim_result_t res;
    rg_status_t     st;
    FILE           *f = fmemopen((void *)text, strlen(text), "r");

    if (f == NULL) {
        return rg_err_set(err, RG_ERR_IO, "fmemopen");
    }
    st = rg_sim_goal_parse(f, "test.goal", 1.0, &s, err);
    fclose(f);
    if (st == RG_OK) {
        st = rg_sim_run(&s, p, &res, NULL, err);
    }
    if (st == RG_OK) {
        size_t i;
        for (i = 0; i < n && i < s.nranks; i++) {
            fin[i] = res.finish[i];
        }
        rg_sim_result_free(&res);
    }
    rg_sim_sched_free(&s);
    return st;
}

TEST_IMPL(sim_pingpong)
{
    /* L=10 o=2 g=3. Rank 0 sends at 0 (CPU to 2); it arrives at 12, rank 1
     * handles it 12..14 (recv done at 12); the reply waits for the CPU, is
     * sent at 14 (CPU to 16), arrives at 26, handled 26..28. */
    rg_sim_params_t p = {.L = 10, .o = 2, .g = 3, .S = INFINITY};
    double          fin[2];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 2\n"
                       "rank 0 { l1: send 8b to 1 tag 0\n l2: recv 8b from 1 tag 0\n"
                       " l2 requires l1 }\n"
                       "rank 1 { l1: recv 8b from 0 tag 0\n l2: send 8b to 0 tag 0\n"
                       " l2 requires l1 }\n", &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 28.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 16.0, 1e-12);
    return 0;
}

TEST_IMPL(sim_one_to_n)
{
    /* L=10 o=2 g=5: the sends start at 0, 5, 10 (the gap, not o, limits
     * them); arrivals at 12, 17, 22 are handled for o = 2. Rank 0's CPU is
     * busy until 12. */
    rg_sim_params_t p = {.L = 10, .o = 2, .g = 5, .S = INFINITY};
    double          fin[4];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 4\n"
                       "rank 0 { send 1b to 1\n send 1b to 2\n send 1b to 3 }\n"
                       "rank 1 { recv 1b from 0 }\nrank 2 { recv 1b from 0 }\n"
                       "rank 3 { recv 1b from 0 }\n", &p, fin, 4, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 12.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 14.0, 1e-12);
    ASSERT_DBL_NEAR(fin[2], 19.0, 1e-12);
    ASSERT_DBL_NEAR(fin[3], 24.0, 1e-12);
    return 0;
}

TEST_IMPL(sim_n_to_one)
{
    /* Three messages arrive at 12 together; the receive gap g = 5 spaces
     * their handling at 12, 17, 22, each o = 2 long: rank 0 ends at 24. */
    rg_sim_params_t p = {.L = 10, .o = 2, .g = 5, .S = INFINITY};
    double          fin[4];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 4\n"
                       "rank 0 { recv 1b from -1\n recv 1b from -1\n recv 1b from -1 }\n"
                       "rank 1 { send 1b to 0 }\nrank 2 { send 1b to 0 }\n"
                       "rank 3 { send 1b to 0 }\n", &p, fin, 4, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 24.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 2.0, 1e-12);
    ASSERT_DBL_NEAR(fin[3], 2.0, 1e-12);
    return 0;
}

TEST_IMPL(sim_bytes)
{
    /* G and O per byte: a 101-byte send holds the CPU o + 100 O = 2 + 10 and
     * the gap g + 100 G = 1 + 50; it arrives at o + L = 12 (no per-byte term
     * on arrival), and the receiver spends o + 100 max(O, G) = 52. */
    rg_sim_params_t p = {.L = 10, .o = 2, .g = 1, .G = 0.5, .O = 0.1, .S = INFINITY};
    double          fin[2];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 2\nrank 0 { send 101b to 1 }\nrank 1 { recv 101b from 0 }\n",
                       &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 12.0, 1e-9);
    ASSERT_DBL_NEAR(fin[1], 64.0, 1e-9);
    /* A 0-byte message costs o and g, no per-byte term (LogGOPSim wraps). */
    ASSERT_OK(sim_text("num_ranks 2\nrank 0 { send 0b to 1 }\nrank 1 { recv 0b from 0 }\n",
                       &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 2.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 14.0, 1e-12);
    return 0;
}

static const char *const rndv_text =
    "num_ranks 2\n"
    "rank 0 { l1: send 100b to 1\n l2: calc 1\n l2 requires l1 }\n"
    "rank 1 { l1: calc 50\n l2: recv 100b from 0\n l2 requires l1 }\n";

TEST_IMPL(sim_rendezvous)
{
    /* L=10 o=2. Rank 1 computes 0..50; the message arrives at 12 and is
     * handled when the CPU frees, 50..52 (it was queued before the receive,
     * so it goes first). The receive, due at 50, is posted at 50 (posting
     * costs nothing and does not wait for the CPU) and matches it from the
     * unexpected queue at 50.
     * Eager (S = inf): the send is done at 0, rank 0's calc runs 2..3.
     * Rendezvous (S = 64 < 100): the send is done at the match, 50, so the
     * calc runs 50..51 (LogGOPSim: the same). */
    rg_sim_params_t p = {.L = 10, .o = 2, .S = INFINITY};
    double          fin[2];
    rg_err_t        err;

    ASSERT_OK(sim_text(rndv_text, &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 3.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 52.0, 1e-12);
    p.S = 64;
    ASSERT_OK(sim_text(rndv_text, &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 51.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 52.0, 1e-12);
    /* Exactly S bytes is eager. */
    p.S = 100;
    ASSERT_OK(sim_text(rndv_text, &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 3.0, 1e-12);
    return 0;
}

TEST_IMPL(sim_irequires)
{
    /* L=10 o=2. Rank 0's receive is posted at 0 and matched at 12 (handled
     * 12..14 on CPU 0). A calc of 5 on CPU 1 that irequires the receive
     * starts at 0 (overlap: rank 0 ends at 14); one that requires it starts at
     * 12 and ends at 17. */
    rg_sim_params_t p = {.L = 10, .o = 2, .S = INFINITY};
    double          fin[2];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 2\n"
                       "rank 0 { l1: recv 1b from 1\n l2: calc 5 cpu 1\n l2 irequires l1 }\n"
                       "rank 1 { send 1b to 0 }\n", &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 14.0, 1e-12);
    ASSERT_OK(sim_text("num_ranks 2\n"
                       "rank 0 { l1: recv 1b from 1\n l2: calc 5 cpu 1\n l2 requires l1 }\n"
                       "rank 1 { send 1b to 0 }\n", &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 17.0, 1e-12);
    return 0;
}

TEST_IMPL(sim_nics)
{
    /* L=10 o=2 g=5, two sends from one CPU. On one NIC the second waits for
     * the gap: sent at 5, arrives 17, handled to 19. On two NICs it waits only
     * for the CPU: sent at 2, arrives 14, and rank 1 handles it on its NIC 1
     * right after the first (CPU free at 14): done at 16. */
    rg_sim_params_t p = {.L = 10, .o = 2, .g = 5, .S = INFINITY};
    double          fin[2];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 2\nrank 0 { send 1b to 1\n send 1b to 1 }\n"
                       "rank 1 { recv 1b from 0\n recv 1b from 0 }\n", &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[1], 19.0, 1e-12);
    ASSERT_OK(sim_text("num_ranks 2\nrank 0 { send 1b to 1 nic 0\n send 1b to 1 nic 1 }\n"
                       "rank 1 { recv 1b from 0\n recv 1b from 0 }\n", &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[1], 16.0, 1e-12);
    return 0;
}

TEST_IMPL(sim_wildcards)
{
    /* Receives match in posting order, first fit: the tag-7 receive from
     * rank 2 must not take rank 1's tag-3 message, and the any/any receive
     * takes whichever comes first. */
    rg_sim_params_t p = {.L = 10, .o = 2, .S = INFINITY};
    double          fin[3];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 3\n"
                       "rank 0 { recv 1b from 2 tag 7\n recv 1b from -1 tag -1 }\n"
                       "rank 1 { send 1b to 0 tag 3 }\nrank 2 { send 1b to 0 tag 7 }\n",
                       &p, fin, 3, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 16.0, 1e-12);
    /* A tag that nothing sends: a deadlock, reported, not a hang. */
    ASSERT_INT_EQ(sim_text("num_ranks 2\nrank 0 { recv 1b from 1 tag 4 }\n"
                           "rank 1 { send 1b to 0 tag 3 }\n", &p, fin, 2, &err),
                  RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "deadlock");
    ASSERT_STR_HAS(err.msg, "rank 0 recv");
    return 0;
}

TEST_IMPL(sim_bad_input)
{
    rg_sim_params_t p = {.L = 1, .o = 1, .S = INFINITY};
    double          fin[2];
    rg_err_t        err;

    ASSERT_INT_EQ(sim_text("num_ranks 2\nrank 0 { l1: calc 1\n l2: calc 1\n l1 requires l2\n"
                           " l2 requires l1 }\n", &p, fin, 2, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "dependency cycle");
    ASSERT_STR_HAS(err.msg, "line 2");
    ASSERT_INT_EQ(sim_text("num_ranks 2\nrank 0 { send 1b to 2 }\n", &p, fin, 2, &err),
                  RG_ERR_RANGE);
    ASSERT_STR_HAS(err.msg, "test.goal:2:21");
    ASSERT_INT_EQ(sim_text("num_ranks 2\nrank 0 { send -1b to 1 }\n", &p, fin, 2, &err),
                  RG_ERR_RANGE);
    ASSERT_STR_HAS(err.msg, "negative size");
    ASSERT_INT_EQ(sim_text("num_ranks 2\nrank 0 { l1 requires l9\n l1: calc 1 }\n", &p, fin, 2,
                           &err), RG_ERR_NOT_FOUND);
    ASSERT_STR_HAS(err.msg, "unknown label 'l9'");
    ASSERT_INT_EQ(sim_text("num_ranks 2\nrank 0 { sned 1b to 1 }\n", &p, fin, 2, &err),
                  RG_ERR_PARSE);
    ASSERT_STR_HAS(err.msg, "test.goal:2:10");
    p.L = -1;
    ASSERT_INT_EQ(sim_text("num_ranks 1\nrank 0 { calc 1 }\n", &p, fin, 1, &err), RG_ERR_RANGE);
    return 0;
}

TEST_IMPL(sim_barrier_logp)
{
    /* The dissemination barrier under LogP: ceil(log2 P) rounds of 2o + L. */
    rg_sim_params_t p = {.L = 5.5, .o = 1.25, .g = 1, .S = INFINITY};
    uint32_t        P;
    rg_err_t        err;

    for (P = 1; P <= 300; P += (P < 40 ? 1 : 37)) {
        rg_sim_sched_t  s;
        rg_sim_result_t res;
        uint32_t        r, rounds = 0;
        while ((1u << rounds) < P) {
            rounds++;
        }
        ASSERT_OK(rg_sim_barrier_dissemination(&s, P, &err), &err);
        ASSERT_OK(rg_sim_run(&s, &p, &res, NULL, &err), &err);
        ASSERT_DBL_NEAR(res.makespan, rounds * (2 * p.o + p.L), 1e-9);
        for (r = 0; r < P; r++) {
            ASSERT_DBL_NEAR(res.finish[r], res.makespan, 1e-9);
        }
        rg_sim_result_free(&res);
        rg_sim_sched_free(&s);
    }
    return 0;
}

/* The bucket queue pops in exactly (time, sequence) order, as a sorted list
 * would: random pushes at or after the current time, fresh ones with growing
 * sequence numbers and re-queues that keep an old one, many at equal times. */
TEST_IMPL(sim_queue_order)
{
    enum { N = 20000 };
    rg_simq_t    q;
    rg_simq_ev_t ev;
    double       now = 0, t, last_t = -1;
    uint64_t     seq = 0, last_seq = 0, popped = 0, pushed = 0;
    unsigned     rnd = 12345;
    int          i;

    rg_simq_init(&q);
    for (i = 0; i < N || q.count > 0; i++) {
        rnd = rnd * 1103515245u + 12345u;
        if (i < N && (q.count == 0 || (rnd >> 16) % 3 != 0)) {
            double dt = (double)((rnd >> 8) % 4); /* few distinct times */
            rg_simq_push(&q, now + dt, seq, (uint32_t)i, 0);
            seq++;
            pushed++;
            continue;
        }
        rg_simq_pop(&q, &t, &ev);
        ASSERT(!q.nomem);
        ASSERT(t >= now);
        ASSERT(t > last_t || (t == last_t && ev.seq > last_seq));
        now = t;
        last_t = t;
        last_seq = ev.seq;
        popped++;
        /* Re-queue a third of them later with their own (old) number. */
        if (ev.type == 0 && (rnd >> 20) % 3 == 0) {
            rg_simq_push(&q, now + 1 + (double)((rnd >> 4) % 3), ev.seq, ev.op, 1);
            pushed++;
        }
    }
    rg_simq_free(&q);
    ASSERT_INT_EQ(popped, pushed);
    ASSERT(pushed > N / 2);
    return 0;
}

/* A mutation fuzzer for the GOAL parser and the engine, for a fixed number of
 * rounds from a fixed seed (so that a failure reproduces): random byte edits,
 * insertions of keywords and numbers, and deletions applied to small valid
 * schedules; every result must be parsed or rejected with a message, and
 * what parses must simulate to completion or report a deadlock. The
 * sanitizer build runs it too. It needs no clang; the coverage-guided
 * libFuzzer target is native/tests/fuzz/goal_fuzz.c (tests/test_sim.py). */
static const char *const fuzz_seeds[] = {
    "num_ranks 2\nrank 0 {\n l1: send 8b to 1 tag 0\n l2: recv 8b from 1 tag 0\n"
    " l2 requires l1\n}\nrank 1 {\n l1: recv 8b from 0 tag 0\n l2: send 8b to 0 tag 0\n"
    " l2 requires l1\n}\n",
    "num_ranks 3\nrank 0 { a: recv 1kb from -1 tag -1 cpu 1 nic 1\n b: calc 100 cpu 1\n"
    " b irequires a }\nrank 1 { send 1kb to 0 tag 5 nic 0 }\n"
    "/* c */ rank 2 { x: calc 5 // d\n y: send 0b to 0\n y requires x }\n",
    "num_ranks 2\nrank 1 { l1: send 100b to 0\n l2: calc 1000\n l2 requires l1 }\n"
    "rank 0 { l1: calc 50000\n l2: recv 100b from 1\n l2 requires l1 }\n",
};

static const char *const fuzz_words[] = {
    "send ", "recv ", "calc ", "to ", "from ", "tag ", "cpu ", "nic ", "requires ",
    "irequires ", "rank ", "num_ranks ", "{", "}", ":", "-1", "0", "1", "7b", "1kb", "9999999999",
    "l1", "l2", "//", "/*", "*/", "\n", " ", "-", "1e308", "0.5", "nan",
};

TEST_IMPL(sim_fuzz_goal)
{
    enum { ROUNDS = 100000, MAX = 2048 };
    rg_sim_params_t p = {.L = 1.5, .o = 0.5, .g = 0.75, .G = 0.01, .O = 0.001, .S = 64};
    unsigned        rnd = 20261123u;
    char            buf[MAX + 64];
    int             round, parsed = 0, ran = 0;

    for (round = 0; round < ROUNDS; round++) {
        const char     *seed = fuzz_seeds[round % 3];
        size_t          n = strlen(seed);
        rg_sim_sched_t  s;
        rg_sim_result_t res;
        rg_err_t        err;
        rg_status_t     st;
        FILE           *f;

        memcpy(buf, seed, n);
        rg_test_mutate(buf, &n, MAX, fuzz_words, sizeof(fuzz_words) / sizeof(*fuzz_words), 6,
                       &rnd);
        f = fmemopen(buf, n ? n : 1, "r");
        ASSERT(f != NULL);
        rg_err_clear(&err);
        st = rg_sim_goal_parse(f, "fuzz.goal", 1e-3, &s, &err);
        fclose(f);
        if (st == RG_OK) {
            parsed++;
            /* Huge rank counts parse (they are valid) but are not run here. */
            if (s.nranks <= 4096) {
                st = rg_sim_run(&s, &p, &res, NULL, &err);
                if (st == RG_OK) {
                    ran++;
                    ASSERT(res.makespan >= 0 && isfinite(res.makespan));
                    rg_sim_result_free(&res);
                } else {
                    ASSERT(err.msg[0] != '\0');
                }
            }
        } else {
            ASSERT(err.msg[0] != '\0');
        }
        rg_sim_sched_free(&s);
    }
    fprintf(stderr, "fuzz: %d rounds, %d parsed, %d simulated\n", ROUNDS, parsed, ran);
    ASSERT(parsed > 0);
    return 0;
}

TEST_IMPL(sim_piecewise)
{
    /* Up to 64 bytes: L=10 o=2 g=3; above: L=10 o=2 g=9 G=0.5 O=0.1.
     * Rank 0 sends 8 B at 0 (CPU to 2, gap to 3), then 101 B at 3 (CPU to
     * 3 + 2 + 100 * 0.1 = 15, arrives 3 + 2 + 10 = 15). Rank 1 handles the
     * 8 B at 12 (CPU to 14, receive gap to 15) and the 101 B at 15, for
     * o + 100 max(O, G) = 52: done at 67. */
    static const rg_sim_range_t r[2] = {{64, 10, 2, 3, 0, 0}, {1e9, 10, 2, 9, 0.5, 0.1}};
    rg_sim_params_t p = {.S = INFINITY, .ranges = r, .nranges = 2};
    double          fin[2];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 2\nrank 0 { send 8b to 1\n send 101b to 1 }\n"
                       "rank 1 { recv 8b from 0\n recv 101b from 0 }\n", &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 15.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 67.0, 1e-12);
    /* Ranges must increase. */
    {
        static const rg_sim_range_t bad[2] = {{64, 1, 1, 1, 0, 0}, {64, 1, 1, 1, 0, 0}};
        p.ranges = bad;
        ASSERT_INT_EQ(rg_sim_params_check(&p, &err), RG_ERR_RANGE);
    }
    return 0;
}

/* Like sim_text, keeping the whole result (free with rg_sim_result_free). */
static rg_status_t sim_text_res(const char *text, const rg_sim_params_t *p,
                                rg_sim_result_t *res, rg_err_t *err)
{
    rg_sim_sched_t s;
    rg_status_t    st;
    FILE          *f = fmemopen((void *)text, strlen(text), "r");

    if (f == NULL) {
        return rg_err_set(err, RG_ERR_IO, "fmemopen");
    }
    st = rg_sim_goal_parse(f, "test.goal", 1.0, &s, err);
    fclose(f);
    if (st == RG_OK) {
        st = rg_sim_run(&s, p, res, NULL, err);
    }
    rg_sim_sched_free(&s);
    return st;
}

static const char *const lop_1n =
    "num_ranks 5\n"
    "rank 0 { send 1b to 1\n send 1b to 2\n send 1b to 3\n send 1b to 4 }\n"
    "rank 1 { recv 1b from 0 }\nrank 2 { recv 1b from 0 }\n"
    "rank 3 { recv 1b from 0 }\nrank 4 { recv 1b from 0 }\n";

static const char *const lop_n1 =
    "num_ranks 5\n"
    "rank 0 { recv 1b from -1\n recv 1b from -1\n recv 1b from -1\n recv 1b from -1 }\n"
    "rank 1 { send 1b to 0 }\nrank 2 { send 1b to 0 }\n"
    "rank 3 { send 1b to 0 }\nrank 4 { send 1b to 0 }\n";

TEST_IMPL(sim_lop)
{
    /* RTT(p) = 12/p + 10, o_s(p) = 0.5 + 1/p: o_s(1) = 1.5, o_s(4) = 0.75,
     * L(p) = RTT(p)/2 - o_s(p) - o_s(1) = 5/p + 3: L(1) = 8, L(4) = 4.25;
     * L_list(p) = RTT(p)/2 - p o_s(p) - o_s(1) = 6/p + 2.5 - p/2: L_list(4) = 2. */
    rg_sim_lop_t    m = {{12, 0, 10, 0, 0, 1}, {0.5, 1, 0}, 0};
    rg_sim_params_t p = {.S = INFINITY, .lop = &m};
    double          fin[5];
    rg_err_t        err;

    ASSERT_DBL_NEAR(rg_sim_lop_latency(&m, 4), 4.25, 1e-12);
    /* 1:n, n = 4: rank 0 posts at 0, .75, 1.5, 2.25 (CPU to 3); the NIC
     * delivers each L(4) after the previous: 5, 9.25, 13.5, 17.75 = t_1:n =
     * o_s(4) + 4 L(4); each receiver handles its message for o_s(1). */
    ASSERT_OK(sim_text(lop_1n, &p, fin, 5, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 3.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 6.5, 1e-12);
    ASSERT_DBL_NEAR(fin[2], 10.75, 1e-12);
    ASSERT_DBL_NEAR(fin[4], 17.75 + 1.5, 1e-12);
    /* List posting: the NIC starts once all 4 are posted (4 o_s(4) = 3) and
     * delivers at 3 + 2k, the last at t_1:n^list = 4 o_s(4) + 4 L_list(4) = 11. */
    m.list = 1;
    ASSERT_OK(sim_text(lop_1n, &p, fin, 5, &err), &err);
    ASSERT_DBL_NEAR(fin[1], 5 + 1.5, 1e-12);
    ASSERT_DBL_NEAR(fin[4], 11 + 1.5, 1e-12);
    m.list = 0;
    /* n:1: each sender posts one message (batch 1, o_s(1) = 1.5); rank 0's
     * receiving batch has 4, so each takes L(max(1, 4)) = 4.25 on its NIC:
     * arrivals 5.75, 10, 14.25, 18.5 = o_s(1) + 4 L(4), handled for 1.5. */
    ASSERT_OK(sim_text(lop_n1, &p, fin, 5, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 18.5 + 1.5, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 1.5, 1e-12);
    /* A ping-pong is RTT(1) = 2 (o_s(1) + L(1) + o_s(1)) = 22 exactly. */
    ASSERT_OK(sim_text("num_ranks 2\n"
                       "rank 0 { a: send 1b to 1\n b: recv 1b from 1\n b requires a }\n"
                       "rank 1 { a: recv 1b from 0\n b: send 1b to 0\n b requires a }\n",
                       &p, fin, 2, &err), &err);
    ASSERT_DBL_NEAR(fin[0], 22.0, 1e-12);
    /* L(p) < 0 is outside the model: refused, naming p. RTT(p) = 12/p + 2,
     * o_s = 3: L(1) = 7 - 6 = 1, L(2) = 4 - 6 = -2. */
    {
        rg_sim_lop_t    bad = {{12, 0, 2, 0, 0, 1}, {3, 0, 0}, 0};
        rg_sim_params_t pb = {.S = INFINITY, .lop = &bad};
        ASSERT_INT_EQ(sim_text(lop_1n, &pb, fin, 5, &err), RG_ERR_RANGE);
        ASSERT(strstr(rg_err_message(&err), "L(2) = -2 us is negative") != NULL);
        pb.S = 64;
        ASSERT_INT_EQ(rg_sim_params_check(&pb, &err), RG_ERR_RANGE);
    }
    /* The dissemination barrier (batches of 1) under LoP: ceil(log2 P)
     * (2 o_s(1) + L(1)) = 3 * 11 for P = 8. */
    {
        rg_sim_sched_t  s;
        rg_sim_result_t res;
        ASSERT_OK(rg_sim_barrier_dissemination(&s, 8, &err), &err);
        ASSERT_OK(rg_sim_run(&s, &p, &res, NULL, &err), &err);
        ASSERT_DBL_NEAR(res.makespan, 33.0, 1e-12);
        rg_sim_result_free(&res);
        rg_sim_sched_free(&s);
    }
    return 0;
}

TEST_IMPL(sim_batches)
{
    /* Runs of sends and of receives in a rank's program order, broken by any
     * other kind; ranks interleaved in the operation array. */
    rg_sim_sched_t s;
    rg_sim_op_t    op;
    rg_err_t       err;
    const uint8_t  kinds[] = {RG_SIM_SEND, RG_SIM_SEND, RG_SIM_RECV, RG_SIM_SEND,
                              RG_SIM_SEND, RG_SIM_SEND, RG_SIM_CALC, RG_SIM_RECV,
                              RG_SIM_RECV};
    const uint16_t want[] = {2, 2, 1, 3, 3, 3, 0, 2, 2};
    size_t         i;

    rg_sim_sched_init(&s, 2);
    for (i = 0; i < sizeof(kinds); i++) {
        memset(&op, 0, sizeof(op));
        op.kind = kinds[i];
        op.peer = 1;
        op.rank = 0;
        ASSERT_OK(rg_sim_sched_add(&s, &op, &err), &err);
        /* Rank 1 interleaved: one send between each of rank 0's. */
        op.rank = 1;
        op.kind = RG_SIM_SEND;
        op.peer = 0;
        ASSERT_OK(rg_sim_sched_add(&s, &op, &err), &err);
    }
    ASSERT_OK(rg_sim_sched_finish(&s, &err), &err);
    for (i = 0; i < sizeof(kinds); i++) {
        ASSERT_INT_EQ(s.ops[2 * i].batch, want[i]);
        ASSERT_INT_EQ(s.ops[2 * i + 1].batch, sizeof(kinds));
    }
    ASSERT(s.ops[0].flags & RG_SIM_OPF_FIRST);
    ASSERT(!(s.ops[2].flags & RG_SIM_OPF_FIRST));
    ASSERT(s.ops[6].flags & RG_SIM_OPF_FIRST);
    ASSERT(s.ops[14].flags & RG_SIM_OPF_FIRST);
    rg_sim_sched_free(&s);
    return 0;
}

TEST_IMPL(sim_stats)
{
    /* L=10 o=2 g=0, calc in us. Rank 0: calc 0..5, send 5..7 (its message
     * arrives at 17). Rank 1: handles it 17..19, computes 19..22, answers
     * 22..24; the answer arrives at 34 and rank 0 handles it 34..36.
     * Rank 0: overhead 2 + 2, calc 5, wait 36 - 9 = 27. Rank 1: overhead 4,
     * calc 3 + 1 (a calc of 1 on its CPU 1 at 0..1), busy 8, wait 24 - 8. */
    rg_sim_params_t p = {.L = 10, .o = 2, .S = INFINITY};
    rg_sim_result_t res;
    rg_err_t        err;

    ASSERT_OK(sim_text_res("num_ranks 2\n"
                           "rank 0 { a: calc 5\n b: send 1b to 1\n c: recv 1b from 1\n"
                           " b requires a\n c requires b }\n"
                           "rank 1 { a: recv 1b from 0\n b: calc 3\n c: send 1b to 0\n"
                           " d: calc 1 cpu 1\n b requires a\n c requires b }\n",
                           &p, &res, &err), &err);
    ASSERT_DBL_NEAR(res.finish[0], 36.0, 1e-12);
    ASSERT_DBL_NEAR(res.overhead[0], 4.0, 1e-12);
    ASSERT_DBL_NEAR(res.calc[0], 5.0, 1e-12);
    ASSERT_DBL_NEAR(res.wait[0], 27.0, 1e-12);
    ASSERT_DBL_NEAR(res.finish[1], 24.0, 1e-12);
    ASSERT_DBL_NEAR(res.overhead[1], 4.0, 1e-12);
    ASSERT_DBL_NEAR(res.calc[1], 4.0, 1e-12);
    ASSERT_DBL_NEAR(res.wait[1], 24.0 - 8.0, 1e-12);
    rg_sim_result_free(&res);
    /* Overlapping CPUs: rank 0 computes 10 on CPU 0 and 4 on CPU 1 at once:
     * calc 14, busy 10, wait 0. */
    ASSERT_OK(sim_text_res("num_ranks 1\nrank 0 { calc 10\n calc 4 cpu 1 }\n", &p, &res,
                           &err), &err);
    ASSERT_DBL_NEAR(res.calc[0], 14.0, 1e-12);
    ASSERT_DBL_NEAR(res.wait[0], 0.0, 1e-12);
    rg_sim_result_free(&res);
    return 0;
}

TEST_IMPL(sim_goal_chunks)
{
    /* The parser reads 64 KiB at a time: a schedule of about 200 KB, shifted
     * by 0..47 leading blanks, puts every kind of token (and a comment) across
     * a buffer boundary; each must give the same schedule and end times. */
    enum { N = 4000, SHIFT = 48 };
    size_t          cap = (size_t)N * 96 + 256, n = 0, k;
    char           *text = malloc(cap + SHIFT), *body;
    rg_sim_params_t p = {.L = 3, .o = 1, .g = 2, .S = INFINITY};
    double          ref = -1;
    size_t          ref_ops = 0;
    rg_err_t        err;

    ASSERT(text != NULL);
    body = text + SHIFT;
    n += (size_t)snprintf(body + n, cap - n, "num_ranks 2\nrank 0 {\n");
    for (k = 0; k < N; k++) {
        n += (size_t)snprintf(body + n, cap - n, "s%zu: send %zub to 1 tag %zu\n", k, k % 7,
                              k % 5);
        if (k > 0) {
            n += (size_t)snprintf(body + n, cap - n, "s%zu requires s%zu /* c */ // d\n", k,
                                  k - 1);
        }
    }
    n += (size_t)snprintf(body + n, cap - n, "}\nrank 1 {\n");
    for (k = 0; k < N; k++) {
        n += (size_t)snprintf(body + n, cap - n, "r%zu: recv %zu b from 0 tag %zu\n", k, k % 7,
                              k % 5);
    }
    n += (size_t)snprintf(body + n, cap - n, "}\n");
    ASSERT(n < cap && n > 3 * 65536);
    for (k = 0; k < SHIFT; k++) {
        rg_sim_sched_t  s;
        rg_sim_result_t res;
        char           *start = body - k;
        FILE           *f;
        memset(start, ' ', k);
        f = fmemopen(start, n + k, "r");
        ASSERT(f != NULL);
        ASSERT_OK(rg_sim_goal_parse(f, "chunks.goal", 1.0, &s, &err), &err);
        fclose(f);
        ASSERT_OK(rg_sim_run(&s, &p, &res, NULL, &err), &err);
        if (k == 0) {
            ref = res.makespan;
            ref_ops = s.nops;
            ASSERT_INT_EQ(s.nops, 2 * N);
        }
        ASSERT_INT_EQ(s.nops, ref_ops);
        ASSERT_DBL_NEAR(res.makespan, ref, 0);
        rg_sim_result_free(&res);
        rg_sim_sched_free(&s);
    }
    free(text);
    return 0;
}

TEST_IMPL(sim_init_order)
{
    /* The operations free at the start are queued rank by rank (sends,
     * receives, computations within a rank), as LogGOPSim does: ties at one
     * time go by that order. L=10 o=2. Rank 0's calc runs 0..12 and frees its
     * send (due at 12) before rank 1's send at 0 creates the message that
     * arrives at rank 0 at 12; so at 12 the send goes first (12..14, arriving
     * at rank 2 at 24, handled 24..26) and the message waits (14..16).
     * Queued kind by kind over all ranks, the message would go first and
     * rank 2 would end at 28. LogGOPSim: 16, 2, 26. */
    rg_sim_params_t p = {.L = 10, .o = 2, .S = INFINITY};
    double          fin[3];
    rg_err_t        err;

    ASSERT_OK(sim_text("num_ranks 3\n"
                       "rank 0 { c: calc 12\n s: send 1b to 2\n r: recv 1b from 1\n"
                       " s requires c }\n"
                       "rank 1 { send 1b to 0 }\nrank 2 { recv 1b from 0 }\n", &p, fin, 3,
                       &err), &err);
    ASSERT_DBL_NEAR(fin[0], 16.0, 1e-12);
    ASSERT_DBL_NEAR(fin[1], 2.0, 1e-12);
    ASSERT_DBL_NEAR(fin[2], 26.0, 1e-12);
    return 0;
}


TEST_IMPL(sim_rails)
{
    /* Rails (docs/sim.md "Rails"). A 4 MiB message over rails of G = 0.001 and
     * 0.002 us/byte, L=5 o=1 g=1: even puts 2 MiB on each, all in at o + L = 6
     * and handled for o + (2 MiB - 1) 0.002: done at 7 + 4194.302; weighted by
     * 2:1 cuts 2793472 (whole pages of 2/3) and 1400832 bytes. */
    static const char one[] = "num_ranks 2\nrank 0 { send 4194304b to 1 }\n"
                              "rank 1 { recv 4194304b from 0 }\n";
    static const char *const sched[] = {
        one,
        "num_ranks 3\nrank 0 { a: send 300000b to 1 cpu 1\n b: recv 8b from 2\n"
        " c: send 70b to 2 nic 1\n c requires b\n b irequires a }\n"
        "rank 1 { recv 300000b from 0\n send 5b to 2 }\n"
        "rank 2 { send 8b to 0\n recv 5b from 1\n recv 70b from 0 cpu 1 }\n",
    };
    rg_sim_params_t p = {.L = 5, .o = 1, .g = 1, .G = 0.0005, .O = 0.0001, .S = 1000};
    rg_sim_rails_t  rl;
    rg_sim_result_t a, b;
    rg_err_t        err;
    size_t          i, k;
    double          w[RG_SIM_RAILS_MAX];
    int             pol, nw;

    /* One rail whose parameters are all the message's own: to the bit. */
    rg_sim_rails_defaults(&rl);
    for (i = 0; i < sizeof(sched) / sizeof(sched[0]); i++) {
        for (pol = RG_SIM_RAILS_BINDING; pol <= RG_SIM_RAILS_ADAPTIVE; pol++) {
            rl.policy = pol;
            p.rails = NULL;
            ASSERT_OK(sim_text_res(sched[i], &p, &a, &err), &err);
            p.rails = &rl;
            ASSERT_OK(sim_text_res(sched[i], &p, &b, &err), &err);
            ASSERT(a.makespan == b.makespan && a.events == b.events);
            for (k = 0; k < 2; k++) {
                ASSERT(a.finish[k] == b.finish[k] && a.overhead[k] == b.overhead[k] &&
                       a.wait[k] == b.wait[k]);
            }
            rg_sim_result_free(&a);
            rg_sim_result_free(&b);
        }
    }
    /* Two rails: even and weighted. */
    p = (rg_sim_params_t){.L = 5, .o = 1, .g = 1, .S = INFINITY, .rails = &rl};
    rl.nrails = 2;
    rl.rail[0].G = 0.001;
    rl.rail[1].G = 0.002;
    rl.policy = RG_SIM_RAILS_EVEN;
    ASSERT_OK(sim_text_res(one, &p, &a, &err), &err);
    ASSERT_DBL_NEAR(a.makespan, 7 + (2097152 - 1) * 0.002, 1e-9);
    ASSERT_DBL_NEAR(a.rails[0].bytes, 2097152, 0);
    ASSERT_DBL_NEAR(a.rails[1].send_busy_us, 1 + (2097152 - 1) * 0.002, 1e-9);
    rg_sim_result_free(&a);
    rl.policy = RG_SIM_RAILS_WEIGHTED;
    rl.weights[0] = 2;
    rl.weights[1] = 1;
    ASSERT_OK(sim_text_res(one, &p, &a, &err), &err);
    ASSERT_DBL_NEAR(a.rails[0].bytes, 2793472, 0);
    ASSERT_DBL_NEAR(a.rails[1].bytes, 1400832, 0);
    ASSERT_DBL_NEAR(a.makespan, 7 + (1400832 - 1) * 0.002, 1e-9);
    rg_sim_result_free(&a);
    /* Bad models. */
    rl.weights[1] = 0;
    ASSERT(sim_text_res(one, &p, &a, &err) == RG_ERR_INVALID);
    ASSERT(strstr(rg_err_message(&err), "1 weights for 2 rails") != NULL);
    rl.weights[1] = 1;
    rl.rail[1].G = -1;
    ASSERT(rg_sim_rails_check(&rl, &err) == RG_ERR_RANGE);
    rl.rail[1].G = 0.002;
    rl.floor = 0.5;
    ASSERT(rg_sim_rails_check(&rl, &err) == RG_ERR_RANGE);
    rl.floor = 0.05;
    rl.nrails = 17;
    ASSERT(rg_sim_rails_check(&rl, &err) == RG_ERR_RANGE);
    rl.nrails = 2;
    ASSERT_OK(rg_sim_rails_check(&rl, &err), &err);
    ASSERT(rg_sim_rails_policy("round-robin") == RG_SIM_RAILS_RR);
    ASSERT(rg_sim_rails_policy("fast") == -1);
    /* rails.json and G lists. */
    rg_sim_rails_defaults(&rl);
    {
        static const char doc[] = "{\"rails\": [{\"name\": \"r\\\"0\", \"L_us\": 40, "
                                  "\"o_us\": null, \"G_us_per_byte\": 0.5, \"x\": [1, {}]},"
                                  " {\"G_us_per_byte\": 2e-3, \"g_us\": 1.5}], \"weights\":"
                                  " [1, 3], \"policy\": \"adaptive\", \"env\": {}}";
        ASSERT_OK(rg_sim_rails_parse_json(doc, strlen(doc), "r.json", &rl, &pol, w, &nw, &err),
                  &err);
        ASSERT_INT_EQ(rl.nrails, 2);
        ASSERT_INT_EQ(pol, RG_SIM_RAILS_ADAPTIVE);
        ASSERT_INT_EQ(nw, 2);
        ASSERT(w[1] == 3 && rl.rail[0].L == 40 && isnan(rl.rail[0].o) &&
               rl.rail[0].G == 0.5 && rl.rail[1].g == 1.5 && isnan(rl.rail[1].L));
        static const char bad[] = "{\"rails\": [{\"G_us_per_byte\": 1},]}";
        ASSERT(rg_sim_rails_parse_json(bad, strlen(bad), "b.json", &rl, &pol, w, &nw, &err) ==
               RG_ERR_INVALID);
        /* A trailing comma is no JSON (base/json_read.h reads the whole text first). */
        ASSERT(strstr(rg_err_message(&err), "b.json: not a rails.json (line 1, column 33): "
                      "a value expected") != NULL);
        static const char bad2[] = "{\"rails\": [{\"G_us_per_byte\": 1}, 5]}";
        ASSERT(rg_sim_rails_parse_json(bad2, strlen(bad2), "b.json", &rl, &pol, w, &nw, &err) ==
               RG_ERR_INVALID);
        ASSERT(strstr(rg_err_message(&err), "b.json: not a rails.json (line 1, column 34): "
                      "rails[1]: each rail must be an object") != NULL);
    }
    ASSERT_OK(rg_sim_rails_parse_g("1e-3,0.002,5", &rl, &err), &err);
    ASSERT(rl.nrails == 3 && rl.rail[2].G == 5);
    ASSERT(rg_sim_rails_parse_g("1,,2", &rl, &err) == RG_ERR_INVALID);
    ASSERT(rg_sim_rails_parse_g("1,0", &rl, &err) == RG_ERR_RANGE);
    return 0;
}

TEST_IMPL(sim_models_together)
{
    /* The models (LoP, the receive window, rails, duplex) each run alone:
     * every combination is refused, by the first check that sees it, and the
     * run's inputs are left as they were. A schedule not finished is found
     * after the models' own checks, before anything is allocated. */
    static const char text[] = "num_ranks 2\nrank 0 { send 8b to 1 }\n"
                               "rank 1 { recv 8b from 0 }\n";
    static const struct {
        int         lop, rxwin, rails, duplex;
        const char *msg;
    } cases[] = {
        {1, 1, 0, 0, "the receive-window model runs under LogGOPS, not LoP"},
        {1, 0, 1, 0, "rails run under LogGOPS, without LoP"},
        {0, 1, 1, 0, "rails run under LogGOPS, without the receive-window model"},
        {1, 1, 1, 0, "the receive-window model runs under LogGOPS, not LoP"},
        {1, 0, 0, 1, "duplex is a LogGOPS parameter"},
        {0, 1, 0, 1, "duplex is a LogGOPS parameter"},
        {0, 0, 1, 1, "duplex is a LogGOPS parameter"},
    };
    rg_sim_lop_t    lop = {{0, 1, 40, 0, 0, 0}, {0.5, 0, 0}, 0};
    rg_sim_rxwin_t  win;
    rg_sim_rails_t  rl;
    rg_sim_params_t p;
    rg_sim_result_t res;
    rg_sim_sched_t  s;
    rg_err_t        err;
    size_t          i;

    ASSERT_OK(rg_sim_rxwin_parse("fixed:4", &win, 16384, &err), &err);
    rg_sim_rails_defaults(&rl);
    rl.nrails = 2;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        p = (rg_sim_params_t){.S = INFINITY};
        p.lop = cases[i].lop ? &lop : NULL;
        p.rxwin = cases[i].rxwin ? &win : NULL;
        p.rails = cases[i].rails ? &rl : NULL;
        p.duplex = cases[i].duplex ? 1.0 : 0.0;
        ASSERT_INT_EQ(sim_text_res(text, &p, &res, &err), RG_ERR_INVALID);
        ASSERT_STR_HAS(err.msg, cases[i].msg);
        ASSERT(res.finish == NULL);
    }
    /* Each alone runs. */
    for (i = 0; i < 4; i++) {
        p = (rg_sim_params_t){.L = 5, .o = 1, .g = 1, .S = INFINITY};
        p.lop = i == 0 ? &lop : NULL;
        p.rxwin = i == 1 ? &win : NULL;
        p.rails = i == 2 ? &rl : NULL;
        p.duplex = i == 3 ? 1.0 : 0.0;
        if (i == 0) {
            p.L = p.o = p.g = 0;
        }
        ASSERT_OK(sim_text_res(text, &p, &res, &err), &err);
        ASSERT(res.makespan > 0);
        rg_sim_result_free(&res);
    }
    /* A bad model is named before the unfinished schedule. */
    rg_sim_sched_init(&s, 2);
    {
        rg_sim_op_t op = {.amount = 8, .peer = 1, .kind = RG_SIM_SEND};
        ASSERT_OK(rg_sim_sched_add(&s, &op, &err), &err);
    }
    p = (rg_sim_params_t){.S = INFINITY, .rails = &rl};
    rl.nrails = 0;
    ASSERT_INT_EQ(rg_sim_run(&s, &p, &res, NULL, &err), RG_ERR_RANGE);
    ASSERT_STR_HAS(err.msg, "rails: 0 rails");
    rl.nrails = 2;
    ASSERT_INT_EQ(rg_sim_run(&s, &p, &res, NULL, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "schedule not finished");
    win.w_init = 0;
    p = (rg_sim_params_t){.S = INFINITY, .rxwin = &win};
    ASSERT_INT_EQ(rg_sim_run(&s, &p, &res, NULL, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "receive window of 0 to 4 buffers");
    rg_sim_sched_free(&s);
    return 0;
}
