/*
 * railgauge: tests of the barrier schedules (coll/sched.h).
 *
 * The main check is symbolic: every rank starts knowing only that it has
 * entered; a message of round r carries what its sender knew when the round
 * began (all it had received in the rounds before), and a rank may leave
 * after its last round only if by then it has heard, directly or through
 * others, from every rank. That is exactly the barrier property, checked for
 * every algorithm, every P in 1..64 and n in 1..7, together with the
 * matching of sends and receives round by round.
 */
#include <stdint.h>
#include <stdlib.h>

#include "coll/sched.h"
#include "task.h"

#define MAXP 64

/* Plans of all P ranks. */
static int plans_make(rg_coll_plan_t *plans, const rg_coll_barrier_spec_t *spec, int P)
{
    rg_err_t err;
    int      p;

    for (p = 0; p < P; p++) {
        rg_coll_plan_init(&plans[p]);
        ASSERT_OK(rg_coll_barrier_plan(&plans[p], spec, P, p, &err), &err);
        ASSERT_INT_EQ(plans[p].nrounds, rg_coll_barrier_rounds(spec, P));
    }
    return 0;
}

static void plans_free(rg_coll_plan_t *plans, int P)
{
    int p;

    for (p = 0; p < P; p++) {
        rg_coll_plan_fini(&plans[p]);
    }
}

/* How often q receives from p in round r of its plan. */
static int recv_count(const rg_coll_plan_t *q, uint32_t r, int p)
{
    const rg_coll_round_t *rd = &q->rounds[r];
    uint32_t               i;
    int                    c = 0;

    for (i = 0; i < rd->nrecv; i++) {
        c += q->peers[rd->recv_off + i] == p;
    }
    return c;
}

static int check_barrier(const rg_coll_barrier_spec_t *spec, int P)
{
    rg_coll_plan_t plans[MAXP];
    uint64_t       know[MAXP], next[MAXP], all = P == 64 ? ~0ull : (1ull << P) - 1;
    /* pairs[p][q]: messages p -> q in the whole barrier (one tag suffices
     * only if this is at most 1). */
    static uint8_t pairs[MAXP][MAXP];
    uint32_t       r, i, nrounds = rg_coll_barrier_rounds(spec, P);
    int            p, q, rc;
    char           name[32];

    rg_coll_barrier_format(spec, name, sizeof(name));
    rc = plans_make(plans, spec, P);
    if (rc != 0) {
        plans_free(plans, P);
        return rc;
    }
    memset(pairs, 0, sizeof(pairs));
    for (p = 0; p < P; p++) {
        know[p] = 1ull << p;
    }
    rc = 0;
    for (r = 0; r < nrounds && rc == 0; r++) {
        size_t nsend = 0, nrecv = 0;
        for (p = 0; p < P; p++) {
            next[p] = know[p];
        }
        for (p = 0; p < P && rc == 0; p++) {
            const rg_coll_round_t *rd = &plans[p].rounds[r];
            nsend += rd->nsend;
            nrecv += rd->nrecv;
            for (i = 0; i < rd->nsend; i++) {
                q = plans[p].peers[rd->send_off + i];
                if (q < 0 || q >= P || q == p) {
                    fprintf(stderr, "%s P=%d: rank %d round %u sends to %d\n", name, P, p, r, q);
                    rc = 1;
                    break;
                }
                if (recv_count(&plans[q], r, p) != 1) {
                    fprintf(stderr, "%s P=%d: rank %d round %u sends to %d, which receives "
                            "from it %d times in that round\n", name, P, p, r, q,
                            recv_count(&plans[q], r, p));
                    rc = 1;
                    break;
                }
                if (++pairs[p][q] > 1) {
                    fprintf(stderr, "%s P=%d: rank %d sends to %d twice\n", name, P, p, q);
                    rc = 1;
                    break;
                }
                next[q] |= know[p];
            }
        }
        if (rc == 0 && nsend != nrecv) {
            fprintf(stderr, "%s P=%d round %u: %zu sends, %zu receives\n", name, P, r, nsend,
                    nrecv);
            rc = 1;
        }
        for (p = 0; p < P; p++) {
            know[p] = next[p];
        }
    }
    for (p = 0; p < P && rc == 0; p++) {
        if (know[p] != all) {
            fprintf(stderr, "%s P=%d: rank %d leaves without having heard from every rank "
                    "(knows %#llx)\n", name, P, p, (unsigned long long)know[p]);
            rc = 1;
        }
    }
    plans_free(plans, P);
    return rc;
}

