/*
 * railgauge: the PMPI library's settings (pmpi.c, docs/coll.md), a config
 * table (base/config.h) under RG_PMPI_, whose former names RAILGAUGE_* are
 * still read as aliases (the RG_ name wins where both are set). Apart from
 * pmpi.c because it needs no MPI: railgauge-bench --print-config lists it
 * with every other RG_ setting.
 */
#ifndef RG_PMPI_CONFIG_H
#define RG_PMPI_CONFIG_H

#include "base/config.h"

typedef struct rg_pmpi_config {
    char barrier[RG_CONFIG_STRING_MAX];     /* BARRIER: "" none */
    char model[RG_CONFIG_PATH_MAX];         /* MODEL: "" none */
    char barrier_shm[RG_CONFIG_STRING_MAX]; /* BARRIER_SHM: auto, 1 or 0 ("": auto) */
    char verbose[RG_CONFIG_STRING_MAX];     /* VERBOSE: "" or 0 quiet, else verbose */
} rg_pmpi_config_t;

extern const rg_config_table_t rg_pmpi_config_table;
/* RAILGAUGE_BARRIER, RAILGAUGE_MODEL, RAILGAUGE_BARRIER_SHM and
 * RAILGAUGE_PMPI_VERBOSE, the names before issue 19. */
extern const rg_config_alias_t rg_pmpi_config_aliases[];

#endif /* RG_PMPI_CONFIG_H */
