/*
 * railgauge: the runtime's messages (see proto_int.h for the wire format):
 * staging of eager-path sends, the eager and rendezvous state machine
 * (EAGER; RTS, then a one-sided read and FIN, a split copy with SPLIT, DONE
 * and FIN, or CTS and the payload on the data channel), and posting sends.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_int.h"

#define RG__PROTO_MEDIUM    4096u
/* Staging buffers kept for reuse per size class. */
#define RG__PROTO_XOP_CACHE 64u

/* ---- staging ------------------------------------------------------------- */

/* The staging size classes: control messages and small eager sends, up to
 * RG__PROTO_MEDIUM of payload (what RNR keeps until acknowledged is mostly
 * here, so a kept 512-byte message does not hold a whole eager buffer), and
 * the eager limit. */
static size_t rg__xop_cap(const rg_proto_t *proto, int cls)
{
    return cls == 0 ? RG__PHDR + RG__PROTO_SMALL
                    : cls == 1 ? RG__PHDR + RG__PROTO_MEDIUM : proto->pbuf_size;
}

static rg__xop_t *rg__xop_get(rg_proto_t *proto, size_t bytes)
{
    int        cls = bytes <= rg__xop_cap(proto, 0) ? 0 : bytes <= rg__xop_cap(proto, 1) ? 1 : 2;
    size_t     cap = rg__xop_cap(proto, cls);
    rg__xop_t *x   = proto->xop_free[cls];

    if (x != NULL) {
        proto->xop_free[cls] = x->next;
        proto->xop_nfree[cls]--;
    } else {
        x = malloc(sizeof(*x) + cap);
        if (x == NULL) {
            return NULL;
        }
        x->cap = cap;
        rg__proto_mem_add(proto, &proto->stats.mem.control, sizeof(*x) + cap);
    }
    x->next   = NULL;
    x->owner  = NULL;
    x->retain = 0;
    return x;
}

void rg__proto_xop_put(rg_proto_t *proto, rg__xop_t *x)
{
    int cls = x->cap == rg__xop_cap(proto, 0) ? 0 : x->cap == rg__xop_cap(proto, 1) ? 1 : 2;

    if (proto->xop_nfree[cls] < RG__PROTO_XOP_CACHE) {
        x->next              = proto->xop_free[cls];
        proto->xop_free[cls] = x;
        proto->xop_nfree[cls]++;
        return;
    }
    rg__proto_mem_sub(proto, &proto->stats.mem.control, sizeof(*x) + x->cap);
    free(x);
}

rg__xop_t *rg__proto_xop_staged(rg_proto_t *proto, const void *hdr, size_t hlen,
                                const void *payload, size_t len)
{
    rg__xop_t *x = rg__xop_get(proto, hlen + len);

    if (x != NULL) {
        memcpy(x->data, hdr, hlen);
        if (len > 0) {
            memcpy(x->data + hlen, payload, len);
        }
    }
    return x;
}

rg_status_t rg__proto_send_eager_path(rg_proto_t *proto, int peer, const void *hdr,
                                      size_t hlen, const void *payload, size_t len,
                                      rg_preq_t *owner)
{
    rg__xop_t  *x = rg__proto_xop_staged(proto, hdr, hlen, payload, len);
    rg_status_t status;

    if (x == NULL) {
        return rg__proto_fail(proto, RG_ERR_NOMEM, "send staging", NULL);
    }
    x->owner = owner;
    status   = rg__proto_sched_send(proto, 0, peer, x->data, hlen + len, &x->xreq);
    if (status != RG_OK) {
        rg__proto_xop_put(proto, x);
        return status;
    }
    if (x->xreq.status != RG_INPROGRESS) {
        rg__proto_xop_done(proto, x);
        return RG_OK;
    }
    rg__proto_inflight_append(&proto->inflight, x);
    return RG_OK;
}

static rg_status_t rg__send_ctl(rg_proto_t *proto, int peer, int type, uint64_t sreq)
{
    rg__phdr_t h;

    memset(&h, 0, sizeof(h));
    h.type = (uint8_t)type;
    h.sreq = sreq;
    return rg__proto_send_eager_path(proto, peer, &h, RG__PHDR, NULL, 0, NULL);
}

/* ---- receiving: a matched message meets its receive ------------------------ */

/* A large payload moved by both sides: the sender is asked to write the
 * second part while this rank reads the first; r completes on DONE. */
