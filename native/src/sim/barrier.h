/*
 * railgauge: simulator schedules of the barrier family, built from the same
 * generator as the runtime's barrier (coll/sched.h), so that what is
 * simulated is what runs.
 */
#ifndef RG_SIM_BARRIER_H
#define RG_SIM_BARRIER_H

#include <stdint.h>

#include "base/error.h"
#include "coll/sched.h"
#include "sim/sim.h"

/* Stored schedules above this many operations are refused (RG_ERR_RANGE):
 * about 32 bytes each, plus their dependencies. */
#define RG_SIM_BARRIER_MAX_OPS (1u << 25)
/* Dissemination above this many ranks uses the generated form of
 * rg_sim_barrier_dissemination (no memory per operation), which is the
 * same schedule. */
#define RG_SIM_BARRIER_GEN_MIN_P (1u << 16)

/* Builds the barrier `spec` on P ranks into s (initialized here; finished,
 * ready for rg_sim_run). Every rank's rounds come from
 * rg_coll_barrier_plan: round r's sends (0 bytes, tag r) and receives, in
 * that order, each requiring all operations of the rank's previous
 * non-empty round. Where both rounds have several operations, a zero-length
 * calc joins them (k + m dependencies instead of k * m); it costs no time. */
rg_status_t rg_sim_barrier_build(rg_sim_sched_t *s, const rg_coll_barrier_spec_t *spec,
                                 uint32_t P, rg_err_t *err);

#endif /* RG_SIM_BARRIER_H */
