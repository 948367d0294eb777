/*
 * railgauge: building and checking simulator schedules.
 */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_name[] = {"send", "recv", "calc"};

void rg_sim_sched_init(rg_sim_sched_t *s, uint32_t nranks)
{
    memset(s, 0, sizeof(*s));
    s->nranks = nranks;
    s->ncpus = 1;
    s->nnics = 1;
}

void rg_sim_sched_free(rg_sim_sched_t *s)
{
    free(s->ops);
    free(s->pairs);
    free(s->dep_off);
    free(s->deps);
    free(s->ndeps);
    free(s->added);
    memset(s, 0, sizeof(*s));
}

static rg_status_t grow(void **p, size_t *cap, size_t need, size_t elem, rg_err_t *err)
{
    size_t ncap = *cap ? *cap : 1024;
    void  *np;

    while (ncap < need) {
        ncap *= 2;
    }
    np = realloc(*p, ncap * elem);
    if (np == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory for %zu entries", ncap);
    }
    *p = np;
    *cap = ncap;
    return RG_OK;
}

rg_status_t rg_sim_sched_add(rg_sim_sched_t *s, const rg_sim_op_t *op, rg_err_t *err)
{
    if (s->nops >= UINT32_MAX / 2) {
        return rg_err_set(err, RG_ERR_RANGE, "schedule: more than %u operations",
                          UINT32_MAX / 2);
    }
    if (s->nops == s->ops_cap &&
        grow((void **)&s->ops, &s->ops_cap, s->nops + 1, sizeof(*s->ops), err) != RG_OK) {
        return RG_ERR_NOMEM;
    }
    s->ops[s->nops] = *op;
    if ((uint32_t)op->cpu + 1 > s->ncpus) {
        s->ncpus = (uint32_t)op->cpu + 1;
    }
    if ((uint32_t)op->nic + 1 > s->nnics) {
        s->nnics = (uint32_t)op->nic + 1;
    }
    s->nops++;
    return RG_OK;
}

rg_status_t rg_sim_sched_dep(rg_sim_sched_t *s, uint32_t after, uint32_t before,
                             int ireq, rg_err_t *err)
{
    if (s->npairs + 2 > s->pairs_cap &&
        grow((void **)&s->pairs, &s->pairs_cap, s->npairs + 2, sizeof(*s->pairs), err) != RG_OK) {
        return RG_ERR_NOMEM;
    }
    s->pairs[s->npairs++] = before;
    s->pairs[s->npairs++] = after | (ireq ? RG_SIM_EDGE_IREQ : 0);
    return RG_OK;
}

static void describe(const rg_sim_sched_t *s, uint32_t i, char *buf, size_t cap)
{
    const rg_sim_op_t *op = &s->ops[i];

    if (op->line) {
        snprintf(buf, cap, "rank %u %s (line %u)", op->rank, kind_name[op->kind], op->line);
    } else {
        snprintf(buf, cap, "rank %u %s #%u", op->rank, kind_name[op->kind], i);
    }
}

/* Finds and names one cycle among the operations that Kahn's algorithm could
 * not order (left[i] > 0): walking backwards along unmet dependencies from any
 * of them must revisit an operation. */
