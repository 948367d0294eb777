/*
 * railgauge: the mutation step of the tests' small fuzzers (test-sim.c's
 * GOAL fuzzer, test-json-read.c's JSON one), from a fixed generator so that
 * a failure reproduces. Included by each test file that uses it.
 */
#ifndef RG_TESTS_MUTATE_H
#define RG_TESTS_MUTATE_H

#include <stddef.h>
#include <string.h>

/* The next value of the generator whose state is *rnd. */
static unsigned rg_test_rand(unsigned *rnd)
{
    *rnd = *rnd * 1103515245u + 12345u;
    return *rnd;
}

/* 1 .. max_edits edits of buf[0..*n_p) (room for max bytes and 64 more):
 * a byte replaced, one of the nwords words inserted, a run of 1 .. 8 bytes
 * deleted, or a run of up to 32 repeated. */
static void rg_test_mutate(char *buf, size_t *n_p, size_t max, const char *const *words,
                           size_t nwords, unsigned max_edits, unsigned *rnd)
{
    size_t n = *n_p, edits, k;

    edits = 1 + (rg_test_rand(rnd) >> 16) % max_edits;
    for (k = 0; k < edits; k++) {
        unsigned r = rg_test_rand(rnd);
        size_t   at = n ? (r >> 8) % n : 0;

        switch ((r >> 4) % 4) {
        case 0: /* flip a byte */
            if (n) {
                buf[at] = (char)(r >> 20);
            }
            break;
        case 1: { /* insert a word */
            const char *w = words[(r >> 12) % nwords];
            size_t      wl = strlen(w);
            if (n + wl < max) {
                memmove(buf + at + wl, buf + at, n - at);
                memcpy(buf + at, w, wl);
                n += wl;
            }
            break;
        }
        case 2: { /* delete a run */
            size_t len = 1 + (r >> 24) % 8;
            if (at + len <= n) {
                memmove(buf + at, buf + at + len, n - at - len);
                n -= len;
            }
            break;
        }
        default: /* duplicate a run */
            if (n && n + 32 < max) {
                size_t len = 1 + (r >> 24) % 32;
                if (at + len > n) {
                    len = n - at;
                }
                memmove(buf + at + len, buf + at, n - at);
                n += len;
            }
            break;
        }
    }
    *n_p = n;
}

#endif /* RG_TESTS_MUTATE_H */
