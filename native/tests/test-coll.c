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

#define MAXP 256               /* the most ranks check_barrier() takes */
#define MAXW (MAXP / 64)       /* words of a set of ranks */

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

/* How often p sends to q in round r of its plan. */
static int send_count(const rg_coll_plan_t *p, uint32_t r, int q)
{
    const rg_coll_round_t *rd = &p->rounds[r];
    uint32_t               i;
    int                    c = 0;

    for (i = 0; i < rd->nsend; i++) {
        c += p->peers[rd->send_off + i] == q;
    }
    return c;
}

/* The schedules of railgauge's own algorithms carry at most one message per
 * ordered pair; the stacks' (the double ring, the wrapped k-dissemination)
 * may repeat a pair. */
static int one_per_pair(rg_coll_barrier_alg_t alg)
{
    return alg != RG_COLL_BARRIER_RING && alg != RG_COLL_BARRIER_KDISSEM &&
           alg != RG_COLL_BARRIER_RECEXCH;
}

static int check_barrier(const rg_coll_barrier_spec_t *spec, int P)
{
    static rg_coll_plan_t plans[MAXP];
    static uint64_t       know[MAXP][MAXW], next[MAXP][MAXW];
    /* pairs[p][q]: messages p -> q in the whole barrier. */
    static uint16_t       pairs[MAXP][MAXP];
    uint32_t              r, i, nrounds = rg_coll_barrier_rounds(spec, P);
    int                   p, q, w, rc;
    char                  name[32];

    ASSERT(P >= 1 && P <= MAXP);
    rg_coll_barrier_format(spec, name, sizeof(name));
    rc = plans_make(plans, spec, P);
    if (rc != 0) {
        plans_free(plans, P);
        return rc;
    }
    memset(pairs, 0, sizeof(pairs));
    memset(know, 0, sizeof(know));
    for (p = 0; p < P; p++) {
        know[p][p / 64] = 1ull << (p % 64);
    }
    rc = 0;
    for (r = 0; r < nrounds && rc == 0; r++) {
        size_t nsend = 0, nrecv = 0;
        memcpy(next, know, sizeof(know));
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
                /* The round's messages p -> q as a multiset: as many sends
                 * as receives. */
                if (recv_count(&plans[q], r, p) != send_count(&plans[p], r, q)) {
                    fprintf(stderr, "%s P=%d: rank %d round %u sends to %d %d times, which "
                            "receives from it %d times in that round\n", name, P, p, r, q,
                            send_count(&plans[p], r, q), recv_count(&plans[q], r, p));
                    rc = 1;
                    break;
                }
                if (++pairs[p][q] > 1 && one_per_pair(spec->alg)) {
                    fprintf(stderr, "%s P=%d: rank %d sends to %d twice\n", name, P, p, q);
                    rc = 1;
                    break;
                }
                for (w = 0; w < MAXW; w++) {
                    next[q][w] |= know[p][w];
                }
            }
        }
        if (rc == 0 && nsend != nrecv) {
            fprintf(stderr, "%s P=%d round %u: %zu sends, %zu receives\n", name, P, r, nsend,
                    nrecv);
            rc = 1;
        }
        memcpy(know, next, sizeof(know));
    }
    for (p = 0; p < P && rc == 0; p++) {
        for (q = 0; q < P; q++) {
            if (!(know[p][q / 64] >> (q % 64) & 1)) {
                fprintf(stderr, "%s P=%d: rank %d leaves without having heard from rank %d\n",
                        name, P, p, q);
                rc = 1;
                break;
            }
        }
    }
    plans_free(plans, P);
    return rc;
}