static rg_status_t rg__split(rg_proto_t *proto, rg_preq_t *r, int src, const rg__phdr_t *hdr,
                             size_t n)
{
    rg__phdr_t  h;
    rg_status_t status;
    size_t      off = (n / 2) & ~(size_t)4095;

    memset(&h, 0, sizeof(h));
    h.type = RG__PH_SPLIT;
    h.sreq = hdr->sreq;
    h.rreq = (uint64_t)(uintptr_t)r;
    h.aux  = (uint64_t)(uintptr_t)r->buf;
    h.off  = off;
    h.len  = n;
    r->state = RG__RS_RECV_SPLIT;
    proto->rndv_busy++;
    status   = rg__proto_send_eager_path(proto, src, &h, RG__PHDR, NULL, 0, NULL);
    if (status != RG_OK) {
        return status;
    }
    if (off > 0) {
        status = rg_xport_get(proto->chan[0], src, hdr->aux, r->buf, off);
        if (status != RG_OK) {
            return rg__proto_fail(proto, status, "rendezvous read", proto->chan[0]);
        }
    }
    /* The sender's buffer is ours until this FIN: its send completes on it,
     * not when its own part is written. */
    return rg__send_ctl(proto, src, RG__PH_FIN, hdr->sreq);
}

rg_status_t rg__proto_deliver(rg_proto_t *proto, rg_preq_t *r, int src,
                              const rg__phdr_t *hdr, const unsigned char *payload,
                              rg_preq_t *self_req)
{
    size_t      n = hdr->len < r->len ? (size_t)hdr->len : r->len;
    rg_status_t st = hdr->len > r->len ? RG_ERR_TRUNCATED : RG_OK;
    rg_status_t status;

    r->source  = src;
    r->msg_tag = hdr->tag;
    r->msg_len = (size_t)hdr->len;
    if (self_req != NULL) {
        if (n > 0) {
            memcpy(r->buf, self_req->buf, n);
        }
        rg__proto_complete(self_req, RG_OK);
        rg__proto_complete(r, st);
        return RG_OK;
    }
    if (hdr->type == RG__PH_EAGER) {
        if (n > 0) {
            memcpy(r->buf, payload, n);
        }
        proto->stats.eager_recv++;
        rg__proto_complete(r, st);
        return RG_OK;
    }
    proto->stats.rndv_recv++;
    if (proto->data_chan < 0) {
        /* One copy: read the payload from the sender's buffer. */
        if (n > 0 && !(n >= proto->cfg.split_min && proto->cfg.split_min > 0 &&
                       proto->chan[0]->ops->put != NULL)) {
            status = rg_xport_get(proto->chan[0], src, hdr->aux, r->buf, n);
            if (status != RG_OK) {
                return rg__proto_fail(proto, status, "rendezvous read", proto->chan[0]);
            }
        }
        proto->stats.rndv_get++;
        if (n >= proto->cfg.split_min && proto->cfg.split_min > 0 &&
            proto->chan[0]->ops->put != NULL) {
            return rg__split(proto, r, src, hdr, n);
        }
        status = rg__send_ctl(proto, src, RG__PH_FIN, hdr->sreq);
        if (status != RG_OK) {
            return status;
        }
        rg__proto_complete(r, st);
        return RG_OK;
    }
    /* Post the payload's receive, then clear the sender to send it. */
    r->state = RG__RS_RECV_DATA;
    r->chan  = proto->data_chan;
    proto->rndv_busy++;
    status   = rg__proto_sched_recv(proto, r->chan, src, r->buf, r->len, &r->xreq);
    if (status != RG_OK) {
        return status;
    }
    rg__proto_preq_append(&proto->active, r);
    return rg__send_ctl(proto, src, RG__PH_CTS, hdr->sreq);
}

/* ---- sending: control messages for our rendezvous sends ------------------------ */

rg_status_t rg__proto_cts_arrive(rg_proto_t *proto, int src, rg_preq_t *s)
{
    rg_status_t status;

    s->state = RG__RS_SEND_DATA;
    s->chan  = proto->data_chan;
    status   = rg__proto_sched_send(proto, s->chan, src, s->buf, s->len, &s->xreq);
    if (status != RG_OK) {
        return status;
    }
    rg__proto_preq_append(&proto->active, s);
    return RG_OK;
}

