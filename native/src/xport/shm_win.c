/*
 * railgauge: the "shm" transport's one-sided operations: reads and writes of
 * a peer's memory by cross-memory attach (process_vm_readv and
 * process_vm_writev), and the memory windows they write into. See shm.c for
 * the design; shm_int.h is the private header.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "xport/shm_int.h"
#include "xport/xport.h"

/* A memory window (rg_xport_win_create): every rank's base address and
 * length, exchanged at creation; writes are process_vm_writev calls. */
struct rg_xwin {
    uint64_t *base;
    uint64_t *len;
};

/* ---- one-sided reads (cross-memory attach) ------------------------------ */

/* Reads len bytes at raddr in pid into buf (or writes buf there); RG_OK or
 * the errno's status. */
rg_status_t rg__shm_cma(pid_t pid, uint64_t raddr, void *buf, size_t len, int write,
                        int *errno_p)
{
    struct iovec local, remote;
    size_t       done = 0;
    ssize_t      n;

    while (done < len) {
        local.iov_base  = (char *)buf + done;
        local.iov_len   = len - done;
        remote.iov_base = (void *)(uintptr_t)(raddr + done);
        remote.iov_len  = len - done;
        n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
                  : process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            *errno_p = errno;
            return errno == ESRCH ? RG_ERR_PEER_DEAD : RG_ERR_SYSTEM;
        }
        if (n == 0) {
            *errno_p = EFAULT;
            return RG_ERR_SYSTEM;
        }
        done += (size_t)n;
    }
    return RG_OK;
}

static rg_status_t rg__shm_rma(rg_xport_t *xp, int peer, uint64_t raddr, void *buf,
                               size_t len, int write)
{
    rg__shm_t  *shm = rg__shm(xp);
    rg_status_t status;
    int         e = 0;

    if (!xp->attr.can_get) {
        return rg_xport_no_get(xp, peer, raddr, buf, len);
    }
    if (shm->failed != RG_OK) {
        return shm->failed;
    }
    status = rg__shm_cma((pid_t)atomic_load(&shm->peers[peer].blk->pid), raddr, buf, len,
                         write, &e);
    if (status != RG_OK) {
        return rg_err_set(&xp->err, status, "%s %zu bytes of rank %d's memory failed: %s",
                          write ? "writing" : "reading", len, peer, strerror(e));
    }
    return RG_OK;
}

rg_status_t rg__shm_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf,
                        size_t len)
{
    return rg__shm_rma(xp, peer, raddr, buf, len, 0);
}

rg_status_t rg__shm_put(rg_xport_t *xp, int peer, uint64_t raddr, const void *buf,
                        size_t len)
{
    return rg__shm_rma(xp, peer, raddr, (void *)(uintptr_t)buf, len, 1);
}

/* ---- memory windows (ops->win_*) --------------------------------------- */

rg_status_t rg__shm_win_create(rg_xport_t *xp, void *base, size_t len,
                               rg_xwin_t **win_p)
{
    rg__shm_t  *shm = rg__shm(xp);
    rg_xwin_t  *win;
    uint64_t    mine[2] = {(uint64_t)(uintptr_t)base, (uint64_t)len};
    uint64_t   *all;
    rg_status_t status;
    int         i;

    win = calloc(1, sizeof(*win));
    all = calloc((size_t)xp->size, sizeof(mine));
    if (win != NULL) {
        win->base = calloc((size_t)xp->size, sizeof(uint64_t));
        win->len  = calloc((size_t)xp->size, sizeof(uint64_t));
    }
    if (win == NULL || all == NULL || win->base == NULL || win->len == NULL) {
        /* Still joins the exchange, so that no other rank waits for it. */
        mine[1] = UINT64_MAX;
    }
    status = all != NULL ? rg_boot_allgather(xp->boot, mine, sizeof(mine), all, &xp->err)
                         : rg_err_set(&xp->err, RG_ERR_NOMEM, "cannot allocate a window");
    for (i = 0; i < xp->size && status == RG_OK; i++) {
        if (all[2 * i + 1] == UINT64_MAX) {
            status = rg_err_set(&xp->err, RG_ERR_NOMEM,
                                "rank %d could not allocate its memory window", i);
        } else if (win != NULL && win->base != NULL && win->len != NULL) {
            win->base[i] = all[2 * i];
            win->len[i]  = all[2 * i + 1];
        }
    }
    free(all);
    if (status != RG_OK) {
        if (win != NULL) {
            free(win->base);
            free(win->len);
            free(win);
        }
        return status;
    }
    shm->wins++;
    *win_p = win;
    return RG_OK;
}

/* process_vm_writev with the last 8 bytes as a second remote iovec: the
 * kernel copies the iovecs in order, so a reader polling that word sees
 * it change only after the rest is there. */
rg_status_t rg__shm_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                              rg_xreq_t *req)
{
    rg__shm_t   *shm = rg__shm(xp);
    struct iovec local, remote[2];
    uint64_t     raddr;
    size_t       head;
    ssize_t      n;
    pid_t        pid;
    int          e;

    if (shm->failed != RG_OK) {
        req->status = shm->failed;
        return shm->failed;
    }
    if (rg_xport_win_range(xp, win->len[peer], peer, off, req) != RG_OK) {
        return RG_ERR_RANGE;
    }
    raddr = win->base[peer] + off;
    pid   = (pid_t)atomic_load(&shm->peers[peer].blk->pid);
    head  = req->len > 8 ? req->len - 8 : 0;
    while (req->len > 0) {
        local.iov_base     = req->buf;
        local.iov_len      = req->len;
        remote[0].iov_base = (void *)(uintptr_t)raddr;
        remote[0].iov_len  = head > 0 ? head : req->len;
        remote[1].iov_base = (void *)(uintptr_t)(raddr + head);
        remote[1].iov_len  = req->len - head;
        n = process_vm_writev(pid, &local, 1, remote, head > 0 ? 2 : 1, 0);
        if (n == (ssize_t)req->len) {
            break;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        e = n < 0 ? errno : EFAULT;
        req->status = e == ESRCH ? RG_ERR_PEER_DEAD : RG_ERR_SYSTEM;
        if (e == ESRCH) {
            rg_err_set(&xp->err, RG_ERR_PEER_DEAD,
                       "rank %d (pid %d) died: a one-sided write to it failed (shm)", peer,
                       (int)pid);
            return rg__shm_fail(shm, RG_ERR_PEER_DEAD);
        }
        return rg_err_set(&xp->err, req->status,
                          "one-sided write of %zu bytes into rank %d's window failed: %s%s",
                          req->len, peer, strerror(e),
                          n >= 0 ? " (a partial write)" : "");
    }
    req->done   = req->len;
    req->status = RG_OK;
    return RG_OK;
}

void rg__shm_win_free(rg_xport_t *xp, rg_xwin_t *win)
{
    (void)xp;
    free(win->base);
    free(win->len);
    free(win);
}
