/*
 * railgauge: bootstrap. A rank learns its rank and the job size and exchanges
 * small blobs (transport addresses) with every other rank.
 *
 * Implementations:
 *   - "launcher": started by `railgauge run`, which passes an inherited
 *     socket (RG_BOOT_FD), RG_RANK, RG_SIZE and RG_JOB_ID in the environment;
 *   - "mpi": ranks started by mpirun.openmpi or mpiexec.mpich (their
 *     variables OMPI_COMM_WORLD_SIZE or PMI_SIZE are set, RG_BOOT_FD is not):
 *     the MPI plugin of that flavour is loaded (boot/mpi_plugin.h), MPI is
 *     initialized, rank and size come from MPI_COMM_WORLD, the collectives
 *     below are MPI_Allgather and MPI_Barrier, and rg_boot_fini() finalizes MPI;
 *   - "single": no launcher in the environment: one rank, rank 0 of 1;
 *   - "custom": made by rg_boot_custom (below), the collective a callback.
 * railgauge's own launcher wins where its variables are set.
 *
 * Wire protocol with the launcher (all integers little-endian uint32):
 *   rank -> launcher: 'A' (0x41), len, len bytes      one allgather contribution
 *   launcher -> rank: 'R' (0x52), total, total bytes  rank 0's bytes, then rank 1's, ...
 * Every rank contributes the same len to the same collective; a barrier is an
 * allgather of 0 bytes. The launcher answers once all ranks have contributed.
 * If the socket closes, the launcher is gone: calls fail with RG_ERR_BOOTSTRAP.
 */
#ifndef RG_BOOT_BOOT_H
#define RG_BOOT_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/error.h"

typedef struct rg_boot rg_boot_t;
struct rg_mpi_plugin;

/* Creates the bootstrap from the environment (see above). */
rg_status_t rg_boot_init(rg_boot_t **boot_p, rg_err_t *err);

/* Closes the bootstrap socket and frees the handle; NULL is allowed. */
void rg_boot_fini(rg_boot_t *boot);

int rg_boot_rank(const rg_boot_t *boot);
int rg_boot_size(const rg_boot_t *boot);

/* A job identifier shared by all ranks of one run (from RG_JOB_ID; made from
 * the pid for a single rank, and by rank 0 and broadcast under MPI);
 * transports use it to name resources. */
const char *rg_boot_job_id(const rg_boot_t *boot);

/* How this rank was started: "launcher", "mpi" or "single". */
const char *rg_boot_kind(const rg_boot_t *boot);

/* The loaded MPI plugin of an "mpi" bootstrap, else NULL; its path, else "";
 * the plugin's bootstrap state, which its transport opens over, else NULL. */
const struct rg_mpi_plugin *rg_boot_mpi_plugin(const rg_boot_t *boot);
const char                 *rg_boot_mpi_plugin_path(const rg_boot_t *boot);
void                       *rg_boot_mpi_context(const rg_boot_t *boot);

/* Settings of the MPI bootstrap (RG_MPI_FLAVOUR, RG_MPI_PLUGIN). */
extern const rg_config_table_t rg_boot_mpi_config_table;

/* Gathers len bytes from every rank into all (size * len bytes, rank order).
 * Blocks until every rank has contributed. */
rg_status_t rg_boot_allgather(rg_boot_t *boot, const void *mine, size_t len,
                              void *all, rg_err_t *err);

/* Returns when every rank has called it. */
rg_status_t rg_boot_barrier(rg_boot_t *boot, rg_err_t *err);

/* A bootstrap whose allgather is the caller's (kind "custom"): for a
 * transport instance opened while the job runs, over what the job already
 * has (the rails transport takes a failed rail back this way, exchanging the
 * rail's addresses over the rails still up). The barrier is an allgather of
 * nothing; rg_boot_fini frees the handle, not ctx. */
typedef rg_status_t (*rg_boot_allgather_fn)(void *ctx, const void *mine, size_t len,
                                             void *all, rg_err_t *err);
rg_status_t rg_boot_custom(int rank, int size, const char *job_id,
                           rg_boot_allgather_fn allgather, void *ctx, rg_boot_t **boot_p,
                           rg_err_t *err);

#endif /* RG_BOOT_BOOT_H */