rg_status_t rg__proto_split_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr)
{
    rg_preq_t  *s = (rg_preq_t *)(uintptr_t)hdr->sreq;
    rg__phdr_t  h;
    rg_status_t status;

    if (hdr->off > hdr->len || hdr->len > s->len) {
        return rg__proto_fail(proto, RG_ERR_PARSE, "a SPLIT request is out of bounds", NULL);
    }
    if (hdr->len > hdr->off) {
        status = rg_xport_put(proto->chan[0], src, hdr->aux + hdr->off,
                              (const unsigned char *)s->buf + hdr->off,
                              (size_t)(hdr->len - hdr->off));
        if (status != RG_OK) {
            return rg__proto_fail(proto, status, "rendezvous write", proto->chan[0]);
        }
    }
    memset(&h, 0, sizeof(h));
    h.type = RG__PH_DONE;
    h.rreq = hdr->rreq;
    return rg__proto_send_eager_path(proto, src, &h, RG__PHDR, NULL, 0, NULL);
}

/* ---- posting sends --------------------------------------------------------- */

rg_status_t rg_proto_isend(rg_proto_t *proto, int peer, int tag, const void *buf,
                           size_t len, rg_preq_t *req)
{
    rg__phdr_t  hdr;
    rg_status_t status;

    if ((status = rg__proto_check_peer(proto, peer, 0)) != RG_OK ||
        (status = rg__proto_check_tag(proto, tag, 0)) != RG_OK) {
        return status;
    }
    if (req == NULL || (buf == NULL && len > 0)) {
        return rg_err_set(&proto->err, RG_ERR_INVALID, "send of %zu bytes: %s is NULL", len,
                          req == NULL ? "the request" : "the buffer");
    }
    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    req->next   = req->prev = NULL;
    req->rid    = 0;
    req->kind   = RG_PREQ_SEND;
    req->peer   = peer;
    req->tag    = tag;
    req->buf    = (void *)(uintptr_t)buf;
    req->len    = len;
    req->status = RG_INPROGRESS;
    req->chan   = -1;
    memset(&hdr, 0, sizeof(hdr));
    hdr.tag = tag;
    hdr.len = len;

    if (peer == proto->rank) {
        proto->stats.self_sent++;
        if (len <= proto->eager_limit) {
            /* Buffered, as a message from another rank would be. */
            hdr.type = RG__PH_EAGER;
            status   = rg__proto_arrive(proto, peer, &hdr, buf, NULL);
            if (status == RG_OK) {
                rg__proto_complete(req, RG_OK);
            }
            return status;
        }
        hdr.type   = RG__PH_RTS;
        req->state = RG__RS_SEND_SELF;
        return rg__proto_arrive(proto, peer, &hdr, NULL, req);
    }
    hdr.seq = proto->send_seq[peer]++;
    if (len <= proto->eager_limit) {
        rg__ehdr_t eh = {RG__PH_EAGER, 0, 0, tag, hdr.seq, (uint32_t)len};

        proto->stats.eager_sent++;
        if (proto->rnr) {
            req->state = RG__RS_SEND_EAGER;
            return rg__proto_send_retained(proto, peer, hdr.seq, &eh, RG__EHDR, buf, len, req);
        }
        if (len <= RG__PROTO_SMALL && proto->can_inject) {
            status = rg__proto_sched_inject(proto, 0, peer, &eh, RG__EHDR, buf, len);
            if (status == RG_OK) {
                rg__proto_complete(req, RG_OK);
                return RG_OK;
            }
            if (status == RG_ERR_UNSUPPORTED) {
                proto->can_inject = 0;
            } else if (status != RG_ERR_AGAIN) {
                return status;
            }
        }
        req->state = RG__RS_SEND_EAGER;
        return rg__proto_send_eager_path(proto, peer, &eh, RG__EHDR, buf, len, req);
    }
    hdr.type   = RG__PH_RTS;
    hdr.sreq   = (uint64_t)(uintptr_t)req;
    hdr.aux    = (uint64_t)(uintptr_t)buf;
    req->state = RG__RS_SEND_RTS;
    proto->stats.rndv_sent++;
    proto->rndv_busy++;
    if (proto->rnr) {
        return rg__proto_send_retained(proto, peer, hdr.seq, &hdr, RG__PHDR, NULL, 0, NULL);
    }
    return rg__proto_send_eager_path(proto, peer, &hdr, RG__PHDR, NULL, 0, NULL);
}
