/*
 * railgauge: tests of the byte pattern with which railgauge-bench fills and
 * checks verified messages (tools/bench/verify.c): a checked message passes,
 * and a changed byte, a stale buffer or another sender's message does not.
 */
#include <stdint.h>
#include <string.h>

#include "task.h"
#include "verify.h"

TEST_IMPL(bench_pattern_roundtrip)
{
    unsigned char buf[4099];
    size_t        sizes[] = {0, 1, 7, 8, 9, 64, 4096, 4099}, i;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        rg_bench_fill(buf, sizes[i], rg_bench_seed(3, 17, 2));
        ASSERT_INT_EQ(rg_bench_check(buf, sizes[i], rg_bench_seed(3, 17, 2)), 0);
    }
    return 0;
}

TEST_IMPL(bench_pattern_corruption)
{
    unsigned char buf[4099];
    size_t        at[] = {0, 7, 8, 2048, 4095, 4096, 4098}, i;
    uint64_t      seed = rg_bench_seed(1, 5, 0);

    for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        rg_bench_fill(buf, sizeof(buf), seed);
        buf[at[i]] ^= 0x40;
        /* A changed byte in a whole word counts the word; in the tail, itself. */
        ASSERT_INT_EQ(rg_bench_check(buf, sizeof(buf), seed), at[i] < 4096 ? 8 : 1);
    }
    /* A message of one byte, changed. */
    rg_bench_fill(buf, 1, seed);
    buf[0] ^= 1;
    ASSERT_INT_EQ(rg_bench_check(buf, 1, seed), 1);
    return 0;
}

TEST_IMPL(bench_pattern_stale)
{
    unsigned char buf[64];
    size_t        sizes[] = {1, 3, 8, 64}, i;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];

        /* The previous iteration's message, left in the buffer, fails. */
        rg_bench_fill(buf, n, rg_bench_seed(0, 41, 0));
        ASSERT(rg_bench_check(buf, n, rg_bench_seed(0, 42, 0)) > 0);
        /* So do another sender's and another slot's of the same iteration. */
        rg_bench_fill(buf, n, rg_bench_seed(2, 42, 1));
        ASSERT(rg_bench_check(buf, n, rg_bench_seed(3, 42, 1)) > 0);
        ASSERT(rg_bench_check(buf, n, rg_bench_seed(2, 42, 0)) > 0);
    }
    /* Zeroed memory (a receive that wrote nothing) fails. */
    memset(buf, 0, sizeof(buf));
    ASSERT_INT_EQ(rg_bench_check(buf, sizeof(buf), rg_bench_seed(0, 1, 0)), 64);
    return 0;
}
