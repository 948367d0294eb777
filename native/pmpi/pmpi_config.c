/*
 * railgauge: the PMPI library's settings (see pmpi_config.h). They stay
 * text, checked by pmpi.c as before the table: a barrier is parsed by coll/
 * (rg_coll_barrier_parse), BARRIER_SHM takes "" as auto, and VERBOSE takes
 * any text but "" and "0" as on, as the bare getenv did.
 */
#include "pmpi_config.h"

#include <stddef.h>

static const rg_config_field_t rg__pmpi_config_fields[] = {
    {"BARRIER", "",
     "the barrier of every communicator: linear, binomial, recdbl, dissem, nway:N, ring, "
     "kdissem:K or recexch:K "
     "(empty: the model's choice); wins over RG_PMPI_MODEL",
     offsetof(rg_pmpi_config_t, barrier), RG_CONFIG_STRING},
    {"MODEL", "",
     "a model file of `railgauge gauge` (model-loggp.json, model-flags.json), or its report "
     "directory: each communicator gets the barrier that LogP with the model's L, o and g "
     "predicts fastest (empty: on one node the built-in flag model, across nodes dissem)",
     offsetof(rg_pmpi_config_t, model), RG_CONFIG_PATH},
    {"BARRIER_SHM", "auto",
     "auto: a communicator whose ranks share a node runs its barrier on flags in an MPI "
     "shared window; 0 (on any rank: on all): always on MPI messages",
     offsetof(rg_pmpi_config_t, barrier_shm), RG_CONFIG_STRING},
    {"VERBOSE", "0",
     "anything but 0: rank 0 of each communicator says at its first barrier which barrier "
     "it got, on which engine, and why",
     offsetof(rg_pmpi_config_t, verbose), RG_CONFIG_STRING},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_pmpi_config_table = {"PMPI", rg__pmpi_config_fields};

const rg_config_alias_t rg_pmpi_config_aliases[] = {
    {"BARRIER", "RAILGAUGE_BARRIER"},
    {"MODEL", "RAILGAUGE_MODEL"},
    {"BARRIER_SHM", "RAILGAUGE_BARRIER_SHM"},
    {"VERBOSE", "RAILGAUGE_PMPI_VERBOSE"},
    {NULL, NULL}
};
