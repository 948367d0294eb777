/*
 * railgauge: arrivals on the eager path, and matching on (source, tag) with
 * wildcards. Receives wait in the posted queue in posting order; arrivals that find no receive wait in the
 * unexpected queue in arrival order; EAGER and RTS that arrive ahead of
 * their turn (their sender's sequence number) wait in the parked queue, so
 * that messages of one sender match in the order they were sent.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_int.h"

static int rg__matches(const rg_preq_t *r, int src, int tag)
{
    return (r->peer == RG_PROTO_ANY_SOURCE || r->peer == src) &&
           (r->tag == RG_PROTO_ANY_TAG || r->tag == tag);
}

/* A copy of an arrival (plen bytes of payload) at the tail of list, counted
 * in mem.unexpected; NULL: no memory. */
static rg__uxm_t *rg__uxm_hold(rg_proto_t *proto, rg__uxm_list_t *list, int src,
                               const rg__phdr_t *hdr, const unsigned char *payload,
                               size_t plen, rg_preq_t *self_req)
{
    rg__uxm_t *u = malloc(sizeof(*u) + plen);

    if (u == NULL) {
        return NULL;
    }
    u->src      = src;
    u->hdr      = *hdr;
    u->self_req = self_req;
    u->bytes    = sizeof(*u) + plen;
    if (plen > 0) {
        memcpy(u->payload, payload, plen);
    }
    rg__proto_mem_add(proto, &proto->stats.mem.unexpected, u->bytes);
    rg__proto_uxm_append(list, u);
    return u;
}

/* Frees a held arrival, already unlinked from its list. */
static void rg__uxm_release(rg_proto_t *proto, rg__uxm_t *u)
{
    rg__proto_mem_sub(proto, &proto->stats.mem.unexpected, u->bytes);
    free(u);
}

rg_status_t rg__proto_arrive(rg_proto_t *proto, int src, const rg__phdr_t *hdr,
                             const unsigned char *payload, rg_preq_t *self_req)
{
    rg_preq_t *r;
    size_t     plen = hdr->type == RG__PH_EAGER ? (size_t)hdr->len : 0;

    for (r = proto->posted.head; r != NULL; r = r->next) {
        if (rg__matches(r, src, hdr->tag)) {
            rg__proto_preq_unlink(&proto->posted, r);
            return rg__proto_deliver(proto, r, src, hdr, payload, self_req);
        }
    }
    if (rg__uxm_hold(proto, &proto->unexpected, src, hdr, payload, plen, self_req) == NULL) {
        return rg__proto_fail(proto, RG_ERR_NOMEM, "unexpected message", NULL);
    }
    proto->stats.unexpected++;
    return RG_OK;
}

/* An EAGER or RTS from src (plen bytes of payload): matched in its turn, or
 * parked until the earlier messages of src came. */
static rg_status_t rg__in_turn(rg_proto_t *proto, int src, const rg__phdr_t *hdr,
                             const unsigned char *payload, size_t plen)
{
    rg__uxm_t  *u;
    rg_status_t status;
    int         again;

    if (hdr->seq != proto->recv_seq[src]) {
        /* Ahead of its turn: park a copy until the earlier ones came. */
        if (rg__uxm_hold(proto, &proto->parked, src, hdr, payload, plen, NULL) == NULL) {
            return rg__proto_fail(proto, RG_ERR_NOMEM, "parked message", NULL);
        }
        proto->stats.out_of_order++;
        return RG_OK;
    }
    status = rg__proto_arrive(proto, src, hdr, payload, NULL);
    proto->recv_seq[src]++;
    rg__proto_ack_mark(proto, src);
    /* Parked successors of src may now be in turn. */
    do {
        again = 0;
        for (u = proto->parked.head; u != NULL && status == RG_OK; u = u->next) {
            if (u->src == src && u->hdr.seq == proto->recv_seq[src]) {
                rg__proto_uxm_unlink(&proto->parked, u);
                status = rg__proto_arrive(proto, src, &u->hdr, u->payload, NULL);
                proto->recv_seq[src]++;
                rg__uxm_release(proto, u);
                again = 1;
                break;
            }
        }
    } while (again && status == RG_OK);
    return status;
}

