#!/usr/bin/env bash
# railgauge: the benchmarks that need a core per rank, in one go, on a machine with at least
# 16 CPUs (a cluster node, or a machine lent for an hour): builds railgauge, then measures
#
#   barrier-16  the barrier family with the flag model, P = 2,3,4,6,8,12,16 (bench/barrier_bench.py)
#   rxwin-16    the shared receive window on 16 ranks (bench/rxwin_bench.py)
#   onen-16     LoP's RTT(p) on 16 ranks over shm and tcp (bench/onen_bench.py)
#   stacks-16   MPI_Barrier of Open MPI and MPICH: the barrier `railgauge tune barrier --emit`
#               writes beside every fixed algorithm and the default (bench/stacks_bench.py)
#
# and keeps each one's raw results in OUT/<section>/ (and, with --tar, all of them in one
# archive), never touching docs/. On any machine, the commands it prints at the end render
# the sections of docs/BENCHMARKS.md from them (docs/data/<section>/ is where they are kept).
#
#   bash bench/cores_suite.sh [--out DIR] [--tar FILE] [--only barrier,rxwin,onen,stacks]
#                             [--quick] [--min-cpus N]
#
# --quick: a few iterations of everything on fewer ranks (a check of the script, not a
# measurement); --min-cpus: refuse below this many CPUs (default 16). Each part takes a few
# minutes on 16 cores; where commands are limited to 10 minutes, run one --only part each.
# Needs cmake, a C compiler, Open MPI and/or MPICH (their mpicc for the PMPI library and
# barrier_check), python3 with numpy, scipy, click and rich.
set -euo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }

out=""
tarball=""
only="barrier,rxwin,onen,stacks"
quick=0
min_cpus=16
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        --tar) tarball=${2:?--tar needs a file}; shift 2 ;;
        --only) only=${2:?--only needs a list}; shift 2 ;;
        --quick) quick=1; shift ;;
        --min-cpus) min_cpus=${2:?--min-cpus needs a number}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "cores_suite: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
    esac
done
case "$min_cpus" in
    ''|*[!0-9]*) echo "cores_suite: --min-cpus must be a number, not '$min_cpus'" >&2; exit 2 ;;
esac
for part in ${only//,/ }; do
    case "$part" in
        barrier|rxwin|onen|stacks) ;;
        *) echo "cores_suite: --only: '$part' is not barrier, rxwin, onen or stacks" >&2
           exit 2 ;;
    esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cpus=$(nproc)
if [ "$cpus" -lt "$min_cpus" ]; then
    echo "cores_suite: $cpus CPUs here, $min_cpus needed (one rank per core is the point;" \
         "--min-cpus lowers it)" >&2
    exit 2
fi
out=${out:-build/bench/cores-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

log() { echo "cores_suite: $*" >&2; }

log "building railgauge (native/, preset default)"
(cd native && cmake --preset default >/dev/null && cmake --build --preset default >/dev/null)
export RG_NATIVE_DIR="$repo/build/native" PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

if [ "$quick" = 1 ]; then
    ranks=2,3 iters=200 rounds=1 rx_n=4 rx_iters=10 onen_ranks=4 budget=5
else
    ranks=2,3,4,6,8,12,16 iters=2000 rounds=3 rx_n=16 rx_iters=100 onen_ranks=16 budget=45
fi
machine="$(uname -srm), $cpus CPUs"
render=()
for part in ${only//,/ }; do
    case "$part" in
        barrier)
            log "barrier-16: P = $ranks, $rounds rounds of $iters barriers"
            python3 bench/barrier_bench.py --ranks "$ranks" --rounds "$rounds" \
                --iterations "$iters" --no-write --raw-dir "$out/barrier-16" \
                --section barrier-16 > "$out/barrier-16.md"
            render+=("python3 bench/barrier_bench.py --from docs/data/barrier-16 --section barrier-16")
            ;;
        rxwin)
            log "rxwin-16: $rx_n ranks, $rx_iters phases"
            python3 bench/rxwin_bench.py -n "$rx_n" --iters "$rx_iters" --rounds 2 --no-write \
                --raw-dir "$out/rxwin-16" --section rxwin-16 > "$out/rxwin-16.md"
            render+=("python3 bench/rxwin_bench.py --from docs/data/rxwin-16 --add-sim --section rxwin-16")
            ;;
        onen)
            log "onen-16: $onen_ranks ranks over shm and tcp"
            python3 bench/onen_bench.py --ranks "$onen_ranks" --prtt-budget "$budget" \
                --no-write --raw-dir "$out/onen-16" --section onen-16 > "$out/onen-16.md"
            render+=("python3 bench/onen_bench.py --from docs/data/onen-16 --section onen-16")
            ;;
        stacks)
            log "stacks-16: P = $ranks, $rounds rounds of $iters barriers per stack setting"
            python3 bench/stacks_bench.py -P "$ranks" --rounds "$rounds" \
                --iterations "$iters" --rxwin-ranks 0 --no-write --raw-dir "$out/stacks-16" \
                --section stacks-16 > "$out/stacks-16.md"
            render+=("python3 bench/stacks_bench.py --from docs/data/stacks-16 --section stacks-16")
            ;;
    esac
done
echo "$machine; $(date -u '+%Y-%m-%d %H:%M:%S UTC')" > "$out/machine.txt"
if [ -n "$tarball" ]; then
    tar czf "$tarball" -C "$out" .
    log "all of it in $tarball"
fi
log "raw results in $out; to render them into docs/BENCHMARKS.md, copy each OUT/<section>"
log "folder to docs/data/<section>/ and run:"
for cmd in "${render[@]}"; do
    echo "  $cmd" >&2
done
