/*
 * railgauge-bench: the followers' loop that the patterns led by rank 0
 * share (bench.h, rg_bench_follow): prtt's and 1:n's ranks 1 .. P-1 take
 * control messages until the end.
 */
#include "bench.h"

int rg_bench_follow(rg_err_t *err, void *ctl, size_t ctl_len, rg_bench_recv_ctl_fn recv,
                    rg_bench_on_ctl_fn on, void *ctx)
{
    size_t len;
    int    r;

    for (;;) {
        if (recv(ctx, ctl, ctl_len, &len) != RG_OK) {
            return RG_BENCH_EXIT_FAIL;
        }
        if (len != ctl_len) {
            rg_err_set(err, RG_ERR_PARSE, "control message of %zu bytes, expected %zu", len,
                       ctl_len);
            return RG_BENCH_EXIT_FAIL;
        }
        r = on(ctx, ctl);
        if (r != 0) {
            return r > 0 ? RG_BENCH_EXIT_OK : RG_BENCH_EXIT_FAIL;
        }
    }
}