static rg_status_t name_cycle(rg_sim_sched_t *s, const uint32_t *left, rg_err_t *err)
{
    size_t    n = s->nops, i, e, len = 0;
    uint32_t *pred = malloc(n * sizeof(*pred));
    uint32_t *mark = calloc(n, sizeof(*mark));
    uint32_t  start = 0, cur, step = 1;
    char      msg[RG_ERR_MSG_MAX], one[96];

    if (pred == NULL || mark == NULL) {
        free(pred);
        free(mark);
        return rg_err_set(err, RG_ERR_INVALID, "schedule: dependency cycle");
    }
    for (i = 0; i < n; i++) {
        pred[i] = UINT32_MAX;
    }
    for (i = 0; i < n; i++) {
        for (e = s->dep_off[i]; e < s->dep_off[i + 1]; e++) {
            uint32_t to = s->deps[e] & ~RG_SIM_EDGE_IREQ;
            if (left[i] && left[to]) {
                pred[to] = (uint32_t)i;
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (left[i]) {
            start = (uint32_t)i;
            break;
        }
    }
    cur = start;
    while (mark[cur] == 0) {
        mark[cur] = step++;
        cur = pred[cur];
    }
    /* cur is on the cycle: print it forwards (pred points backwards). */
    {
        uint32_t cyc[64], ncyc = 0, c = cur;
        do {
            if (ncyc < 64) {
                cyc[ncyc++] = c;
            }
            c = pred[c];
        } while (c != cur);
        len = (size_t)snprintf(msg, sizeof(msg), "schedule: dependency cycle (each operation "
                               "waits for the one before it): ");
        for (i = ncyc; i-- > 0;) {
            describe(s, cyc[i], one, sizeof(one));
            len += (size_t)snprintf(msg + len, len < sizeof(msg) ? sizeof(msg) - len : 0,
                                    "%s -> ", one);
            if (len >= sizeof(msg)) {
                break;
            }
        }
        if (len < sizeof(msg)) {
            describe(s, cyc[ncyc - 1], one, sizeof(one));
            snprintf(msg + len, sizeof(msg) - len, "%s", one);
        }
    }
    free(pred);
    free(mark);
    return rg_err_set(err, RG_ERR_INVALID, "%s", msg);
}

/* Marks the batches (sim.h): a forward pass numbers each operation within
 * its run of sends or receives (kept in batch, capped) and flags the first;
 * a backward pass gives every operation of a run the run's size, which is the
 * number of its last operation. Ranks may interleave in s->ops. */
static rg_status_t mark_batches(rg_sim_sched_t *s, rg_err_t *err)
{
    uint32_t *pos = calloc(s->nranks ? s->nranks : 1, sizeof(*pos));
    uint8_t  *last = malloc(s->nranks ? s->nranks : 1);
    size_t    i;

    if (pos == NULL || last == NULL) {
        free(pos);
        free(last);
        return rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory for %u ranks", s->nranks);
    }
    memset(last, RG_SIM_CALC, s->nranks);
    for (i = 0; i < s->nops; i++) {
        rg_sim_op_t *op = &s->ops[i];
        uint32_t     r = op->rank;
        op->flags &= (uint8_t)~(RG_SIM_OPF_FIRST | RG_SIM_OPF_IREQ);
        if (op->kind == RG_SIM_CALC) {
            pos[r] = 0;
        } else if (op->kind != last[r] || pos[r] == 0) {
            pos[r] = 1;
            op->flags |= RG_SIM_OPF_FIRST;
        } else if (pos[r] < RG_SIM_BATCH_MAX) {
            pos[r]++;
        }
        last[r] = op->kind;
        op->batch = (uint16_t)pos[r];
    }
    memset(pos, 0, (size_t)s->nranks * sizeof(*pos));
    for (i = s->nops; i-- > 0;) {
        rg_sim_op_t *op = &s->ops[i];
        uint32_t     r = op->rank;
        if (op->kind == RG_SIM_CALC) {
            continue;
        }
        if (pos[r] == 0) {
            pos[r] = op->batch;
        }
        op->batch = (uint16_t)pos[r];
        if (op->flags & RG_SIM_OPF_FIRST) {
            pos[r] = 0;
        }
    }
    free(pos);
    free(last);
    return RG_OK;
}

/* Renumbers the operations by depth (stable: in the order added within a
 * depth), where they are not in that order already. The engine visits
 * operations in time order, and operations of one depth tend to run at
 * about the same time: in the order added (rank by rank, as GOAL is
 * written), each event touched a cache line of its own in every per-operation
 * array; by depth, consecutive events touch consecutive entries (a 2^16-rank
 * dissemination barrier from GOAL simulated in 0.077 s instead of 0.128 s).
 * Nothing else depends on the numbering: dependents lists keep their order,
 * the operations free at the start (depth 0) keep theirs, and what needs the
 * order added (LoP's receives, the deadlock report, the receive window's
 * check) follows s->added. depth is taken (freed or kept as s->added);
 * *spare1 (n + 1 entries) and *spare0 (n) are taken where used (then set to
 * NULL). */
static rg_status_t renumber(rg_sim_sched_t *s, uint32_t *depth, uint32_t maxd,
                           uint32_t **spare1, uint32_t **spare0, rg_err_t *err)
{
    size_t       n = s->nops, i, e;
    uint32_t    *cnt = NULL, *off = NULL, *deps = NULL, *nd = NULL;
    rg_sim_op_t *ops = NULL;

    for (i = 1; i < n && depth[i] >= depth[i - 1]; i++) {
    }
    if (i >= n) {
        free(depth);
        return RG_OK;
    }
    /* A counting sort: depth[i] becomes operation i's new index. */
    cnt = calloc((size_t)maxd + 1, sizeof(*cnt));
    if (cnt == NULL) {
        free(depth);
        return rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory");
    }
    for (i = 0; i < n; i++) {
        cnt[depth[i]]++;
    }
    for (i = 0, e = 0; i <= maxd; i++) {
        uint32_t c = cnt[i];
        cnt[i] = (uint32_t)e;
        e += c;
    }
    for (i = 0; i < n; i++) {
        depth[i] = cnt[depth[i]]++;
    }
    free(cnt);
    s->added = depth;
    /* The arrays one by one, so that at most one is held twice; the
     * operations (the largest) from the end, giving back the old array's
     * tail as it is consumed: where the new order spreads a rank's
     * operations apart (rounds of a collective), the new array's pages are
     * touched about as fast, so the two together hold about one's worth. */
    ops = malloc(n * sizeof(*ops));
    if (ops == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory for %zu operations", n);
    }
    for (i = n; i-- > 0;) {
        ops[depth[i]] = s->ops[i];
        if ((i & 0xffff) == 0 && i > 0) {
            rg_sim_op_t *shrunk = realloc(s->ops, i * sizeof(*shrunk));
            if (shrunk != NULL) { /* else keep it whole: no harm */
                s->ops = shrunk;
            }
        }
    }
    free(s->ops);
    s->ops = ops;
    s->ops_cap = n;
    nd = *spare0;
    off = *spare1;
    *spare0 = *spare1 = NULL;
    off[0] = 0;
    for (i = 0; i < n; i++) {
        nd[depth[i]] = s->ndeps[i];
        off[depth[i] + 1] = s->dep_off[i + 1] - s->dep_off[i];
    }
    free(s->ndeps);
    s->ndeps = nd;
    for (i = 0; i < n; i++) {
        off[i + 1] += off[i];
    }
    deps = malloc((off[n] ? off[n] : 1) * sizeof(*deps));
    if (deps == NULL) {
        free(off);
        return rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory for the dependencies");
    }
    for (i = 0; i < n; i++) {
        uint32_t to = off[depth[i]];
        for (e = s->dep_off[i]; e < s->dep_off[i + 1]; e++) {
            uint32_t d = s->deps[e];
            deps[to++] = depth[d & ~RG_SIM_EDGE_IREQ] | (d & RG_SIM_EDGE_IREQ);
        }
    }
    free(s->deps);
    free(s->dep_off);
    s->deps = deps;
    s->dep_off = off;
    return RG_OK;
}

rg_status_t rg_sim_sched_finish(rg_sim_sched_t *s, rg_err_t *err)
{
    size_t    n = s->nops, ne = s->npairs / 2, i;
    uint32_t *queue = NULL, *left = NULL, *depth = NULL, head = 0, tail = 0, maxd = 0;
    rg_status_t st = RG_OK;
    char      one[96];

    for (i = 0; i < n; i++) {
        const rg_sim_op_t *op = &s->ops[i];
        if (!(op->amount >= 0) || !isfinite(op->amount)) {
            describe(s, (uint32_t)i, one, sizeof(one));
            return rg_err_set(err, RG_ERR_RANGE, "schedule: %s: %s %g is negative or not finite",
                              one, op->kind == RG_SIM_CALC ? "duration" : "size", op->amount);
        }
        if (op->rank >= s->nranks ||
            (op->kind != RG_SIM_CALC && op->peer != RG_SIM_ANY &&
             (op->peer < 0 || (uint32_t)op->peer >= s->nranks)) ||
            (op->kind == RG_SIM_SEND && op->peer == RG_SIM_ANY)) {
            describe(s, (uint32_t)i, one, sizeof(one));
            return rg_err_set(err, RG_ERR_RANGE, "schedule: %s: peer %d out of range (%u ranks)",
                              one, op->peer, s->nranks);
        }
    }
    if ((st = mark_batches(s, err)) != RG_OK) {
        return st;
    }
    s->dep_off = calloc(n + 1, sizeof(*s->dep_off));
    s->deps = malloc((ne ? ne : 1) * sizeof(*s->deps));
    s->ndeps = calloc(n ? n : 1, sizeof(*s->ndeps));
    if (s->dep_off == NULL || s->deps == NULL || s->ndeps == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory for %zu dependencies", ne);
    }
    for (i = 0; i < ne; i++) {
        uint32_t before = s->pairs[2 * i], after = s->pairs[2 * i + 1] & ~RG_SIM_EDGE_IREQ;
        if (before >= n || after >= n) {
            return rg_err_set(err, RG_ERR_RANGE, "schedule: dependency on operation %u of %zu",
                              before >= n ? before : after, n);
        }
        s->dep_off[before + 1]++;
        s->ndeps[after]++;
        if (s->pairs[2 * i + 1] & RG_SIM_EDGE_IREQ) {
            s->ops[before].flags |= RG_SIM_OPF_IREQ;
        }
    }
    for (i = 0; i < n; i++) {
        s->dep_off[i + 1] += s->dep_off[i];
    }
    /* Fill in input order (stable), so dependents keep program order. queue
     * (n + 1 entries) serves here, then in the cycle check, then in
     * renumber(), as does the check's left: fewer fresh pages to fault in. */
    queue = malloc((n + 1) * sizeof(*queue));
    if (queue == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory");
    }
    memcpy(queue, s->dep_off, n * sizeof(*queue));
    for (i = 0; i < ne; i++) {
        s->deps[queue[s->pairs[2 * i]]++] = s->pairs[2 * i + 1];
    }
    free(s->pairs);
    s->pairs = NULL;
    s->npairs = s->pairs_cap = 0;

    /* Cycle check (Kahn): every operation must become free. */
    left = malloc((n ? n : 1) * sizeof(*left));
    if (queue == NULL || left == NULL) {
        st = rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory");
        goto out;
    }
    memcpy(left, s->ndeps, n * sizeof(*left));
    for (i = 0; i < n; i++) {
        if (left[i] == 0) {
            queue[tail++] = (uint32_t)i;
        }
    }
    /* A stack, not a queue: an operation's dependents (of the same rank,
     * nearby in memory) are then taken next, which keeps the walk in cache.
     * Each operation's depth (the longest chain of dependencies before it)
     * is found on the way, for renumber(). */
    depth = calloc(n ? n : 1, sizeof(*depth));
    if (depth == NULL) {
        st = rg_err_set(err, RG_ERR_NOMEM, "schedule: out of memory");
        goto out;
    }
    while (tail > 0) {
        uint32_t u = queue[--tail], e, du = depth[u] + 1;
        head++;
        for (e = s->dep_off[u]; e < s->dep_off[u + 1]; e++) {
            uint32_t v = s->deps[e] & ~RG_SIM_EDGE_IREQ;
            if (depth[v] < du) {
                depth[v] = du;
                maxd = du > maxd ? du : maxd;
            }
            if (--left[v] == 0) {
                queue[tail++] = v;
            }
        }
    }
    if (head != n) {
        st = name_cycle(s, left, err);
        goto out;
    }
    st = renumber(s, depth, maxd, &queue, &left, err);
    depth = NULL; /* renumber took it */
out:
    free(queue);
    free(left);
    free(depth);
    return st;
}

rg_status_t rg_sim_params_check(const rg_sim_params_t *p, rg_err_t *err)
{
    const double v[5] = {p->L, p->o, p->g, p->G, p->O};
    const char  *nm[5] = {"L", "o", "g", "G", "O"};
    int          i;

    for (i = 0; i < 5; i++) {
        if (!isfinite(v[i]) || v[i] < 0) {
            return rg_err_set(err, RG_ERR_RANGE, "parameter %s = %g: must be finite and >= 0",
                              nm[i], v[i]);
        }
    }
    if (p->nranges > RG_SIM_MAX_RANGES || (p->nranges > 0 && p->ranges == NULL)) {
        return rg_err_set(err, RG_ERR_RANGE, "parameters: %zu ranges (at most %d)", p->nranges,
                          RG_SIM_MAX_RANGES);
    }
    for (i = 0; i < (int)p->nranges; i++) {
        const rg_sim_range_t *r = &p->ranges[i];
        const double          w[5] = {r->L, r->o, r->g, r->G, r->O};
        int                   j;
        for (j = 0; j < 5; j++) {
            if (!isfinite(w[j]) || w[j] < 0) {
                return rg_err_set(err, RG_ERR_RANGE, "range %d: parameter %s = %g: must be "
                                  "finite and >= 0", i, nm[j], w[j]);
            }
        }
        if (isnan(r->to_bytes) || r->to_bytes < 0 ||
            (i > 0 && !(r->to_bytes > p->ranges[i - 1].to_bytes))) {
            return rg_err_set(err, RG_ERR_RANGE, "range %d: to_bytes %g must be >= 0 and above "
                              "the previous range's", i, r->to_bytes);
        }
    }
    if (isnan(p->S) || p->S < 0) {
        return rg_err_set(err, RG_ERR_RANGE, "parameter S = %g: must be >= 0 (or inf)", p->S);
    }
    if (!isfinite(p->duplex) || p->duplex < 0) {
        return rg_err_set(err, RG_ERR_RANGE, "parameter duplex = %g: must be finite and >= 0",
                          p->duplex);
    }
    if (p->duplex > 0 && (p->lop != NULL || p->rxwin != NULL || p->rails != NULL)) {
        return rg_err_set(err, RG_ERR_INVALID, "duplex is a LogGOPS parameter: not with LoP, "
                          "the receive window or rails");
    }
    if (p->lop != NULL) {
        for (i = 0; i < 6; i++) {
            if (!isfinite(p->lop->rtt[i])) {
                return rg_err_set(err, RG_ERR_RANGE, "LoP: RTT lambda l%d = %g is not finite",
                                  i + 1, p->lop->rtt[i]);
            }
        }
        for (i = 0; i < 3; i++) {
            if (!isfinite(p->lop->os[i])) {
                return rg_err_set(err, RG_ERR_RANGE, "LoP: o_s lambda l%d = %g is not finite",
                                  i + 1, p->lop->os[i]);
            }
        }
        if (isfinite(p->S)) {
            return rg_err_set(err, RG_ERR_RANGE, "LoP has no rendezvous: S = %g must be inf",
                              p->S);
        }
    }
    return RG_OK;
}

rg_status_t rg_sim_barrier_dissemination(rg_sim_sched_t *s, uint32_t P, rg_err_t *err)
{
    uint32_t rounds = 0, k;

    rg_sim_sched_init(s, 0);
    if (P < 1 || P > (1u << 26)) {
        return rg_err_set(err, RG_ERR_RANGE, "barrier: P = %u out of range 1..2^26", P);
    }
    while ((1ull << rounds) < P) {
        rounds++;
    }
    s->nranks = P;
    s->gen = RG_SIM_GEN_DISSEMINATION;
    s->gen_rounds = rounds;
    s->gen_inv2p = 1.0 / (2.0 * (double)P);
    s->gen_shift = (P & (P - 1)) == 0 ? rounds + 1 : 0;
    for (k = 0; k < rounds; k++) {
        s->gen_dist[k] = (uint32_t)((1ull << k) % P);
    }
    s->nops = (size_t)2 * P * rounds;
    return RG_OK;
}
