/*
 * railgauge: the shared receive window's buffers (the eager pool) and
 * receiver-not-ready (docs/rxwin.md). rxwin.c says how many buffers the
 * window has (its policy, tested alone); this file owns the buffers: posts
 * them to the transport as receives from any source, handles the ones that
 * took messages in posting order, and grows or shrinks the pool as the
 * window says. With RG_PROTO_RNR=1 it also holds the refusal buffer, the
 * receiver-not-ready replies, the senders' kept copies with their retries,
 * and the cumulative ACKs.
 */
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "proto/proto_int.h"

/* ---- the window's buffers ------------------------------------------------- */

/* Posts b (a window buffer, or the refusal buffer) as a receive from any
 * source; window buffers join the posted list. */
static rg_status_t rg__pool_post(rg_proto_t *proto, rg__pbuf_t *b)
{
    rg_status_t status;

    b->postno = proto->postno++;
    status    = rg__proto_sched_recv(proto, 0, RG_XPORT_ANY_SOURCE, b->data,
                                     proto->pbuf_size, &b->xreq);
    if (status != RG_OK) {
        return status;
    }
    if (b == proto->drain) {
        proto->drain_posted = 1;
        proto->drain_behind = 0;
        return RG_OK;
    }
    rg__proto_pbufs_append(&proto->pbufs, b);
    proto->nposted++;
    /* Behind the refusal buffer only while it still waits: once it holds a
     * message (handled later in this pass), that message came before b. */
    if (proto->drain_posted && proto->drain->xreq.status == RG_INPROGRESS) {
        proto->drain_behind++;
    }
    return RG_OK;
}

static rg__pbuf_t *rg__pbuf_new(rg_proto_t *proto)
{
    rg__pbuf_t *b = calloc(1, sizeof(*b));

    if (b != NULL && (b->data = malloc(proto->pbuf_size)) == NULL) {
        free(b);
        b = NULL;
    }
    if (b != NULL) {
        rg__proto_mem_add(proto, &proto->stats.mem.pool, sizeof(*b) + proto->pbuf_size);
    }
    return b;
}

static void rg__pbuf_free(rg_proto_t *proto, rg__pbuf_t *b)
{
    rg__proto_mem_sub(proto, &proto->stats.mem.pool, sizeof(*b) + proto->pbuf_size);
    free(b->data);
    free(b);
}

/* A new window buffer, posted behind the others (it counts in nalloc). */
static rg_status_t rg__pool_add(rg_proto_t *proto, rg__pbuf_t *b)
{
    rg_status_t status;

    proto->nalloc++;
    status = rg__pool_post(proto, b);
    if (status != RG_OK) {
        rg__pbuf_free(proto, b);
        proto->nalloc--;
    }
    return status;
}

static rg_status_t rg__pbuf_check(rg_proto_t *proto, const rg__pbuf_t *b)
{
    if (b->xreq.status == RG_ERR_TRUNCATED) {
        return rg__proto_fail(proto, RG_ERR_TRUNCATED,
                              "a message larger than an eager buffer arrived (do all ranks "
                              "use the same RG_PROTO_EAGER_* settings?)", NULL);
    }
    if (b->xreq.status != RG_OK) {
        return rg__proto_fail(proto, b->xreq.status, "eager receive", proto->chan[0]);
    }
    return RG_OK;
}

rg_status_t rg__proto_window_open(rg_proto_t *proto, rg_err_t *err)
{
    rg__pbuf_t *b;
    rg_status_t status;
    int         i;

    if (proto->cfg.rnr) {
        proto->drain = rg__pbuf_new(proto);
        if (proto->drain == NULL) {
            return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the refusal buffer");
        }
    }
    for (i = 0; i < proto->rxwin.window; i++) {
        b = rg__pbuf_new(proto);
        if (b == NULL) {
            return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d eager buffers of "
                              "%zu bytes", proto->rxwin.window, proto->pbuf_size);
        }
        status = rg__pool_add(proto, b);
        if (status != RG_OK) {
            if (err != NULL) {
                *err = proto->err;
            }
            return status;
        }
    }
    if (proto->drain != NULL) {
        status = rg__pool_post(proto, proto->drain);
        if (status != RG_OK) {
            if (err != NULL) {
                *err = proto->err;
            }
            return status;
        }
    }
    return RG_OK;
}

