/*
 * railgauge: the unit-test harness (after libuv's test/task.h).
 *
 * A test is `TEST_IMPL(name) { ...; return 0; }`, declared and listed in
 * test-list.h. The ASSERT macros print where and why a check failed and
 * return from the test function, so a failing test never aborts the runner
 * and the sanitizers still see a normal exit; helpers that assert must
 * return int and have their result checked with ASSERT(helper(...) == 0).
 */
#ifndef RG_TESTS_TASK_H
#define RG_TESTS_TASK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Exit status that ctest counts as "skipped" (SKIP_RETURN_CODE). */
#define TEST_SKIP_CODE 77

#define TEST_DECLARE(name) int run_test_##name(void);
#define TEST_IMPL(name)    int run_test_##name(void)

#define RG__TEST_FAIL(...)                                                    \
    do {                                                                      \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                       \
        fprintf(stderr, __VA_ARGS__);                                         \
        fputc('\n', stderr);                                                  \
        return 1;                                                             \
    } while (0)

#define ASSERT(expr)                                                          \
    do {                                                                      \
        if (!(expr)) {                                                        \
            RG__TEST_FAIL("assertion failed: %s", #expr);                     \
        }                                                                     \
    } while (0)

#define ASSERT_INT_EQ(a, b)                                                   \
    do {                                                                      \
        long long rg__a = (long long)(a), rg__b = (long long)(b);             \
        if (rg__a != rg__b) {                                                 \
            RG__TEST_FAIL("%s == %s failed: %lld != %lld", #a, #b,            \
                          rg__a, rg__b);                                      \
        }                                                                     \
    } while (0)

/* |a - b| <= tol; NaN on either side fails. */
#define ASSERT_DBL_NEAR(a, b, tol)                                            \
    do {                                                                      \
        double rg__a = (a), rg__b = (b);                                      \
        if (!(fabs(rg__a - rg__b) <= (tol))) {                                \
            RG__TEST_FAIL("%s == %s (within %g) failed: %.17g != %.17g",      \
                          #a, #b, (double)(tol), rg__a, rg__b);               \
        }                                                                     \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                   \
    do {                                                                      \
        const char *rg__a = (a), *rg__b = (b);                                \
        if (rg__a == NULL || rg__b == NULL || strcmp(rg__a, rg__b) != 0) {    \
            RG__TEST_FAIL("%s == %s failed:\n  got:      %s\n  expected: %s", \
                          #a, #b, rg__a ? rg__a : "(null)",                   \
                          rg__b ? rg__b : "(null)");                          \
        }                                                                     \
    } while (0)

/* The text a contains the text b. */
#define ASSERT_STR_HAS(a, b)                                                  \
    do {                                                                      \
        const char *rg__a = (a), *rg__b = (b);                                \
        if (rg__a == NULL || strstr(rg__a, rg__b) == NULL) {                  \
            RG__TEST_FAIL("%s does not contain %s:\n  text: %s\n  part: %s",  \
                          #a, #b, rg__a ? rg__a : "(null)", rg__b);           \
        }                                                                     \
    } while (0)

/* A call returned RG_OK; otherwise prints the status and message. */
#define ASSERT_OK(call, errp)                                                 \
    do {                                                                      \
        rg_status_t rg__st = (call);                                          \
        if (rg__st != RG_OK) {                                                \
            RG__TEST_FAIL("%s returned %s: %s", #call,                        \
                          rg_status_name(rg__st), rg_err_message(errp));      \
        }                                                                     \
    } while (0)

#define TEST_SKIP(...)                                                        \
    do {                                                                      \
        fprintf(stderr, "skipped: ");                                         \
        fprintf(stderr, __VA_ARGS__);                                         \
        fputc('\n', stderr);                                                  \
        return TEST_SKIP_CODE;                                                \
    } while (0)

#endif /* RG_TESTS_TASK_H */
