/*
 * railgauge: the simulator's table of models (engine_int.h says what a model
 * is). A new model is its file, model_<name>.c, defining the hooks as
 * rg__sim_model_<name>, and one line in RG__SIM_MODELS below (and its file
 * in native/CMakeLists.txt's RG_SIM_MODEL_SOURCES).
 */
#include "sim/engine_int.h"

/* The models by name, in the order their checks and set-ups run: where a
 * run is given several, the first that refuses another names the problem. */
#define RG__SIM_MODELS(X) \
    X(lop)    /* model_lop.c: LoP's o_s(p) and L(p) instead of L, o, g */ \
    X(rxwin)  /* model_rxwin.c: the shared receive window, RNR and retries */ \
    X(rails)  /* model_rails.c: several rails per NIC, whole or striped */ \
    X(duplex) /* model_duplex.c: both ends signalling at once */

#define RG__SIM_MODEL_DECLARE(name) extern const rg__sim_model_t rg__sim_model_##name;
#define RG__SIM_MODEL_ENTRY(name)   &rg__sim_model_##name,

RG__SIM_MODELS(RG__SIM_MODEL_DECLARE)

const rg__sim_model_t *const rg__sim_models[] = {RG__SIM_MODELS(RG__SIM_MODEL_ENTRY) NULL};

_Static_assert(sizeof(rg__sim_models) / sizeof(rg__sim_models[0]) - 1 <= RG__SIM_MODELS_MAX,
               "more models than RG__SIM_MODELS_MAX (engine_int.h)");
