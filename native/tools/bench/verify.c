/*
 * railgauge-bench: the byte pattern of verified messages (verify.h).
 */
#include <string.h>

#include "verify.h"

/* The word at offset i of the pattern of seed. */
static uint64_t rg__bench_word(uint64_t seed, size_t i)
{
    return seed * 0x9e3779b97f4a7c15ull + i;
}

/* The bytes of a last partial word: its word mixed (murmur3's finalizer),
 * since the low bytes of a word alone are the same for seeds that differ
 * only in their batch (bits 16 and up). */
static uint64_t rg__bench_tail(uint64_t seed, size_t i)
{
    uint64_t x = rg__bench_word(seed, i);

    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

uint64_t rg_bench_seed(int from, uint64_t batch, uint64_t k)
{
    return ((uint64_t)from << 56) ^ (batch << 16) ^ k;
}

void rg_bench_fill(unsigned char *b, size_t n, uint64_t seed)
{
    uint64_t w;
    size_t   i;

    for (i = 0; i + 8 <= n; i += 8) {
        w = rg__bench_word(seed, i);
        memcpy(b + i, &w, 8);
    }
    if (i < n) {
        w = rg__bench_tail(seed, i);
        memcpy(b + i, &w, n - i);
    }
}

uint64_t rg_bench_check(const unsigned char *b, size_t n, uint64_t seed)
{
    uint64_t w, bad = 0;
    size_t   i, j;

    for (i = 0; i + 8 <= n; i += 8) {
        w = rg__bench_word(seed, i);
        if (memcmp(b + i, &w, 8) != 0) {
            bad += 8;
        }
    }
    if (i < n) {
        w = rg__bench_tail(seed, i);
        for (j = 0; i + j < n; j++) {
            bad += b[i + j] != ((const unsigned char *)&w)[j];
        }
    }
    return bad;
}