TEST_IMPL(coll_barrier_correct)
{
    rg_coll_barrier_spec_t spec;
    int                    P, n, a;

    for (P = 1; P <= 64; P++) {
        for (a = 0; a <= RG_COLL_BARRIER_NWAY; a++) {
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

/* The stacks' algorithms: every P in 1..64 and some larger, K in 2..9 and
 * a few large ones (K >= P: one phase). */
TEST_IMPL(coll_stack_barriers_correct)
{
    static const int bigP[] = {81, 100, 125, 127, 128, 129, 200, 243, 255, 256};
    static const int Ks[] = {2, 3, 4, 5, 6, 7, 8, 9, 17, 64, RG_COLL_K_MAX};
    rg_coll_barrier_spec_t spec;
    size_t                 i, k;
    int                    P;

    for (i = 0; i < 64 + sizeof(bigP) / sizeof(bigP[0]); i++) {
        P = i < 64 ? (int)i + 1 : bigP[i - 64];
        spec.alg = RG_COLL_BARRIER_RING;
        spec.n = 0;
        ASSERT(check_barrier(&spec, P) == 0);
        for (k = 0; k < sizeof(Ks) / sizeof(Ks[0]); k++) {
            spec.n = Ks[k];
            spec.alg = RG_COLL_BARRIER_KDISSEM;
            ASSERT(check_barrier(&spec, P) == 0);
            spec.alg = RG_COLL_BARRIER_RECEXCH;
            ASSERT(check_barrier(&spec, P) == 0);
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

/* Peers worked out by hand from the stacks' code: Open MPI 4.1's
 * ompi_coll_base_barrier_intra_doublering, MPICH 4.1's
 * MPIR_Barrier_intra_k_dissemination and MPIR_Allreduce_intra_recexch with
 * MPII_Recexchalgo_get_neighbors (docs/coll.md). */
TEST_IMPL(coll_stack_peers)
{
    rg_coll_plan_t         pl;
    rg_coll_barrier_spec_t spec = {RG_COLL_BARRIER_RING, 0};
    rg_err_t               err;

    rg_coll_plan_init(&pl);
    /* Double ring on 4: rank 0 sends to 1 (round 0), receives from 3 (round
     * 3), again in rounds 4 and 7; rank 2 receives from 1 in round 1, sends
     * to 3 in round 2, again in rounds 5 and 6; nothing else. */
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 4, 0, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 8);
    ASSERT(expect_round(&pl, 0, (int[]){1}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 1, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 2, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 3, NULL, 0, (int[]){3}, 1) == 0);
    ASSERT(expect_round(&pl, 4, (int[]){1}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 7, NULL, 0, (int[]){3}, 1) == 0);
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 4, 2, &err), &err);
    ASSERT(expect_round(&pl, 0, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 1, NULL, 0, (int[]){1}, 1) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){3}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 3, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 4, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 5, NULL, 0, (int[]){1}, 1) == 0);
    ASSERT(expect_round(&pl, 6, (int[]){3}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 7, NULL, 0, NULL, 0) == 0);
    /* On 2 ranks left = right: 0 -> 1, 1 -> 0, 0 -> 1, 1 -> 0. */
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 2, 1, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 4);
    ASSERT(expect_round(&pl, 0, NULL, 0, (int[]){0}, 1) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){0}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 2, NULL, 0, (int[]){0}, 1) == 0);
    ASSERT(expect_round(&pl, 3, (int[]){0}, 1, NULL, 0) == 0);

    /* k-dissemination, K = 3 on 5: 2 phases (3 < 5 <= 9); rank 0: phase 0
     * to 1, 2 from 4, 3; phase 1 (shift 3) to 3, 6 mod 5 = 1 from -3 mod 5
     * = 2, -6 mod 5 = 4: the pair 0 -> 1 twice, where nway:2 would send
     * only to 3. */
    spec.alg = RG_COLL_BARRIER_KDISSEM;
    spec.n = 3;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 5, 0, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 2);
    ASSERT(expect_round(&pl, 0, (int[]){1, 2}, 2, (int[]){4, 3}, 2) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){3, 1}, 2, (int[]){2, 4}, 2) == 0);
    /* K = 5 on 10, rank 0, phase 1 (shift 5): j = 1..4 give 5, 10, 15, 20
     * = 5, 0, 5, 0 mod 10: the self-messages go, 5 is sent to twice. */
    spec.n = 5;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 10, 0, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 2);
    ASSERT(expect_round(&pl, 0, (int[]){1, 2, 3, 4}, 4, (int[]){9, 8, 7, 6}, 4) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){5, 5}, 2, (int[]){5, 5}, 2) == 0);
    /* K = 4 on 6, rank 1, phase 1 (shift 4): 4, 8, 12 = 4, 2, 0 mod 6: to 5,
     * 3, from 3, 5 (the self-message left out). */
    spec.n = 4;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 6, 1, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 2);
    ASSERT(expect_round(&pl, 0, (int[]){2, 3, 4}, 3, (int[]){0, 5, 4}, 3) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){5, 3}, 2, (int[]){3, 5}, 2) == 0);
    /* K > P: K = P (here 3), one phase. */
    spec.n = 7;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 3, 0, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 1);
    ASSERT(expect_round(&pl, 0, (int[]){1, 2}, 2, (int[]){2, 1}, 2) == 0);

    /* Recursive exchange, K = 2 on 6: p_of_k 4, rem 2, T 4: ranks 0 and 2
     * fold into 1 and 3 (step 1, round 0); step 2 among 1, 3, 4, 5
     * (newrank 0..3; newrank < rem/(k-1) = 2 is rank 2 newrank + 1, else
     * newrank + 2): rank 1 with 3 (phase 0), 4 (phase 1); rank 4 with 5,
     * 1; step 3 (round 3) back to 0 and 2. */
    spec.alg = RG_COLL_BARRIER_RECEXCH;
    spec.n = 2;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 6, 0, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 4);
    ASSERT(expect_round(&pl, 0, (int[]){1}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 1, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 2, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 3, NULL, 0, (int[]){1}, 1) == 0);
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 6, 1, &err), &err);
    ASSERT(expect_round(&pl, 0, NULL, 0, (int[]){0}, 1) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){3}, 1, (int[]){3}, 1) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){4}, 1, (int[]){4}, 1) == 0);
    ASSERT(expect_round(&pl, 3, (int[]){0}, 1, NULL, 0) == 0);
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 6, 4, &err), &err);
    ASSERT(expect_round(&pl, 0, NULL, 0, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){5}, 1, (int[]){5}, 1) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){1}, 1, (int[]){1}, 1) == 0);
    ASSERT(expect_round(&pl, 3, NULL, 0, NULL, 0) == 0);
    /* K = 3 on 5: p_of_k 3, rem 2, T 3: 0 and 1 fold into 2, which
     * receives from 1, 0 (MPICH's order); step 2: 2 with 3, 4. */
    spec.n = 3;
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 5, 2, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 3);
    ASSERT(expect_round(&pl, 0, NULL, 0, (int[]){1, 0}, 2) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){3, 4}, 2, (int[]){3, 4}, 2) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){1, 0}, 2, NULL, 0) == 0);
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 5, 4, &err), &err);
    ASSERT(expect_round(&pl, 1, (int[]){2, 3}, 2, (int[]){2, 3}, 2) == 0);
    /* K = 3 on 12: p_of_k 9, rem 3, T 4: 0, 1 fold into 2; 3 is in a
     * partial set and folds into T = 4 (its step1_sendto 5 > T - 1); rank 4
     * is newrank 1 = (1, 0) in base 3: phase 0 with newrank 0, 2 (ranks 2,
     * 5), phase 1 with newrank 4, 7 (ranks 7, 10). */
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 12, 4, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 4);
    ASSERT(expect_round(&pl, 0, NULL, 0, (int[]){3}, 1) == 0);
    ASSERT(expect_round(&pl, 1, (int[]){2, 5}, 2, (int[]){2, 5}, 2) == 0);
    ASSERT(expect_round(&pl, 2, (int[]){7, 10}, 2, (int[]){7, 10}, 2) == 0);
    ASSERT(expect_round(&pl, 3, (int[]){3}, 1, NULL, 0) == 0);
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 12, 3, &err), &err);
    ASSERT(expect_round(&pl, 0, (int[]){4}, 1, NULL, 0) == 0);
    ASSERT(expect_round(&pl, 3, NULL, 0, (int[]){4}, 1) == 0);
    /* K = 3 on 2: K = 2, one exchange. */
    ASSERT_OK(rg_coll_barrier_plan(&pl, &spec, 2, 1, &err), &err);
    ASSERT_INT_EQ(pl.nrounds, 1);
    ASSERT(expect_round(&pl, 0, (int[]){0}, 1, (int[]){0}, 1) == 0);
    rg_coll_plan_fini(&pl);
    return 0;
}

