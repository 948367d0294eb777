/*
 * railgauge: the "ofi" transport: libfabric reliable-datagram endpoints
 * (FI_EP_RDM) with tagged messages. This is the path to RDMA fabrics (verbs,
 * efa, cxi on clusters); here it runs over libfabric's tcp, shm and udp
 * providers.
 *
 * Names: "ofi:<provider>" picks the provider: "ofi:tcp" is "tcp;ofi_rxm",
 * "ofi:udp" is "udp;ofi_rxd", "ofi:verbs" is "verbs;ofi_rxm", "ofi:shm",
 * "ofi:efa" and "ofi:cxi" are themselves, and any other "ofi:<text>" hands
 * <text> to fi_getinfo as the provider name. Plain "ofi" takes the first
 * provider fi_getinfo offers (libfabric's own order; FI_PROVIDER applies).
 *
 * Setup: fi_getinfo asks for FI_EP_RDM, FI_TAGGED with FI_DIRECTED_RECV,
 * in-order sends (FI_ORDER_SAS), 4 bytes of remote CQ data and
 * FI_THREAD_DOMAIN; then fabric, domain, one CQ (tagged format), one AV and
 * one endpoint. The endpoint names (fi_getname) are exchanged over the
 * bootstrap in two allgathers, first a fixed record per rank (its setup
 * status, its name's length, pid, host, tag width, head and fragment sizes),
 * then the names padded to the longest. They go into the AV in rank order,
 * and every rank greets every other with an empty message, so that
 * connections and mappings are made during open.
 *
 * Matching uses exact tags only, and the source address: a receive for one
 * peer is directed to its address (FI_DIRECTED_RECV), a receive from any
 * peer names none, and the sender's rank travels as remote CQ data. libfabric
 * matches receives in the order they were posted and, with FI_ORDER_SAS, one
 * sender's messages in the order they were sent: that is the order xport.h
 * promises. Tag masks are avoided on purpose: shm 1.17 matches unexpected
 * messages with the wrong ignore mask.
 *
 * Truncation never reaches the provider either: libfabric 1.17 gets it wrong
 * in two of the three providers here (shm reports no length; rxm drops the
 * data of a truncated eager message and then loses the next one,
 * ofiwg/libfabric#8274). So every receive has room for what it matches:
 *   - a message shorter than HEAD bytes (RG_OFI_HEAD_SIZE) is one libfabric
 *     message of its own length;
 *   - a longer one is a train: a head of exactly HEAD bytes, whose last 16
 *     bytes are a trailer (the total length and a train number), then the
 *     rest of the data as continuation fragments of up to the fragment size
 *     (the provider's max_msg_size, or RG_OFI_FRAG_SIZE), tagged with the
 *     train number (per sender and receiver).
 * A receive of at least HEAD bytes takes the head in place; a smaller one in
 * a bounce buffer of HEAD bytes, copying what fits. A head of HEAD bytes
 * announces a train: the receive then posts receives for the continuation
 * fragments, directed to the sender with their exact tag, in place where the
 * buffer holds them (the first overwrites the trailer) and in a scratch
 * buffer, copied as far as it fits, where it does not.
 *
 * Tags: 0 for a message or a head, 2 for the greeting of open, and
 * 1 | (train number << 1) for a continuation fragment.
 *
 * Peers that die: providers report a dead peer on sends (a connection error),
 * which gives RG_ERR_PEER_DEAD. A receive from a dead peer would wait
 * forever, so while waiting a rank checks the pids of the peers on its own
 * host; a receive from a dead rank on another host waits until the launcher
 * (or mpirun) ends the job, which it does when a rank dies.
 *
 * The transport is not thread-safe: one thread drives it, as xport.h says.
 *
 * This file holds the data path and the ops table; ofi_open.c opens and
 * closes the transport; ofi_win.c holds the memory windows; ofi.h is their
 * private header.
 */
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/timer.h"
#include "base/wire.h"
#include "xport/ofi.h"
#include "xport/xreq_queue.h"

#define RG__OFI_CQ_BATCH    16
#define RG__OFI_LIVENESS_NS (50ull * 1000000ull)
#define RG__OFI_NAP_NS      (100ull * 1000ull)



/* ---- buffers and operations ----------------------------------------------- */

static void *rg__ofi_bounce_get(rg__ofi_t *ofi)
{
    void *b = ofi->bounces;

    if (b != NULL) {
        memcpy(&ofi->bounces, b, sizeof(void *));
        return b;
    }
    return malloc(ofi->head);
}

static void rg__ofi_bounce_put(rg__ofi_t *ofi, void *b)
{
    memcpy(b, &ofi->bounces, sizeof(void *));
    ofi->bounces = b;
}

rg__ofi_op_t *rg__ofi_op_get(rg__ofi_t *ofi)
{
    rg__ofi_chunk_t *chunk;
    rg__ofi_op_t    *op;
    int              i;

    if (ofi->free_ops == NULL) {
        chunk = calloc(1, sizeof(*chunk));
        if (chunk == NULL) {
            return NULL;
        }
        chunk->next = ofi->chunks;
        ofi->chunks = chunk;
        for (i = RG__OFI_OP_CHUNK - 1; i >= 0; i--) {
            chunk->ops[i].next = ofi->free_ops;
            ofi->free_ops      = &chunk->ops[i];
        }
    }
    op            = ofi->free_ops;
    ofi->free_ops = op->next;
    op->next      = NULL;
    return op;
}