TEST_IMPL(coll_barrier_correct)
{
    rg_coll_barrier_spec_t spec;
    int                    P, n, a;

    for (P = 1; P <= MAXP; P++) {
        for (a = 0; a < RG_COLL_BARRIER_NALGS; a++) {
            spec.alg = (rg_coll_barrier_alg_t)a;
            if (spec.alg == RG_COLL_BARRIER_NWAY) {
                for (n = 1; n <= 7; n++) {
                    spec.n = n;
                    ASSERT(check_barrier(&spec, P) == 0);
                }
            } else {
                spec.n = spec.alg == RG_COLL_BARRIER_DISSEM;
                ASSERT(check_barrier(&spec, P) == 0);
            }
        }
    }
    return 0;
}

/* The check above must be able to fail: a dissemination cut short by one
 * round leaves ranks that have not heard from everyone. */
TEST_IMPL(coll_barrier_check_detects)
{
    rg_coll_plan_t plans[8];
    rg_coll_barrier_spec_t spec = {RG_COLL_BARRIER_DISSEM, 1};
    uint64_t       know[8], next[8];
    uint32_t       r, i;
    int            p, incomplete = 0;

    ASSERT(plans_make(plans, &spec, 8) == 0);
    for (p = 0; p < 8; p++) {
        know[p] = 1ull << p;
    }
    for (r = 0; r + 1 < plans[0].nrounds; r++) {
        memcpy(next, know, sizeof(next));
        for (p = 0; p < 8; p++) {
            const rg_coll_round_t *rd = &plans[p].rounds[r];
            for (i = 0; i < rd->nsend; i++) {
                next[plans[p].peers[rd->send_off + i]] |= know[p];
            }
        }
        memcpy(know, next, sizeof(know));
    }
    for (p = 0; p < 8; p++) {
        incomplete += know[p] != 0xff;
    }
    plans_free(plans, 8);
    ASSERT_INT_EQ(incomplete, 8);
    return 0;
}

static int expect_round(const rg_coll_plan_t *pl, uint32_t r, const int *send, uint32_t nsend,
                        const int *recv, uint32_t nrecv)
{
    uint32_t i;

    ASSERT(r < pl->nrounds);
    ASSERT_INT_EQ(pl->rounds[r].nsend, nsend);
    ASSERT_INT_EQ(pl->rounds[r].nrecv, nrecv);
    for (i = 0; i < nsend; i++) {
        ASSERT_INT_EQ(pl->peers[pl->rounds[r].send_off + i], send[i]);
    }
    for (i = 0; i < nrecv; i++) {
        ASSERT_INT_EQ(pl->peers[pl->rounds[r].recv_off + i], recv[i]);
    }
    return 0;
}

/* Peers worked out by hand from the slides' formula: in round r rank p
 * sends to p + i(n+1)^r and receives from p - i(n+1)^r (mod P), i = 1..n,
 * where i(n+1)^r < P (docs/coll.md: larger distances only repeat peers). */
