/*
 * railgauge: the "mpi" transport: MPI point-to-point between the ranks of
 * MPI_COMM_WORLD, so that railgauge measures an MPI library with its
 * overheads, as Netgauge does. This file is built into the MPI plugins only
 * (librailgauge-mpi-<flavour>.so, with mpicc.openmpi or mpicc.mpich); the
 * tools reach it through xport/mpi_forward.c.
 *
 * Every receive is posted to MPI at once (MPI_Irecv), so that MPI matches
 * each message to the earliest posted receive that fits its source, which is
 * the xport rule, and delivers it straight into the receive's buffer. A
 * posted MPI receive must never truncate, though: given a message longer than
 * its buffer, Open MPI 4.1 (btl vader, CMA single copy) writes the whole
 * message past the buffer's end, and MPICH 4.0 delivers no byte and no
 * length. Matching by MPI_Improbe first, which gives the length, is safe but
 * takes MPI's unexpected-message path, about 50 ns more per small message
 * here (half of a one-way time). So the transport frames messages itself, in
 * the cheapest way that keeps every MPI receive large enough:
 *
 *   - a message of up to short_max bytes (RG_MPI_SHORT_MAX) is one MPI
 *     message on the communicator `ctl`, tag 0;
 *   - a longer one is an 8-byte little-endian length on `ctl` with tag t >= 1,
 *     then the payload on the communicator `bulk` with the same tag; t counts
 *     the long messages to that peer, so a payload always finds its length.
 *
 * A receive posts MPI_Irecv(short_max bytes, any tag) on ctl, into its own
 * buffer where that has room, else into a bounce buffer of short_max bytes
 * from a pool (and copies out what fits). A length message makes it post the
 * payload's receive on bulk, into its buffer, or where the message is longer
 * than that buffer, into a scratch buffer whose head is then copied: the
 * receive ends with RG_ERR_TRUNCATED, msg_len the real length, and MPI never
 * truncates anything. Messages above INT_MAX bytes travel as one element of a
 * derived datatype (1 GiB blocks and a tail).
 *
 * Sends (MPI_Isend) are tested once right after posting, so a small message,
 * eager in both MPIs, completes at once. Progress tests the requests in
 * flight (MPI_Test for one, MPI_Testsome for more).
 *
 * List posts (ops->isend_list) start persistent sends with one MPI_Startall,
 * MPI's only call that posts several operations at once. The persistent
 * requests (MPI_Send_init of a short message: peer, buffer, length) are kept
 * in a small hash table and reused by later lists that send the same buffer
 * to the same peer again, as a program with a fixed communication pattern
 * does; a request still active, a long message, or a full probe window
 * takes MPI_Isend instead, in list order (the run of starts before it goes
 * first), so per-peer order is that of the list.
 *
 * Memory windows (ops->win_*, railgauge-bench onen's rma mode) are MPI
 * windows over the caller's memory (MPI_Win_create, a passive-target epoch
 * opened with MPI_Win_lock_all for the window's life). A write is MPI_Put
 * completed at the target by MPI_Win_flush; a write of more than 8 bytes is
 * two of them, the data and then its last 8 bytes, so that the flag a target
 * polls can never overtake the data (MPI orders nothing within one put).
 * A target sees the bytes in its own memory under the unified memory model
 * (MPI_WIN_UNIFIED, checked at creation) after MPI_Win_sync, which progress
 * calls on every window, with an MPI_Iprobe that drives the library's
 * progress for implementations that apply puts in the target's MPI calls.
 *
 * A dead peer is not looked for: MPI reports none in Open MPI, and MPICH over
 * UCX only sometimes, as an error of a request to or from it. Such an error
 * with a peer on this host whose process is gone becomes RG_ERR_PEER_DEAD
 * naming the peer. Either way the launcher (mpirun, mpiexec) ends the job when
 * a rank dies.
 *
 * This file holds the data path, the memory windows, the ops table and the
 * plugin's exported symbol; mpi_open.c opens, describes and closes the
 * transport; mpi_int.h is their private header.
 */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/boot_mpi.h"
#include "xport/mpi.h"
#include "xport/mpi_int.h"

#define RG__MPI_TAG_SHORT 0
#define RG__MPI_LEN_BYTES 8
#define RG__MPI_BLOCK     ((size_t)1 << 30)

/* A memory window (see the top of the file). */
struct rg_xwin {
    MPI_Win    win;
    MPI_Comm   poke;       /* MPI_Iprobe on it drives progress, matching nothing */
    uint64_t  *len;        /* every rank's window length */
    rg_xwin_t *next;       /* the transport's open windows */
};

/* The cache of persistent short sends of list posts: open addressing over
 * (peer, buf, len), RG__MPI_PERS_PROBE slots probed, least recently used
 * inactive slot replaced. */
#define RG__MPI_PERS_PROBE   8

/* ---- errors ------------------------------------------------------------- */

/* Ends the transport: every request not yet complete gets status, and
 * progress returns it from now on. The message is already in super.err. */
static rg_status_t rg__mpi_fail(rg__mpi_t *mpi, rg_status_t status)
{
    int i;

    mpi->failed = status;
    for (i = 0; i < mpi->nflight; i++) {
        mpi->fl_own[i]->status = status;
    }
    return status;
}

