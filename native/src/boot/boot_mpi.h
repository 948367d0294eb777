/*
 * railgauge: the MPI bootstrap inside the MPI plugin (boot_mpi.c); the
 * plugin's table (xport/mpi.c) points to these. Only code built with an MPI
 * compiler wrapper includes this header.
 */
#ifndef RG_BOOT_BOOT_MPI_H
#define RG_BOOT_BOOT_MPI_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>

#include "base/error.h"
#include "boot/mpi_plugin.h"

/* The flavour this plugin is built for; CMake defines it per plugin. */
#ifndef RG_MPI_FLAVOUR_NAME
#error "RG_MPI_FLAVOUR_NAME must name the MPI flavour (openmpi, mpich)"
#endif

/* The plugin's bootstrap state (the ctx of the plugin's boot_* calls). */
typedef struct rg_boot_mpi {
    MPI_Comm    comm;       /* a duplicate of MPI_COMM_WORLD, errors returned */
    int         finalize;   /* MPI was initialized here, so it is finalized here */
    int         rank, size;
    const char *launcher;   /* "mpirun.openmpi", "mpiexec.mpich" */
    size_t      short_max;  /* RG_MPI_SHORT_MAX, for the transport */
    char        plugin_path[PATH_MAX];
} rg_boot_mpi_t;

rg_status_t rg_boot_mpi_init(const rg_mpi_boot_args_t *args, void **ctx_p, int *rank_p,
                             int *size_p, char *job_id, size_t job_id_cap, rg_err_t *err);
void        rg_boot_mpi_fini(void *ctx);
rg_status_t rg_boot_mpi_allgather(void *ctx, const void *mine, size_t len, void *all,
                                  rg_err_t *err);
rg_status_t rg_boot_mpi_barrier(void *ctx, rg_err_t *err);

/* The text of an MPI error code. */
void rg_boot_mpi_strerror(int code, char *buf, size_t cap);

#endif /* RG_BOOT_BOOT_MPI_H */