void rg__ofi_op_put(rg__ofi_t *ofi, rg__ofi_op_t *op)
{
    if (op->bounce != NULL) {
        rg__ofi_bounce_put(ofi, op->bounce);
    }
    free(op->scratch);
    memset(op, 0, sizeof(*op));
    op->next      = ofi->free_ops;
    ofi->free_ops = op;
}

/* ---- requests ------------------------------------------------------------- */

static void rg__ofi_req_finish(rg__ofi_t *ofi, rg_xreq_t *req, rg_status_t status)
{
    if (req->peer == RG_XPORT_ANY_SOURCE) {
        ofi->any_waits--;
    } else {
        ofi->peers[req->peer].waits--;
    }
    req->status = status;
}


/* Unlike rg__xreq_queue_fail(), this finishes only the requests still in
 * progress, and through rg__ofi_req_finish(), which also settles their
 * libfabric operations. */
static void rg__ofi_fail_queue(rg__ofi_t *ofi, rg_xreq_t **first, rg_xreq_t **last,
                               rg_status_t status)
{
    rg_xreq_t *req;

    while (*first != NULL) {
        req = rg__xreq_queue_pop(first, last);
        if (req->status == RG_INPROGRESS) {
            rg__ofi_req_finish(ofi, req, status);
        }
    }
}

/* Ends the transport: every pending request completes with status and
 * progress returns it from now on. The message is already in super.err.
 * Operations stay posted (and their buffers allocated) until close. */
static rg_status_t rg__ofi_fail(rg__ofi_t *ofi, rg_status_t status)
{
    rg__ofi_chunk_t *chunk;
    rg_xreq_t       *req;
    int              i;

    if (ofi->failed != RG_OK) {
        return ofi->failed;
    }
    ofi->failed = status;
    rg__ofi_fail_queue(ofi, &ofi->txq, &ofi->txq_last, status);
    rg__ofi_fail_queue(ofi, &ofi->rxq, &ofi->rxq_last, status);
    rg__ofi_fail_queue(ofi, &ofi->contq, &ofi->contq_last, status);
    for (chunk = ofi->chunks; chunk != NULL; chunk = chunk->next) {
        for (i = 0; i < RG__OFI_OP_CHUNK; i++) {
            req = chunk->ops[i].req;
            if (req != NULL && req->status == RG_INPROGRESS) {
                rg__ofi_req_finish(ofi, req, status);
            }
        }
    }
    return status;
}

/* ---- liveness (peers on this host) ---------------------------------------- */

static rg_status_t rg__ofi_progress(rg_xport_t *xp);

/* Fails the transport when a peer on this host that something waits for has
 * died (see the top of the file for peers elsewhere). */
static rg_status_t rg__ofi_check_peers(rg__ofi_t *ofi)
{
    rg__ofi_peer_t *p;
    int             peer, found = 0, alive = 0, remote = 0;

    for (peer = 0; peer < ofi->super.size; peer++) {
        p = &ofi->peers[peer];
        if (peer == ofi->super.rank || !p->local || (p->waits == 0 && ofi->any_waits == 0)) {
            continue;
        }
        if (!p->dead) {
            p->dead = rg_xport_pid_dead((pid_t)p->pid);
        }
        found |= p->dead;
    }
    if (!found) {
        return RG_OK;
    }
    /* What the peer sent before it died is still delivered first. */
    if (rg__ofi_progress(&ofi->super) != RG_OK) {
        return ofi->failed;
    }
    for (peer = 0; peer < ofi->super.size; peer++) {
        p = &ofi->peers[peer];
        if (peer == ofi->super.rank) {
            continue;
        }
        if (p->dead && p->waits > 0) {
            rg_err_set(&ofi->super.err, RG_ERR_PEER_DEAD,
                       "rank %d (pid %d) died while rank %d was waiting for it (%s, "
                       "provider %s)", peer, p->pid, ofi->super.rank, ofi->name,
                       rg__ofi_prov(ofi));
            return rg__ofi_fail(ofi, RG_ERR_PEER_DEAD);
        }
        alive  += !p->dead;
        remote += !p->local;
    }
    if (ofi->any_waits > 0 && alive == 0 && remote == 0) {
        char others[96];

        rg_err_set(&ofi->super.err, RG_ERR_PEER_DEAD,
                   "every other rank died (%s) while rank %d waited to receive from any "
                   "of them (%s)",
                   rg_err_others(others, sizeof(others), ofi->super.size, ofi->super.rank),
                   ofi->super.rank, ofi->name);
        return rg__ofi_fail(ofi, RG_ERR_PEER_DEAD);
    }
    return RG_OK;
}

/* ---- errors from libfabric ------------------------------------------------ */

static int rg__ofi_errno_means_dead(int errnum)
{
    switch (errnum) {
    case FI_ECONNRESET:
    case FI_ECONNREFUSED:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ETIMEDOUT:
    case FI_ESHUTDOWN:
        return 1;
    default:
        return 0;
    }
}

