/*
 * railgauge: libFuzzer target for the JSON reader (base/json_read.h; built
 * with -DRG_FUZZ=ON by clang; tests/test_json_read.py runs it for a fixed
 * time from the corpus in json-corpus/, as tests/test_sim.py runs the GOAL
 * fuzzer).
 *
 * Every input must either parse into a well-formed tree that the writer
 * writes back as the same tree, or fail with a status, a message and a line
 * and column (json_check.h). Anything else, and any sanitizer report, is a
 * crash.
 */
#include <stddef.h>
#include <stdint.h>

#include "json_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (rg_json_check_one((const char *)data, size) != 0) {
        __builtin_trap();
    }
    return 0;
}