/* Same plans: kdissem:K on P = K^m is nway:(K-1); recexch:2 on P = 2^m is
 * recdbl. */
TEST_IMPL(coll_stack_same_as_ours)
{
    rg_coll_plan_t         a, b;
    rg_coll_barrier_spec_t sa, sb;
    rg_err_t               err;
    uint32_t               r, i;
    int                    K, P, p;

    rg_coll_plan_init(&a);
    rg_coll_plan_init(&b);
    for (K = 2; K <= 6; K++) {
        for (P = K; P <= 300; P *= K) {
            for (p = 0; p < P; p++) {
                sa = (rg_coll_barrier_spec_t){RG_COLL_BARRIER_KDISSEM, K};
                sb = (rg_coll_barrier_spec_t){RG_COLL_BARRIER_NWAY, K - 1};
                if (K == 2 && (p & 1)) {
                    sa = (rg_coll_barrier_spec_t){RG_COLL_BARRIER_RECEXCH, 2};
                    sb = (rg_coll_barrier_spec_t){RG_COLL_BARRIER_RECDBL, 0};
                }
                ASSERT_OK(rg_coll_barrier_plan(&a, &sa, P, p, &err), &err);
                ASSERT_OK(rg_coll_barrier_plan(&b, &sb, P, p, &err), &err);
                ASSERT_INT_EQ(a.nrounds, b.nrounds);
                ASSERT_INT_EQ(a.npeers, b.npeers);
                for (r = 0; r < a.nrounds; r++) {
                    ASSERT_INT_EQ(a.rounds[r].nsend, b.rounds[r].nsend);
                    ASSERT_INT_EQ(a.rounds[r].nrecv, b.rounds[r].nrecv);
                }
                for (i = 0; i < a.npeers; i++) {
                    ASSERT_INT_EQ(a.peers[i], b.peers[i]);
                }
            }
        }
    }
    rg_coll_plan_fini(&a);
    rg_coll_plan_fini(&b);
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
    s.alg = RG_COLL_BARRIER_RING;
    s.n = 0;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 1), 0);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 2), 4);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 37), 74);
    s.alg = RG_COLL_BARRIER_KDISSEM;
    s.n = 3;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 1), 0);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 3), 1);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 9), 2);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 10), 3);
    s.n = 5;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 3), 1);  /* K = P = 3 */
    s.n = RG_COLL_K_MAX;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, RG_COLL_P_MAX), 3);
    s.alg = RG_COLL_BARRIER_RECEXCH;
    s.n = 2;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 1), 0);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 8), 3);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 9), 5);
    s.n = 3;
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 2), 1);  /* K = 2 */
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 9), 2);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 10), 4);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 26), 4);
    ASSERT_INT_EQ(rg_coll_barrier_rounds(&s, 27), 3);
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

    /* The stacks' algorithms. */
    ASSERT_OK(rg_coll_barrier_parse("ring", 0, &s, &err), &err);
    ASSERT_INT_EQ(s.alg, RG_COLL_BARRIER_RING);
    ASSERT_INT_EQ(s.n, 0);
    rg_coll_barrier_format(&s, buf, sizeof(buf));
    ASSERT_STR_EQ(buf, "ring");
    ASSERT_OK(rg_coll_barrier_parse("kdissem:3", 0, &s, &err), &err);
    ASSERT_INT_EQ(s.alg, RG_COLL_BARRIER_KDISSEM);
    ASSERT_INT_EQ(s.n, 3);
    rg_coll_barrier_format(&s, buf, sizeof(buf));
    ASSERT_STR_EQ(buf, "kdissem:3");
    ASSERT_OK(rg_coll_barrier_parse("recexch:2", 0, &s, &err), &err);
    ASSERT_INT_EQ(s.alg, RG_COLL_BARRIER_RECEXCH);
    ASSERT_INT_EQ(s.n, 2);
    rg_coll_barrier_format(&s, buf, sizeof(buf));
    ASSERT_STR_EQ(buf, "recexch:2");
    ASSERT_OK(rg_coll_barrier_parse("recexch", 4, &s, &err), &err);
    ASSERT_INT_EQ(s.n, 4);
    ASSERT_OK(rg_coll_barrier_parse("kdissem:1025", 0, &s, &err), &err);
    ASSERT_INT_EQ(s.n, RG_COLL_K_MAX);
    ASSERT_INT_EQ(rg_coll_barrier_parse("kdissem:1", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "K must be an integer in 2..1025");
    ASSERT_INT_EQ(rg_coll_barrier_parse("kdissem:0", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("kdissem:1026", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("kdissem", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "needs K >= 2");
    ASSERT_INT_EQ(rg_coll_barrier_parse("kdissem", 1, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "K = 1 must be an integer in 2..1025");
    ASSERT_INT_EQ(rg_coll_barrier_parse("recexch", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "needs K >= 2");
    ASSERT_INT_EQ(rg_coll_barrier_parse("recexch:1", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("recexch:3", 2, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "disagree");
    ASSERT_INT_EQ(rg_coll_barrier_parse("ring:2", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "takes no n");
    ASSERT_INT_EQ(rg_coll_barrier_parse("ring", 2, &s, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_coll_barrier_parse("ringx", 0, &s, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "kdissem:K, recexch:K");
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
    s.alg = RG_COLL_BARRIER_KDISSEM;
    s.n = 1;
    ASSERT_INT_EQ(rg_coll_barrier_plan(&pl, &s, 4, 0, &err), RG_ERR_INVALID);
    s.alg = RG_COLL_BARRIER_RECEXCH;
    s.n = RG_COLL_K_MAX + 1;
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

/* MPICH's k-dissemination: round r sends and receives k_r messages, the j
 * in 1..k-1 with j k^r != 0 mod P (K = P where P < K). */
static double kdissem_closed(int K, int P, double L, double o)
{
    double    t = 0;
    long long shift = 1;
    int       k = P < K ? P : K, j, c;

    while (shift < P) {
        for (j = 1, c = 0; j < k; j++) {
            c += (long long)j * shift % P != 0;
        }
        t += c * o + fmax(c * o, o + L);
        shift *= k;
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
            /* The double ring: 2P hops one after the other, each 2o + L. */
            spec.alg = RG_COLL_BARRIER_RING;
            ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
            ASSERT_DBL_NEAR(t, P == 1 ? 0 : 2 * P * (2 * p.o + p.L), 1e-9);
            for (n = 2; n <= 6; n++) {
                long long pk = 1;
                int       phases = 0;
                spec.n = n;
                spec.alg = RG_COLL_BARRIER_KDISSEM;
                ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
                want = kdissem_closed(n, P, p.L, p.o);
                if (fabs(t - want) > 1e-9) {
                    RG__TEST_FAIL("kdissem:%d P=%d L=%g o=%g: simulated %.17g, closed form "
                                  "%.17g", n, P, p.L, p.o, t, want);
                }
                /* The recursive exchange on P = K^m: m rounds of K - 1 both ways,
                 * each sender serving its neighbours in digit order, so that
                 * the one of the highest digit gets all its messages as the
                 * last sends: (K - 1)o + L + (K - 1)o a round. */
                while (pk < P) {
                    pk *= n;
                    phases++;
                }
                if (pk == P && P > 1) {
                    spec.alg = RG_COLL_BARRIER_RECEXCH;
                    ASSERT(sim_makespan(&spec, (uint32_t)P, &p, &t) == 0);
                    ASSERT_DBL_NEAR(t, phases * (2 * (n - 1) * p.o + p.L), 1e-9);
                }
            }
            spec.n = 0;
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