/* A failed post or completion involving peer (-1: unknown) ends the
 * transport; errnum is a positive FI_E* code. */
rg_status_t rg__ofi_op_error(rg__ofi_t *ofi, int peer, int errnum, const char *doing,
                             const char *detail)
{
    rg__ofi_peer_t *p   = peer >= 0 ? &ofi->peers[peer] : NULL;
    const char     *sep = ": ";

    /* The provider's own text, where it says more than fi_strerror. */
    if (detail[0] == '\0' || strcmp(detail, fi_strerror(errnum)) == 0) {
        sep = detail = "";
    }

    if (p != NULL && (rg__ofi_errno_means_dead(errnum) ||
                      (p->local && rg_xport_pid_dead((pid_t)p->pid)))) {
        rg_err_set(&ofi->super.err, RG_ERR_PEER_DEAD,
                   "rank %d (pid %d) is gone: %s it failed on rank %d (%s, provider %s): "
                   "%s%s%s", peer, p->pid, doing, ofi->super.rank, ofi->name,
                   rg__ofi_prov(ofi), fi_strerror(errnum), sep, detail);
        return rg__ofi_fail(ofi, RG_ERR_PEER_DEAD);
    }
    if (p != NULL) {
        rg_err_set(&ofi->super.err, RG_ERR_IO,
                   "%s rank %d failed on rank %d (%s, provider %s): %s%s%s", doing, peer,
                   ofi->super.rank, ofi->name, rg__ofi_prov(ofi), fi_strerror(errnum), sep,
                   detail);
    } else {
        rg_err_set(&ofi->super.err, RG_ERR_IO, "%s failed on rank %d (%s, provider %s): %s%s%s",
                   doing, ofi->super.rank, ofi->name, rg__ofi_prov(ofi),
                   fi_strerror(errnum), sep, detail);
    }
    return rg__ofi_fail(ofi, RG_ERR_IO);
}

/* ---- fragments ------------------------------------------------------------ */

/* Data bytes a head carries (its last RG__OFI_TRAILER bytes are the trailer). */
static size_t rg__ofi_head_data(const rg__ofi_t *ofi)
{
    return ofi->head - RG__OFI_TRAILER;
}

/* The libfabric messages a transport message of len bytes takes. */
static uint64_t rg__ofi_nfrag(const rg__ofi_t *ofi, size_t len)
{
    if (len < ofi->head) {
        return 1;
    }
    return 2 + (len - rg__ofi_head_data(ofi) - 1) / ofi->frag;
}

/* Where continuation fragment i (1 and up) lies in the message, and its length. */
static size_t rg__ofi_cont_off(const rg__ofi_t *ofi, uint64_t i)
{
    return rg__ofi_head_data(ofi) + (size_t)(i - 1) * ofi->frag;
}

static size_t rg__ofi_cont_len(const rg__ofi_t *ofi, size_t len, uint64_t i)
{
    size_t rest = len - rg__ofi_cont_off(ofi, i);

    return rest < ofi->frag ? rest : ofi->frag;
}

static uint64_t rg__ofi_cont_tag(const rg__ofi_t *ofi, uint64_t train)
{
    return RG__OFI_TAG_CONT | ((train & ofi->train_mask) << 1);
}

static void rg__ofi_trailer_put(unsigned char *b, uint64_t len, uint64_t train)
{
    len   = htole64(len);
    train = htole64(train);
    memcpy(b, &len, 8);
    memcpy(b + 8, &train, 8);
}

static void rg__ofi_trailer_get(const unsigned char *b, uint64_t *len_p, uint64_t *train_p)
{
    uint64_t len, train;

    memcpy(&len, b, 8);
    memcpy(&train, b + 8, 8);
    *len_p   = le64toh(len);
    *train_p = le64toh(train);
}

/* ---- sending -------------------------------------------------------------- */

/* Posts one fragment of a send: the message itself, a head (staged with its
 * trailer in a bounce buffer) or a continuation. Returns the libfabric code. */
static ssize_t rg__ofi_send_frag(rg__ofi_t *ofi, rg_xreq_t *req, uint64_t i, int *injected)
{
    rg__ofi_op_t *op;
    fi_addr_t     dest = ofi->peers[req->peer].addr;
    uint64_t      data = (uint64_t)ofi->super.rank;
    size_t        off, len;
    ssize_t       rc;

    *injected = 0;
    if (RG__OFI_NFRAG(req) == 1 && ofi->inject && req->len <= ofi->inject_size) {
        rc = fi_tinjectdata(ofi->ep, req->buf, req->len, data, dest, RG__OFI_TAG_MSG);
        *injected = rc == 0;
        return rc;
    }
    op = rg__ofi_op_get(ofi);
    if (op == NULL) {
        return -FI_ENOMEM;
    }
    op->req   = req;
    op->index = i;
    if (RG__OFI_NFRAG(req) == 1) {
        op->len = req->len;
        rc = fi_tsenddata(ofi->ep, req->buf, req->len, NULL, data, dest, RG__OFI_TAG_MSG,
                          &op->ctx);
    } else if (i == 0) {
        op->bounce = rg__ofi_bounce_get(ofi);
        if (op->bounce == NULL) {
            rg__ofi_op_put(ofi, op);
            return -FI_ENOMEM;
        }
        op->len = ofi->head;
        memcpy(op->bounce, req->buf, rg__ofi_head_data(ofi));
        rg__ofi_trailer_put((unsigned char *)op->bounce + rg__ofi_head_data(ofi), req->len,
                            RG__OFI_TRAIN(req));
        rc = fi_tsenddata(ofi->ep, op->bounce, ofi->head, NULL, data, dest, RG__OFI_TAG_MSG,
                          &op->ctx);
    } else {
        off     = rg__ofi_cont_off(ofi, i);
        len     = rg__ofi_cont_len(ofi, req->len, i);
        op->len = len;
        rc = fi_tsend(ofi->ep, (char *)req->buf + off, len, NULL, dest,
                      rg__ofi_cont_tag(ofi, RG__OFI_TRAIN(req)), &op->ctx);
    }
    if (rc != 0) {
        rg__ofi_op_put(ofi, op);
    }
    return rc;
}

