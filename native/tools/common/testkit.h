/*
 * railgauge: what the two conformance suites share (railgauge-xport-test
 * over the transports, railgauge-proto-test over the runtime): the failure
 * line, checked allocation, deterministic message content, the table of
 * named tests with its --test selection and listing, and the per-test
 * result line.
 *
 * A suite's context struct embeds rg_tk_t as its member `tk`; a suite's
 * table of tests is an array of structs whose FIRST member is an
 * rg_tk_case_t (so the kit reads the names through RG_TK_SUITE(table))
 * followed by the suite's own function pointer.
 */
#ifndef RG_TOOLS_TESTKIT_H
#define RG_TOOLS_TESTKIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "boot/boot.h"

typedef struct rg_tk {
    const char *tool;      /* program name, for messages */
    const char *transport;
    const char *test;      /* the test running, for messages */
    int         rank, size;
    int         failures;
    double      seconds;   /* --seconds: the duration of timed tests */
} rg_tk_t;

typedef struct rg_tk_case {
    const char *name;
    int         by_default;
    int         collective; /* ends with a barrier */
} rg_tk_case_t;

typedef struct rg_tk_suite {
    const void *table;     /* array of structs beginning with rg_tk_case_t */
    size_t      stride, n;
} rg_tk_suite_t;

#define RG_TK_SUITE(tbl) \
    ((rg_tk_suite_t){(tbl), sizeof((tbl)[0]), sizeof(tbl) / sizeof((tbl)[0])})
#define RG_TK_MAX_TESTS 32

/* "FAIL test=<test> rank=<r> transport=<t>: <text>" on stdout; counts it. */
void rg_tk_fail(rg_tk_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Zeroed memory, or a failure line and exit(1): nothing is left to test. */
void *rg_tk_alloc(rg_tk_t *t, size_t n);

/* Deterministic content, 8 bytes at a time (64 MiB messages are checked
 * too): every seed its own bytes, so that a message delivered to the wrong
 * receive or shifted is caught. rg_tk_check returns the index of the first
 * wrong byte, or n. */
void   rg_tk_fill(unsigned char *b, size_t n, uint32_t seed);
size_t rg_tk_check(const unsigned char *b, size_t n, uint32_t seed);

int rg_tk_cmp_double(const void *a, const void *b); /* for qsort */

/* A post's or a wait's status: an error (below 0; RG_ERR_TRUNCATED allowed
 * where allow_truncated) leaves nothing to test: "FAIL ...: what: STATUS:
 * detail" (detail: the transport's or runtime's last error) and exit(1).
 * Returns st otherwise. */
int rg_tk_must(rg_tk_t *t, int st, int allow_truncated, const char *what, const char *detail);

/* A completed receive of an exact-size message: status RG_OK, len bytes
 * from src (and tag, where tag >= 0) with the content of seed; a FAIL line
 * naming what otherwise. */
void rg_tk_expect(rg_tk_t *t, int status, const void *buf, size_t got_len, int got_src,
                  int got_tag, size_t len, int src, int tag, uint32_t seed, const char *what);

/* " name name* ..." (a * where not run by default) and the legend. */
void rg_tk_list(FILE *f, rg_tk_suite_t s);

/* Reads argv: the options both suites have (rg_tk_common_arg), then the
 * suite's own through own (NULL: none; it returns as rg_tk_common_arg does,
 * 2 meaning "done, exit with *rc"). Selects the default tests when no
 * --test is given. Returns 1 to go on, 0 to exit with *rc (after --help,
 * an error, or an option of the suite's that finished the run). An empty
 * transport becomes shm. */
typedef int (*rg_tk_own_arg_fn)(void *ctx, int argc, char **argv, int *a, int *rc);
int rg_tk_parse_args(rg_tk_t *t, rg_tk_suite_t s, int argc, char **argv, int *selected,
                     rg_tk_own_arg_fn own, void *ctx, void (*usage)(FILE *f), int *rc);

/* Registers the rails transport with xport, sets tool, seconds, test
 * "setup" and the transport by default (RG_TRANSPORT, else shm) into buf.
 * 0, or 2 after printing why. */
int rg_tk_init(rg_tk_t *t, const char *tool, double seconds, char *buf, size_t cap);

/* The bootstrap, then the transport or runtime under test by open (its
 * status; err says why), which close closes again where the job has too
 * few ranks. 0, or the exit status after a FAIL line. */
int rg_tk_open(rg_tk_t *t, rg_boot_t **boot, int max_ranks,
               int (*open)(void *ctx, rg_err_t *err), void (*close)(void *ctx), void *ctx);

/* Runs the selected tests in the suite's order: t->test set to each name,
 * run(ctx, i) runs test i with what the suite does after it (0, or < 0 to
 * stop the run), then the result line. */
void rg_tk_run(rg_tk_t *t, rg_tk_suite_t s, const int *selected, int (*run)(void *ctx, size_t i),
               void *ctx);

#endif