void rg__proto_window_free(rg_proto_t *proto)
{
    rg__pbuf_t *b;
    rg__xop_t  *x, *xn;
    int         c;

    while ((b = rg__proto_pbufs_pop(&proto->pbufs)) != NULL) {
        free(b->data);
        free(b);
    }
    if (proto->drain != NULL) {
        free(proto->drain->data);
        free(proto->drain);
    }
    /* Kept messages not on the transport (those on it are in the inflight
     * list, freed with it). */
    for (c = 0; proto->unacked != NULL && c < proto->size; c++) {
        for (x = proto->unacked[c].head; x != NULL; x = xn) {
            xn = x->unext;
            if (!x->sending) {
                free(x);
            }
        }
    }
    free(proto->unacked);
    free(proto->ack_due);
    free(proto->ack_list);
}

/* ---- receiver-not-ready ------------------------------------------------------- */

/* The refusal buffer took a message. A window buffer posted after it was
 * free at that moment: the message is taken as any other. Otherwise every
 * buffer of the window was taken when it arrived, and a message that would
 * need one (EAGER, RTS: they may have to wait as unexpected) is dropped and
 * refused with a receiver-not-ready reply (its sender kept a copy until our
 * ACK, and sends it again after the RNR timer); the runtime's control
 * messages are always taken (they hold no buffer). */
static rg_status_t rg__drain_handle(rg_proto_t *proto)
{
    rg__pbuf_t *d = proto->drain;
    rg__phdr_t  h;
    rg_status_t status;
    uint32_t    seq;
    int32_t     tag;

    proto->drain_posted = 0;
    if ((status = rg__pbuf_check(proto, d)) != RG_OK) {
        return status;
    }
    if (proto->drain_behind > 0 || d->xreq.msg_len == 0 ||
        (d->data[0] != RG__PH_EAGER && d->data[0] != RG__PH_RTS)) {
        return rg__proto_handle(proto, d->xreq.source, d->data, d->xreq.msg_len);
    }
    if (d->xreq.msg_len < RG__EHDR) {
        return rg__proto_fail(proto, RG_ERR_PARSE, "a message shorter than a header arrived",
                              NULL);
    }
    /* EAGER and RTS headers both have the tag at byte 4 and seq at byte 8;
     * the message itself is dropped: its sender still has it. */
    memcpy(&tag, d->data + 4, sizeof(tag));
    memcpy(&seq, d->data + 8, sizeof(seq));
    memset(&h, 0, sizeof(h));
    h.type = RG__PH_RNR;
    h.tag  = tag;
    h.seq  = seq;
    h.aux  = (uint64_t)proto->rxwin.window;
    h.off  = proto->stats.mem.unexpected;
    proto->stats.rnr_sent++;
    return rg__proto_send_eager_path(proto, d->xreq.source, &h, RG__PHDR, NULL, 0, NULL);
}

/* Sends x (a kept message, on no list of the transport) on the eager path. */
static rg_status_t rg__retained_send(rg_proto_t *proto, rg__xop_t *x)
{
    rg_status_t status;

    x->sending = 1;
    status     = rg__proto_sched_send(proto, 0, x->peer, x->data, x->len, &x->xreq);
    if (status != RG_OK) {
        x->sending = 0;  /* the runtime has failed; close frees x */
        return status;
    }
    if (x->xreq.status == RG_INPROGRESS) {
        rg__proto_inflight_append(&proto->inflight, x);
    } else {
        x->sending = 0;
    }
    return RG_OK;
}

/* With RNR: an EAGER or RTS (header + payload) to peer, kept until peer
 * acknowledges it; owner (an eager send) completes then, as a send on an
 * InfiniBand reliable connection completes on its ACK. A refused message
 * goes again from this copy (rg__proto_rnr_arrive, rg__proto_rnr_progress). */