/* Posts the send's fragments in order until all are out (RG_OK; the request
 * may be complete already), the provider pushes back (RG_ERR_AGAIN) or an
 * error ends the transport. */
static rg_status_t rg__ofi_send_push(rg__ofi_t *ofi, rg_xreq_t *req)
{
    ssize_t rc;
    int     injected;

    while (RG__OFI_NEXT(req) < RG__OFI_NFRAG(req)) {
        rc = rg__ofi_send_frag(ofi, req, RG__OFI_NEXT(req), &injected);
        if (rc == -FI_EAGAIN) {
            return RG_ERR_AGAIN;
        }
        if (rc == -FI_ENOMEM) {
            rg_err_set(&ofi->super.err, RG_ERR_NOMEM,
                       "cannot allocate an ofi operation for a send to rank %d", req->peer);
            return rg__ofi_fail(ofi, RG_ERR_NOMEM);
        }
        if (rc != 0) {
            return rg__ofi_op_error(ofi, req->peer, (int)-rc, "sending (fi_tsend) to", "");
        }
        RG__OFI_NEXT(req)++;
        if (injected) {
            req->done = req->len;
        } else {
            RG__OFI_INFLIGHT(req)++;
        }
    }
    if (RG__OFI_INFLIGHT(req) == 0) {
        rg__ofi_req_finish(ofi, req, RG_OK);
    }
    return RG_OK;
}

/* ---- receiving ------------------------------------------------------------ */

/* Posts the receive for the message or head (RG__OFI_NEXT == 0), or the
 * continuation fragments, as rg__ofi_send_push. The room posted is always
 * what the fragment may need, so that the provider never truncates. */
static rg_status_t rg__ofi_recv_push(rg__ofi_t *ofi, rg_xreq_t *req)
{
    rg__ofi_op_t *op;
    fi_addr_t     src;
    uint64_t      i, tag;
    size_t        off, len;
    ssize_t       rc;
    void         *buf;

    while ((i = RG__OFI_NEXT(req)) < RG__OFI_NFRAG(req)) {
        op = rg__ofi_op_get(ofi);
        if (op == NULL) {
            goto nomem;
        }
        op->req   = req;
        op->index = i;
        if (i == 0) {
            /* The length is not known yet: a message or a head, at most
             * head bytes, or the buffer's room where it is larger. */
            src = req->peer == RG_XPORT_ANY_SOURCE ? FI_ADDR_UNSPEC
                                                   : ofi->peers[req->peer].addr;
            tag = RG__OFI_TAG_MSG;
            buf = req->buf;
            len = req->len;
            if (len < ofi->head) {
                buf = op->bounce = rg__ofi_bounce_get(ofi);
                len = ofi->head;
            }
        } else {
            src = ofi->peers[req->source].addr;
            tag = rg__ofi_cont_tag(ofi, RG__OFI_TRAIN(req));
            off = rg__ofi_cont_off(ofi, i);
            len = rg__ofi_cont_len(ofi, req->msg_len, i);
            buf = (char *)req->buf + off;
            if (off + len > req->len) {
                buf = op->scratch = malloc(len);
            }
        }
        if (buf == NULL && len > 0) {
            rg__ofi_op_put(ofi, op);
            goto nomem;
        }
        op->len = len;
        rc = fi_trecv(ofi->ep, buf, len, NULL, src, tag, 0, &op->ctx);
        if (rc != 0) {
            rg__ofi_op_put(ofi, op);
            if (rc == -FI_EAGAIN) {
                return RG_ERR_AGAIN;
            }
            return rg__ofi_op_error(ofi, i > 0 ? req->source : req->peer, (int)-rc,
                                    "posting a receive (fi_trecv) from", "");
        }
        RG__OFI_NEXT(req)++;
        RG__OFI_INFLIGHT(req)++;
    }
    return RG_OK;

nomem:
    rg_err_set(&ofi->super.err, RG_ERR_NOMEM,
               "cannot allocate an ofi operation or buffer for a receive of %zu bytes",
               req->len);
    return rg__ofi_fail(ofi, RG_ERR_NOMEM);
}

/* A receive completed with len bytes; data is the remote CQ data where
 * has_data says it came. The message or head tells the sender and length. */
