/*
 * railgauge: finding and loading the MPI plugin (internal to boot/).
 */
#ifndef RG_BOOT_MPI_LOAD_H
#define RG_BOOT_MPI_LOAD_H

#include <limits.h>

#include "base/error.h"
#include "boot/mpi_plugin.h"

/* The MPI launcher this process was started by, from its environment. */
typedef struct rg_mpi_env {
    const char *flavour;   /* "openmpi" or "mpich" */
    const char *launcher;  /* "mpirun.openmpi" or "mpiexec.mpich" */
    const char *variable;  /* the variable that told: "OMPI_COMM_WORLD_SIZE", ... */
    int         size;      /* the job size it says, or -1 */
} rg_mpi_env_t;

/* A loaded plugin. */
typedef struct rg_mpi_loaded {
    void                  *dl;
    const rg_mpi_plugin_t *plugin;
    char                   path[PATH_MAX];
    size_t                 short_max;  /* RG_MPI_SHORT_MAX */
} rg_mpi_loaded_t;

/* 1 when an MPI launcher started this process (and fills env), else 0. */
int rg__boot_mpi_detect(rg_mpi_env_t *env);

/* Where railgauge's MPI launcher (python/railgauge/mpilaunch.py) listens, the
 * rank connects (a Unix stream socket named by RG_MPI_WATCH) and keeps the
 * connection until it dies (rg_boot_fini leaves it open): the launcher then
 * sees which rank's connection
 * closed first, the moment that rank began to die, before mpiexec.mpich kills
 * the others. Returns the descriptor, or -1 (not set, or no such socket on this
 * host: the watch is a diagnostic aid and never fails the bootstrap). */
int rg__boot_mpi_watch(void);

/* Finds the plugin of env's flavour (or RG_MPI_FLAVOUR, RG_MPI_PLUGIN) and
 * loads it. A missing or foreign plugin gives RG_ERR_BOOTSTRAP with a message
 * that names the path and how to build it. */
rg_status_t rg__boot_mpi_load(rg_mpi_env_t *env, rg_mpi_loaded_t *out, rg_err_t *err);

#endif /* RG_BOOT_MPI_LOAD_H */