/* 1 when peer runs on this host and its process is gone or a zombie. */
static int rg__mpi_peer_dead(const rg__mpi_t *mpi, int peer)
{
    char  path[64], buf[512], *paren;
    FILE *f;
    int   dead = 0;

    if (peer < 0 || peer >= mpi->head.super.size || !mpi->same_host[peer]) {
        return 0;
    }
    if (kill((pid_t)mpi->pids[peer], 0) == -1 && errno == ESRCH) {
        return 1;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)mpi->pids[peer]);
    f = fopen(path, "r");
    if (f == NULL) {
        return errno == ENOENT;
    }
    if (fgets(buf, sizeof(buf), f) != NULL) {
        paren = strrchr(buf, ')');
        dead  = paren != NULL && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
    }
    fclose(f);
    return dead;
}

static rg_status_t rg__mpi_error(rg__mpi_t *mpi, int code, const char *what, int peer)
{
    char text[MPI_MAX_ERROR_STRING];

    rg_boot_mpi_strerror(code, text, sizeof(text));
    if (rg__mpi_peer_dead(mpi, peer)) {
        /* MPI's error is the death of a peer on this host: said as the other
         * transports say it, "rank N (pid P) died", which is also how
         * railgauge's MPI launcher tells the dead rank from those that failed
         * because of it. */
        rg_err_set(&mpi->head.super.err, RG_ERR_PEER_DEAD, "rank %d (pid %d) died while "
                   "rank %d was using it (%s failed: %s)", peer, (int)mpi->pids[peer],
                   mpi->head.super.rank, what, text);
        return rg__mpi_fail(mpi, RG_ERR_PEER_DEAD);
    }
    if (peer >= 0 && peer < mpi->head.super.size) {
        rg_err_set(&mpi->head.super.err, RG_ERR_IO, "%s with rank %d failed on rank %d: %s",
                   what, peer, mpi->head.super.rank, text);
    } else {
        rg_err_set(&mpi->head.super.err, RG_ERR_IO, "%s failed on rank %d: %s", what,
                   mpi->head.super.rank, text);
    }
    return rg__mpi_fail(mpi, RG_ERR_IO);
}

/* ---- datatypes and buffers ------------------------------------------------ */

/* The (type, count) that describes len bytes: MPI_BYTE up to INT_MAX, else
 * one element of a committed derived type that the caller frees. */
static int rg__mpi_type(size_t len, MPI_Datatype *type_p, int *count_p, int *derived_p)
{
    MPI_Datatype block, body, parts[2];
    MPI_Aint     disp[2];
    int          lens[2];
    size_t       nblocks = len / RG__MPI_BLOCK, tail = len % RG__MPI_BLOCK;
    int          rc;

    *derived_p = 0;
    if (len <= (size_t)INT_MAX) {
        *type_p  = MPI_BYTE;
        *count_p = (int)len;
        return MPI_SUCCESS;
    }
    if (nblocks > (size_t)INT_MAX) {
        return MPI_ERR_COUNT;
    }
    rc = MPI_Type_contiguous((int)RG__MPI_BLOCK, MPI_BYTE, &block);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_contiguous((int)nblocks, block, &body);
    MPI_Type_free(&block);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    parts[0] = body;
    parts[1] = MPI_BYTE;
    lens[0]  = 1;
    lens[1]  = (int)tail;
    disp[0]  = 0;
    disp[1]  = (MPI_Aint)(nblocks * RG__MPI_BLOCK);
    rc = MPI_Type_create_struct(tail > 0 ? 2 : 1, lens, disp, parts, type_p);
    MPI_Type_free(&body);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_commit(type_p);
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(type_p);
        return rc;
    }
    *count_p   = 1;
    *derived_p = 1;
    return MPI_SUCCESS;
}

static void rg__mpi_keep_type(rg_xreq_t *req, MPI_Datatype type, int derived)
{
    if (derived) {
        memcpy(&RG__MPI_DTYPE(req), &type, sizeof(type));
        RG__MPI_FLAGS(req) |= RG__MPI_F_DTYPE;
    }
}

static void *rg__mpi_bounce_get(rg__mpi_t *mpi)
{
    void *b = mpi->bounces;

    if (b != NULL) {
        memcpy(&mpi->bounces, b, sizeof(void *));
        return b;
    }
    return malloc(mpi->short_max);
}

static void rg__mpi_bounce_put(rg__mpi_t *mpi, void *b)
{
    memcpy(b, &mpi->bounces, sizeof(void *));
    mpi->bounces = b;
}

/* ---- requests in flight ---------------------------------------------------- */

/* Makes room for n more requests in flight, before anything is posted: a
 * request MPI holds can never be dropped for want of memory. */