static void rg__ofi_recv_done(rg__ofi_t *ofi, rg__ofi_op_t *op, size_t len, int has_data,
                              uint64_t data)
{
    rg_xreq_t     *req = op->req;
    unsigned char *got = op->bounce != NULL ? op->bounce : op->scratch;
    uint64_t       total, train;
    size_t         off = 0;

    if (op->index == 0) {
        req->source = has_data ? (int)data : req->peer;
        if (len < ofi->head) {
            req->msg_len       = len;
            RG__OFI_NFRAG(req) = 1;
        } else {
            /* A head: the trailer says how long the train is. */
            rg__ofi_trailer_get((got != NULL ? got : (unsigned char *)req->buf) +
                                    rg__ofi_head_data(ofi), &total, &train);
            len                = rg__ofi_head_data(ofi);
            req->msg_len       = (size_t)total;
            RG__OFI_TRAIN(req) = train;
            RG__OFI_NFRAG(req) = rg__ofi_nfrag(ofi, req->msg_len);
            rg__xreq_queue_push(&ofi->contq, &ofi->contq_last, req);
        }
    } else {
        off = rg__ofi_cont_off(ofi, op->index);
    }
    /* What came into a bounce or scratch buffer is copied as far as it fits. */
    if (got != NULL && off < req->len) {
        memcpy((char *)req->buf + off, got, len < req->len - off ? len : req->len - off);
    }
    RG__OFI_INFLIGHT(req)--;
    if (RG__OFI_INFLIGHT(req) == 0 && RG__OFI_NEXT(req) == RG__OFI_NFRAG(req)) {
        req->done = req->msg_len < req->len ? req->msg_len : req->len;
        rg__ofi_req_finish(ofi, req, req->msg_len > req->len ? RG_ERR_TRUNCATED : RG_OK);
    }
}

/* ---- completions ---------------------------------------------------------- */

static void rg__ofi_complete(rg__ofi_t *ofi, const struct fi_cq_tagged_entry *e)
{
    rg__ofi_op_t *op  = e->op_context;
    rg_xreq_t    *req = op->req;

    if (op->greet) {
        ofi->greet_left--;
    } else if (req->kind == RG_XREQ_SEND) {
        req->done += op->index == 0 && op->bounce != NULL ? rg__ofi_head_data(ofi) : op->len;
        RG__OFI_INFLIGHT(req)--;
        if (RG__OFI_INFLIGHT(req) == 0 && RG__OFI_NEXT(req) == RG__OFI_NFRAG(req)) {
            rg__ofi_req_finish(ofi, req, RG_OK);
        }
    } else {
        rg__ofi_recv_done(ofi, op, e->len, (e->flags & FI_REMOTE_CQ_DATA) != 0, e->data);
    }
    rg__ofi_op_put(ofi, op);
}

/* Reads the error entry behind -FI_EAVAIL; every error ends the transport. */
static rg_status_t rg__ofi_cq_error(rg__ofi_t *ofi)
{
    struct fi_cq_err_entry ee;
    rg__ofi_op_t          *op;
    rg_xreq_t             *req;
    char                   detail[256];
    const char            *text, *doing;
    ssize_t                rc;
    rg_status_t            status;
    int                    peer = -1;

    memset(&ee, 0, sizeof(ee));
    rc = fi_cq_readerr(ofi->cq, &ee, 0);
    if (rc == -FI_EAGAIN) {
        return RG_OK;
    }
    if (rc < 0) {
        return rg__ofi_op_error(ofi, -1, (int)-rc, "fi_cq_readerr", "");
    }
    /* shm 1.17 reports some errors negated. */
    if (ee.err < 0) {
        ee.err = -ee.err;
    }
    op  = ee.op_context;
    req = op != NULL ? op->req : NULL;
    detail[0] = '\0';
    text = fi_cq_strerror(ofi->cq, ee.prov_errno, ee.err_data, detail, sizeof(detail));
    if (text != NULL && text != detail) {
        snprintf(detail, sizeof(detail), "%s", text);
    }
    if (op != NULL && op->greet) {
        doing = "a greeting of open";
    } else if (req == NULL) {
        doing = "an operation";
    } else if (req->kind == RG_XREQ_SEND) {
        doing = "a send to";
        peer  = req->peer;
    } else {
        doing = "a receive from";
        peer  = op->index > 0 ? req->source : req->peer;
    }
    /* The tcp provider's prov_errno is the socket's errno: a connection
     * error there means the peer is gone, whatever err says (often
     * FI_ECANCELED). */
    if (peer >= 0 && rg__ofi_errno_means_dead(ee.prov_errno)) {
        ee.err = ee.prov_errno;
    }
    /* Failing the transport completes the request of this operation too, so
     * the operation is given back only after. */
    status = rg__ofi_op_error(ofi, peer, ee.err != 0 ? ee.err : FI_EOTHER, doing, detail);
    if (op != NULL) {
        rg__ofi_op_put(ofi, op);
    }
    return status;
}

