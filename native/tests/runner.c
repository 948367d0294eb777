/*
 * railgauge: the unit-test runner.
 *
 *   rg-unit-tests            runs every test in this process
 *   rg-unit-tests NAME...    runs the named tests (ctest runs one per process)
 *   rg-unit-tests --list     prints the names
 *
 * Exit status: 0 when every test passed, 77 when a single named test was
 * skipped, 1 when a test failed, 2 for an unknown name.
 */
#include <stdio.h>
#include <string.h>

#include "task.h"

typedef struct rg_test_entry {
    const char *name;
    int       (*run)(void);
} rg_test_entry_t;

#define TASK_LIST_START  static const rg_test_entry_t rg__tests[] = {
#define TEST_ENTRY(name)     { #name, run_test_##name },
#define TASK_LIST_END        { NULL, NULL } };

#include "test-list.h"

static const rg_test_entry_t *rg__test_find(const char *name)
{
    const rg_test_entry_t *t;

    for (t = rg__tests; t->name != NULL; t++) {
        if (strcmp(t->name, name) == 0) {
            return t;
        }
    }
    return NULL;
}

/* Runs one test and prints a TAP-like line; returns its result. */
static int rg__test_run(const rg_test_entry_t *t)
{
    int rc;

    fflush(stdout);
    rc = t->run();
    printf("%s - %s%s\n", (rc == 0 || rc == TEST_SKIP_CODE) ? "ok" : "not ok",
           t->name, (rc == TEST_SKIP_CODE) ? " # SKIP" : "");
    fflush(stdout);
    return rc;
}

int main(int argc, char **argv)
{
    const rg_test_entry_t *t;
    int                    i, rc, failed = 0, skipped = 0;

    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (t = rg__tests; t->name != NULL; t++) {
            printf("%s\n", t->name);
        }
        return 0;
    }
    if (argc == 1) {
        for (t = rg__tests; t->name != NULL; t++) {
            rc = rg__test_run(t);
            failed  += (rc != 0 && rc != TEST_SKIP_CODE);
            skipped += (rc == TEST_SKIP_CODE);
        }
        printf("# %d failed, %d skipped\n", failed, skipped);
        return failed ? 1 : 0;
    }
    for (i = 1; i < argc; i++) {
        t = rg__test_find(argv[i]);
        if (t == NULL) {
            fprintf(stderr, "rg-unit-tests: no test named '%s' (see --list)\n",
                    argv[i]);
            return 2;
        }
        rc = rg__test_run(t);
        failed  += (rc != 0 && rc != TEST_SKIP_CODE);
        skipped += (rc == TEST_SKIP_CODE);
    }
    if (failed) {
        return 1;
    }
    return (argc == 2 && skipped) ? TEST_SKIP_CODE : 0;
}
