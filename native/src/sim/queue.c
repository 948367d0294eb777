/*
 * railgauge: the simulator's event queue (see queue.h).
 */
#include "sim/queue.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

void rg_simq_init(rg_simq_t *q)
{
    memset(q, 0, sizeof(*q));
    q->free_b = NONE;
    q->last_b = NONE;
}

void rg_simq_free(rg_simq_t *q)
{
    size_t i;

    for (i = 0; i < q->nb; i++) {
        free(q->b[i].fifo);
        free(q->b[i].rq);
    }
    free(q->b);
    free(q->top);
    free(q->hash);
    memset(q, 0, sizeof(*q));
    q->free_b = NONE;
    q->last_b = NONE;
}

static int grow(void **p, size_t *cap, size_t elem)
{
    size_t nc = *cap ? *cap * 2 : 64;
    void  *np = realloc(*p, nc * elem);

    if (np == NULL) {
        return -1;
    }
    *p = np;
    *cap = nc;
    return 0;
}

static uint64_t tbits(double t)
{
    uint64_t k;

    t += 0.0; /* -0.0 and +0.0 are one time */
    memcpy(&k, &t, sizeof(k));
    return k;
}

static size_t hslot(const rg_simq_t *q, double t)
{
    uint64_t h = tbits(t) * 0x9E3779B97F4A7C15ull;

    return (size_t)(h >> 20) & (q->hcap - 1);
}

static uint32_t hfind(const rg_simq_t *q, double t)
{
    size_t i;

    if (q->hcap == 0) {
        return NONE;
    }
    for (i = hslot(q, t);; i = (i + 1) & (q->hcap - 1)) {
        uint32_t b = q->hash[i];
        if (b == NONE) {
            return NONE;
        }
        if (q->b[b].t == t) {
            return b;
        }
    }
}

static void hput(rg_simq_t *q, uint32_t b)
{
    size_t i;

    for (i = hslot(q, q->b[b].t); q->hash[i] != NONE; i = (i + 1) & (q->hcap - 1)) {
    }
    q->hash[i] = b;
}

/* Deletion with backward shift, so that probes never need tombstones. */
static void hdel(rg_simq_t *q, uint32_t b)
{
    size_t i = hslot(q, q->b[b].t), j, k, mask = q->hcap - 1;

    while (q->hash[i] != b) {
        i = (i + 1) & mask;
    }
    q->hash[i] = NONE;
    for (j = (i + 1) & mask; q->hash[j] != NONE; j = (j + 1) & mask) {
        k = hslot(q, q->b[q->hash[j]].t);
        /* Move j back into i when its home k is not in (i, j] cyclically. */
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            q->hash[i] = q->hash[j];
            q->hash[j] = NONE;
            i = j;
        }
    }
}

static int hgrow(rg_simq_t *q)
{
    size_t    nc = q->hcap ? q->hcap * 2 : 1024, i, old = q->hcap;
    uint32_t *oh = q->hash;

    q->hash = malloc(nc * sizeof(*q->hash));
    if (q->hash == NULL) {
        q->hash = oh;
        return -1;
    }
    memset(q->hash, 0xff, nc * sizeof(*q->hash));
    q->hcap = nc;
    for (i = 0; i < old; i++) {
        if (oh[i] != NONE) {
            hput(q, oh[i]);
        }
    }
    free(oh);
    return 0;
}

static void top_up(rg_simq_t *q, size_t i)
{
    uint32_t v = q->top[i];

    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!(q->b[v].t < q->b[q->top[p]].t)) {
            break;
        }
        q->top[i] = q->top[p];
        i = p;
    }
    q->top[i] = v;
}

static void top_pop(rg_simq_t *q)
{
    uint32_t last = q->top[--q->ntop];
    size_t   i = 0, n = q->ntop;

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && q->b[q->top[c + 1]].t < q->b[q->top[c]].t) {
            c++;
        }
        if (!(q->b[q->top[c]].t < q->b[last].t)) {
            break;
        }
        q->top[i] = q->top[c];
        i = c;
    }
    if (n > 0) {
        q->top[i] = last;
    }
}