static rg_status_t rg__ofi_cq_handle(rg__ofi_t *ofi, const struct fi_cq_tagged_entry *e,
                                     ssize_t n)
{
    ssize_t i;

    if (n > 0) {
        for (i = 0; i < n; i++) {
            rg__ofi_complete(ofi, &e[i]);
        }
        return RG_OK;
    }
    if (n == -FI_EAGAIN || n == 0) {
        return RG_OK;
    }
    if (n == -FI_EAVAIL) {
        return rg__ofi_cq_error(ofi);
    }
    return rg__ofi_op_error(ofi, -1, (int)-n, "reading the completion queue", "");
}

/* Drains the CQ; every read also drives providers with manual progress. */
rg_status_t rg__ofi_cq_poll(rg__ofi_t *ofi)
{
    struct fi_cq_tagged_entry e[RG__OFI_CQ_BATCH];
    rg_status_t               status;
    ssize_t                   n;

    for (;;) {
        n      = fi_cq_read(ofi->cq, e, RG__OFI_CQ_BATCH);
        status = rg__ofi_cq_handle(ofi, e, n);
        if (status != RG_OK || n < RG__OFI_CQ_BATCH) {
            return status;
        }
    }
}

/* Posts what the provider pushed back earlier, each queue in order:
 * continuation receives first, since their fragments may stand in the way of
 * everything else a peer sends. */
static rg_status_t rg__ofi_queues_push(rg__ofi_t *ofi)
{
    rg_status_t status;

    while (ofi->contq != NULL) {
        status = rg__ofi_recv_push(ofi, ofi->contq);
        if (status == RG_ERR_AGAIN) {
            break;
        }
        if (status != RG_OK) {
            return status;
        }
        rg__xreq_queue_pop(&ofi->contq, &ofi->contq_last);
    }
    while (ofi->rxq != NULL) {
        status = rg__ofi_recv_push(ofi, ofi->rxq);
        if (status == RG_ERR_AGAIN) {
            break;
        }
        if (status != RG_OK) {
            return status;
        }
        rg__xreq_queue_pop(&ofi->rxq, &ofi->rxq_last);
    }
    while (ofi->txq != NULL) {
        status = rg__ofi_send_push(ofi, ofi->txq);
        if (status == RG_ERR_AGAIN) {
            break;
        }
        if (status != RG_OK) {
            return status;
        }
        rg__xreq_queue_pop(&ofi->txq, &ofi->txq_last);
    }
    return RG_OK;
}

static rg_status_t rg__ofi_progress(rg_xport_t *xp)
{
    rg__ofi_t  *ofi = rg__ofi(xp);
    rg_status_t status;

    if (ofi->failed != RG_OK) {
        return ofi->failed;
    }
    status = rg__ofi_cq_poll(ofi);
    if (status == RG_OK && (ofi->contq != NULL || ofi->rxq != NULL || ofi->txq != NULL)) {
        status = rg__ofi_queues_push(ofi);
    }
    return status;
}

/* ---- posting -------------------------------------------------------------- */

/* Starts a request: posts it unless older ones wait in its queue, and on
 * push-back drains the CQ once and tries again before queueing it. */
static rg_status_t rg__ofi_start(rg__ofi_t *ofi, rg_xreq_t *req, rg_xreq_t **first,
                                 rg_xreq_t **last,
                                 rg_status_t (*push)(rg__ofi_t *, rg_xreq_t *))
{
    rg_status_t status;

    rg__ofi_wait_add(ofi, req);
    if (*first != NULL) {
        rg__xreq_queue_push(first, last, req);
        return RG_OK;
    }
    status = push(ofi, req);
    if (status == RG_ERR_AGAIN) {
        status = rg__ofi_cq_poll(ofi);
        if (status == RG_OK) {
            status = push(ofi, req);
        }
        if (status == RG_ERR_AGAIN) {
            rg__xreq_queue_push(first, last, req);
            return RG_OK;
        }
    }
    if (status != RG_OK && req->status == RG_INPROGRESS) {
        rg__ofi_req_finish(ofi, req, status);
    }
    return status;
}

static rg_status_t rg__ofi_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__ofi_t *ofi = rg__ofi(xp);

    if (ofi->failed != RG_OK) {
        req->status = ofi->failed;
        return ofi->failed;
    }
    RG__OFI_NFRAG(req) = rg__ofi_nfrag(ofi, req->len);
    if (RG__OFI_NFRAG(req) > 1) {
        RG__OFI_TRAIN(req) = ofi->peers[req->peer].train++;
    }
    return rg__ofi_start(ofi, req, &ofi->txq, &ofi->txq_last, rg__ofi_send_push);
}

static rg_status_t rg__ofi_irecv(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__ofi_t *ofi = rg__ofi(xp);

    if (ofi->failed != RG_OK) {
        req->status = ofi->failed;
        return ofi->failed;
    }
    RG__OFI_NFRAG(req) = 1;
    return rg__ofi_start(ofi, req, &ofi->rxq, &ofi->rxq_last, rg__ofi_recv_push);
}

/* Ends the requests reqs[from..n) of a list that were never posted. */
static void rg__ofi_list_fail(rg_xreq_t *reqs, size_t from, size_t n, rg_status_t status)
{
    size_t i;

    for (i = from; i < n; i++) {
        reqs[i].status = status;
    }
}

