/*
 * railgauge: a minimal io_uring submission ring; see uring.h.
 */
#include "xport/uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif

static void rg__uring_unmap(rg__uring_t *u)
{
    if (u->sqes != NULL && u->sqes != MAP_FAILED) {
        munmap(u->sqes, u->sqes_len);
    }
    if (u->cq_map != NULL && u->cq_map != MAP_FAILED && u->cq_map != u->sq_map) {
        munmap(u->cq_map, u->cq_map_len);
    }
    if (u->sq_map != NULL && u->sq_map != MAP_FAILED) {
        munmap(u->sq_map, u->sq_map_len);
    }
    u->sqes = u->cq_map = u->sq_map = NULL;
}

rg_status_t rg__uring_open(rg__uring_t *u, unsigned entries, rg_err_t *err)
{
    struct io_uring_params p;
    char                  *sq, *cq;
    long                   fd;
    int                    e;

    memset(u, 0, sizeof(*u));
    u->fd = -1;
    memset(&p, 0, sizeof(p));
    fd = syscall(__NR_io_uring_setup, entries, &p);
    if (fd < 0) {
        e = errno;
        return rg_err_set_errno(err, RG_ERR_UNSUPPORTED, e,
                                "io_uring_setup failed (%s)",
                                e == ENOSYS ? "the kernel has no io_uring"
                                : e == EPERM ? "forbidden: kernel.io_uring_disabled or a "
                                               "seccomp filter"
                                             : "cannot set up a ring");
    }
    u->fd         = (int)fd;
    u->entries    = p.sq_entries;
    u->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    u->cq_map_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP) {
        if (u->cq_map_len > u->sq_map_len) {
            u->sq_map_len = u->cq_map_len;
        }
        u->cq_map_len = u->sq_map_len;
    }
    u->sq_map = mmap(NULL, u->sq_map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                     u->fd, IORING_OFF_SQ_RING);
    if (u->sq_map == MAP_FAILED) {
        goto err_map;
    }
    if (p.features & IORING_FEAT_SINGLE_MMAP) {
        u->cq_map = u->sq_map;
    } else {
        u->cq_map = mmap(NULL, u->cq_map_len, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_CQ_RING);
        if (u->cq_map == MAP_FAILED) {
            goto err_map;
        }
    }
    u->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
    u->sqes = mmap(NULL, u->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   u->fd, IORING_OFF_SQES);
    if (u->sqes == MAP_FAILED) {
        goto err_map;
    }
    sq          = u->sq_map;
    cq          = u->cq_map;
    u->sq_tail  = (unsigned *)(sq + p.sq_off.tail);
    u->sq_mask  = (unsigned *)(sq + p.sq_off.ring_mask);
    u->sq_array = (unsigned *)(sq + p.sq_off.array);
    u->cq_head  = (unsigned *)(cq + p.cq_off.head);
    u->cq_tail  = (unsigned *)(cq + p.cq_off.tail);
    u->cq_mask  = (unsigned *)(cq + p.cq_off.ring_mask);
    u->cqes     = cq + p.cq_off.cqes;
    return RG_OK;

err_map:
    e = errno;
    rg__uring_unmap(u);
    close(u->fd);
    u->fd = -1;
    return rg_err_set_errno(err, RG_ERR_UNSUPPORTED, e, "cannot map the io_uring rings");
}

void rg__uring_close(rg__uring_t *u)
{
    if (u->fd < 0) {
        return;
    }
    rg__uring_unmap(u);
    close(u->fd);
    u->fd = -1;
}

int rg__uring_sendmsg(rg__uring_t *u, int fd, const struct msghdr *msg, int flags,
                      uint64_t user_data)
{
    struct io_uring_sqe *sqe;
    unsigned             tail, idx;

    if (u->fd < 0 || u->queued >= u->entries) {
        return -1;
    }
    /* Only this thread moves the tail; the kernel reads it at enter. */
    tail = *u->sq_tail + u->queued;
    idx  = tail & *u->sq_mask;
    sqe  = &((struct io_uring_sqe *)u->sqes)[idx];
    memset(sqe, 0, sizeof(*sqe));
    sqe->opcode    = IORING_OP_SENDMSG;
    sqe->fd        = fd;
    sqe->addr      = (uint64_t)(uintptr_t)msg;
    sqe->len       = 1;
    sqe->msg_flags = (uint32_t)flags;
    sqe->user_data = user_data;
    u->sq_array[idx] = idx;
    u->queued++;
    return 0;
}

rg_status_t rg__uring_run(rg__uring_t *u, void (*done)(void *ctx, uint64_t user_data, int32_t res),
                          void *ctx, rg_err_t *err)
{
    struct io_uring_cqe *cqe;
    unsigned             want = u->queued, got = 0, submit = u->queued, head, tail;
    long                 rc;

    if (want == 0) {
        return RG_OK;
    }
    atomic_store_explicit((_Atomic unsigned *)u->sq_tail, *u->sq_tail + want,
                          memory_order_release);
    u->queued = 0;
    while (got < want) {
        rc = syscall(__NR_io_uring_enter, u->fd, submit, want - got, IORING_ENTER_GETEVENTS,
                     NULL, 0);
        if (rc < 0) {
            if (errno == EINTR) {
                continue;
            }
            return rg_err_set_errno(err, RG_ERR_IO, errno, "io_uring_enter failed");
        }
        submit -= (unsigned)rc < submit ? (unsigned)rc : submit;
        head = *u->cq_head;
        tail = atomic_load_explicit((_Atomic unsigned *)u->cq_tail, memory_order_acquire);
        while (head != tail) {
            cqe = &((struct io_uring_cqe *)u->cqes)[head & *u->cq_mask];
            done(ctx, cqe->user_data, cqe->res);
            head++;
            got++;
        }
        atomic_store_explicit((_Atomic unsigned *)u->cq_head, head, memory_order_release);
    }
    return RG_OK;
}