static rg_status_t rg__mpi_reserve(rg__mpi_t *mpi, int n)
{
    int             cap = mpi->flight_cap > 0 ? mpi->flight_cap : 64;
    MPI_Request    *nreq;
    rg_xreq_t     **nown;
    int            *nidx;
    MPI_Status     *nst;
    rg__mpi_done_t *ndone;

    if (mpi->nflight + n <= mpi->flight_cap) {
        return RG_OK;
    }
    while (cap < mpi->nflight + n) {
        cap *= 2;
    }
    if ((nreq = realloc(mpi->fl_req, (size_t)cap * sizeof(*nreq))) != NULL) {
        mpi->fl_req = nreq;
    }
    if ((nown = realloc(mpi->fl_own, (size_t)cap * sizeof(*nown))) != NULL) {
        mpi->fl_own = nown;
    }
    if ((nidx = realloc(mpi->fl_idx, (size_t)cap * sizeof(*nidx))) != NULL) {
        mpi->fl_idx = nidx;
    }
    if ((nst = realloc(mpi->fl_st, (size_t)cap * sizeof(*nst))) != NULL) {
        mpi->fl_st = nst;
    }
    if ((ndone = realloc(mpi->fl_done, (size_t)cap * sizeof(*ndone))) != NULL) {
        mpi->fl_done = ndone;
    }
    if (nreq == NULL || nown == NULL || nidx == NULL || nst == NULL || ndone == NULL) {
        return rg_err_set(&mpi->head.super.err, RG_ERR_NOMEM,
                          "cannot grow the list of MPI requests to %d", cap);
    }
    mpi->flight_cap = cap;
    return RG_OK;
}

static void rg__mpi_flight_push(rg__mpi_t *mpi, rg_xreq_t *req, MPI_Request r)
{
    mpi->fl_req[mpi->nflight] = r;
    mpi->fl_own[mpi->nflight] = req;
    mpi->nflight++;
}

/* ---- completion ------------------------------------------------------------ */

static rg_status_t rg__mpi_send_done(rg__mpi_t *mpi, rg_xreq_t *req, int code)
{
    if (code != MPI_SUCCESS) {
        return rg__mpi_error(mpi, code, "MPI_Isend", req->peer);
    }
    mpi->completions++;
    if (--RG__MPI_PENDING(req) == 0) {
        if (RG__MPI_FLAGS(req) & RG__MPI_F_PERS) {
            mpi->pers[RG__MPI_DTYPE(req)].active = 0;
            RG__MPI_FLAGS(req) &= ~(uint64_t)RG__MPI_F_PERS;
        }
        rg__mpi_free_type(req);
        req->done   = req->len;
        req->status = RG_OK;
    }
    return RG_OK;
}

/* A long message's length arrived (in buf): post the payload's receive. */
static rg_status_t rg__mpi_recv_payload(rg__mpi_t *mpi, rg_xreq_t *req, const void *buf,
                                        const MPI_Status *st)
{
    MPI_Datatype type;
    MPI_Request  r;
    uint64_t     len;
    void        *target = req->buf, *scratch;
    int          count, derived, rc;

    memcpy(&len, buf, sizeof(len));
    req->msg_len = (size_t)le64toh(len);
    if (req->msg_len > req->len) {
        /* Received whole and its head copied out: MPI must not truncate. */
        scratch = malloc(req->msg_len);
        if (scratch == NULL) {
            rg_err_set(&mpi->head.super.err, RG_ERR_NOMEM,
                       "cannot allocate %zu bytes to receive a message from rank %d that "
                       "is longer than its receive buffer (%zu bytes)", req->msg_len,
                       st->MPI_SOURCE, req->len);
            req->status = RG_ERR_NOMEM;
            return rg__mpi_fail(mpi, RG_ERR_NOMEM);
        }
        RG__MPI_SCRATCH(req) = (uint64_t)(uintptr_t)scratch;
        target               = scratch;
    }
    rc = rg__mpi_type(req->msg_len, &type, &count, &derived);
    if (rc == MPI_SUCCESS) {
        rg__mpi_keep_type(req, type, derived);
        rc = MPI_Irecv(target, count, type, st->MPI_SOURCE, st->MPI_TAG, mpi->bulk, &r);
    }
    if (rc != MPI_SUCCESS) {
        return rg__mpi_error(mpi, rc, "MPI_Irecv of a long message", st->MPI_SOURCE);
    }
    RG__MPI_FLAGS(req) |= RG__MPI_F_PAYLOAD;
    rg__mpi_flight_push(mpi, req, r);
    return RG_OK;
}

