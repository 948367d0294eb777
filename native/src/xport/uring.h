/*
 * railgauge: a minimal io_uring submission ring (internal to xport/), for
 * posting several socket sends with one system call (tcp's list post).
 *
 * Raw system calls, no liburing: the ring is small, used by one thread, and
 * only for operations that complete inline (sends with MSG_DONTWAIT), so that
 * rg__uring_run() submits n prepared entries and reaps their n completions in
 * one io_uring_enter. Where the kernel lacks io_uring or forbids it (seccomp
 * in a container, kernel.io_uring_disabled), rg__uring_open() says why and the
 * caller falls back to one sendmsg per socket.
 */
#ifndef RG_XPORT_URING_H
#define RG_XPORT_URING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

typedef struct rg__uring {
    int       fd;                 /* -1: not open */
    unsigned  entries;            /* submission slots */
    unsigned *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    void     *sqes;               /* struct io_uring_sqe[entries] */
    void     *cqes;               /* struct io_uring_cqe[] */
    void     *sq_map, *cq_map;
    size_t    sq_map_len, cq_map_len, sqes_len;
    unsigned  queued;             /* entries prepared since the last run */
} rg__uring_t;

/* Sets up a ring of at least entries slots; RG_ERR_UNSUPPORTED (with the
 * reason in err) where io_uring cannot be used. u->fd is -1 on failure. */
rg_status_t rg__uring_open(rg__uring_t *u, unsigned entries, rg_err_t *err);
void        rg__uring_close(rg__uring_t *u);

/* Prepares a sendmsg(fd, msg, flags) tagged with user_data; msg must stay
 * valid until rg__uring_run returns. Returns 0, or -1 when all slots are
 * prepared already (run them first). */
int rg__uring_sendmsg(rg__uring_t *u, int fd, const struct msghdr *msg, int flags,
                      uint64_t user_data);

/* Submits the prepared entries and waits for all their completions; calls
 * done(ctx, user_data, res) for each (res: bytes sent or -errno). */
rg_status_t rg__uring_run(rg__uring_t *u, void (*done)(void *ctx, uint64_t user_data, int32_t res),
                          void *ctx, rg_err_t *err);

#endif /* RG_XPORT_URING_H */
