/*
 * railgauge-sim: what the tool's files share (main.c: goal, barrier and the
 * table of subcommands; rxwin.c: rxwin).
 */
#ifndef RG_TOOLS_SIMTOOL_H
#define RG_TOOLS_SIMTOOL_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "sim/sim.h"

/* Progress on stderr, at most twice a second, from the engine's hook
 * (rg_sim_trace_t.progress). */
typedef struct rg_simtool_progress {
    double t0, last;
    int    shown;
} rg_simtool_progress_t;

double rg_simtool_now_s(void);
/* Shows progress through trace where want is 1, or -1 and stderr is a
 * terminal; starts pr's clock and returns the time (rg_simtool_now_s). */
double rg_simtool_progress_start(rg_simtool_progress_t *pr, int want, rg_sim_trace_t *trace);
/* Clears the progress line, if one was shown. */
void   rg_simtool_progress_end(rg_simtool_progress_t *pr);

/* A number of option opt: 0, or -1 after saying what is wrong. */
int     rg_simtool_parse_double(const char *opt, const char *text, double *v);
/* The parameter that option a (--L, --o, --g, --G, --O, --S) sets, or NULL. */
double *rg_simtool_loggops_field(const char *a, rg_sim_params_t *prm);
/* --range TO_BYTES,L,o,g,G,O: one more protocol range into ranges (prm's
 * table); 0, or 2 after saying what is wrong. */
int     rg_simtool_parse_range(const char *text, rg_sim_params_t *prm, rg_sim_range_t *ranges);

/* One JSON object on stdout: begun in a new buffer of cap bytes (0, or 1
 * after saying there is no memory for it), then ended, written as one line
 * and its buffer freed (0, or 1 after saying what failed). */
int rg_simtool_json_begin(rg_json_t *js, size_t cap);
int rg_simtool_json_end(rg_json_t *js);

/* The subcommands' handlers (argv[1] their name). */
int rg_simtool_rxwin_main(int argc, char **argv); /* rxwin.c */

#endif /* RG_TOOLS_SIMTOOL_H */
