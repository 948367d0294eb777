/*
 * railgauge: the barrier schedules (coll/sched.h; costs in docs/coll.md).
 */
#include "coll/sched.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RG__SEND = 0, RG__RECV = 1 };

static const char *const rg__alg_names[RG_COLL_BARRIER_NALGS] = {
    "linear", "binomial", "recdbl", "dissem", "nway", "ring", "kdissem", "recexch"};

#define RG__KNOWN "(known: linear, binomial, recdbl, dissem, nway:N, ring, kdissem:K, recexch:K)"

const char *rg_coll_barrier_alg_name(rg_coll_barrier_alg_t alg)
{
    if ((int)alg < 0 || alg >= RG_COLL_BARRIER_NALGS) {
        return "?";
    }
    return rg__alg_names[alg];
}

/* The n an algorithm takes: lo..hi, named what ("n", "K"); hi = 0: none. */
static void rg__n_range(rg_coll_barrier_alg_t alg, int *lo, int *hi, const char **what)
{
    *what = "n";
    *lo = *hi = 0;
    switch (alg) {
    case RG_COLL_BARRIER_NWAY:
        *lo = 1;
        *hi = RG_COLL_NWAY_MAX;
        break;
    case RG_COLL_BARRIER_DISSEM:
        *lo = *hi = 1;
        break;
    case RG_COLL_BARRIER_KDISSEM:
    case RG_COLL_BARRIER_RECEXCH:
        *what = "K";
        *lo = 2;
        *hi = RG_COLL_K_MAX;
        break;
    default:
        break;
    }
}

/* The algorithm named by text[0 .. len), or RG_COLL_BARRIER_NALGS. */
static rg_coll_barrier_alg_t rg__alg_of(const char *text, size_t len)
{
    static const struct { const char *name; rg_coll_barrier_alg_t alg; } names[] = {
        {"linear", RG_COLL_BARRIER_LINEAR},   {"binomial", RG_COLL_BARRIER_BINOMIAL},
        {"tree", RG_COLL_BARRIER_BINOMIAL},   {"recdbl", RG_COLL_BARRIER_RECDBL},
        {"recursive-doubling", RG_COLL_BARRIER_RECDBL},
        {"dissem", RG_COLL_BARRIER_DISSEM},   {"dissemination", RG_COLL_BARRIER_DISSEM},
        {"nway", RG_COLL_BARRIER_NWAY},       {"n-way", RG_COLL_BARRIER_NWAY},
        {"ring", RG_COLL_BARRIER_RING},       {"doublering", RG_COLL_BARRIER_RING},
        {"kdissem", RG_COLL_BARRIER_KDISSEM}, {"k-dissemination", RG_COLL_BARRIER_KDISSEM},
        {"recexch", RG_COLL_BARRIER_RECEXCH},
        {"recursive-exchange", RG_COLL_BARRIER_RECEXCH}};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strlen(names[i].name) == len && strncmp(names[i].name, text, len) == 0) {
            return names[i].alg;
        }
    }
    return RG_COLL_BARRIER_NALGS;
}

rg_status_t rg_coll_barrier_parse(const char *text, int n_opt, rg_coll_barrier_spec_t *spec,
                                  rg_err_t *err)
{
    const char *colon, *what;
    long        n_text = 0;
    int         n, lo, hi, has_text;
    rg_coll_barrier_alg_t alg;

    if (text == NULL || text[0] == '\0') {
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm: empty name " RG__KNOWN);
    }
    colon = strchr(text, ':');
    alg = rg__alg_of(text, colon != NULL ? (size_t)(colon - text) : strlen(text));
    if (alg == RG_COLL_BARRIER_NALGS) {
        return rg_err_set(err, RG_ERR_INVALID, "unknown barrier algorithm '%s' " RG__KNOWN,
                          text);
    }
    rg__n_range(alg, &lo, &hi, &what);
    has_text = colon != NULL;
    if (hi == 0 && (has_text || n_opt != 0)) {
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' takes no n (only "
                          "nway, kdissem and recexch do)", text);
    }
    if (has_text) {
        char *end;
        errno = 0;
        n_text = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || errno != 0 || n_text < INT_MIN ||
            n_text > INT_MAX) {
            return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s': %s must be an "
                              "integer in %d..%d", text, what, lo, hi);
        }
        if (n_opt != 0 && n_text != n_opt) {
            return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' and n = %d "
                              "disagree", text, n_opt);
        }
    }
    n = has_text ? (int)n_text : n_opt;
    if (hi == 0) {
        /* n = 0: checked above. */
    } else if (alg == RG_COLL_BARRIER_DISSEM && n > 1) {
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' takes no n (it is "
                          "nway:1); for n = %d use nway:%d", text, n, n);
    } else if (alg == RG_COLL_BARRIER_DISSEM && !has_text && n == 0) {
        n = 1;
    } else if (!has_text && n == 0) {
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' needs %s >= %d "
                          "(%s:%d, or %s given separately)", text, what, lo,
                          rg__alg_names[alg], lo + 1, what);
    } else if (n < lo || n > hi) {
        if (has_text) {
            return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s': %s must be an "
                              "integer in %d..%d", text, what, lo, hi);
        }
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s': %s = %d must be an "
                          "integer in %d..%d", text, what, n, lo, hi);
    }
    spec->alg = alg;
    spec->n = n;
    return RG_OK;
}

