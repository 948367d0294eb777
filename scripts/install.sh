#!/usr/bin/env bash
# Installs what railgauge needs on Debian 12: the system packages that are
# missing (apt), a virtual environment in .venv, and railgauge itself
# (`pip install .`, which builds native/ with CMake). --dev adds the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."

extra=""
devpkgs=""
if [ "${1:-}" = "--dev" ]; then
    extra="[test]"
    # clang: libFuzzer for the GOAL parser's fuzz test (14 MB download, 113 MB installed).
    # libsimgrid-dev: SimGrid 3.32's smpicc and smpirun, which run the proof of
    # `railgauge export --to simgrid` (tests/test_export_simgrid.py).
    devpkgs="clang libsimgrid-dev"
fi

pkgs="build-essential cmake ninja-build python3 python3-venv python3-dev pkg-config
      libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev mpich libmpich-dev iproute2 iperf3
      libucx-dev
      $devpkgs"
missing=""
for p in $pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    echo "railgauge: installing system packages:$missing" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q ".$extra"
echo "railgauge: installed into $(pwd)/.venv ($(.venv/bin/railgauge --version))" >&2