static rg_status_t rg__mpi_recv_done(rg__mpi_t *mpi, rg_xreq_t *req, int code,
                                     const MPI_Status *st)
{
    void  *bounce  = rg__mpi_ptr(RG__MPI_BOUNCE(req));
    void  *scratch = rg__mpi_ptr(RG__MPI_SCRATCH(req));
    void  *got;
    int    count = 0;
    size_t keep;

    if (code != MPI_SUCCESS) {
        return rg__mpi_error(mpi, code, "MPI_Irecv", req->peer);
    }
    mpi->completions++;
    if (RG__MPI_FLAGS(req) & RG__MPI_F_PAYLOAD) {
        rg__mpi_free_type(req);
        if (scratch != NULL) {
            memcpy(req->buf, scratch, req->len);
            free(scratch);
            RG__MPI_SCRATCH(req) = 0;
        }
        keep        = req->msg_len < req->len ? req->msg_len : req->len;
        req->done   = keep;
        req->status = req->msg_len > req->len ? RG_ERR_TRUNCATED : RG_OK;
        return RG_OK;
    }
    RG__MPI_FLAGS(req) &= ~(uint64_t)RG__MPI_F_CTL;
    req->source = st->MPI_SOURCE;
    got         = bounce != NULL ? bounce : req->buf;
    MPI_Get_count(st, MPI_BYTE, &count);
    if (st->MPI_TAG != RG__MPI_TAG_SHORT) {
        if (count != RG__MPI_LEN_BYTES) {
            rg_err_set(&mpi->head.super.err, RG_ERR_PARSE,
                       "rank %d sent a length message of %d bytes (tag %d); are "
                       "RG_MPI_SHORT_MAX and the railgauge version the same on every rank?",
                       st->MPI_SOURCE, count, st->MPI_TAG);
            return rg__mpi_fail(mpi, RG_ERR_PARSE);
        }
        if (bounce != NULL) {
            uint64_t len;

            memcpy(&len, bounce, sizeof(len));
            rg__mpi_bounce_put(mpi, bounce);
            RG__MPI_BOUNCE(req) = 0;
            return rg__mpi_recv_payload(mpi, req, &len, st);
        }
        return rg__mpi_recv_payload(mpi, req, got, st);
    }
    req->msg_len = (size_t)count;
    keep         = req->msg_len < req->len ? req->msg_len : req->len;
    if (bounce != NULL) {
        memcpy(req->buf, bounce, keep);
        rg__mpi_bounce_put(mpi, bounce);
        RG__MPI_BOUNCE(req) = 0;
    }
    req->done   = keep;
    req->status = req->msg_len > req->len ? RG_ERR_TRUNCATED : RG_OK;
    return RG_OK;
}

static rg_status_t rg__mpi_done(rg__mpi_t *mpi, rg_xreq_t *req, int code, const MPI_Status *st)
{
    if (mpi->failed != RG_OK) {
        req->status = mpi->failed;
        return mpi->failed;
    }
    if (req->kind == RG_XREQ_SEND) {
        return rg__mpi_send_done(mpi, req, code);
    }
    return rg__mpi_recv_done(mpi, req, code, st);
}

static rg_status_t rg__mpi_test_flight(rg__mpi_t *mpi)
{
    rg__mpi_done_t *d;
    rg_status_t     status = RG_OK;
    MPI_Status      st;
    int             outcount = 0, flag = 0, rc, i, j, k;

    if (mpi->nflight == 1) {
        /* The common case of a ping-pong: one request, no list to scan. */
        rc = MPI_Test(&mpi->fl_req[0], &flag, &st);
        if (!flag && rc == MPI_SUCCESS) {
            return RG_OK;
        }
        mpi->nflight = 0;
        return rg__mpi_done(mpi, mpi->fl_own[0], rc, &st);
    }
    rc = MPI_Testsome(mpi->nflight, mpi->fl_req, &outcount, mpi->fl_idx, mpi->fl_st);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        return rg__mpi_error(mpi, rc, "MPI_Testsome", -1);
    }
    if (outcount == MPI_UNDEFINED || outcount == 0) {
        return RG_OK;
    }
    /* Taken out of the list first: handling a completion may post a new
     * request (a long message's payload) into it. */
    for (k = 0; k < outcount; k++) {
        i                   = mpi->fl_idx[k];
        mpi->fl_done[k].req  = mpi->fl_own[i];
        mpi->fl_done[k].code = rc == MPI_ERR_IN_STATUS ? mpi->fl_st[k].MPI_ERROR : MPI_SUCCESS;
        mpi->fl_done[k].st   = mpi->fl_st[k];
        mpi->fl_own[i]       = NULL;
    }
    for (i = 0, j = 0; i < mpi->nflight; i++) {
        if (mpi->fl_own[i] != NULL) {
            mpi->fl_req[j] = mpi->fl_req[i];
            mpi->fl_own[j] = mpi->fl_own[i];
            j++;
        }
    }
    mpi->nflight = j;
    for (k = 0; k < outcount; k++) {
        d = &mpi->fl_done[k];
        if (status == RG_OK) {
            status = rg__mpi_done(mpi, d->req, d->code, &d->st);
        } else {
            d->req->status = status;
        }
    }
    return status;
}

/* ---- sending and receiving ------------------------------------------------- */

/* A request just handed to MPI: a send is tested once (a small one is done
 * at once), everything else waits for progress. */
static rg_status_t rg__mpi_track(rg__mpi_t *mpi, rg_xreq_t *req, MPI_Request r)
{
    MPI_Status st;
    int        flag = 0, rc;

    if (req->kind == RG_XREQ_SEND) {
        rc = MPI_Test(&r, &flag, &st);
        if (flag || rc != MPI_SUCCESS) {
            return rg__mpi_done(mpi, req, rc, &st);
        }
    }
    rg__mpi_flight_push(mpi, req, r);
    return RG_OK;
}