void rg_coll_barrier_format(const rg_coll_barrier_spec_t *spec, char *buf, size_t cap)
{
    if (spec->alg == RG_COLL_BARRIER_NWAY || spec->alg == RG_COLL_BARRIER_KDISSEM ||
        spec->alg == RG_COLL_BARRIER_RECEXCH) {
        snprintf(buf, cap, "%s:%d", rg_coll_barrier_alg_name(spec->alg), spec->n);
    } else {
        snprintf(buf, cap, "%s", rg_coll_barrier_alg_name(spec->alg));
    }
}

/* The smallest k with 2^k >= P. */
static uint32_t rg__log2_ceil(int P)
{
    uint32_t k = 0;

    while ((1ll << k) < (long long)P) {
        k++;
    }
    return k;
}

/* The largest power of two <= P. */
static int rg__pow2_floor(int P)
{
    int p = 1;

    while ((long long)p * 2 <= P) {
        p *= 2;
    }
    return p;
}

/* The smallest R with k^R >= P (k >= 2). */
static uint32_t rg__logk_ceil(long long k, int P)
{
    uint32_t  R = 0;
    long long span = 1;

    while (span < P) {
        span *= k;
        R++;
    }
    return R;
}

/* MPICH's k-dissemination on P ranks: K, but P where P < K. */
static int rg__kdissem_k(int K, int P)
{
    return P < K ? P : K;
}

/* The shape of MPICH's recursive exchange on P >= 2 ranks
 * (MPII_Recexchalgo_get_neighbors): k is K, but P (at least 2) where P < K;
 * pofk the largest power of k <= P, nphases its exponent (the rounds of step
 * 2); rem = P - pofk ranks sit out step 2: of the first T = rem k / (k - 1)
 * ranks, in each set of k consecutive ranks the first k - 1 fold into the
 * last (a last, partial set into rank T). */
typedef struct rg__recexch {
    int      k, pofk, rem, T;
    uint32_t nphases;
} rg__recexch_t;

static void rg__recexch_shape(int K, int P, rg__recexch_t *x)
{
    x->k = P < K ? (P > 2 ? P : 2) : K;
    x->pofk = 1;
    x->nphases = 0;
    while ((long long)x->pofk * x->k <= P) {
        x->pofk *= x->k;
        x->nphases++;
    }
    x->rem = P - x->pofk;
    x->T = (int)((long long)x->rem * x->k / (x->k - 1));
}

uint32_t rg_coll_barrier_rounds(const rg_coll_barrier_spec_t *spec, int P)
{
    uint32_t k = 0;

    if (P <= 1) {
        return 0;
    }
    switch (spec->alg) {
    case RG_COLL_BARRIER_LINEAR:
        return 2;
    case RG_COLL_BARRIER_BINOMIAL:
        return 2 * rg__log2_ceil(P);
    case RG_COLL_BARRIER_RECDBL:
        k = rg__log2_ceil(rg__pow2_floor(P));
        return rg__pow2_floor(P) == P ? k : k + 2;
    case RG_COLL_BARRIER_DISSEM:
        return rg__log2_ceil(P);
    case RG_COLL_BARRIER_NWAY:
        return rg__logk_ceil((long long)spec->n + 1, P);
    case RG_COLL_BARRIER_RING:
        return 2 * (uint32_t)P;
    case RG_COLL_BARRIER_KDISSEM:
        return rg__logk_ceil(rg__kdissem_k(spec->n, P), P);
    case RG_COLL_BARRIER_RECEXCH: {
        rg__recexch_t x;
        rg__recexch_shape(spec->n, P, &x);
        return x.nphases + (x.rem > 0 ? 2 : 0);
    }
    default:
        return 0;
    }
}