TEST_IMPL(coll_nway_peers)
{
    rg_coll_plan_t         pl;
    rg_coll_barrier_spec_t spec = {RG_COLL_BARRIER_NWAY, 2};
    rg_err_t               err;

    rg_coll_plan_init(&pl);
    /* P = 9 = 3^2, n = 2, rank 4: round 0 to 5, 6 from 3, 2; round 1
     * (distance 3, 6) to 7, 10 mod 9 = 1, from 1, -2 mod 9 = 7. */
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 9, 4, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 2);
    ASSERT(expect_round(&pl, 0, (int[]){5, 6}, 2, (int[]){3, 2}, 2) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){7, 1}, 2, (int[]){1, 7}, 2) == 0);
    /* P = 10, n = 2, rank 0: 3 rounds (9 < 10 <= 27); round 2 has only
     * distance 9 (18 >= 10): to 9, from 1. */
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 10, 0, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 3);
    ASSERT(expect_round(&pl, 0, (int[]){1, 2}, 2, (int[]){9, 8}, 2) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){3, 6}, 2, (int[]){7, 4}, 2) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){9}, 1, (int[]){1}, 1) == 0);
    /* P = 16, n = 3, rank 13: round 0 to 14, 15, 0 from 12, 11, 10; round
     * 1 (4, 8, 12) to 1, 5, 9 from 9, 5, 1. */
    spec.n = 3;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 16, 13, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 2);
    ASSERT(expect_round(&pl, 0, (int[]){14, 15, 0}, 3, (int[]){12, 11, 10}, 3) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){1, 5, 9}, 3, (int[]){9, 5, 1}, 3) == 0);
    /* Dissemination = nway:1: P = 5, rank 1: to 2, 3, 0 (1 + 4), from 0,
     * 4, 2 (1 - 4 + 5). */
    spec.alg = RG_COLL_BARRIER_DISSEM;
    spec.n = 1;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 5, 1, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 3);
    ASSERT(expect_round(&pl, 0, (int[]){2}, 1, (int[]){0}, 1) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){3}, 1, (int[]){4}, 1) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){0}, 1, (int[]){2}, 1) == 0);
    /* Recursive doubling on 6: P' = 4; rank 5 folds into 1 (round 0), is
     * told in round 3; rank 1 exchanges with 0 and 3 in between. */
    spec.alg = RG_COLL_BARRIER_RECDBL;
    spec.n = 0;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 6, 1, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 4);
    ASSERT(expect_round(&pl, 0, NULL, 0, (int[]){5}, 1) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){0}, 1, (int[]){0}, 1) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){3}, 1, (int[]){3}, 1) == 0);
    ASSERT(expect_round(&pl, 3, (int[]){5}, 1, NULL, 0) == 0);
    /* Binomial on 8, rank 4: gathers from 6 (round 1) and 5 (round 0),
     * sends to 0 in round 2; released by 0 in round 3, releases 6 and 5. */
    spec.alg = RG_COLL_BARRIER_BINOMIAL;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 8, 4, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 6);
    ASSERT(expect_round(&pl, 0, NULL, 0, (int[]){5}, 1) == 0);
    ASSERT(expect_round(&pl, 1, NULL, 0, (int[]){6}, 1) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){0}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 3, NULL, 0, (int[]){0}, 1) == 0);
    ASSERT(expect_round(&pl, 4, (int[]){6}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 5, (int[]){5}, 1, NULL, 0) == 0);
    rg_coll_plan_fini(&pl);
    return 0;
}

TEST_IMPL(coll_rounds)
{
    rg_coll_barrier_spec_t s = {RG_COLL_BARRIER_NWAY, 3};

    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 1), 0);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 4), 1);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 5), 2);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 16), 2);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 17), 3);
    s.n = 1;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 1 << 20), 20);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, (1 << 20) + 1), 21);
    s.alg = RG_COLL_BARRIER_RECDBL;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 8), 3);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 9), 5);
    s.alg = RG_COLL_BARRIER_LINEAR;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 2), 2);
    return 0;
}

