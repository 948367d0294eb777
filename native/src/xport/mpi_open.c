/*
 * railgauge: the "mpi" transport's open, close and the description of the
 * MPI library, inside each MPI plugin. See mpi.c for the design; mpi_int.h
 * is the private header.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "boot/boot_mpi.h"
#include "xport/mpi.h"
#include "xport/mpi_int.h"

/* ---- setup --------------------------------------------------------------------- */

/* "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"; MPICH's many lines
 * "MPICH Version:  4.0.2" and "MPICH Device:  ch4:ucx" -> "MPICH 4.0.2" and
 * "ch4:ucx"; anything else: its first line. */
static void rg__mpi_value_of(const char *text, const char *key, char *out, size_t cap)
{
    const char *p = strstr(text, key);
    size_t      n;

    out[0] = '\0';
    if (p == NULL) {
        return;
    }
    p += strlen(key);
    p += strspn(p, " \t");
    n = strcspn(p, "\r\n");
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) {
        n--;
    }
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

static void rg__mpi_describe(rg__mpi_t *mpi)
{
    char   text[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    char   value[128];
    int    len = 0;
    size_t n;

    memset(text, 0, sizeof(text));
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) {
        snprintf(text, sizeof(text), "unknown %s library", RG_MPI_FLAVOUR_NAME);
    }
    MPI_Get_version(&mpi->mpi_major, &mpi->mpi_minor);
    n = strcspn(text, "\r\n");
    snprintf(mpi->version_line, sizeof(mpi->version_line), "%.*s",
             (int)(n < sizeof(mpi->version_line) ? n : sizeof(mpi->version_line) - 1), text);
    mpi->device[0] = '\0';
    if (strncmp(text, "Open MPI", 8) == 0) {
        n = strcspn(text, ",\r\n");
        snprintf(mpi->library, sizeof(mpi->library), "%.*s",
                 (int)(n < sizeof(mpi->library) ? n : sizeof(mpi->library) - 1), text);
    } else if (strstr(text, "MPICH Version:") != NULL) {
        rg__mpi_value_of(text, "MPICH Version:", value, sizeof(value));
        snprintf(mpi->library, sizeof(mpi->library), "MPICH %s", value);
        rg__mpi_value_of(text, "MPICH Device:", mpi->device, sizeof(mpi->device));
    } else {
        snprintf(mpi->library, sizeof(mpi->library), "%.*s",
                 (int)sizeof(mpi->library) - 1, mpi->version_line);
    }
}

void rg__mpi_close(rg_xport_t *xp)
{
    rg__mpi_t  *mpi = rg__mpi(xp);
    rg_xreq_t  *req;
    void       *b;
    size_t      k;
    int         i, finalized = 0, cancelled;

    MPI_Finalized(&finalized);
    /* Windows still open (a caller that did not free them) are dropped from
     * the list only: freeing them is collective. */
    mpi->wins = NULL;
    for (i = 0; i < mpi->nflight && !finalized; i++) {
        /* Receives still waiting for a message (an upper layer's posted
         * buffers) are cancelled. Anything else still in flight is the
         * caller's mistake: it is let go, and as MPI may still write into
         * its bounce or scratch buffer, that buffer is not freed. */
        req       = mpi->fl_own[i];
        cancelled = 0;
        if ((RG__MPI_FLAGS(req) & RG__MPI_F_CTL) && MPI_Cancel(&mpi->fl_req[i]) == MPI_SUCCESS &&
            MPI_Wait(&mpi->fl_req[i], MPI_STATUS_IGNORE) == MPI_SUCCESS) {
            cancelled = 1;
            free(rg__mpi_ptr(RG__MPI_BOUNCE(req)));
            RG__MPI_BOUNCE(req) = 0;
        }
        if (!cancelled && mpi->fl_req[i] != MPI_REQUEST_NULL &&
            !(RG__MPI_FLAGS(req) & RG__MPI_F_PERS)) {
            MPI_Request_free(&mpi->fl_req[i]);
        }
        /* Freeing a datatype that a pending operation uses is allowed. */
        rg__mpi_free_type(req);
    }
    /* Persistent sends: an active one is freed once it completes. */
    for (k = 0; k < mpi->pers_cap && !finalized; k++) {
        if (mpi->pers[k].r != MPI_REQUEST_NULL) {
            MPI_Request_free(&mpi->pers[k].r);
        }
    }
    free(mpi->pers);
    free(mpi->lst_req);
    free(mpi->lst_own);
    while ((b = mpi->bounces) != NULL) {
        memcpy(&mpi->bounces, b, sizeof(void *));
        free(b);
    }
    if (!finalized) {
        if (mpi->ctl != MPI_COMM_NULL) {
            MPI_Comm_free(&mpi->ctl);
        }
        if (mpi->bulk != MPI_COMM_NULL) {
            MPI_Comm_free(&mpi->bulk);
        }
    }
    free(mpi->fl_done);
    free(mpi->fl_st);
    free(mpi->fl_idx);
    free(mpi->fl_own);
    free(mpi->fl_req);
    free(mpi->same_host);
    free(mpi->pids);
    free(mpi->long_sent);
    free(mpi);
}