void rg_coll_plan_init(rg_coll_plan_t *plan)
{
    memset(plan, 0, sizeof(*plan));
}

void rg_coll_plan_fini(rg_coll_plan_t *plan)
{
    free(plan->rounds);
    free(plan->peers);
    memset(plan, 0, sizeof(*plan));
}

/* MPICH's k-dissemination (MPIR_Barrier_intra_k_dissemination): in phase r,
 * for j = 1..k-1, to me + j k^r and from me - j k^r (mod P), every j even
 * where j k^r >= P (a peer may repeat, across phases or in one); a distance
 * that is 0 mod P is a message to itself, which MPICH sends and receives
 * locally and the plan leaves out. */
static uint32_t rg__kdissem_peers(int K, int P, int me, uint32_t r, int kind, int32_t *out)
{
    long long shift = 1, d;
    uint32_t  c = 0, t;
    int       k = rg__kdissem_k(K, P), j;

    for (t = 0; t < r; t++) {
        shift *= k;
    }
    for (j = 1; j < k; j++) {
        d = (long long)j * shift % P;
        if (d != 0) {
            out[c++] = (int32_t)(kind == RG__SEND ? (me + d) % P : (me - d + P) % P);
        }
    }
    return c;
}

/* Step 1 of the recursive exchange for me: the rank me folds into (me sits
 * out step 2), or -1 (me takes part); then *nfrom ranks fold into me, in
 * MPICH's order from1, from1 - 1, ... (its step1_recvfrom). */
static int rg__recexch_fold(const rg__recexch_t *x, int me, int *from1, int *nfrom)
{
    int k = x->k, to;

    *nfrom = 0;
    *from1 = -1;
    if (me < x->T && me % k != k - 1) {
        to = me + (k - 1 - me % k);
        return to > x->T - 1 ? x->T : to;
    }
    if (me < x->T) {
        *nfrom = k - 1;
    } else if (me == x->T && (x->T - 1) % k != k - 1) {
        *nfrom = (x->T - 1) % k + 1; /* a partial last set (T >= 1 here: rem > 0) */
    }
    *from1 = me - 1;
    return -1;
}

/* MPICH's recursive exchange (MPIR_Allreduce_intra_recexch with count 0,
 * neighbours of MPII_Recexchalgo_get_neighbors): where rem > 0, round 0 is
 * step 1 (the folds) and the last round step 3 (the folds back); in
 * between, step 2 phase by phase: a taking part rank, numbered newrank
 * among those, exchanges with the k - 1 ranks whose newrank differs from
 * its own in base-k digit `phase` only, in the digit's order. */
static uint32_t rg__recexch_peers(int K, int P, int me, uint32_t r, int kind, int32_t *out)
{
    rg__recexch_t x;
    long long     power = 1;
    uint32_t      c = 0, phase, t;
    int           to, from1, nfrom, i, newrank, digit, nbr;

    rg__recexch_shape(K, P, &x);
    to = rg__recexch_fold(&x, me, &from1, &nfrom);
    if (x.rem > 0 && (r == 0 || r == x.nphases + 1)) {
        const int into = r == 0;
        if (to >= 0 && (kind == RG__SEND) == into) {
            out[c++] = to;
        } else if (to < 0 && (kind == RG__RECV) == into) {
            for (i = 0; i < nfrom; i++) {
                out[c++] = from1 - i;
            }
        }
        return c;
    }
    if (to >= 0) {
        return 0;
    }
    phase = x.rem > 0 ? r - 1 : r;
    newrank = me < x.T ? me / x.k : me - x.rem;
    for (t = 0; t < phase; t++) {
        power *= x.k;
    }
    digit = (int)(newrank / power % x.k);
    for (i = 0; i < x.k; i++) {
        if (i != digit) {
            nbr = (int)(newrank + (i - digit) * power);
            out[c++] = nbr < x.rem / (x.k - 1) ? nbr * x.k + x.k - 1 : nbr + x.rem;
        }
    }
    return c;
}

/* The peers of one kind (send or receive) of rank `me` in round r, into out
 * (room for the bound of rg__bound()); returns how many. */