static rg_status_t rg__mpi_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__mpi_t   *mpi = rg__mpi(xp);
    MPI_Datatype type;
    MPI_Request  r[2];
    rg_status_t  status;
    uint32_t     k;
    int          count, derived, rc, tag;

    if (mpi->failed != RG_OK) {
        req->status = mpi->failed;
        return mpi->failed;
    }
    RG__MPI_FLAGS(req) = 0;
    status = rg__mpi_reserve(mpi, 2);
    if (status != RG_OK) {
        req->status = status;
        return status;
    }
    if (req->len <= mpi->short_max) {
        RG__MPI_PENDING(req) = 1;
        rc = MPI_Isend(req->buf, (int)req->len, MPI_BYTE, req->peer, RG__MPI_TAG_SHORT,
                       mpi->ctl, &r[0]);
        if (rc != MPI_SUCCESS) {
            req->status = RG_ERR_IO;
            return rg__mpi_error(mpi, rc, "MPI_Isend", req->peer);
        }
        return rg__mpi_track(mpi, req, r[0]);
    }
    rc = rg__mpi_type(req->len, &type, &count, &derived);
    if (rc != MPI_SUCCESS) {
        req->status = RG_ERR_RANGE;
        return rg__mpi_error(mpi, rc, "describing a message of that size", req->peer);
    }
    rg__mpi_keep_type(req, type, derived);
    k   = mpi->long_sent[req->peer]++;
    tag = 1 + (int)(k % (uint32_t)mpi->tag_ub);
    RG__MPI_LENMSG(req)  = htole64((uint64_t)req->len);
    RG__MPI_PENDING(req) = 2;
    rc = MPI_Isend(&RG__MPI_LENMSG(req), RG__MPI_LEN_BYTES, MPI_BYTE, req->peer, tag,
                   mpi->ctl, &r[0]);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Isend(req->buf, count, type, req->peer, tag, mpi->bulk, &r[1]);
        if (rc != MPI_SUCCESS) {
            rg__mpi_flight_push(mpi, req, r[0]);
        }
    }
    if (rc != MPI_SUCCESS) {
        req->status = RG_ERR_IO;
        return rg__mpi_error(mpi, rc, "MPI_Isend of a long message", req->peer);
    }
    status = rg__mpi_track(mpi, req, r[0]);
    if (status != RG_OK) {
        rg__mpi_flight_push(mpi, req, r[1]);
        return status;
    }
    return rg__mpi_track(mpi, req, r[1]);
}

/* ---- list posts ------------------------------------------------------------ */

/* The slot of a persistent send of (peer, buf, len), made now if needed;
 * NULL where every probed slot is active (the caller sends with MPI_Isend). */
static rg__mpi_pers_t *rg__mpi_pers_get(rg__mpi_t *mpi, int peer, const void *buf, size_t len,
                                        rg_status_t *status)
{
    rg__mpi_pers_t *e, *victim = NULL;
    uint64_t        h;
    size_t          i;
    int             rc;

    h  = (uint64_t)(uintptr_t)buf * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)(unsigned)peer << 32 | (uint64_t)len) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    for (i = 0; i < RG__MPI_PERS_PROBE; i++) {
        e = &mpi->pers[(h + i) & (mpi->pers_cap - 1)];
        if (e->r != MPI_REQUEST_NULL && e->peer == peer && e->buf == buf && e->len == len) {
            return e->active ? NULL : e;
        }
        if (!e->active && (victim == NULL || e->r == MPI_REQUEST_NULL ||
                           (victim->r != MPI_REQUEST_NULL && e->used < victim->used))) {
            victim = e;
        }
    }
    if (victim == NULL) {
        return NULL;
    }
    if (victim->r != MPI_REQUEST_NULL) {
        MPI_Request_free(&victim->r);
    }
    rc = MPI_Send_init(buf, (int)len, MPI_BYTE, peer, RG__MPI_TAG_SHORT, mpi->ctl, &victim->r);
    if (rc != MPI_SUCCESS) {
        victim->r = MPI_REQUEST_NULL;
        *status   = rg__mpi_error(mpi, rc, "MPI_Send_init", peer);
        return NULL;
    }
    victim->peer = peer;
    victim->buf  = buf;
    victim->len  = len;
    return victim;
}

static rg_status_t rg__mpi_list_room(rg__mpi_t *mpi, size_t n)
{
    MPI_Request *r;
    rg_xreq_t  **o;
    size_t       i, cap;

    if (mpi->pers == NULL) {
        cap = 64;
        while (cap < 4 * (size_t)mpi->head.super.size) {
            cap *= 2;
        }
        mpi->pers = calloc(cap, sizeof(*mpi->pers));
        if (mpi->pers == NULL) {
            return rg_err_set(&mpi->head.super.err, RG_ERR_NOMEM,
                              "cannot allocate %zu persistent-send slots", cap);
        }
        for (i = 0; i < cap; i++) {
            mpi->pers[i].r = MPI_REQUEST_NULL;
        }
        mpi->pers_cap = cap;
    }
    if (n <= mpi->lst_cap) {
        return RG_OK;
    }
    if ((r = realloc(mpi->lst_req, n * sizeof(*r))) != NULL) {
        mpi->lst_req = r;
    }
    if ((o = realloc(mpi->lst_own, n * sizeof(*o))) != NULL) {
        mpi->lst_own = o;
    }
    if (r == NULL || o == NULL) {
        return rg_err_set(&mpi->head.super.err, RG_ERR_NOMEM,
                          "cannot grow the list-post scratch to %zu sends", n);
    }
    mpi->lst_cap = n;
    return RG_OK;
}

