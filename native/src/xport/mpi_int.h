/*
 * railgauge: the mpi plugin's private header, shared by mpi.c (the data
 * path, memory windows, the ops table and the plugin's exported symbol) and
 * mpi_open.c (open, close, the library's description). Both are built into
 * the MPI plugins only, with each flavour's mpicc; the design is described
 * at the top of mpi.c.
 */
#ifndef RG_XPORT_MPI_INT_H
#define RG_XPORT_MPI_INT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "boot/boot_mpi.h"
#include "xport/mpi.h"

#define RG__MPI_LIB_MAX   160

_Static_assert(sizeof(MPI_Datatype) <= sizeof(uint64_t), "MPI_Datatype fits in priv");

typedef struct rg__mpi_pers {
    MPI_Request r;        /* MPI_REQUEST_NULL: an empty slot */
    const void *buf;
    size_t      len;
    int         peer;
    int         active;   /* started and not complete */
    uint64_t    used;     /* list post that used it last */
} rg__mpi_pers_t;

/* A completed MPI request, kept between MPI_Testsome and its handling. */
typedef struct rg__mpi_done {
    rg_xreq_t *req;
    int        code;
    MPI_Status st;
} rg__mpi_done_t;

typedef struct rg__mpi {
    rg_xport_mpi_head_t  head;
    MPI_Comm             ctl, bulk;
    size_t               short_max;
    int                  tag_ub;     /* long messages use tags 1 .. tag_ub */
    int32_t             *pids;       /* every rank's pid, for messages */
    unsigned char       *same_host;  /* per rank: 1 if on this host (pids mean something) */
    uint32_t            *long_sent;  /* per peer: long messages sent to it */
    void                *bounces;    /* free bounce buffers, linked through
                                      * their first bytes */
    /* Requests that MPI holds, dense, in posting order. */
    MPI_Request         *fl_req;
    rg_xreq_t          **fl_own;
    int                 *fl_idx;
    MPI_Status          *fl_st;
    rg__mpi_done_t      *fl_done;
    int                  nflight, flight_cap;
    rg_xwin_t           *wins;       /* open memory windows */
    rg__mpi_pers_t      *pers;       /* list posts' persistent sends, pers_cap slots */
    size_t               pers_cap;
    uint64_t             lists;      /* list posts so far */
    MPI_Request         *lst_req;    /* scratch of one MPI_Startall */
    rg_xreq_t          **lst_own;
    size_t               lst_cap;
    unsigned             completions;  /* requests completed since progress looked */
    rg_status_t          failed;
    const rg_boot_mpi_t *boot;
    int                  mpi_major, mpi_minor;
    char                 library[RG__MPI_LIB_MAX];  /* "Open MPI v4.1.4" */
    char                 device[64];                /* MPICH's device, else "" */
    char                 version_line[256];         /* first line of the version */
} rg__mpi_t;

/* Request scratch. Sends: priv[0] = the length message (8 bytes, sent from
 * here); priv[1] = MPI requests still pending. Receives: priv[0] = the bounce
 * buffer; priv[1] = the scratch buffer of a truncated long message. Both:
 * priv[2] = a derived datatype to free at completion; priv[3] = flags. */
#define RG__MPI_LENMSG(req)  ((req)->priv[0])
#define RG__MPI_BOUNCE(req)  ((req)->priv[0])
#define RG__MPI_PENDING(req) ((req)->priv[1])
#define RG__MPI_SCRATCH(req) ((req)->priv[1])
#define RG__MPI_DTYPE(req)   ((req)->priv[2])
#define RG__MPI_FLAGS(req)   ((req)->priv[3])
#define RG__MPI_F_DTYPE      1u   /* priv[2] holds a derived datatype */
#define RG__MPI_F_PAYLOAD    2u   /* a receive waits for a long message's payload */
#define RG__MPI_F_CTL        4u   /* a receive waits on ctl (cancelled at close) */
#define RG__MPI_F_PERS       8u   /* a send on a cached persistent request; priv[2] its slot */

static inline rg__mpi_t *rg__mpi(rg_xport_t *xp)
{
    return (rg__mpi_t *)xp;
}

static inline void *rg__mpi_ptr(uint64_t v)
{
    return (void *)(uintptr_t)v;
}

/* Frees the request's derived datatype, if it has one. */
static inline void rg__mpi_free_type(rg_xreq_t *req)
{
    MPI_Datatype type;

    if (RG__MPI_FLAGS(req) & RG__MPI_F_DTYPE) {
        memcpy(&type, &RG__MPI_DTYPE(req), sizeof(type));
        MPI_Type_free(&type);
        RG__MPI_FLAGS(req) &= ~(uint64_t)RG__MPI_F_DTYPE;
    }
}

/* mpi.c: the functions the forwarding table in the tools calls. */
extern const rg_xport_ops_t rg__mpi_impl_ops;

/* mpi_open.c */
rg_status_t rg__mpi_open(void *ctx, rg_xport_t **xp_p, rg_err_t *err);
void        rg__mpi_close(rg_xport_t *xp);
rg_status_t rg__mpi_info_json(rg_xport_t *xp, char *buf, size_t cap);

#endif /* RG_XPORT_MPI_INT_H */