static uint32_t rg__round_peers(const rg_coll_barrier_spec_t *spec, int P, int me, uint32_t r,
                                int kind, int32_t *out)
{
    uint32_t c = 0;

    switch (spec->alg) {
    case RG_COLL_BARRIER_LINEAR:
        /* Round 0: everyone sends to 0, which receives from all; round 1:
         * 0 sends to all, everyone receives from 0. */
        if ((me == 0) == ((r == 0) == (kind == RG__RECV))) {
            if (me == 0) {
                int q;
                for (q = 1; q < P; q++) {
                    out[c++] = q;
                }
            } else {
                out[c++] = 0;
            }
        }
        break;
    case RG_COLL_BARRIER_BINOMIAL: {
        /* Gather in rounds 0..R-1: in round j a rank whose lowest set bit is
         * j sends to its parent me - 2^j, after its children me + 2^i
         * (i < j) have sent to it. Release in rounds R..2R-1, the gather
         * backwards: round 2R-1-j carries the edges of gather round j down. */
        uint32_t R = rg__log2_ceil(P), j;
        int      down = r >= R;
        long long bit;

        j = down ? 2 * R - 1 - r : r;
        bit = 1ll << j;
        /* me's parent edge: me has lowest set bit j. */
        if (me != 0 && (me & (int)bit) != 0 && (me & (int)(bit - 1)) == 0) {
            if ((kind == RG__SEND) != down) {
                out[c++] = me - (int)bit;
            }
        }
        /* me's child edge: me is a multiple of 2^(j+1) with a child. */
        if ((me % (bit * 2)) == 0 && me + bit < P) {
            if ((kind == RG__RECV) != down) {
                out[c++] = me + (int)bit;
            }
        }
        break;
    }
    case RG_COLL_BARRIER_RECDBL: {
        /* P' = the largest power of two <= P. Where P' < P, round 0 folds
         * the extra ranks P'..P-1 into ranks 0..P-P'-1 and the last round
         * tells them the barrier is done; in between, ranks below P'
         * exchange with me XOR 2^k. */
        int      Pp = rg__pow2_floor(P), extra = P - Pp;
        uint32_t k = r;

        if (extra > 0) {
            uint32_t last = rg__log2_ceil(Pp) + 1;
            if (r == 0 || r == last) {
                int into = r == 0; /* round 0: extra -> base */
                if (me >= Pp && (kind == RG__SEND) == into) {
                    out[c++] = me - Pp;
                } else if (me < extra && (kind == RG__RECV) == into) {
                    out[c++] = me + Pp;
                }
                break;
            }
            k = r - 1;
        }
        if (me < Pp) {
            out[c++] = me ^ (1 << k);
        }
        break;
    }
    case RG_COLL_BARRIER_DISSEM:
    case RG_COLL_BARRIER_NWAY: {
        /* Round r: to me + i(n+1)^r, from me - i(n+1)^r (mod P), for the i
         * in 1..n with i(n+1)^r < P: those distances already reach every
         * rank, and none is 0 or repeated. */
        long long base = 1, d;
        uint32_t  t;
        int       i, n = spec->alg == RG_COLL_BARRIER_DISSEM ? 1 : spec->n;

        for (t = 0; t < r; t++) {
            base *= (long long)n + 1;
        }
        for (i = 1; i <= n; i++) {
            d = (long long)i * base;
            if (d >= P) {
                break;
            }
            out[c++] = (int32_t)(kind == RG__SEND ? (me + d) % P : (me - d % P + P) % P);
        }
        break;
    }
    case RG_COLL_BARRIER_RING:
        /* Open MPI's double ring: round r (two passes of P rounds) carries
         * one message, rank r mod P to its right neighbour. */
        if (kind == RG__SEND && (uint32_t)me == r % (uint32_t)P) {
            out[c++] = (me + 1) % P;
        } else if (kind == RG__RECV && (uint32_t)me == (r + 1) % (uint32_t)P) {
            out[c++] = (int32_t)(r % (uint32_t)P);
        }
        break;
    case RG_COLL_BARRIER_KDISSEM:
        return rg__kdissem_peers(spec->n, P, me, r, kind, out);
    case RG_COLL_BARRIER_RECEXCH:
        return rg__recexch_peers(spec->n, P, me, r, kind, out);
    default:
        break;
    }
    return c;
}

