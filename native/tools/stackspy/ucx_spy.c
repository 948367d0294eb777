/*
 * railgauge stackspy: an LD_PRELOAD library that logs the UCX tag messages an
 * MPI stack sends and posts, to see which collective algorithm really ran
 * (MPICH's collectives call UCX below PMPI, where no PMPI tool sees them).
 *
 * It wraps ucp_tag_send_nb/_nbr/_nbx, ucp_tag_send_sync_nb/_nbx and
 * ucp_tag_recv_nb/_nbr/_nbx (dlsym RTLD_NEXT) and ucp_ep_create (the k-th
 * endpoint a process creates is world rank k's: MPICH's ch4:ucx creates them
 * in rank order at init, src/mpid/ch4/netmod/ucx/ucx_init.c), and
 * MPI_Barrier (to bracket the barriers: "B <n>" before the n-th call, "E <n>"
 * after it). Each line of $RG_STACKSPY_DIR/spy.<PMI_RANK> is one event:
 *
 *   S <dest-rank> <tag>      a send (tag: the 64-bit UCX tag, in hex)
 *   R <tag> <mask>           a posted receive
 *   B <n> / E <n>            the n-th MPI_Barrier begins / ends
 *
 * The tag is decoded in Python (railgauge.stacks.mpich.decode_ucx_tag).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <ucp/api/ucp.h>

#define SPY_MAX_EPS 4096

static FILE       *spy_out;
static int         spy_failed;
static ucp_ep_h    spy_eps[SPY_MAX_EPS];
static int         spy_neps;
static long        spy_nbarrier;

static void *spy_next(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);

    if (fn == NULL) {
        fprintf(stderr, "stackspy: %s not found below the spy\n", name);
        abort();
    }
    return fn;
}

static FILE *spy_file(void)
{
    const char *dir, *rank;
    char        path[4096];

    if (spy_out != NULL || spy_failed) {
        return spy_out;
    }
    dir = getenv("RG_STACKSPY_DIR");
    rank = getenv("PMI_RANK");
    if (dir == NULL || rank == NULL) {
        spy_failed = 1;
        return NULL;
    }
    snprintf(path, sizeof(path), "%s/spy.%s", dir, rank);
    spy_out = fopen(path, "w");
    if (spy_out == NULL) {
        spy_failed = 1;
    }
    return spy_out;
}

static int spy_rank_of(ucp_ep_h ep)
{
    int i;

    for (i = 0; i < spy_neps; i++) {
        if (spy_eps[i] == ep) {
            return i;
        }
    }
    return -1;
}

static void spy_send(ucp_ep_h ep, ucp_tag_t tag)
{
    FILE *f = spy_file();

    if (f != NULL) {
        fprintf(f, "S %d %016llx\n", spy_rank_of(ep), (unsigned long long)tag);
    }
}

static void spy_recv(ucp_tag_t tag, ucp_tag_t mask)
{
    FILE *f = spy_file();

    if (f != NULL) {
        fprintf(f, "R %016llx %016llx\n", (unsigned long long)tag, (unsigned long long)mask);
    }
}

ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t *params, ucp_ep_h *ep_p)
{
    static ucs_status_t (*next)(ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *);
    ucs_status_t st;

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_ep_create");
    }
    st = next(worker, params, ep_p);
    if (st == UCS_OK && spy_neps < SPY_MAX_EPS) {
        spy_eps[spy_neps++] = *ep_p;
    }
    return st;
}

ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_send_callback_t cb)
{
    static ucs_status_ptr_t (*next)(ucp_ep_h, const void *, size_t, ucp_datatype_t, ucp_tag_t,
                                    ucp_send_callback_t);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_send_nb");
    }
    spy_send(ep, tag);
    return next(ep, buffer, count, datatype, tag, cb);
}

ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, void *req)
{
    static ucs_status_t (*next)(ucp_ep_h, const void *, size_t, ucp_datatype_t, ucp_tag_t,
                                void *);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_send_nbr");
    }
    spy_send(ep, tag);
    return next(ep, buffer, count, datatype, tag, req);
}

ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t *param)
{
    static ucs_status_ptr_t (*next)(ucp_ep_h, const void *, size_t, ucp_tag_t,
                                    const ucp_request_param_t *);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_send_nbx");
    }
    spy_send(ep, tag);
    return next(ep, buffer, count, tag, param);
}

ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                      ucp_datatype_t datatype, ucp_tag_t tag,
                                      ucp_send_callback_t cb)
{
    static ucs_status_ptr_t (*next)(ucp_ep_h, const void *, size_t, ucp_datatype_t, ucp_tag_t,
                                    ucp_send_callback_t);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_send_sync_nb");
    }
    spy_send(ep, tag);
    return next(ep, buffer, count, datatype, tag, cb);
}

ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                       ucp_tag_t tag, const ucp_request_param_t *param)
{
    static ucs_status_ptr_t (*next)(ucp_ep_h, const void *, size_t, ucp_tag_t,
                                    const ucp_request_param_t *);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_send_sync_nbx");
    }
    spy_send(ep, tag);
    return next(ep, buffer, count, tag, param);
}

ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask,
                                 ucp_tag_recv_callback_t cb)
{
    static ucs_status_ptr_t (*next)(ucp_worker_h, void *, size_t, ucp_datatype_t, ucp_tag_t,
                                    ucp_tag_t, ucp_tag_recv_callback_t);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_recv_nb");
    }
    spy_recv(tag, tag_mask);
    return next(worker, buffer, count, datatype, tag, tag_mask, cb);
}

ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask,
                              void *req)
{
    static ucs_status_t (*next)(ucp_worker_h, void *, size_t, ucp_datatype_t, ucp_tag_t,
                                ucp_tag_t, void *);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_recv_nbr");
    }
    spy_recv(tag, tag_mask);
    return next(worker, buffer, count, datatype, tag, tag_mask, req);
}

ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void *buffer, size_t count, ucp_tag_t tag,
                                  ucp_tag_t tag_mask, const ucp_request_param_t *param)
{
    static ucs_status_ptr_t (*next)(ucp_worker_h, void *, size_t, ucp_tag_t, ucp_tag_t,
                                    const ucp_request_param_t *);

    if (next == NULL) {
        *(void **)&next = spy_next("ucp_tag_recv_nbx");
    }
    spy_recv(tag, tag_mask);
    return next(worker, buffer, count, tag, tag_mask, param);
}

int MPI_Barrier(MPI_Comm comm)
{
    FILE *f = spy_file();
    long  n = ++spy_nbarrier;
    int   rc;

    if (f != NULL) {
        fprintf(f, "B %ld\n", n);
    }
    rc = PMPI_Barrier(comm);
    if (f != NULL) {
        fprintf(f, "E %ld\n", n);
        fflush(f);
    }
    return rc;
}