rg_status_t rg__proto_send_retained(rg_proto_t *proto, int peer, uint32_t seq,
                                    const void *hdr, size_t hlen, const void *payload,
                                    size_t len, rg_preq_t *owner)
{
    rg__xop_t *x = rg__proto_xop_staged(proto, hdr, hlen, payload, len);

    if (x == NULL) {
        return rg__proto_fail(proto, RG_ERR_NOMEM, "send staging", NULL);
    }
    x->owner  = owner;
    x->retain = 1;
    x->acked  = 0;
    x->tries  = 0;
    x->peer   = peer;
    x->seq    = seq;
    x->len    = hlen + len;
    x->rnext  = NULL;
    rg__proto_unacked_append(&proto->unacked[peer], x);
    proto->nunacked++;
    return rg__retained_send(proto, x);
}

rg_status_t rg__proto_ack_arrive(rg_proto_t *proto, int src, uint32_t upto)
{
    rg__xop_list_t *l = &proto->unacked[src];
    rg__xop_t      *x;

    while ((x = l->head) != NULL && (int32_t)(x->seq - upto) < 0) {
        rg__proto_unacked_pop(l);
        proto->nunacked--;
        if (x->owner != NULL) {
            rg__proto_complete(x->owner, RG_OK);
        }
        x->acked = 1;
        if (!x->sending) {
            rg__proto_retained_release(proto, x);
        }
    }
    return RG_OK;
}

/* A receiver-not-ready reply for our message seq to src: it goes again
 * after the RNR timer, from the copy this rank kept, or, refused too often,
 * ends the runtime with an error naming the peer and both queues. */
rg_status_t rg__proto_rnr_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr)
{
    rg__xop_t *x, *e;
    int        to_peer = 0;

    for (x = proto->unacked[src].head; x != NULL && x->seq != hdr->seq; x = x->unext) {
    }
    if (x == NULL) {
        return rg__proto_fail(proto, RG_ERR_PARSE,
                              "a receiver-not-ready reply names a message this rank does "
                              "not hold", NULL);
    }
    proto->stats.rnr_recv++;
    if (++x->tries > (unsigned)proto->cfg.rnr_retry) {
        for (e = proto->unacked[src].head; e != NULL; e = e->unext) {
            to_peer++;
        }
        proto->failed = RG_ERR_BUSY;
        return rg_err_set(&proto->err, RG_ERR_BUSY,
                          "a message of rank %d to rank %d (tag %d, seq %u) was refused %u times "
                          "(receiver not ready: all %llu buffers of rank %d's window were "
                          "taken, %llu bytes of unexpected messages held there); rank %d "
                          "holds %d messages that rank %d has not taken and %d waiting for "
                          "their retry (RG_PROTO_RNR_RETRY=%d, RG_PROTO_RNR_TIMER_MS=%g)",
                          proto->rank, src, hdr->tag, (unsigned)hdr->seq, x->tries,
                          (unsigned long long)hdr->aux, src, (unsigned long long)hdr->off,
                          proto->rank, to_peer, src, proto->nrnr, proto->cfg.rnr_retry,
                          proto->cfg.rnr_timer_ms);
    }
    x->due_ns = rg_time_mono_ns() + proto->rnr_timer_ns;
    rg__proto_rnrq_append(&proto->rnrq, x);
    proto->nrnr++;
    return RG_OK;
}

/* One timer for all: the queue is in due order. */
rg_status_t rg__proto_rnr_progress(rg_proto_t *proto)
{
    uint64_t    now = rg_time_mono_ns();
    rg__xop_t  *x;
    rg_status_t status;

    while ((x = proto->rnrq.head) != NULL && x->due_ns <= now && !x->sending) {
        rg__proto_rnrq_pop(&proto->rnrq);
        proto->nrnr--;
        proto->stats.retries++;
        if ((status = rg__retained_send(proto, x)) != RG_OK) {
            return status;
        }
    }
    return RG_OK;
}

/* With RNR: one cumulative ACK to each sender whose messages this pass took. */
static rg_status_t rg__ack_send(rg_proto_t *proto)
{
    rg__phdr_t  h;
    rg_status_t status = RG_OK;
    int         i, src;

    for (i = 0; i < proto->nack; i++) {
        src                 = proto->ack_list[i];
        proto->ack_due[src] = 0;
        if (status == RG_OK && src != proto->rank) {
            memset(&h, 0, sizeof(h));
            h.type = RG__PH_ACK;
            h.seq  = proto->recv_seq[src];
            status = rg__proto_send_eager_path(proto, src, &h, RG__PHDR, NULL, 0, NULL);
        }
    }
    proto->nack = 0;
    return status;
}

