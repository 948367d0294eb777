/*
 * railgauge: the GOAL schedule language of LogGOPSim, read as a stream.
 *
 *   num_ranks 2
 *   rank 0 {
 *     l1: send 8b to 1 tag 0 cpu 0 nic 0
 *     l2: recv 8b from 1 tag 0      // from -1 / tag -1: any source / tag
 *     l3: calc 100                  // nanoseconds by default (calc_unit_us)
 *     l2 requires l1
 *     l3 irequires l2
 *   }
 *
 * Sizes are bytes, with an optional suffix: b or B (bytes), kb/KB (1024),
 * mb/MB (1024^2), gb/GB (1024^3). Comments: // to the end of the line and
 * / * ... * /. Labels are local to their rank block and may be used before
 * they are defined. Memory is bounded by the largest rank block plus the
 * schedule itself. Errors name file:line:column.
 */
#ifndef RG_SIM_GOAL_H
#define RG_SIM_GOAL_H

#include <stdio.h>

#include "sim/sim.h"

/* Parses GOAL text from f (named `name` in messages) into s (initialised
 * here; free with rg_sim_sched_free even on error) and finishes it
 * (rg_sim_sched_finish). calc_unit_us: microseconds per calc unit (0.001 for
 * LogGOPSim's nanoseconds). */
rg_status_t rg_sim_goal_parse(FILE *f, const char *name, double calc_unit_us,
                              rg_sim_sched_t *s, rg_err_t *err);

#endif /* RG_SIM_GOAL_H */
