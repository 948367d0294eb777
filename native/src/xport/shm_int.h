/*
 * railgauge: the shm transport's private header, shared by shm.c (the data
 * path: rings, sends, receives, progress, liveness, blocking, and the ops
 * table), shm_open.c (the segment: create, attach, open, close, the
 * single-copy probe) and shm_win.c (one-sided reads and writes by
 * cross-memory attach, memory windows). The design is described at the top
 * of shm.c. Nothing of the per-message path crosses files: its helpers stay
 * static in shm.c.
 */
#ifndef RG_XPORT_SHM_INT_H
#define RG_XPORT_SHM_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xport/xport.h"

#define RG__SHM_PAGE       4096u
/* Two cache lines: the adjacent-line prefetcher of x86 cores moves lines in
 * pairs, so indexes written by different processes sit 128 bytes apart. */
#define RG__SHM_PAD        128u
#define RG__SHM_HDR_LEN    8u

/* Per-rank block. Only its owner sleeps on the doorbell; peers read
 * `sleeping` after every publish, which costs nothing while the line stays
 * shared in their caches, and bump the doorbell only when it is set. */
typedef struct rg__shm_rank_blk {
    _Atomic uint32_t doorbell;
    _Atomic uint32_t sleeping;
    _Atomic int32_t  pid;
    uint32_t         pad0;
    uint64_t         cma_probe;  /* address of the owner's probe word */
    char             pad[RG__SHM_PAD - 4 * sizeof(uint32_t) - sizeof(uint64_t)];
} rg__shm_rank_blk_t;

/* Ring control. Each side also keeps a private copy of the other side's
 * index and rereads the shared one only when the copy says the ring is full
 * (sender) or empty (receiver), so the lines do not bounce per message. */
typedef struct rg__shm_ring_ctl {
    _Atomic uint64_t head;   /* bytes ever written; by the producer */
    char             pad0[RG__SHM_PAD - sizeof(uint64_t)];
    _Atomic uint64_t tail;   /* bytes ever consumed; by the consumer */
    char             pad1[RG__SHM_PAD - sizeof(uint64_t)];
} rg__shm_ring_ctl_t;

typedef struct rg__shm_peer {
    /* Ring this rank -> peer. */
    rg__shm_ring_ctl_t *tx;
    unsigned char      *tx_data;
    uint64_t            tx_head;       /* ours; the shared copy lags until publish */
    uint64_t            tx_tail_seen;  /* peer's tail as last read */
    rg_xreq_t          *sendq, *sendq_last;
    /* Ring peer -> this rank. */
    rg__shm_ring_ctl_t *rx;
    unsigned char      *rx_data;
    uint64_t            rx_tail;
    uint64_t            rx_tail_pub;   /* last tail published */
    uint64_t            rx_head_seen;
    rg_xreq_t          *recvq, *recvq_last;
    rg_xreq_t          *cur;           /* receive bound to the message in flight */
    rg__shm_rank_blk_t *blk;
    int                 dead;
    int                 staged;        /* a list post wrote here, not yet published */
} rg__shm_peer_t;

typedef struct rg__shm {
    rg_xport_t          super;
    unsigned char      *seg;
    size_t              seg_size;
    uint64_t            ring_size;
    uint64_t            mask;
    uint64_t            chunk;         /* bytes copied between two publishes */
    char                name[128];
    rg__shm_rank_blk_t *me;
    rg__shm_peer_t     *peers;         /* size entries; ours is unused */
    rg_xreq_t          *anyq, *anyq_last;
    uint64_t            post_seq;      /* orders receives for matching */
    uint64_t            events;        /* bumped whenever progress moves */
    int                 any_next;      /* where the next ANY_SOURCE scan starts */
    uint64_t            live_check_ns; /* time of the last liveness check */
    int                 cma_off_rank;  /* a rank that failed the CMA probe, or -1 */
    int                 asym_fence;    /* 1: sleepers fence by membarrier (see notify) */
    int                *staged;        /* size entries: peers a list post wrote to */
    unsigned            wins;          /* windows created, for their names in errors */
    rg_status_t         failed;        /* RG_OK, or the error that ended it */
} rg__shm_t;

static inline rg__shm_t *rg__shm(rg_xport_t *xp)
{
    return (rg__shm_t *)xp;
}

/* shm.c */
rg_status_t rg__shm_fail(rg__shm_t *shm, rg_status_t status);

/* shm_open.c */
rg_status_t rg__shm_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                         rg_err_t *err);
void        rg__shm_close(rg_xport_t *xp);
rg_status_t rg__shm_info_json(rg_xport_t *xp, char *buf, size_t cap);

/* shm_win.c */
rg_status_t rg__shm_cma(pid_t pid, uint64_t raddr, void *buf, size_t len, int write,
                        int *errno_p);
rg_status_t rg__shm_get(rg_xport_t *xp, int peer, uint64_t raddr, void *buf, size_t len);
rg_status_t rg__shm_put(rg_xport_t *xp, int peer, uint64_t raddr, const void *buf,
                        size_t len);
rg_status_t rg__shm_win_create(rg_xport_t *xp, void *base, size_t len, rg_xwin_t **win_p);
rg_status_t rg__shm_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                              rg_xreq_t *req);
void        rg__shm_win_free(rg_xport_t *xp, rg_xwin_t *win);

#endif /* RG_XPORT_SHM_INT_H */