static uint32_t bucket_new(rg_simq_t *q, double t)
{
    uint32_t b;

    if ((q->ntop + 1) * 2 > q->hcap && hgrow(q) != 0) {
        return NONE;
    }
    if (q->ntop == q->topcap && grow((void **)&q->top, &q->topcap, sizeof(*q->top)) != 0) {
        return NONE;
    }
    if (q->free_b != NONE) {
        b = q->free_b;
        q->free_b = q->b[b].next_free;
    } else {
        if (q->nb == q->bcap && grow((void **)&q->b, &q->bcap, sizeof(*q->b)) != 0) {
            return NONE;
        }
        b = (uint32_t)q->nb++;
        memset(&q->b[b], 0, sizeof(q->b[b]));
    }
    q->b[b].t = t;
    q->b[b].head = q->b[b].n = q->b[b].rqn = 0;
    hput(q, b);
    q->top[q->ntop++] = b;
    top_up(q, q->ntop - 1);
    return b;
}

void rg_simq_push(rg_simq_t *q, double t, uint64_t seq, uint32_t op, uint32_t type)
{
    uint32_t          b;
    rg_simq_bucket_t *k;
    rg_simq_ev_t      ev = {seq, op, type};

    t += 0.0;
    if (q->last_b != NONE && q->last_t == t) {
        b = q->last_b;
    } else {
        b = hfind(q, t);
        if (b == NONE && (b = bucket_new(q, t)) == NONE) {
            q->nomem = 1;
            return;
        }
        q->last_t = t;
        q->last_b = b;
    }
    k = &q->b[b];
    if (k->n == k->head || seq > k->fifo[k->n - 1].seq) {
        /* Fresh: the largest sequence number so far. */
        if (k->n == k->head) {
            k->n = k->head = 0;
        }
        if (k->n == k->cap && grow((void **)&k->fifo, &k->cap, sizeof(*k->fifo)) != 0) {
            q->nomem = 1;
            return;
        }
        k->fifo[k->n++] = ev;
    } else {
        /* Re-queued with an older sequence number: the bucket's small heap. */
        size_t i;
        if (k->rqn == k->rqcap && grow((void **)&k->rq, &k->rqcap, sizeof(*k->rq)) != 0) {
            q->nomem = 1;
            return;
        }
        i = k->rqn++;
        while (i > 0 && seq < k->rq[(i - 1) / 2].seq) {
            k->rq[i] = k->rq[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        k->rq[i] = ev;
    }
    q->count++;
}

void rg_simq_pop(rg_simq_t *q, double *t, rg_simq_ev_t *ev)
{
    uint32_t          b = q->top[0];
    rg_simq_bucket_t *k = &q->b[b];

    *t = k->t;
    if (k->rqn > 0 && (k->head == k->n || k->rq[0].seq < k->fifo[k->head].seq)) {
        rg_simq_ev_t last = k->rq[--k->rqn];
        size_t       i = 0, n = k->rqn;
        *ev = k->rq[0];
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= n) {
                break;
            }
            if (c + 1 < n && k->rq[c + 1].seq < k->rq[c].seq) {
                c++;
            }
            if (!(k->rq[c].seq < last.seq)) {
                break;
            }
            k->rq[i] = k->rq[c];
            i = c;
        }
        if (n > 0) {
            k->rq[i] = last;
        }
    } else {
        *ev = k->fifo[k->head++];
    }
    q->count--;
    if (k->head == k->n && k->rqn == 0) {
        hdel(q, b);
        top_pop(q);
        if (q->last_b == b) {
            q->last_b = NONE;
        }
        k->next_free = q->free_b;
        q->free_b = b;
    }
}
