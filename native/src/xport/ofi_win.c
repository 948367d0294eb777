/*
 * railgauge: the "ofi" transport's memory windows (ops->win_*): every rank
 * registers its window for remote writes, the registrations are exchanged
 * over the bootstrap, and a write is one fi_write that completes on its CQ
 * entry like any other operation. See ofi.c for the design; ofi.h is the
 * private header.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/wire.h"
#include "xport/ofi.h"

/* ---- memory windows (ops->win_*) ------------------------------------------ */

/* Every rank's registration of its window: the address a writer names (the
 * virtual address under FI_MR_VIRT_ADDR, else an offset from 0), the key and
 * the length. */
struct rg_xwin {
    struct fid_mr *mr;
    uint64_t      *addr;
    uint64_t      *key;
    uint64_t      *len;
};

#define RG__OFI_WIN_REC 32u

static void rg__ofi_win_release(rg_xwin_t *win)
{
    if (win == NULL) {
        return;
    }
    if (win->mr != NULL) {
        fi_close(&win->mr->fid);
    }
    free(win->addr);
    free(win->key);
    free(win->len);
    free(win);
}

/* Registers [base, base+len) for remote writes (bound to the endpoint where
 * the provider asks for FI_MR_ENDPOINT); RG_OK or the failure, in err. */
static rg_status_t rg__ofi_win_register(rg__ofi_t *ofi, rg_xwin_t *win, void *base,
                                        size_t len, uint64_t *addr_p, uint64_t *key_p)
{
    uint64_t mr_mode = (uint64_t)ofi->info->domain_attr->mr_mode;
    int      rc;

    rc = fi_mr_reg(ofi->domain, base, len, FI_REMOTE_WRITE, 0, ++ofi->mr_next, 0, &win->mr,
                   NULL);
    if (rc == 0 && (mr_mode & FI_MR_ENDPOINT)) {
        rc = fi_mr_bind(win->mr, &ofi->ep->fid, 0);
        if (rc == 0) {
            rc = fi_mr_enable(win->mr);
        }
    }
    if (rc != 0) {
        return rg_err_set(&ofi->super.err, RG_ERR_IO,
                          "registering a memory window of %zu bytes (fi_mr_reg, %s, provider "
                          "%s) failed on rank %d: %s", len, ofi->name, rg__ofi_prov(ofi),
                          ofi->super.rank, fi_strerror(-rc));
    }
    *key_p = fi_mr_key(win->mr);
    if (*key_p == FI_KEY_NOTAVAIL) {
        return rg_err_set(&ofi->super.err, RG_ERR_UNSUPPORTED,
                          "provider %s gives no plain memory key (FI_MR_RAW) for a window",
                          rg__ofi_prov(ofi));
    }
    *addr_p = (mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)base : 0;
    return RG_OK;
}

rg_status_t rg__ofi_win_create(rg_xport_t *xp, void *base, size_t len,
                               rg_xwin_t **win_p)
{
    rg__ofi_t     *ofi = rg__ofi(xp);
    rg_xwin_t     *win;
    unsigned char  own[RG__OFI_WIN_REC], *all = NULL, *rec;
    uint64_t       addr = 0, key = 0;
    int32_t        code = RG_OK, other;
    rg_status_t    status;
    size_t         size = (size_t)xp->size;
    int            i;

    if (ofi->failed != RG_OK) {
        code = ofi->failed;
    }
    win = calloc(1, sizeof(*win));
    all = calloc(size, RG__OFI_WIN_REC);
    if (win != NULL) {
        win->addr = calloc(size, sizeof(uint64_t));
        win->key  = calloc(size, sizeof(uint64_t));
        win->len  = calloc(size, sizeof(uint64_t));
    }
    if (code == RG_OK &&
        (win == NULL || all == NULL || win->addr == NULL || win->key == NULL ||
         win->len == NULL)) {
        code = rg_err_set(&xp->err, RG_ERR_NOMEM, "cannot allocate a memory window");
    }
    if (code == RG_OK && len > 0) {
        code = rg__ofi_win_register(ofi, win, base, len, &addr, &key);
    }
    /* Every rank joins the exchange, with its status, so that a failure on
     * one fails the creation on all instead of leaving them waiting. */
    rg_wire_put_uint(own, (uint64_t)(int64_t)code, 8);
    rg_wire_put_uint(own + 8, addr, 8);
    rg_wire_put_uint(own + 16, key, 8);
    rg_wire_put_uint(own + 24, (uint64_t)len, 8);
    if (all == NULL) {
        rg__ofi_win_release(win);
        return (rg_status_t)code;
    }
    status = rg_boot_allgather(xp->boot, own, sizeof(own), all, &xp->err);
    for (i = 0; i < xp->size && status == RG_OK && code == RG_OK; i++) {
        rec   = all + (size_t)i * RG__OFI_WIN_REC;
        other = (int32_t)(int64_t)rg_wire_get_uint(rec, 8);
        if (other != RG_OK) {
            status = rg_err_set(&xp->err, RG_ERR_BOOTSTRAP,
                                "rank %d could not register its memory window (%s)", i,
                                rg_status_name((rg_status_t)other));
            break;
        }
        win->addr[i] = rg_wire_get_uint(rec + 8, 8);
        win->key[i]  = rg_wire_get_uint(rec + 16, 8);
        win->len[i]  = rg_wire_get_uint(rec + 24, 8);
    }
    free(all);
    if (status == RG_OK && code != RG_OK) {
        status = (rg_status_t)code;
    }
    if (status != RG_OK) {
        rg__ofi_win_release(win);
        return status;
    }
    *win_p = win;
    return RG_OK;
}

/* fi_write of the request's buffer; it completes on its CQ entry. */
rg_status_t rg__ofi_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                              rg_xreq_t *req)
{
    rg__ofi_t    *ofi = rg__ofi(xp);
    rg__ofi_op_t *op;
    ssize_t       rc;

    if (ofi->failed != RG_OK) {
        req->status = ofi->failed;
        return ofi->failed;
    }
    if (rg_xport_win_range(xp, win->len[peer], peer, off, req) != RG_OK) {
        return RG_ERR_RANGE;
    }
    op = rg__ofi_op_get(ofi);
    if (op == NULL) {
        req->status = RG_ERR_NOMEM;
        return rg_err_set(&xp->err, RG_ERR_NOMEM, "cannot allocate an ofi operation");
    }
    op->req   = req;
    op->index = 0;
    op->len   = req->len;
    rc = fi_write(ofi->ep, req->buf, req->len, NULL, ofi->peers[peer].addr,
                  win->addr[peer] + off, win->key[peer], &op->ctx);
    if (rc != 0) {
        rg__ofi_op_put(ofi, op);
        if (rc == -FI_EAGAIN) {
            /* Not posted: the caller progresses and tries again. */
            return rg__ofi_cq_poll(ofi) == RG_OK ? RG_ERR_AGAIN : ofi->failed;
        }
        req->status = rg__ofi_op_error(ofi, peer, (int)-rc, "a one-sided write (fi_write) to",
                                       "");
        return req->status;
    }
    rg__ofi_wait_add(ofi, req);
    RG__OFI_NFRAG(req)    = 1;
    RG__OFI_NEXT(req)     = 1;
    RG__OFI_INFLIGHT(req) = 1;
    return RG_OK;
}

void rg__ofi_win_free(rg_xport_t *xp, rg_xwin_t *win)
{
    (void)xp;
    rg__ofi_win_release(win);
}
