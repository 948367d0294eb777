/*
 * railgauge: the interface between the tools and an MPI plugin.
 *
 * MPI code is built once per MPI flavour with that flavour's own compiler
 * wrapper (mpicc.openmpi, mpicc.mpich) into a shared object,
 * librailgauge-mpi-<flavour>.so, and loaded at run time by the bootstrap
 * (mpi_load.c) when the process was started by that flavour's launcher. So one
 * railgauge-bench binary runs under `railgauge run`, mpirun.openmpi and
 * mpiexec.mpich, and two MPI libraries never meet in one process.
 *
 * A plugin exports exactly one symbol, RG_MPI_PLUGIN_SYMBOL, a function that
 * returns its table. The loader refuses a table whose abi, version or struct
 * sizes differ from its own (a plugin left over from another build).
 *
 * A plugin holds both halves of the MPI support: the bootstrap below
 * (boot_mpi.c) and the "mpi" transport (xport/mpi.c), whose ops table is
 * declared here only by its struct tag, as boot/ does not know xport/.
 */
#ifndef RG_BOOT_MPI_PLUGIN_H
#define RG_BOOT_MPI_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define RG_MPI_PLUGIN_ABI    1u
#define RG_MPI_PLUGIN_SYMBOL "rg_mpi_plugin_get"
#define RG_MPI_PLUGIN_PREFIX "librailgauge-mpi-"

struct rg_xport;
struct rg_xport_ops;

/* What the loader learned from the launcher's environment. */
typedef struct rg_mpi_boot_args {
    const char *flavour;      /* "openmpi" or "mpich": the launcher that started us */
    const char *launcher;     /* "mpirun.openmpi", "mpiexec.mpich": for messages */
    int         env_size;     /* the job size the launcher's variables say, or -1 */
    const char *plugin_path;  /* where this plugin was loaded from */
    size_t      short_max;    /* RG_MPI_SHORT_MAX, for the transport */
} rg_mpi_boot_args_t;

typedef struct rg_mpi_plugin {
    uint32_t    abi;          /* RG_MPI_PLUGIN_ABI */
    uint32_t    sizeof_err;   /* sizeof(rg_err_t) as the plugin was built */
    uint32_t    sizeof_xport; /* sizeof(rg_xport_t), checked by xport/ */
    uint32_t    sizeof_xreq;  /* sizeof(rg_xreq_t), checked by xport/ */
    uint32_t    sizeof_args;  /* sizeof(rg_mpi_boot_args_t) */
    const char *version;      /* RG_VERSION of the plugin's build */
    const char *flavour;      /* the flavour it was built for */

    /* MPI_Init (unless MPI is already initialized), rank, size, and a job id
     * that rank 0 makes and broadcasts. Fails, after finalizing, when MPI sees
     * another job size than the launcher's variables (a plugin of the wrong
     * flavour). *ctx_p is the plugin's state for the calls below. */
    rg_status_t (*boot_init)(const rg_mpi_boot_args_t *args, void **ctx_p, int *rank_p,
                             int *size_p, char *job_id, size_t job_id_cap, rg_err_t *err);
    /* MPI_Finalize (if boot_init initialized MPI) and frees ctx. */
    void        (*boot_fini)(void *ctx);
    /* MPI_Allgather of len bytes per rank on the bootstrap's communicator. */
    rg_status_t (*boot_allgather)(void *ctx, const void *mine, size_t len, void *all,
                                  rg_err_t *err);
    rg_status_t (*boot_barrier)(void *ctx, rg_err_t *err);

    /* The "mpi" transport (xport/mpi.c): xport_open is collective over the
     * ranks of ctx (the bootstrap's) and returns a handle whose ops and boot
     * the caller (xport/mpi_forward.c) fills in; xport holds the functions
     * that handle's forwarding ops table calls. */
    rg_status_t (*xport_open)(void *ctx, struct rg_xport **xp_p, rg_err_t *err);
    const struct rg_xport_ops *xport;
} rg_mpi_plugin_t;

typedef const rg_mpi_plugin_t *(*rg_mpi_plugin_get_fn)(void);

#endif /* RG_BOOT_MPI_PLUGIN_H */
