/*
 * railgauge: the ofi transport's private header, shared by ofi.c (the data
 * path and the ops table), ofi_open.c (provider selection, endpoint,
 * address exchange, close) and ofi_win.c (memory windows: registration,
 * exchange, one-sided writes). The design is described at the top of ofi.c.
 */
#ifndef RG_XPORT_OFI_H
#define RG_XPORT_OFI_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "xport/xport.h"

/* Tags (see ofi.c): a message or head, a continuation fragment (with the
 * train number above this bit), the greeting of open. */
#define RG__OFI_TAG_MSG   UINT64_C(0)
#define RG__OFI_TAG_CONT  UINT64_C(1)
#define RG__OFI_TAG_GREET UINT64_C(2)

/* Bytes at the end of a head: the train's total length and number. */
#define RG__OFI_TRAILER   16u
#define RG__OFI_OP_CHUNK  256

/* One posted libfabric operation: a send of a fragment or a receive. The
 * context comes first, so the CQ entry's op_context is the operation, and it
 * is an fi_context2, which covers providers in FI_CONTEXT(2) mode. */
typedef struct rg__ofi_op rg__ofi_op_t;
struct rg__ofi_op {
    struct fi_context2 ctx;
    rg_xreq_t         *req;     /* NULL while free and for greetings */
    rg__ofi_op_t      *next;    /* free list */
    uint64_t           index;   /* the fragment: 0 is the message or head */
    size_t             len;     /* send: bytes; receive: room posted */
    void              *bounce;  /* a head staged in a bounce buffer */
    void              *scratch; /* receive: a fragment beyond the buffer's end */
    int                greet;   /* a greeting of open */
};

typedef struct rg__ofi_chunk rg__ofi_chunk_t;
struct rg__ofi_chunk {
    rg__ofi_chunk_t *next;
    rg__ofi_op_t     ops[RG__OFI_OP_CHUNK];
};

typedef struct rg__ofi_peer {
    fi_addr_t addr;
    int       pid;
    int       local;   /* same host and pid namespace: liveness by pid */
    int       dead;
    unsigned  waits;   /* requests naming this peer not yet complete */
    uint64_t  train;   /* next train number towards this peer */
} rg__ofi_peer_t;

typedef struct rg__ofi {
    rg_xport_t         super;
    char              *name;               /* the full transport name */
    char              *source;             /* the address RG_OFI_IFACE/SUBNET chose */
    struct fi_info    *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq     *cq;
    struct fid_av     *av;
    struct fid_ep     *ep;
    rg__ofi_peer_t    *peers;
    rg__ofi_chunk_t   *chunks;
    rg__ofi_op_t      *free_ops;
    void              *bounces;            /* free buffers of head bytes */
    rg_xreq_t         *txq, *txq_last;     /* sends with fragments left to post */
    rg_xreq_t         *rxq, *rxq_last;     /* receives not yet posted */
    rg_xreq_t         *contq, *contq_last; /* receives with fragments left to post */
    unsigned           any_waits;          /* ANY_SOURCE receives not complete */
    rg_status_t        failed;
    int                cq_wait;            /* the CQ has a wait object */
    int                inject;
    int                send_safe;          /* RG_OFI_SEND_SAFE */
    size_t             inject_size;
    size_t             head;               /* agreed by all ranks */
    size_t             frag;               /* agreed by all ranks */
    uint64_t           train_mask;         /* train numbers that fit a tag */
    unsigned           tag_bits;
    int                greet_left;         /* greetings of open not complete */
    uint64_t           live_check_ns;
    int                rma;                /* every rank's endpoint has FI_RMA */
    uint64_t           mr_next;            /* the next requested memory key */
    unsigned char     *inject_buf;         /* staging of ops->inject, inject_size bytes */
    char               why_inject[240];    /* attr.why_not texts */
    char               why_win[200];
} rg__ofi_t;

/* Request scratch: priv[0] = operations in flight; priv[1] = fragments
 * posted; priv[2] = fragments in the message (a receive learns it from the
 * head); priv[3] = the train number. */
#define RG__OFI_INFLIGHT(req) ((req)->priv[0])
#define RG__OFI_NEXT(req)     ((req)->priv[1])
#define RG__OFI_NFRAG(req)    ((req)->priv[2])
#define RG__OFI_TRAIN(req)    ((req)->priv[3])

static inline rg__ofi_t *rg__ofi(rg_xport_t *xp)
{
    return (rg__ofi_t *)xp;
}

static inline const char *rg__ofi_prov(const rg__ofi_t *ofi)
{
    return ofi->info != NULL ? ofi->info->fabric_attr->prov_name : "?";
}

/* A request counts towards its peer's waits from posting to completion; a
 * peer found dead while something waits for it fails the transport. */
static inline void rg__ofi_wait_add(rg__ofi_t *ofi, const rg_xreq_t *req)
{
    if (req->peer == RG_XPORT_ANY_SOURCE) {
        ofi->any_waits++;
    } else {
        ofi->peers[req->peer].waits++;
    }
}

/* Shared between the files: ofi.c */
rg__ofi_op_t *rg__ofi_op_get(rg__ofi_t *ofi);
void          rg__ofi_op_put(rg__ofi_t *ofi, rg__ofi_op_t *op);
rg_status_t   rg__ofi_cq_poll(rg__ofi_t *ofi);
rg_status_t   rg__ofi_op_error(rg__ofi_t *ofi, int peer, int errnum, const char *doing,
                               const char *detail);

/* ofi_open.c */
rg_status_t   rg__ofi_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                           rg_err_t *err);
void          rg__ofi_close(rg_xport_t *xp);

/* ofi_win.c */
rg_status_t   rg__ofi_win_create(rg_xport_t *xp, void *base, size_t len, rg_xwin_t **win_p);
rg_status_t   rg__ofi_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                                rg_xreq_t *req);
void          rg__ofi_win_free(rg_xport_t *xp, rg_xwin_t *win);

#endif /* RG_XPORT_OFI_H */