/* Each arrival on the eager path: the matched kinds (EAGER, RTS) here, the
 * rendezvous and RNR control messages to msg.c and window.c. */
rg_status_t rg__proto_handle(rg_proto_t *proto, int src, const unsigned char *data,
                             size_t len)
{
    rg__phdr_t  hdr;
    rg_preq_t  *s;
    const unsigned char *payload;
    size_t      plen;

    if (len >= RG__EHDR && data[0] == RG__PH_EAGER) {
        rg__ehdr_t eh;

        memcpy(&eh, data, RG__EHDR);
        memset(&hdr, 0, sizeof(hdr));
        hdr.type = RG__PH_EAGER;
        hdr.tag  = eh.tag;
        hdr.seq  = eh.seq;
        hdr.len  = eh.len;
        payload  = data + RG__EHDR;
        plen     = len - RG__EHDR;
    } else if (len < RG__PHDR) {
        return rg__proto_fail(proto, RG_ERR_PARSE, "a message shorter than a header arrived",
                              NULL);
    } else {
        memcpy(&hdr, data, RG__PHDR);
        payload = data + RG__PHDR;
        plen    = len - RG__PHDR;
    }
    switch (hdr.type) {
    case RG__PH_EAGER:
    case RG__PH_RTS:
        if (hdr.type == RG__PH_EAGER ? hdr.len != plen : plen != 0) {
            return rg__proto_fail(proto, RG_ERR_PARSE,
                                  "an eager message's length is inconsistent", NULL);
        }
        return rg__in_turn(proto, src, &hdr, payload, plen);
    case RG__PH_CTS:
        return rg__proto_cts_arrive(proto, src, (rg_preq_t *)(uintptr_t)hdr.sreq);
    case RG__PH_FIN:
        s = (rg_preq_t *)(uintptr_t)hdr.sreq;
        rg__proto_complete(s, RG_OK);
        proto->rndv_busy--;
        return RG_OK;
    case RG__PH_SPLIT:
        return rg__proto_split_arrive(proto, src, &hdr);
    case RG__PH_DONE:
        s = (rg_preq_t *)(uintptr_t)hdr.rreq;
        rg__proto_complete(s, s->msg_len > s->len ? RG_ERR_TRUNCATED : RG_OK);
        proto->rndv_busy--;
        return RG_OK;
    case RG__PH_RNR:
        return rg__proto_rnr_arrive(proto, src, &hdr);
    case RG__PH_ACK:
        return rg__proto_ack_arrive(proto, src, hdr.seq);
    default:
        return rg__proto_fail(proto, RG_ERR_PARSE, "a message of unknown type arrived", NULL);
    }
}

rg_status_t rg_proto_irecv(rg_proto_t *proto, int peer, int tag, void *buf, size_t cap,
                           rg_preq_t *req)
{
    rg__uxm_t  *u;
    rg_status_t status;

    if ((status = rg__proto_check_peer(proto, peer, 1)) != RG_OK ||
        (status = rg__proto_check_tag(proto, tag, 1)) != RG_OK) {
        return status;
    }
    if (req == NULL || (buf == NULL && cap > 0)) {
        return rg_err_set(&proto->err, RG_ERR_INVALID, "receive of %zu bytes: %s is NULL",
                          cap, req == NULL ? "the request" : "the buffer");
    }
    if (proto->failed != RG_OK) {
        return proto->failed;
    }
    req->next    = req->prev = NULL;
    req->rid     = 0;
    req->msg_len = 0;
    req->msg_tag = 0;
    req->kind   = RG_PREQ_RECV;
    req->peer   = peer;
    req->tag    = tag;
    req->buf    = buf;
    req->len    = cap;
    req->status = RG_INPROGRESS;
    req->source = -1;
    req->chan   = -1;
    for (u = proto->unexpected.head; u != NULL; u = u->next) {
        if (rg__matches(req, u->src, u->hdr.tag)) {
            rg__proto_uxm_unlink(&proto->unexpected, u);
            status = rg__proto_deliver(proto, req, u->src, &u->hdr, u->payload, u->self_req);
            rg__uxm_release(proto, u);
            return status;
        }
    }
    req->state = RG__RS_RECV_POSTED;
    rg__proto_preq_append(&proto->posted, req);
    return RG_OK;
}