/* Starts the m persistent sends gathered so far with one MPI_Startall. */
static rg_status_t rg__mpi_list_start(rg__mpi_t *mpi, size_t m)
{
    rg_status_t status;
    size_t      i;
    int         rc;

    if (m == 0) {
        return RG_OK;
    }
    rc = MPI_Startall((int)m, mpi->lst_req);
    if (rc != MPI_SUCCESS) {
        for (i = 0; i < m; i++) {
            mpi->pers[RG__MPI_DTYPE(mpi->lst_own[i])].active = 0;
            mpi->lst_own[i]->status = RG_ERR_IO;
        }
        return rg__mpi_error(mpi, rc, "MPI_Startall", mpi->lst_own[0]->peer);
    }
    for (i = 0; i < m; i++) {
        status = rg__mpi_track(mpi, mpi->lst_own[i], mpi->lst_req[i]);
        if (status != RG_OK) {
            return status;
        }
    }
    return RG_OK;
}

static rg_status_t rg__mpi_isend_list(rg_xport_t *xp, rg_xreq_t *reqs, size_t n)
{
    rg__mpi_t      *mpi = rg__mpi(xp);
    rg__mpi_pers_t *e;
    rg_status_t     status = RG_OK;
    size_t          i, m = 0;

    if (mpi->failed != RG_OK) {
        for (i = 0; i < n; i++) {
            reqs[i].status = mpi->failed;
        }
        return mpi->failed;
    }
    if (n > (size_t)INT_MAX / 2) {
        return rg_err_set(&xp->err, RG_ERR_RANGE, "a list of %zu sends is too long for MPI", n);
    }
    status = rg__mpi_list_room(mpi, n);
    if (status == RG_OK) {
        status = rg__mpi_reserve(mpi, 2 * (int)n);
    }
    if (status != RG_OK) {
        for (i = 0; i < n; i++) {
            reqs[i].status = status;
        }
        return status;
    }
    mpi->lists++;
    for (i = 0; i < n; i++) {
        e = NULL;
        if (reqs[i].len <= mpi->short_max) {
            e = rg__mpi_pers_get(mpi, reqs[i].peer, reqs[i].buf, reqs[i].len, &status);
            if (status != RG_OK) {
                break;
            }
        }
        if (e != NULL) {
            e->active                = 1;
            e->used                  = mpi->lists;
            RG__MPI_FLAGS(&reqs[i])   = RG__MPI_F_PERS;
            RG__MPI_PENDING(&reqs[i]) = 1;
            RG__MPI_DTYPE(&reqs[i])   = (uint64_t)(e - mpi->pers);
            mpi->lst_req[m]          = e->r;
            mpi->lst_own[m]          = &reqs[i];
            m++;
            continue;
        }
        /* MPI_Isend, after the starts before it. */
        status = rg__mpi_list_start(mpi, m);
        m      = 0;
        if (status == RG_OK) {
            status = rg__mpi_isend(xp, &reqs[i]);
        }
        if (status != RG_OK) {
            break;
        }
    }
    if (status == RG_OK) {
        return rg__mpi_list_start(mpi, m);
    }
    /* The transport has failed: what was not posted ends with the error. */
    for (; i < n; i++) {
        if (reqs[i].status == RG_INPROGRESS) {
            reqs[i].status = status;
        }
    }
    return status;
}

static rg_status_t rg__mpi_irecv(rg_xport_t *xp, rg_xreq_t *req)
{
    rg__mpi_t  *mpi = rg__mpi(xp);
    MPI_Request r;
    rg_status_t status;
    void       *dst = req->buf, *bounce = NULL;
    int         rc;

    if (mpi->failed != RG_OK) {
        req->status = mpi->failed;
        return mpi->failed;
    }
    RG__MPI_FLAGS(req)   = RG__MPI_F_CTL;
    RG__MPI_BOUNCE(req)  = 0;
    RG__MPI_SCRATCH(req) = 0;
    status = rg__mpi_reserve(mpi, 1);
    if (status != RG_OK) {
        req->status = status;
        return status;
    }
    if (req->len < mpi->short_max) {
        bounce = rg__mpi_bounce_get(mpi);
        if (bounce == NULL) {
            req->status = RG_ERR_NOMEM;
            return rg_err_set(&mpi->head.super.err, RG_ERR_NOMEM,
                              "cannot allocate a bounce buffer of %zu bytes "
                              "(RG_MPI_SHORT_MAX)", mpi->short_max);
        }
        RG__MPI_BOUNCE(req) = (uint64_t)(uintptr_t)bounce;
        dst                 = bounce;
    }
    rc = MPI_Irecv(dst, (int)mpi->short_max, MPI_BYTE,
                   req->peer == RG_XPORT_ANY_SOURCE ? MPI_ANY_SOURCE : req->peer,
                   MPI_ANY_TAG, mpi->ctl, &r);
    if (rc != MPI_SUCCESS) {
        if (bounce != NULL) {
            rg__mpi_bounce_put(mpi, bounce);
        }
        req->status = RG_ERR_IO;
        return rg__mpi_error(mpi, rc, "MPI_Irecv", req->peer);
    }
    return rg__mpi_track(mpi, req, r);
}