TEST_IMPL(coll_parse)
{
    rg_coll_barrier_spec_t s;
    rg_err_t               err;
    char                   buf[32];

    ASSERT_OK(rg_coll_barrier_parse("nway:3", 0, &s, &err), &err);
    ASSERT_INT_EQ(s.alg, RG_COLL_BARRIER_NWAY);
    ASSERT_INT_EQ(s.n, 3);
    rg_coll_barrier_format(&s, buf, sizeof(buf));
    ASSERT_STR_EQ(buf, "nway:3");
    ASSERT_OK(rg_coll_barrier_parse("nway", 5, &s, &err), &err);
    ASSERT_INT_EQ(s.n, 5);
    ASSERT_OK(rg_coll_barrier_parse("nway:2", 2, &s, &err), &err);
    ASSERT_OK(rg_coll_barrier_parse("dissemination", 0, &s, &err), &err);
    ASSERT_INT_EQ(s.alg, RG_COLL_BARRIER_DISSEM);
    ASSERT_INT_EQ(s.n, 1);
    ASSERT_OK(rg_coll_barrier_parse("tree", 0, &s, &err), &err);
    ASSERT_INT_EQ(s.alg, RG_COLL_BARRIER_BINOMIAL);
    ASSERT_OK(rg_coll_barrier_parse("recdbl", 0, &s, &err), &err);
    ASSERT_OK(rg_coll_barrier_parse("linear", 0, &s, &err), &err);
    ASSERT_STR_EQ(rg_coll_barrier_alg_name(s.alg), "linear");

    ASSERT_INT_EQ(rg_coll_barrier_parse("nway:0", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "n must be an integer in 1..");
    ASSERT_INT_EQ(rg_coll_barrier_parse("nway", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "needs n >= 1");
    ASSERT_INT_EQ(rg_coll_barrier_parse("nway:x", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("nway:", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("nway:-1", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("nway:99999", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("nway:2", 3, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "disagree");
    ASSERT_INT_EQ(rg_coll_barrier_parse("bogus", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "unknown barrier algorithm 'bogus'");
    ASSERT_INT_EQ(rg_coll_barrier_parse("", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("linear", 2, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("linear:2", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("dissem:3", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("nwayx", 0, &s, &err), RG_ERR_INVALID);
    return 0;
}

TEST_IMPL(coll_plan_bad)
{
    rg_coll_plan_t         pl;
    rg_coll_barrier_spec_t s = {RG_COLL_BARRIER_NWAY, 0};
    rg_err_t               err;

    rg_coll_plan_init(&pl);
    ASSERT_INT_EQ(rg_coll_barrier_plan(&pl, &s, 4, 0, &err), RG_ERR_INVALID);
    s.n = 2;
    ASSERT_INT_EQ(rg_coll_barrier_plan(&pl, &s, 0, 0, &err), RG_ERR_RANGE);
    ASSERT_INT_EQ(rg_coll_barrier_plan(&pl, &s, 4, 4, &err), RG_ERR_RANGE);
    ASSERT_INT_EQ(rg_coll_barrier_plan(&pl, &s, 4, -1, &err), RG_ERR_RANGE);
    s.alg = RG_COLL_BARRIER_NALGS;
    ASSERT_INT_EQ(rg_coll_barrier_plan(&pl, &s, 4, 0, &err), RG_ERR_INVALID);
    /* One rank: no rounds. */
    s.alg = RG_COLL_BARRIER_LINEAR;
    s.n = 0;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &s, 1, 0, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 0);
    rg_coll_plan_fini(&pl);
    return 0;
}

/* ---- The simulator's schedules of the barriers (sim/barrier.h) ---- */

#include "sim/barrier.h"

/* The makespan of spec on P ranks under p, into *out. */
static int sim_makespan(const rg_coll_barrier_spec_t *spec, uint32_t P, const rg_sim_params_t *p,
                        double *out)
{
    rg_sim_sched_t  s;
    rg_sim_result_t res;
    rg_err_t        err;

    ASSERT_OK(rg_sim_barrier_build(&s, spec, P, &err), &err);
    memset(&res, 0, sizeof(res));
    if (rg_sim_run(&s, p, &res, NULL, &err) != RG_OK) {
        rg_sim_sched_free(&s);
        RG__TEST_FAIL("simulating %s on %u ranks: %s", rg_coll_barrier_alg_name(spec->alg), P,
                      rg_err_message(&err));
    }
    *out = res.makespan;
    rg_sim_result_free(&res);
    rg_sim_sched_free(&s);
    return 0;
}

/* The LogP closed forms of docs/coll.md, for g <= o: a round in which every
 * rank sends k messages and receives k takes k o + max(k o, o + L) (k = 1:
 * 2o + L); n-way on P ranks has k_r = min(n, floor((P-1)/(n+1)^r)) in round
 * r; linear takes 2L + 2Po; binomial on P = 2^m 2m(2o + L); recursive
 * doubling on P = 2^m m(2o + L). */
static double nway_closed(int n, int P, double L, double o)
{
    double    t = 0;
    long long base = 1;

    while (base < P) {
        long long k = (P - 1) / base;
        if (k > n) {
            k = n;
        }
        t += (double)k * o + fmax((double)k * o, o + L);
        base *= n + 1;
    }
    return t;
}

TEST_IMPL(coll_sim_logp_closed_form)
{
    /* Values whose sums are exact in binary, so that equality is exact. */
    static const double Ls[] = {10, 0.5, 3.25}, os[] = {2, 1.5, 0.25};
    rg_coll_barrier_spec_t spec;
    rg_sim_params_t        p;
    double                 t, want;
    int                    P, n, v;

    for (v = 0; v < 3; v++) {
        memset(&p, 0, sizeof(p));
        p.L = Ls[v];
        p.o = os[v];
        p.g = os[v] / 2;
        p.S = INFINITY;
        for (P = 1; P <= 64; P++) {
            int pow2 = (P & (P - 1)) == 0, m = 0;
            while ((1 << m) < P) {
                m++;
            }
            spec.alg = RG_COLL_BARRIER_DISSEM;
            spec.n = 1;
            ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
            ASSERT_DBL_NEAR(t, m * (2 * p.o + p.L), 1e-9);
            spec.alg = RG_COLL_BARRIER_NWAY;
            for (n = 1; n <= 7; n++) {
                spec.n = n;
                ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
                want = nway_closed(n, P, p.L, p.o);
                if (fabs(t - want) > 1e-9) {
                    RG__TEST_FAIL("nway:%d P=%d L=%g o=%g: simulated %.17g, closed form %.17g",
                                  n, P, p.L, p.o, t, want);
                }
            }
            spec.n = 0;
            spec.alg = RG_COLL_BARRIER_LINEAR;
            ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
            ASSERT_DBL_NEAR(t, P == 1 ? 0 : 2 * p.L + 2 * P * p.o, 1e-9);
            if (pow2) {
                spec.alg = RG_COLL_BARRIER_BINOMIAL;
                ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
                ASSERT_DBL_NEAR(t, 2 * m * (2 * p.o + p.L), 1e-9);
                spec.alg = RG_COLL_BARRIER_RECDBL;
                ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
                ASSERT_DBL_NEAR(t, m * (2 * p.o + p.L), 1e-9);
            }
        }
    }
    return 0;
}

/* Dissemination built from coll/'s plans and the simulator's generated
 * dissemination are the same schedule: the same finish time on every rank,
 * under LogGP with a gap above o too. */
TEST_IMPL(coll_sim_generated_same)
{
    rg_coll_barrier_spec_t spec = {RG_COLL_BARRIER_DISSEM, 1};
    rg_sim_params_t        p;
    rg_sim_sched_t         a, b;
    rg_sim_result_t        ra, rb;
    rg_err_t               err;
    uint32_t               P, r;

    memset(&p, 0, sizeof(p));
    p.L = 3;
    p.o = 0.5;
    p.g = 2;
    p.S = INFINITY;
    for (P = 1; P <= 40; P++) {
        ASSERT_OK(rg_sim_barrier_build(&a, &spec, P, &err), &err);
        ASSERT_OK(rg_sim_barrier_dissemination(&b, P, &err), &err);
        ASSERT_OK(rg_sim_run(&a, &p, &ra, NULL, &err), &err);
        ASSERT_OK(rg_sim_run(&b, &p, &rb, NULL, &err), &err);
        for (r = 0; r < P; r++) {
            ASSERT_DBL_NEAR(ra.finish[r], rb.finish[r], 1e-9);
        }
        rg_sim_result_free(&ra);
        rg_sim_result_free(&rb);
        rg_sim_sched_free(&a);
        rg_sim_sched_free(&b);
    }
    return 0;
}

TEST_IMPL(coll_sim_bad)
{
    rg_coll_barrier_spec_t spec = {RG_COLL_BARRIER_NWAY, 7};
    rg_sim_sched_t         s;
    rg_err_t               err;

    ASSERT_INT_EQ(rg_sim_barrier_build(&s, &spec, 0, &err), RG_ERR_RANGE);
    /* Too many operations to store: a clear error, not an allocation failure. */
    spec.alg = RG_COLL_BARRIER_LINEAR;
    spec.n = 0;
    ASSERT_INT_EQ(rg_sim_barrier_build(&s, &spec, 1u << 24, &err), RG_ERR_RANGE);
    ASSERT_STR_HAS(rg_err_message(&err), "operations to simulate");
    return 0;
}
