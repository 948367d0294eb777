/*
 * railgauge: the simulator's rails from text (docs/sim.md "Rails"); the
 * model (rg_sim_rails_t) is in sim.h, the engine's part in model_rails.c.
 */
#ifndef RG_SIM_RAILS_H
#define RG_SIM_RAILS_H

#include "sim/sim.h"

/* "G0,G1,...": one rail per value, each its G (us/byte, above 0); the other
 * parameters of r are left as they are. */
rg_status_t rg_sim_rails_parse_g(const char *text, rg_sim_rails_t *r, rg_err_t *err);

/* A rails.json (`railgauge gauge --rails`) of len bytes, named `name` in
 * messages: every rail's G_us_per_byte (required, above 0), L_us, o_us and
 * g_us (optional; null or absent: the message's own) into r (nrails set,
 * the rest of r left as it is); the policy it names (-1 where none) and
 * its weights (nweights 0 where none, else one per rail, each above 0).
 * The whole text must be JSON. */
rg_status_t rg_sim_rails_parse_json(const char *text, size_t len, const char *name,
                                    rg_sim_rails_t *r, int *policy, double *weights,
                                    int *nweights, rg_err_t *err);

#endif /* RG_SIM_RAILS_H */
