#!/usr/bin/env bash
# The whole test suite: install (with test tools), the C unit tests in the
# normal and the ASan+UBSan build, lint, the Python and multi-process tests
# against the installed tools, then the multi-process tests again against the
# sanitizer build of the native tools.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/install.sh --dev
# The installed tools (railgauge, railgauge-bench, ...) come first on PATH.
export PATH="$root/.venv/bin:$PATH"

echo "== C unit tests (default build)" >&2
(cd native && cmake --preset default >/dev/null && cmake --build --preset default -j "$jobs" \
    && ctest --preset default -j "$jobs")

echo "== C unit tests (ASan + UBSan build)" >&2
(cd native && cmake --preset sanitize >/dev/null && cmake --build --preset sanitize -j "$jobs" \
    && ctest --preset sanitize -j "$jobs")

echo "== lint" >&2
.venv/bin/ruff check python tests bench
.venv/bin/python -m mypy python/railgauge

echo "== pytest (installed tools)" >&2
.venv/bin/python -m pytest -q tests

echo "== pytest multi-process tests (ASan + UBSan tools)" >&2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    RG_NATIVE_DIR="$root/build/sanitize" .venv/bin/python -m pytest -q -m "native and not rxd" tests