/* ---- progress ----------------------------------------------------------------- */

/*
 * One progress call tests MPI up to RG__MPI_POLLS times, until something
 * completes. Every MPI_Test runs the library's whole progress engine (about
 * 25 ns here), and rg_xport_wait() pauses (PAUSE, about 27 ns on this AMD
 * EPYC) between progress calls: with one test per call, a message that lands
 * during a pause waits for it, which cost about 15 ns of a 100-150 ns one-way
 * time (railgauge-bench pingpong, Open MPI over vader). Four tests per call
 * took that to noise; eight gained nothing more. An idle call costs about
 * 100 ns, still no blocking.
 */
#define RG__MPI_POLLS 4

static rg_status_t rg__mpi_progress(rg_xport_t *xp)
{
    rg__mpi_t  *mpi = rg__mpi(xp);
    rg_status_t status;
    rg_xwin_t  *w;
    int         n, poll, flag;

    if (mpi->failed != RG_OK) {
        return mpi->failed;
    }
    /* Windows: what others put becomes visible here (see the top). */
    for (w = mpi->wins; w != NULL; w = w->next) {
        MPI_Win_sync(w->win);
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, w->poke, &flag, MPI_STATUS_IGNORE);
    }
    for (poll = 0; poll < RG__MPI_POLLS && (n = mpi->nflight) > 0; poll++) {
        status = rg__mpi_test_flight(mpi);
        if (status != RG_OK || mpi->nflight != n || mpi->completions != 0) {
            mpi->completions = 0;
            return status;
        }
    }
    return RG_OK;
}

static rg_status_t rg__mpi_no_block(rg_xport_t *xp, uint64_t timeout_ns)
{
    (void)xp;
    (void)timeout_ns;
    return RG_ERR_UNSUPPORTED;
}

static rg_status_t rg__mpi_no_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf,
                                  size_t len)
{
    (void)peer;
    (void)raddr;
    (void)buf;
    (void)len;
    return rg_err_set(&xp->err, RG_ERR_UNSUPPORTED, "transport mpi has no one-sided read");
}

/* ---- memory windows --------------------------------------------------------------- */

static void rg__mpi_win_release(rg__mpi_t *mpi, rg_xwin_t *w, int locked)
{
    rg_xwin_t **pp;

    for (pp = &mpi->wins; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    if (locked) {
        MPI_Win_unlock_all(w->win);
    }
    if (w->win != MPI_WIN_NULL) {
        MPI_Win_free(&w->win);
    }
    if (w->poke != MPI_COMM_NULL) {
        MPI_Comm_free(&w->poke);
    }
    free(w->len);
    free(w);
}

static rg_status_t rg__mpi_win_create(rg_xport_t *xp, void *base, size_t len,
                                      rg_xwin_t **win_p)
{
    rg__mpi_t *mpi = rg__mpi(xp);
    rg_xwin_t *w;
    char       text[MPI_MAX_ERROR_STRING];
    uint64_t   mine = (uint64_t)len;
    int       *model = NULL;
    int        flag = 0, rc, ok, all_ok = 0, unified;

    w = calloc(1, sizeof(*w));
    if (w != NULL) {
        w->win  = MPI_WIN_NULL;
        w->poke = MPI_COMM_NULL;
        w->len  = calloc((size_t)xp->size, sizeof(uint64_t));
    }
    /* Every rank takes part in every collective, so that all fail together. */
    ok = w != NULL && w->len != NULL && len <= (size_t)INT_MAX;
    rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, mpi->ctl);
    if (rc != MPI_SUCCESS || !all_ok) {
        if (w != NULL) {
            free(w->len);
            free(w);
        }
        if (rc != MPI_SUCCESS) {
            return rg__mpi_error(mpi, rc, "MPI_Allreduce (creating a window)", -1);
        }
        return rg_err_set(&xp->err, RG_ERR_NOMEM,
                          "cannot create a memory window of %zu bytes (on this rank or "
                          "another; MPI windows here are at most INT_MAX bytes)", len);
    }
    rc = MPI_Allgather(&mine, 1, MPI_UINT64_T, w->len, 1, MPI_UINT64_T, mpi->ctl);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_dup(mpi->ctl, &w->poke);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Win_create(len > 0 ? base : NULL, (MPI_Aint)len, 1, MPI_INFO_NULL, mpi->ctl,
                            &w->win);
    }
    if (rc != MPI_SUCCESS) {
        rg_boot_mpi_strerror(rc, text, sizeof(text));
        rg__mpi_win_release(mpi, w, 0);
        return rg_err_set(&xp->err, RG_ERR_IO, "creating an MPI window (MPI_Win_create) "
                          "failed: %s", text);
    }
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    /* Polling the window's memory is defined only under the unified model;
     * the model is the library's, the same on every rank. */
    unified = MPI_Win_get_attr(w->win, MPI_WIN_MODEL, &model, &flag) == MPI_SUCCESS && flag &&
              model != NULL && *model == MPI_WIN_UNIFIED;
    if (!unified) {
        rg__mpi_win_release(mpi, w, 0);
        return rg_err_set(&xp->err, RG_ERR_UNSUPPORTED,
                          "the MPI library's windows have the separate memory model "
                          "(MPI_WIN_SEPARATE), where a target cannot poll its memory for "
                          "a put");
    }
    rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
    if (rc != MPI_SUCCESS) {
        rg_boot_mpi_strerror(rc, text, sizeof(text));
        rg__mpi_win_release(mpi, w, 0);
        return rg_err_set(&xp->err, RG_ERR_IO, "MPI_Win_lock_all failed: %s", text);
    }
    w->next   = mpi->wins;
    mpi->wins = w;
    *win_p    = w;
    return RG_OK;
}

