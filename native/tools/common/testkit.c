/* railgauge: the conformance suites' shared kit (testkit.h). */
#include "testkit.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "boot/boot.h"
#include "rails/rails.h"
#include "xport/xport.h"

void rg_tk_fail(rg_tk_t *t, const char *fmt, ...)
{
    va_list ap;

    fprintf(stdout, "FAIL test=%s rank=%d transport=%s: ", t->test, t->rank, t->transport);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    t->failures++;
}

void *rg_tk_alloc(rg_tk_t *t, size_t n)
{
    void *p = calloc(1, n > 0 ? n : 1);

    if (p == NULL) {
        rg_tk_fail(t, "cannot allocate %zu bytes", n);
        exit(1);
    }
    return p;
}

static uint64_t rg__tk_next(uint64_t x)
{
    return x * 6364136223846793005ull + 1442695040888963407ull;
}

void rg_tk_fill(unsigned char *b, size_t n, uint32_t seed)
{
    uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1;
    size_t   i;

    for (i = 0; i + 8 <= n; i += 8) {
        x = rg__tk_next(x);
        memcpy(b + i, &x, 8);
    }
    x = rg__tk_next(x);
    for (; i < n; i++) {
        b[i] = (unsigned char)(x >> (8 * (i & 7)));
    }
}

size_t rg_tk_check(const unsigned char *b, size_t n, uint32_t seed)
{
    uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1;
    size_t   i, k;

    for (i = 0; i + 8 <= n; i += 8) {
        x = rg__tk_next(x);
        if (memcmp(b + i, &x, 8) != 0) {
            for (k = 0; k < 8 && b[i + k] == ((unsigned char *)&x)[k]; k++) {
            }
            return i + k;
        }
    }
    x = rg__tk_next(x);
    for (; i < n; i++) {
        if (b[i] != (unsigned char)(x >> (8 * (i & 7)))) {
            return i;
        }
    }
    return n;
}

int rg_tk_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int rg_tk_must(rg_tk_t *t, int st, int allow_truncated, const char *what, const char *detail)
{
    if (st < 0 && !(allow_truncated && st == RG_ERR_TRUNCATED)) {
        rg_tk_fail(t, "%s: %s: %s", what, rg_status_name((rg_status_t)st), detail);
        exit(1);
    }
    return st;
}

void rg_tk_expect(rg_tk_t *t, int status, const void *buf, size_t got_len, int got_src,
                  int got_tag, size_t len, int src, int tag, uint32_t seed, const char *what)
{
    size_t bad;

    if (status != RG_OK) {
        rg_tk_fail(t, "%s: status %s, expected RG_OK", what, rg_status_name((rg_status_t)status));
        return;
    }
    if (got_len != len || got_src != src || (tag >= 0 && got_tag != tag)) {
        if (tag >= 0) {
            rg_tk_fail(t, "%s: got %zu bytes from rank %d tag %d, expected %zu from rank %d "
                       "tag %d", what, got_len, got_src, got_tag, len, src, tag);
        } else {
            rg_tk_fail(t, "%s: got %zu bytes from rank %d, expected %zu bytes from rank %d",
                       what, got_len, got_src, len, src);
        }
        return;
    }
    bad = rg_tk_check(buf, len, seed);
    if (bad != len) {
        rg_tk_fail(t, "%s: byte %zu of %zu is wrong", what, bad, len);
    }
}

/* Entry i of a suite's table. */
static const rg_tk_case_t *rg_tk_case(rg_tk_suite_t s, size_t i)
{
    return (const rg_tk_case_t *)(const void *)((const char *)s.table + i * s.stride);
}

void rg_tk_list(FILE *f, rg_tk_suite_t s)
{
    size_t i;

    fprintf(f, "tests:");
    for (i = 0; i < s.n; i++) {
        fprintf(f, " %s%s", rg_tk_case(s, i)->name, rg_tk_case(s, i)->by_default ? "" : "*");
    }
    fprintf(f, "\n(* = not run by default)\n");
}

/* Reads the options both suites have (--transport, --test NAME, --seconds S,
 * --tag TEXT, --help) at argv[*a]. selected has s.n entries. Returns 1 when
 * the option was one of them (*a moves past its value), 0 when it is not
 * (the suite reads it), 2 for --help, -1 after printing an error. */
static int rg_tk_common_arg(rg_tk_t *t, rg_tk_suite_t s, int argc, char **argv, int *a,
                            int *selected, int *any_selected)
{
    const char *opt = argv[*a];
    char       *end;
    size_t      i;

    if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
        return 2;
    }
    if (strcmp(opt, "--transport") != 0 && strcmp(opt, "--test") != 0 &&
        strcmp(opt, "--seconds") != 0 && strcmp(opt, "--tag") != 0) {
        return 0;
    }
    if (*a + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", t->tool, opt);
        return -1;
    }
    (*a)++;
    if (strcmp(opt, "--transport") == 0) {
        t->transport = argv[*a];
    } else if (strcmp(opt, "--test") == 0) {
        for (i = 0; i < s.n && strcmp(argv[*a], rg_tk_case(s, i)->name) != 0; i++) {
        }
        if (i == s.n) {
            fprintf(stderr, "%s: unknown test '%s'\n", t->tool, argv[*a]);
            return -1;
        }
        selected[i]   = 1;
        *any_selected = 1;
    } else if (strcmp(opt, "--seconds") == 0) {
        errno      = 0;
        t->seconds = strtod(argv[*a], &end);
        if (end == argv[*a] || *end != '\0' || errno != 0 || !isfinite(t->seconds) ||
            !(t->seconds > 0)) {
            fprintf(stderr, "%s: --seconds '%s': a positive number\n", t->tool, argv[*a]);
            return -1;
        }
    }
    /* --tag TEXT: a marker that lets tests find these processes. */
    return 1;
}

