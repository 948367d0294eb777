/*
 * railgauge: tests of the LogGOPS simulator on small schedules whose end
 * times are worked out by hand in the comments (semantics: docs/sim.md).
 */
#include <math.h>
#include <stdlib.h>

#include "sim/goal.h"
#include "sim/queue.h"
#include "sim/sim.h"
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
        free(res.finish);
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
        free(res.finish);
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
 * sanitizer build runs it too. (No libFuzzer/AFL++ here: no clang on the
 * build machine; the seeds below are the corpus.) */
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
        size_t          n = strlen(seed), edits, k;
        rg_sim_sched_t  s;
        rg_sim_result_t res;
        rg_err_t        err;
        rg_status_t     st;
        FILE           *f;

        memcpy(buf, seed, n);
        rnd = rnd * 1103515245u + 12345u;
        edits = 1 + (rnd >> 16) % 6;
        for (k = 0; k < edits; k++) {
            size_t at;
            rnd = rnd * 1103515245u + 12345u;
            at = n ? (rnd >> 8) % n : 0;
            switch ((rnd >> 4) % 4) {
            case 0: /* flip a byte */
                if (n) {
                    buf[at] = (char)(rnd >> 20);
                }
                break;
            case 1: { /* insert a word */
                size_t      nw = sizeof(fuzz_words) / sizeof(*fuzz_words);
                const char *w = fuzz_words[(rnd >> 12) % nw];
                size_t      wl = strlen(w);
                if (n + wl < MAX) {
                    memmove(buf + at + wl, buf + at, n - at);
                    memcpy(buf + at, w, wl);
                    n += wl;
                }
                break;
            }
            case 2: { /* delete a run */
                size_t len = 1 + (rnd >> 24) % 8;
                if (at + len <= n) {
                    memmove(buf + at, buf + at + len, n - at - len);
                    n -= len;
                }
                break;
            }
            default: /* duplicate a run */
                if (n && n + 32 < MAX) {
                    size_t len = 1 + (rnd >> 24) % 32;
                    if (at + len > n) {
                        len = n - at;
                    }
                    memmove(buf + at + len, buf + at, n - at);
                    n += len;
                }
                break;
            }
        }
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
                    free(res.finish);
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