/* The most peers of one kind a rank can have in one round. */
static uint32_t rg__bound(const rg_coll_barrier_spec_t *spec, int P)
{
    switch (spec->alg) {
    case RG_COLL_BARRIER_LINEAR:
        return P > 1 ? (uint32_t)(P - 1) : 1;
    case RG_COLL_BARRIER_NWAY:
        return (uint32_t)(spec->n < P ? spec->n : (P > 1 ? P - 1 : 1));
    case RG_COLL_BARRIER_BINOMIAL:
        return 2;
    case RG_COLL_BARRIER_KDISSEM:
        return P > 2 ? (uint32_t)rg__kdissem_k(spec->n, P) - 1 : 1;
    case RG_COLL_BARRIER_RECEXCH: {
        rg__recexch_t x;
        rg__recexch_shape(spec->n, P, &x);
        return (uint32_t)x.k - 1;
    }
    default:
        return 1;
    }
}

static rg_status_t rg__reserve(void **p, uint32_t *cap, size_t need, size_t elem, rg_err_t *err)
{
    size_t ncap = *cap ? *cap : 16;
    void  *np;

    if (need <= *cap) {
        return RG_OK;
    }
    while (ncap < need) {
        ncap *= 2;
    }
    if (ncap > UINT32_MAX) {
        return rg_err_set(err, RG_ERR_RANGE, "barrier plan: %zu entries are too many", need);
    }
    np = realloc(*p, ncap * elem);
    if (np == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "barrier plan: out of memory for %zu entries",
                          ncap);
    }
    *p = np;
    *cap = (uint32_t)ncap;
    return RG_OK;
}

rg_status_t rg_coll_barrier_plan(rg_coll_plan_t *plan, const rg_coll_barrier_spec_t *spec,
                                 int P, int rank, rg_err_t *err)
{
    uint32_t    nrounds, bound, r;
    rg_status_t st;

    if (P < 1 || P > RG_COLL_P_MAX) {
        return rg_err_set(err, RG_ERR_RANGE, "barrier plan: P = %d out of range 1..%d", P,
                          RG_COLL_P_MAX);
    }
    if (rank < 0 || rank >= P) {
        return rg_err_set(err, RG_ERR_RANGE, "barrier plan: rank %d out of range 0..%d", rank,
                          P - 1);
    }
    if ((int)spec->alg < 0 || spec->alg >= RG_COLL_BARRIER_NALGS ||
        (spec->alg == RG_COLL_BARRIER_NWAY && (spec->n < 1 || spec->n > RG_COLL_NWAY_MAX)) ||
        ((spec->alg == RG_COLL_BARRIER_KDISSEM || spec->alg == RG_COLL_BARRIER_RECEXCH) &&
         (spec->n < 2 || spec->n > RG_COLL_K_MAX))) {
        return rg_err_set(err, RG_ERR_INVALID, "barrier plan: bad algorithm %d with n = %d",
                          (int)spec->alg, spec->n);
    }
    nrounds = rg_coll_barrier_rounds(spec, P);
    bound = rg__bound(spec, P);
    plan->nrounds = 0;
    plan->npeers = 0;
    plan->max_ops = 0;
    if ((st = rg__reserve((void **)&plan->rounds, &plan->rounds_cap, nrounds ? nrounds : 1,
                          sizeof(*plan->rounds), err)) != RG_OK) {
        return st;
    }
    for (r = 0; r < nrounds; r++) {
        rg_coll_round_t *rd = &plan->rounds[r];
        if ((st = rg__reserve((void **)&plan->peers, &plan->peers_cap,
                              (size_t)plan->npeers + 2 * (size_t)bound, sizeof(*plan->peers),
                              err)) != RG_OK) {
            plan->npeers = 0;
            return st;
        }
        rd->send_off = plan->npeers;
        rd->nsend = rg__round_peers(spec, P, rank, r, RG__SEND, plan->peers + plan->npeers);
        plan->npeers += rd->nsend;
        rd->recv_off = plan->npeers;
        rd->nrecv = rg__round_peers(spec, P, rank, r, RG__RECV, plan->peers + plan->npeers);
        plan->npeers += rd->nrecv;
        if (rd->nsend + rd->nrecv > plan->max_ops) {
            plan->max_ops = rd->nsend + rd->nrecv;
        }
    }
    plan->nrounds = nrounds;
    plan->spec = *spec;
    plan->P = P;
    plan->rank = rank;
    return RG_OK;
}
