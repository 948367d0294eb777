/*
 * railgauge: bootstrap. A rank learns its rank and the job size and exchanges
 * small blobs (transport addresses) with every other rank.
 *
 * Implementations:
 *   - "launcher": started by `railgauge run`, which passes an inherited
 *     socket (RG_BOOT_FD), RG_RANK, RG_SIZE and RG_JOB_ID in the environment;
 *   - "single": no launcher in the environment: one rank, rank 0 of 1;
 *   - "mpi" (a later issue): ranks started by mpirun/mpiexec.
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

#include "base/error.h"

typedef struct rg_boot rg_boot_t;

/* Creates the bootstrap from the environment (see above). */
rg_status_t rg_boot_init(rg_boot_t **boot_p, rg_err_t *err);

/* Closes the bootstrap socket and frees the handle; NULL is allowed. */
void rg_boot_fini(rg_boot_t *boot);

int rg_boot_rank(const rg_boot_t *boot);
int rg_boot_size(const rg_boot_t *boot);

/* A job identifier shared by all ranks of one run (from RG_JOB_ID, or made
 * from the pid for a single rank); transports use it to name resources. */
const char *rg_boot_job_id(const rg_boot_t *boot);

/* Gathers len bytes from every rank into all (size * len bytes, rank order).
 * Blocks until every rank has contributed. */
rg_status_t rg_boot_allgather(rg_boot_t *boot, const void *mine, size_t len,
                              void *all, rg_err_t *err);

/* Returns when every rank has called it. */
rg_status_t rg_boot_barrier(rg_boot_t *boot, rg_err_t *err);

#endif /* RG_BOOT_BOOT_H */