rg_status_t rg__mpi_open(void *ctx, rg_xport_t **xp_p, rg_err_t *err)
{
    const rg_boot_mpi_t *boot = ctx;
    rg__mpi_t           *mpi;
    char                 text[MPI_MAX_ERROR_STRING];
    long long            mine[3], all[3] = {0, 0, 0};
    void                *attr = NULL;
    char                 myhost[MPI_MAX_PROCESSOR_NAME], *hosts = NULL;
    int32_t              mypid;
    int                  flag = 0, rc, len = 0, i;

    mpi = calloc(1, sizeof(*mpi));
    if (mpi != NULL) {
        mpi->ctl       = MPI_COMM_NULL;
        mpi->bulk      = MPI_COMM_NULL;
        mpi->long_sent = calloc((size_t)boot->size, sizeof(*mpi->long_sent));
        mpi->pids      = calloc((size_t)boot->size, sizeof(*mpi->pids));
        mpi->same_host = calloc((size_t)boot->size, 1);
        hosts          = calloc((size_t)boot->size, MPI_MAX_PROCESSOR_NAME);
    }
    /* Every rank takes part in the collectives below even when its own
     * allocation failed, so that all fail together instead of waiting; the
     * framing threshold must be the same everywhere. */
    mine[0] = mpi != NULL && mpi->long_sent != NULL && mpi->pids != NULL &&
              mpi->same_host != NULL && hosts != NULL;
    mine[1] = (long long)boot->short_max;
    mine[2] = -(long long)boot->short_max;
    rc      = MPI_Allreduce(mine, all, 3, MPI_LONG_LONG, MPI_MIN, boot->comm);
    if (rc != MPI_SUCCESS || !all[0] || all[1] != -all[2]) {
        free(hosts);
        if (mpi != NULL) {
            free(mpi->same_host);
            free(mpi->pids);
            free(mpi->long_sent);
            free(mpi);
        }
        if (rc != MPI_SUCCESS) {
            rg_boot_mpi_strerror(rc, text, sizeof(text));
            return rg_err_set(err, RG_ERR_IO, "MPI_Allreduce while opening the mpi "
                              "transport failed: %s", text);
        }
        if (all[1] != -all[2]) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_MPI_SHORT_MAX differs between ranks (%lld to %lld bytes; "
                              "this rank: %zu): set it the same for all (mpirun -x, "
                              "mpiexec -genv)", all[1], -all[2], boot->short_max);
        }
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the mpi transport for %d "
                          "ranks (on this rank or another)", boot->size);
    }
    /* Pids and hosts, so that an MPI error can be told to be a peer's death. */
    mypid = (int32_t)getpid();
    memset(myhost, 0, sizeof(myhost));
    MPI_Get_processor_name(myhost, &len);
    rc = MPI_Allgather(&mypid, 1, MPI_INT32_T, mpi->pids, 1, MPI_INT32_T, boot->comm);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Allgather(myhost, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts,
                           MPI_MAX_PROCESSOR_NAME, MPI_CHAR, boot->comm);
    }
    for (i = 0; rc == MPI_SUCCESS && i < boot->size; i++) {
        mpi->same_host[i] = strncmp(hosts + (size_t)i * MPI_MAX_PROCESSOR_NAME, myhost,
                                    MPI_MAX_PROCESSOR_NAME) == 0;
    }
    free(hosts);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_dup(boot->comm, &mpi->ctl);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_dup(boot->comm, &mpi->bulk);
    }
    if (rc != MPI_SUCCESS) {
        rg_boot_mpi_strerror(rc, text, sizeof(text));
        rg__mpi_close(&mpi->head.super);
        return rg_err_set(err, RG_ERR_IO, "MPI_Allgather or MPI_Comm_dup for the mpi "
                          "transport failed: %s", text);
    }
    MPI_Comm_set_errhandler(mpi->ctl, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(mpi->bulk, MPI_ERRORS_RETURN);
    /* MPI guarantees tags up to at least 32767; most allow far more. */
    mpi->tag_ub = 32767;
    if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag) == MPI_SUCCESS && flag &&
        attr != NULL && *(int *)attr > 1) {
        mpi->tag_ub = *(int *)attr;
    }
    mpi->short_max                    = boot->short_max;
    mpi->head.impl                    = &rg__mpi_impl_ops;
    mpi->head.super.attr.name         = "mpi";
    mpi->head.super.attr.same_host    = 0;
    mpi->head.super.attr.max_msg_size = SIZE_MAX;
    mpi->head.super.attr.inject_size  = 0;
    mpi->head.super.attr.can_get      = 0;
    mpi->head.super.attr.why_not[RG_XPORT_OPT_INJECT] =
        "MPI has no inline (request-free) send; MPI_Isend of a small message is already "
        "eager, which is the single mode";
    mpi->head.super.rank              = boot->rank;
    mpi->head.super.size              = boot->size;
    mpi->boot                         = boot;
    mpi->failed                       = RG_OK;
    rg__mpi_describe(mpi);
    *xp_p = &mpi->head.super;
    return RG_OK;
}

rg_status_t rg__mpi_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    rg__mpi_t *mpi = rg__mpi(xp);
    rg_json_t  js;
    char       version[16];

    snprintf(version, sizeof(version), "%d.%d", mpi->mpi_major, mpi->mpi_minor);
    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "library", mpi->library);
    rg_json_kv_string(&js, "mpi_version", version);
    rg_json_kv_string(&js, "flavour", RG_MPI_FLAVOUR_NAME);
    if (mpi->device[0] != '\0') {
        rg_json_kv_string(&js, "device", mpi->device);
    }
    rg_json_kv_string(&js, "library_version", mpi->version_line);
    rg_json_kv_uint(&js, "short_max", mpi->short_max);
    rg_json_kv_string(&js, "list_post", "MPI_Startall of cached persistent sends (MPI_Send_init)");
    rg_json_kv_string(&js, "launcher", mpi->boot->launcher);
    rg_json_kv_string(&js, "plugin", mpi->boot->plugin_path);
    rg_json_object_end(&js);
    return js.status;
}
