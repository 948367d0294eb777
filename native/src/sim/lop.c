/*
 * railgauge: the LoP model's functions for the simulator (docs/lop.md has
 * the fit, docs/sim.md how they map onto events), and freeing results.
 */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>

double rg_sim_lop_os(const rg_sim_lop_t *m, double p)
{
    return m->os[0] + (m->os[1] != 0.0 ? m->os[1] / (m->os[2] + p) : 0.0);
}

static double lop_rtt(const rg_sim_lop_t *m, double p)
{
    const double *l = m->rtt;
    double        v = l[0] / (l[1] + p) + l[2];

    if (l[3] != 0.0) {
        v -= l[3] * expm1(l[4] * (p - l[5]));
    }
    return v;
}

double rg_sim_lop_latency(const rg_sim_lop_t *m, double p)
{
    double os = rg_sim_lop_os(m, p);

    return lop_rtt(m, p) / 2.0 - ((m->list ? p * os : os) + rg_sim_lop_os(m, 1.0));
}

void rg_sim_result_free(rg_sim_result_t *res)
{
    free(res->finish);
    free(res->overhead);
    free(res->calc);
    free(res->wait);
    res->finish = res->overhead = res->calc = res->wait = NULL;
}
