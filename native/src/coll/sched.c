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
    "linear", "binomial", "recdbl", "dissem", "nway"};

const char *rg_coll_barrier_alg_name(rg_coll_barrier_alg_t alg)
{
    if ((int)alg < 0 || alg >= RG_COLL_BARRIER_NALGS) {
        return "?";
    }
    return rg__alg_names[alg];
}

rg_status_t rg_coll_barrier_parse(const char *text, int n_opt, rg_coll_barrier_spec_t *spec,
                                  rg_err_t *err)
{
    static const struct { const char *name; rg_coll_barrier_alg_t alg; } names[] = {
        {"linear", RG_COLL_BARRIER_LINEAR},   {"binomial", RG_COLL_BARRIER_BINOMIAL},
        {"tree", RG_COLL_BARRIER_BINOMIAL},   {"recdbl", RG_COLL_BARRIER_RECDBL},
        {"recursive-doubling", RG_COLL_BARRIER_RECDBL},
        {"dissem", RG_COLL_BARRIER_DISSEM},   {"dissemination", RG_COLL_BARRIER_DISSEM},
        {"nway", RG_COLL_BARRIER_NWAY},       {"n-way", RG_COLL_BARRIER_NWAY}};
    const char *colon;
    size_t      len, i;
    long        n_text = 0;
    int         n;
    rg_coll_barrier_alg_t alg = RG_COLL_BARRIER_NALGS;

    if (text == NULL || text[0] == '\0') {
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm: empty name (known: linear, "
                          "binomial, recdbl, dissem, nway:N)");
    }
    colon = strchr(text, ':');
    len = colon != NULL ? (size_t)(colon - text) : strlen(text);
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strlen(names[i].name) == len && strncmp(names[i].name, text, len) == 0) {
            alg = names[i].alg;
            break;
        }
    }
    if (alg == RG_COLL_BARRIER_NALGS) {
        return rg_err_set(err, RG_ERR_INVALID, "unknown barrier algorithm '%s' (known: linear, "
                          "binomial, recdbl, dissem, nway:N)", text);
    }
    if (colon != NULL) {
        char *end;
        errno = 0;
        n_text = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || errno != 0 || n_text < 1 ||
            n_text > RG_COLL_NWAY_MAX) {
            return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s': n must be an "
                              "integer in 1..%d", text, RG_COLL_NWAY_MAX);
        }
    }
    if (n_opt < 0 || n_opt > RG_COLL_NWAY_MAX) {
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s': n = %d must be an "
                          "integer in 1..%d", text, n_opt, RG_COLL_NWAY_MAX);
    }
    if (n_text != 0 && n_opt != 0 && n_text != n_opt) {
        return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' and n = %d disagree",
                          text, n_opt);
    }
    n = n_text != 0 ? (int)n_text : n_opt;
    switch (alg) {
    case RG_COLL_BARRIER_NWAY:
        if (n == 0) {
            return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' needs n >= 1 "
                              "(nway:3, or n given separately)", text);
        }
        break;
    case RG_COLL_BARRIER_DISSEM:
        if (n > 1) {
            return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' takes no n (it is "
                              "nway:1); for n = %d use nway:%d", text, n, n);
        }
        n = 1;
        break;
    default:
        if (n != 0) {
            return rg_err_set(err, RG_ERR_INVALID, "barrier algorithm '%s' takes no n (only "
                              "nway does)", text);
        }
        break;
    }
    spec->alg = alg;
    spec->n = n;
    return RG_OK;
}

void rg_coll_barrier_format(const rg_coll_barrier_spec_t *spec, char *buf, size_t cap)
{
    if (spec->alg == RG_COLL_BARRIER_NWAY) {
        snprintf(buf, cap, "nway:%d", spec->n);
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

uint32_t rg_coll_barrier_rounds(const rg_coll_barrier_spec_t *spec, int P)
{
    uint32_t  k = 0;
    long long span = 1;

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
        /* The smallest R with (n+1)^R >= P. */
        while (span < P) {
            span *= (long long)spec->n + 1;
            k++;
        }
        return k;
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
        (spec->alg == RG_COLL_BARRIER_NWAY && (spec->n < 1 || spec->n > RG_COLL_NWAY_MAX))) {
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
