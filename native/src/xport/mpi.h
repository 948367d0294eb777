/*
 * railgauge: the "mpi" transport's handle head, shared by its two halves
 * (internal to xport/):
 *
 *   mpi_forward.c  in the tools: the registry's ops table, every slot of which
 *                  forwards to the plugin, so that the transport is listed and
 *                  found like any other while MPI stays out of the tools;
 *   mpi.c          in each MPI plugin (built with mpicc.openmpi, mpicc.mpich):
 *                  MPI point-to-point on a duplicate of MPI_COMM_WORLD, with
 *                  mpi_open.c (open, close) and mpi_int.h (their private
 *                  header).
 */
#ifndef RG_XPORT_MPI_H
#define RG_XPORT_MPI_H

#include "xport/xport.h"

/* Every mpi handle starts with this. */
typedef struct rg_xport_mpi_head {
    rg_xport_t            super;
    const rg_xport_ops_t *impl;  /* the plugin's functions */
} rg_xport_mpi_head_t;

#endif /* RG_XPORT_MPI_H */