/* One message of a list: fi_tsendmsg with FI_MORE on all but the last, and
 * FI_INJECT where isend would inject it (the buffer is free at return; the
 * request still completes on its CQ entry). Returns the libfabric code. */
static ssize_t rg__ofi_send_more(rg__ofi_t *ofi, rg_xreq_t *req, int more)
{
    struct fi_msg_tagged msg;
    struct iovec         iov;
    rg__ofi_op_t        *op;
    uint64_t             flags = FI_REMOTE_CQ_DATA | FI_COMPLETION;
    ssize_t              rc;

    op = rg__ofi_op_get(ofi);
    if (op == NULL) {
        return -FI_ENOMEM;
    }
    op->req   = req;
    op->index = 0;
    op->len   = req->len;
    iov.iov_base = req->buf;
    iov.iov_len  = req->len;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov   = &iov;
    msg.iov_count = 1;
    msg.addr      = ofi->peers[req->peer].addr;
    msg.tag       = RG__OFI_TAG_MSG;
    msg.context   = &op->ctx;
    msg.data      = (uint64_t)ofi->super.rank;
    if (more) {
        flags |= FI_MORE;
    }
    if (ofi->inject && req->len <= ofi->inject_size) {
        flags |= FI_INJECT;
    }
    rc = fi_tsendmsg(ofi->ep, &msg, flags);
    if (rc != 0) {
        rg__ofi_op_put(ofi, op);
    }
    return rc;
}

/* A list post (ops->isend_list): the messages that are one libfabric
 * message each go out as one FI_MORE chain, which lets the provider defer
 * the work (a doorbell, a socket write) until the last post; trains and
 * sends behind queued ones take the isend path, and a push-back queues the
 * rest in order for progress, whose next post ends the chain. */
static rg_status_t rg__ofi_isend_list(rg_xport_t *xp, rg_xreq_t *reqs, size_t n)
{
    rg__ofi_t  *ofi = rg__ofi(xp);
    rg_xreq_t  *req;
    rg_status_t status;
    ssize_t     rc;
    size_t      i;

    for (i = 0; i < n; i++) {
        req = &reqs[i];
        if (ofi->failed != RG_OK) {
            rg__ofi_list_fail(reqs, i, n, ofi->failed);
            return ofi->failed;
        }
        RG__OFI_NFRAG(req) = rg__ofi_nfrag(ofi, req->len);
        if (RG__OFI_NFRAG(req) > 1) {
            RG__OFI_TRAIN(req) = ofi->peers[req->peer].train++;
        }
        if (RG__OFI_NFRAG(req) > 1 || ofi->txq != NULL) {
            status = rg__ofi_start(ofi, req, &ofi->txq, &ofi->txq_last, rg__ofi_send_push);
            if (status != RG_OK) {
                rg__ofi_list_fail(reqs, i + 1, n, status);
                return status;
            }
            continue;
        }
        rg__ofi_wait_add(ofi, req);
        rc = rg__ofi_send_more(ofi, req, i + 1 < n);
        if (rc == -FI_EAGAIN) {
            rg__xreq_queue_push(&ofi->txq, &ofi->txq_last, req);
            continue;
        }
        if (rc == -FI_ENOMEM) {
            rg_err_set(&ofi->super.err, RG_ERR_NOMEM,
                       "cannot allocate an ofi operation for a send to rank %d", req->peer);
            status = rg__ofi_fail(ofi, RG_ERR_NOMEM);
        } else if (rc != 0) {
            status = rg__ofi_op_error(ofi, req->peer, (int)-rc, "sending (fi_tsendmsg) to",
                                      "");
        } else {
            RG__OFI_NEXT(req)     = 1;
            RG__OFI_INFLIGHT(req) = 1;
            continue;
        }
        if (req->status == RG_INPROGRESS) {
            rg__ofi_req_finish(ofi, req, status);
        }
        rg__ofi_list_fail(reqs, i + 1, n, status);
        return status;
    }
    return RG_OK;
}

/* ---- inline sends (ops->inject) ------------------------------------------- */

/* hdr and buf as one message with fi_tinjectdata, complete at return, where
 * injects are on (attr.why_not says why not) and the message fits; header
 * and payload are staged in one buffer of inject_size bytes. */
static rg_status_t rg__ofi_inject(rg_xport_t *xp, int peer, const void *hdr, size_t hlen,
                                  const void *buf, size_t len)
{
    rg__ofi_t  *ofi = rg__ofi(xp);
    size_t      n   = hlen + len;
    const void *msg = hdr;
    rg_status_t status;
    ssize_t     rc;
    int         tries;

    if (ofi->failed != RG_OK) {
        return ofi->failed;
    }
    if (!ofi->inject || ofi->inject_buf == NULL) {
        return RG_ERR_UNSUPPORTED;
    }
    if (ofi->txq != NULL || n > ofi->super.attr.inject_size) {
        return RG_ERR_AGAIN;  /* a queued send goes first; a large one never fits */
    }
    if (hlen == 0) {
        msg = buf;
    } else if (len > 0) {
        memcpy(ofi->inject_buf, hdr, hlen);
        memcpy(ofi->inject_buf + hlen, buf, len);
        msg = ofi->inject_buf;
    }
    for (tries = 0;; tries++) {
        rc = fi_tinjectdata(ofi->ep, msg, n, (uint64_t)ofi->super.rank, ofi->peers[peer].addr,
                            RG__OFI_TAG_MSG);
        if (rc != -FI_EAGAIN || tries == 1) {
            break;
        }
        status = rg__ofi_cq_poll(ofi);
        if (status != RG_OK) {
            return status;
        }
    }
    if (rc == -FI_EAGAIN) {
        return RG_ERR_AGAIN;
    }
    if (rc != 0) {
        return rg__ofi_op_error(ofi, peer, (int)-rc, "sending (fi_tinjectdata) to", "");
    }
    return RG_OK;
}

