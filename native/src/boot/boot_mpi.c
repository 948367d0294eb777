/*
 * railgauge: the bootstrap over MPI, inside the MPI plugin (built once per
 * flavour with its compiler wrapper; see mpi_plugin.h). Rank and size come
 * from MPI_COMM_WORLD; allgather and barrier are MPI collectives on a
 * duplicate of it, whose errors are returned, not fatal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "boot/boot_mpi.h"

void rg_boot_mpi_strerror(int code, char *buf, size_t cap)
{
    char text[MPI_MAX_ERROR_STRING];
    int  len = 0;

    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS || len <= 0) {
        snprintf(buf, cap, "MPI error %d", code);
        return;
    }
    snprintf(buf, cap, "%.*s", len, text);
}

static rg_status_t rg__boot_mpi_fail(rg_err_t *err, int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];

    rg_boot_mpi_strerror(code, text, sizeof(text));
    return rg_err_set(err, RG_ERR_BOOTSTRAP, "%s failed: %s", what, text);
}

rg_status_t rg_boot_mpi_init(const rg_mpi_boot_args_t *args, void **ctx_p, int *rank_p,
                             int *size_p, char *job_id, size_t job_id_cap, rg_err_t *err)
{
    rg_boot_mpi_t *ctx;
    struct timespec ts;
    rg_status_t     status;
    char            id[64];
    int             inited = 0, rc;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the MPI bootstrap");
    }
    ctx->comm     = MPI_COMM_NULL;
    ctx->launcher = args->launcher;
    ctx->short_max = args->short_max;
    snprintf(ctx->plugin_path, sizeof(ctx->plugin_path), "%s", args->plugin_path);
    MPI_Initialized(&inited);
    if (!inited) {
        /* Errors of MPI_Init itself are fatal to the process in both MPIs:
         * the library prints its own message and the launcher ends the job. */
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
            free(ctx);
            return rg_err_set(err, RG_ERR_BOOTSTRAP, "MPI_Init failed (%s plugin %s)",
                              args->flavour, args->plugin_path);
        }
        ctx->finalize = 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx->size);

    /* A plugin of the other flavour does not see the launcher's job: its
     * MPI_Init makes a singleton, each rank alone. */
    if (args->env_size > 0 && ctx->size != args->env_size) {
        status = rg_err_set(err, RG_ERR_BOOTSTRAP,
                   "the %s MPI plugin %s sees %d rank(s), but %s started %d: the "
                   "plugin's MPI is not the launcher's (start with the launcher of "
                   "the plugin's flavour, or set RG_MPI_FLAVOUR to the launcher's)",
                   RG_MPI_FLAVOUR_NAME, args->plugin_path, ctx->size, args->launcher,
                   args->env_size);
        goto err_fini;
    }
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &ctx->comm);
    if (rc != MPI_SUCCESS) {
        status = rg__boot_mpi_fail(err, rc, "MPI_Comm_dup");
        goto err_fini;
    }
    MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);

    /* The same form as the launcher's ids, "<pid>-<8 hex>", with rank 0's
     * pid: the shm transport finds stale segments by that pid. */
    memset(id, 0, sizeof(id));
    if (ctx->rank == 0) {
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(id, sizeof(id), "%ld-%08lx", (long)getpid(),
                 (unsigned long)(((unsigned long)ts.tv_nsec ^ (unsigned long)ts.tv_sec) &
                                 0xffffffffUL));
    }
    rc = MPI_Bcast(id, (int)sizeof(id), MPI_CHAR, 0, ctx->comm);
    if (rc != MPI_SUCCESS) {
        status = rg__boot_mpi_fail(err, rc, "MPI_Bcast of the job id");
        goto err_fini;
    }
    id[sizeof(id) - 1] = '\0';
    snprintf(job_id, job_id_cap, "%s", id);
    *rank_p = ctx->rank;
    *size_p = ctx->size;
    *ctx_p  = ctx;
    return RG_OK;

err_fini:
    rg_boot_mpi_fini(ctx);
    return status;
}

void rg_boot_mpi_fini(void *vctx)
{
    rg_boot_mpi_t *ctx = vctx;
    int             finalized = 0;

    if (ctx == NULL) {
        return;
    }
    MPI_Finalized(&finalized);
    if (!finalized) {
        if (ctx->comm != MPI_COMM_NULL) {
            MPI_Comm_free(&ctx->comm);
        }
        if (ctx->finalize) {
            MPI_Finalize();
        }
    }
    free(ctx);
}

rg_status_t rg_boot_mpi_allgather(void *vctx, const void *mine, size_t len, void *all,
                                  rg_err_t *err)
{
    rg_boot_mpi_t *ctx = vctx;
    int             rc;

    if (len > INT_MAX) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "allgather of %zu bytes per rank exceeds MPI's count limit", len);
    }
    if (len == 0) {
        return rg_boot_mpi_barrier(ctx, err);
    }
    rc = MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, ctx->comm);
    if (rc != MPI_SUCCESS) {
        return rg__boot_mpi_fail(err, rc, "MPI_Allgather");
    }
    return RG_OK;
}

rg_status_t rg_boot_mpi_barrier(void *vctx, rg_err_t *err)
{
    rg_boot_mpi_t *ctx = vctx;
    int             rc;

    rc = MPI_Barrier(ctx->comm);
    if (rc != MPI_SUCCESS) {
        return rg__boot_mpi_fail(err, rc, "MPI_Barrier");
    }
    return RG_OK;
}