/* MPI_Put and MPI_Win_flush of len bytes at off of peer's window. */
static rg_status_t rg__mpi_put_flush(rg__mpi_t *mpi, rg_xwin_t *w, int peer, size_t off,
                                     const void *buf, size_t len)
{
    int rc;

    rc = MPI_Put(buf, (int)len, MPI_BYTE, peer, (MPI_Aint)off, (int)len, MPI_BYTE, w->win);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Win_flush(peer, w->win);
    }
    return rc == MPI_SUCCESS ? RG_OK : rg__mpi_error(mpi, rc, "MPI_Put", peer);
}

static rg_status_t rg__mpi_win_write(rg_xport_t *xp, rg_xwin_t *w, int peer, size_t off,
                                     rg_xreq_t *req)
{
    rg__mpi_t        *mpi = rg__mpi(xp);
    const unsigned char *buf = req->buf;
    size_t            head = req->len > 8 ? req->len - 8 : 0;
    rg_status_t       status;

    if (mpi->failed != RG_OK) {
        req->status = mpi->failed;
        return mpi->failed;
    }
    if (off > w->len[peer] || req->len > w->len[peer] - off) {
        req->status = RG_ERR_RANGE;
        return rg_err_set(&xp->err, RG_ERR_RANGE,
                          "one-sided write of %zu bytes at offset %zu into rank %d's window "
                          "of %llu bytes", req->len, off, peer,
                          (unsigned long long)w->len[peer]);
    }
    status = RG_OK;
    if (head > 0) {
        status = rg__mpi_put_flush(mpi, w, peer, off, buf, head);
    }
    if (status == RG_OK && req->len > 0) {
        status = rg__mpi_put_flush(mpi, w, peer, off + head, buf + head, req->len - head);
    }
    req->done   = status == RG_OK ? req->len : 0;
    req->status = status;
    return status;
}

static void rg__mpi_win_free(rg_xport_t *xp, rg_xwin_t *w)
{
    int finalized = 0;

    MPI_Finalized(&finalized);
    if (finalized) {
        return;
    }
    rg__mpi_win_release(rg__mpi(xp), w, 1);
}

/* The handle is made by rg_mpi_plugin_t.xport_open, which needs the
 * plugin's bootstrap state rather than the tools' rg_boot_t. */
static rg_status_t rg__mpi_no_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                                   rg_err_t *err)
{
    (void)name;
    (void)boot;
    (void)xp_p;
    return rg_err_set(err, RG_ERR_UNSUPPORTED, "the mpi transport opens through its plugin");
}

/* The functions the forwarding table in the tools calls. */
const rg_xport_ops_t rg__mpi_impl_ops = {
    .name        = "mpi",
    .description = "MPI point-to-point, inside the MPI plugin",
    .open        = rg__mpi_no_open,
    .close       = rg__mpi_close,
    .isend       = rg__mpi_isend,
    .irecv       = rg__mpi_irecv,
    .progress    = rg__mpi_progress,
    .block       = rg__mpi_no_block,
    .info_json   = rg__mpi_info_json,
    .get         = rg__mpi_no_get,
    .win_create  = rg__mpi_win_create,
    .win_write   = rg__mpi_win_write,
    .win_free    = rg__mpi_win_free,
    .isend_list  = rg__mpi_isend_list,
};

/* ---- the plugin's one exported symbol ----------------------------------------- */

static const rg_mpi_plugin_t rg__mpi_plugin = {
    .abi            = RG_MPI_PLUGIN_ABI,
    .sizeof_err     = sizeof(rg_err_t),
    .sizeof_xport   = sizeof(rg_xport_t),
    .sizeof_xreq    = sizeof(rg_xreq_t),
    .sizeof_args    = sizeof(rg_mpi_boot_args_t),
    .version        = RG_VERSION,
    .flavour        = RG_MPI_FLAVOUR_NAME,
    .boot_init      = rg_boot_mpi_init,
    .boot_fini      = rg_boot_mpi_fini,
    .boot_allgather = rg_boot_mpi_allgather,
    .boot_barrier   = rg_boot_mpi_barrier,
    .xport_open     = rg__mpi_open,
    .xport          = &rg__mpi_impl_ops,
};

__attribute__((visibility("default"))) const rg_mpi_plugin_t *rg_mpi_plugin_get(void);

const rg_mpi_plugin_t *rg_mpi_plugin_get(void)
{
    return &rg__mpi_plugin;
}