/* ---- blocking ------------------------------------------------------------- */

static rg_status_t rg__ofi_block(rg_xport_t *xp, uint64_t timeout_ns)
{
    rg__ofi_t                *ofi = rg__ofi(xp);
    struct fi_cq_tagged_entry e[RG__OFI_CQ_BATCH];
    struct timespec           ts;
    uint64_t                  now, ms, nap;
    ssize_t                   n;
    rg_status_t               status;

    if (ofi->failed != RG_OK) {
        return ofi->failed;
    }
    now = rg_time_mono_ns();
    if (now - ofi->live_check_ns >= RG__OFI_LIVENESS_NS) {
        ofi->live_check_ns = now;
        status = rg__ofi_check_peers(ofi);
        if (status != RG_OK) {
            return status;
        }
    }
    /* Posts the provider pushed back are retried by progress, not by a
     * completion that may never come: no sleep then. */
    if (ofi->contq != NULL || ofi->rxq != NULL || ofi->txq != NULL) {
        return RG_OK;
    }
    if (timeout_ns > RG__OFI_LIVENESS_NS) {
        timeout_ns = RG__OFI_LIVENESS_NS;
    }
    if (ofi->cq_wait) {
        ms = (timeout_ns + 999999ull) / 1000000ull;
        n  = fi_cq_sread(ofi->cq, e, RG__OFI_CQ_BATCH, NULL, (int)ms);
        if (n == -FI_ETIMEDOUT) {
            return RG_OK;
        }
        return rg__ofi_cq_handle(ofi, e, n);
    }
    nap        = timeout_ns < RG__OFI_NAP_NS ? timeout_ns : RG__OFI_NAP_NS;
    ts.tv_sec  = 0;
    ts.tv_nsec = (long)nap;
    nanosleep(&ts, NULL);
    return RG_OK;
}

/* ---- information ---------------------------------------------------------- */

static rg_status_t rg__ofi_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    rg__ofi_t      *ofi  = rg__ofi(xp);
    struct fi_info *info = ofi->info;
    rg_json_t       js;
    char            text[32];
    uint32_t        v;

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "provider", info->fabric_attr->prov_name);
    v = info->fabric_attr->prov_version;
    snprintf(text, sizeof(text), "%u.%u", (unsigned)FI_MAJOR(v), (unsigned)FI_MINOR(v));
    rg_json_kv_string(&js, "provider_version", text);
    rg_json_kv_string(&js, "fabric", info->fabric_attr->name != NULL
                                         ? info->fabric_attr->name : "");
    rg_json_kv_string(&js, "domain", info->domain_attr->name != NULL
                                         ? info->domain_attr->name : "");
    rg_json_kv_string(&js, "source", ofi->source != NULL ? ofi->source : "");
    v = fi_version();
    snprintf(text, sizeof(text), "%u.%u", (unsigned)FI_MAJOR(v), (unsigned)FI_MINOR(v));
    rg_json_kv_string(&js, "libfabric", text);
    rg_json_kv_uint(&js, "inject_size", info->tx_attr->inject_size);
    rg_json_kv_bool(&js, "inject", ofi->inject);
    rg_json_kv_bool(&js, "send_safe", ofi->send_safe);
    rg_json_kv_uint(&js, "max_msg_size", info->ep_attr->max_msg_size);
    rg_json_kv_uint(&js, "head_size", ofi->head);
    rg_json_kv_uint(&js, "frag_size", ofi->frag);
    rg_json_kv_bool(&js, "cq_wait", ofi->cq_wait);
    rg_json_kv_string(&js, "progress",
                      info->domain_attr->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual");
    rg_json_object_end(&js);
    return js.status;
}

const rg_xport_ops_t rg_xport_ofi_ops = {
    .name        = "ofi",
    .description = "libfabric RDM endpoints, tagged messages (ofi:tcp, ofi:shm, ofi:udp, "
                   "ofi:verbs, ofi:efa, ofi:cxi or ofi:<provider>)",
    .variants    = 1,
    .open        = rg__ofi_open,
    .close       = rg__ofi_close,
    .isend       = rg__ofi_isend,
    .irecv       = rg__ofi_irecv,
    .progress    = rg__ofi_progress,
    .block       = rg__ofi_block,
    .info_json   = rg__ofi_info_json,
    .get         = rg_xport_no_get,
    .inject      = rg__ofi_inject,
    .isend_list  = rg__ofi_isend_list,
    .win_create  = rg__ofi_win_create,
    .win_write   = rg__ofi_win_write,
    .win_free    = rg__ofi_win_free,
};
