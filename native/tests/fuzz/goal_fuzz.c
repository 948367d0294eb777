/*
 * railgauge: libFuzzer target for the GOAL parser and the simulator behind
 * it (built with -DRG_FUZZ=ON by clang; tests/test_sim.py runs it for a fixed
 * time from the corpus in corpus/).
 *
 * Every input must either parse or fail with a message; a schedule that
 * parses (and is small) is simulated under LogGOPS (with rendezvous) and
 * under LoP, and must either finish with a finite makespan or fail with a
 * message (a deadlock). Anything else, and any sanitizer report, is a crash.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/goal.h"
#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) {
        __builtin_trap();
    }
}

static void simulate(rg_sim_sched_t *s, const rg_sim_params_t *p)
{
    rg_sim_result_t res;
    rg_err_t        err;
    rg_status_t     st;

    rg_err_clear(&err);
    st = rg_sim_run(s, p, &res, NULL, &err);
    if (st == RG_OK) {
        check(res.makespan >= 0 && isfinite(res.makespan));
        rg_sim_result_free(&res);
    } else {
        check(err.msg[0] != '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const rg_sim_lop_t lop = {{12, 0, 10, 0, 0, 1}, {0.5, 1, 0}, 0};
    rg_sim_params_t           loggops = {.L = 1.5, .o = 0.5, .g = 0.75, .G = 0.01,
                                         .O = 0.001, .S = 64};
    rg_sim_params_t           lopp = {.S = INFINITY, .lop = &lop};
    rg_sim_sched_t            s;
    rg_err_t                  err;
    rg_status_t               st;
    char                     *buf;
    FILE                     *f;

    if (size > (1u << 16)) {
        return 0;
    }
    buf = malloc(size + 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    f = fmemopen(buf, size ? size : 1, "r");
    if (f == NULL) {
        free(buf);
        return 0;
    }
    if (size == 0) {
        fgetc(f); /* an empty stream */
        buf[0] = '\0';
    }
    rg_err_clear(&err);
    st = rg_sim_goal_parse(f, "fuzz.goal", 1e-3, &s, &err);
    fclose(f);
    if (st == RG_OK) {
        if (s.nranks <= 4096 && s.nops <= 100000) {
            simulate(&s, &loggops);
            simulate(&s, &lopp);
        }
    } else {
        check(err.msg[0] != '\0');
    }
    rg_sim_sched_free(&s);
    free(buf);
    return 0;
}
