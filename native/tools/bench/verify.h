/*
 * railgauge-bench: the byte pattern that the streaming and collective
 * patterns (bw.c, coll_patterns.c) put into messages and check on arrival.
 *
 * A message's bytes are a function of a seed that names the message (its
 * sender, its batch or iteration, its place in the batch), so that a byte
 * from another message, a stale buffer or a shifted offset does not pass.
 */
#ifndef RG_TOOLS_BENCH_VERIFY_H
#define RG_TOOLS_BENCH_VERIFY_H

#include <stddef.h>
#include <stdint.h>

/* The seed of one message: the rank it came from, a batch or iteration
 * number, and an index within it (a window slot, a destination rank). */
uint64_t rg_bench_seed(int from, uint64_t batch, uint64_t k);

/* Fills b[0..n) with the pattern of seed. */
void rg_bench_fill(unsigned char *b, size_t n, uint64_t seed);

/* The number of bytes of b[0..n) that differ from the pattern of seed (whole
 * 8-byte words count 8 where any of their bytes differs). */
uint64_t rg_bench_check(const unsigned char *b, size_t n, uint64_t seed);

#endif /* RG_TOOLS_BENCH_VERIFY_H */