/* Without any --test, the tests run by default. */
static void rg_tk_default_selection(rg_tk_suite_t s, int *selected, int any_selected)
{
    size_t i;

    for (i = 0; i < s.n && !any_selected; i++) {
        selected[i] = rg_tk_case(s, i)->by_default;
    }
}

/* Rank 0 prints "ok|FAILED test=... transport=... ranks=N S s". */
static void rg_tk_report(const rg_tk_t *t, uint64_t t0_ns)
{
    if (t->rank == 0) {
        printf("%s test=%s transport=%s ranks=%d %.2f s\n", t->failures == 0 ? "ok" : "FAILED",
               t->test, t->transport, t->size, (double)(rg_time_mono_ns() - t0_ns) * 1e-9);
        fflush(stdout);
    }
}

void rg_tk_run(rg_tk_t *t, rg_tk_suite_t s, const int *selected, int (*run)(void *ctx, size_t i),
               void *ctx)
{
    uint64_t t0;
    size_t   i;

    for (i = 0; i < s.n; i++) {
        if (!selected[i]) {
            continue;
        }
        t->test = rg_tk_case(s, i)->name;
        t0      = rg_time_mono_ns();
        if (run(ctx, i) < 0) {
            break;
        }
        rg_tk_report(t, t0);
    }
}

int rg_tk_parse_args(rg_tk_t *t, rg_tk_suite_t s, int argc, char **argv, int *selected,
                     rg_tk_own_arg_fn own, void *ctx, void (*usage)(FILE *f), int *rc)
{
    int any_selected = 0, a, r;

    for (a = 1; a < argc; a++) {
        r = rg_tk_common_arg(t, s, argc, argv, &a, selected, &any_selected);
        if (r == 2) {
            usage(stdout);
            *rc = 0;
            return 0;
        }
        if (r == 0 && own != NULL) {
            r = own(ctx, argc, argv, &a, rc);
            if (r == 2) {
                return 0;
            }
        }
        if (r == 0) {
            fprintf(stderr, "%s: bad argument '%s'\n", t->tool, argv[a]);
        }
        if (r <= 0) {
            usage(stderr);
            *rc = 2;
            return 0;
        }
    }
    if (t->transport == NULL || t->transport[0] == '\0') {
        t->transport = "shm";
    }
    rg_tk_default_selection(s, selected, any_selected);
    return 1;
}

/* The bootstrap: rank and size into t. 0, or 1 after printing why. */
static int rg_tk_boot(rg_tk_t *t, rg_boot_t **boot)
{
    rg_err_t err;

    rg_err_clear(&err);
    if (rg_boot_init(boot, &err) != RG_OK) {
        fprintf(stderr, "%s: bootstrap: %s\n", t->tool, rg_err_message(&err));
        return 1;
    }
    t->rank = rg_boot_rank(*boot);
    t->size = rg_boot_size(*boot);
    return 0;
}

int rg_tk_init(rg_tk_t *t, const char *tool, double seconds, char *buf, size_t cap)
{
    rg_err_t err;

    t->tool    = tool;
    t->seconds = seconds;
    t->test    = "setup";
    /* The rails transport lives above xport and joins its registry here, for
     * the tests over it and --print-config. */
    if (rg_rails_register() != RG_OK) {
        fprintf(stderr, "%s: cannot register the rails transport\n", tool);
        return 2;
    }
    rg_err_clear(&err);
    if (rg_xport_default_name(buf, cap, &err) != RG_OK) {
        fprintf(stderr, "%s: %s\n", tool, rg_err_message(&err));
        return 2;
    }
    t->transport = buf;
    return 0;
}

/* After opening the transport or runtime with status st: 0 when it opened
 * and there are enough ranks; 1 when it did not open, 2 when it did but
 * the job has fewer than 2 ranks (the caller closes it), after printing a
 * FAIL line either way. */
static int rg_tk_opened(const rg_tk_t *t, int st, const rg_err_t *err, int max_ranks)
{
    if (st != RG_OK) {
        fprintf(stdout, "FAIL test=open rank=%d transport=%s: %s\n", t->rank, t->transport,
                rg_err_message(err));
        return 1;
    }
    if (t->size < 2) {
        fprintf(stdout, "FAIL test=setup rank=0 transport=%s: run under a launcher with 2 "
                "to %d ranks\n", t->transport, max_ranks);
        return 2;
    }
    return 0;
}

int rg_tk_open(rg_tk_t *t, rg_boot_t **boot, int max_ranks, int (*open)(void *ctx, rg_err_t *err),
               void (*close)(void *ctx), void *ctx)
{
    rg_err_t err;
    int      rc;

    if (rg_tk_boot(t, boot) != 0) {
        return 1;
    }
    rg_err_clear(&err);
    rc = rg_tk_opened(t, open(ctx, &err), &err, max_ranks);
    if (rc == 2) {
        close(ctx);
    }
    if (rc != 0) {
        rg_boot_fini(*boot);
        *boot = NULL;
        return 1;
    }
    return 0;
}