/* ---- one pass of the pool ------------------------------------------------------ */

/* The window's buffers that took messages, in posting order (the order the
 * transports fill receives from any source), each handled and posted again
 * at once (or freed where the window shrank); the refusal buffer in its
 * place among them. *handled and *taken count the buffers handled (the
 * refusal buffer's message too) and the window's buffers among them. */
static rg_status_t rg__pool_take(rg_proto_t *proto, int *handled, int *taken)
{
    rg__pbuf_t *b;
    rg_status_t status;

    for (;;) {
        b = proto->pbufs.head;
        if (proto->drain_posted && (b == NULL || proto->drain->postno < b->postno)) {
            if (proto->drain->xreq.status == RG_INPROGRESS) {
                return RG_OK;
            }
            (*handled)++;
            status = rg__drain_handle(proto);
            if (status != RG_OK) {
                return status;
            }
            continue;
        }
        if (b == NULL || b->xreq.status == RG_INPROGRESS) {
            return RG_OK;
        }
        rg__proto_pbufs_pop(&proto->pbufs);
        proto->nposted--;
        (*handled)++;
        (*taken)++;
        if ((status = rg__pbuf_check(proto, b)) != RG_OK ||
            (status = rg__proto_handle(proto, b->xreq.source, b->data, b->xreq.msg_len)) !=
                RG_OK) {
            rg__pbuf_free(proto, b);
            proto->nalloc--;
            return status;
        }
        if (proto->nalloc > proto->rxwin.window) {
            /* The window shrank: this buffer's memory goes back. */
            rg__pbuf_free(proto, b);
            proto->nalloc--;
        } else if ((status = rg__pool_post(proto, b)) != RG_OK) {
            rg__pbuf_free(proto, b);
            proto->nalloc--;
            return status;
        }
    }
}

/* Once per pass that handled a buffer: the window's check (a limit event
 * where fewer than the limit stayed posted at the pass's low point: the
 * adaptive window grows), reclaim, new buffers posted behind the others up
 * to the window's size, the refusal buffer posted again behind them, and
 * the ACKs of the pass. */
static rg_status_t rg__pool_adjust(rg_proto_t *proto, int posted0, int taken)
{
    rg__pbuf_t *b;
    rg_status_t status;

    /* The pass's low point: the buffers still posted before any went back. */
    if (posted0 - taken < proto->rxwin.limit && rg_rxwin_check(&proto->rxwin, posted0 - taken)) {
        proto->stats.limit_events++;
    }
    if (proto->rxwin.spec.reclaim &&
        rg_rxwin_reclaim(&proto->rxwin, rg_time_mono_ns(), taken)) {
        proto->stats.rxwin_shrinks++;
    }
    while (proto->nalloc < proto->rxwin.window) {
        /* The window grew: new buffers, posted behind the others. */
        b = rg__pbuf_new(proto);
        if (b == NULL) {
            return rg__proto_fail(proto, RG_ERR_NOMEM, "growing the receive window", NULL);
        }
        if ((status = rg__pool_add(proto, b)) != RG_OK) {
            return status;
        }
    }
    if (proto->drain != NULL && !proto->drain_posted &&
        (status = rg__pool_post(proto, proto->drain)) != RG_OK) {
        return status;
    }
    proto->stats.window = proto->rxwin.window;
    if (proto->rxwin.window > proto->stats.window_peak) {
        proto->stats.window_peak = proto->rxwin.window;
    }
    return proto->nack > 0 ? rg__ack_send(proto) : RG_OK;
}

rg_status_t rg__proto_pool_progress(rg_proto_t *proto)
{
    rg_status_t status;
    int         handled = 0, taken = 0, posted0 = proto->nposted;

    status = rg__pool_take(proto, &handled, &taken);
    if (status != RG_OK) {
        return status;
    }
    if (handled == 0) {
        return RG_OK;
    }
    return rg__pool_adjust(proto, posted0, taken);
}
