"""Open MPI's barrier as railgauge chose it: ``coll_tuned``'s barrier algorithms per
release, its fixed decision, the dynamic rules file (classic text, and JSON from 6.0), and
the proof that Open MPI really runs what the file says (pml monitoring).

Plain functions that never print. What was read in Open MPI's sources (the tags named):

- the algorithms, ``barrier_algorithms`` of ompi/mca/coll/tuned/coll_tuned_barrier.c
  (1.8, 1.10) and coll_tuned_barrier_decision.c (2.0 to 5.0 and main): the same six
  names and ids in every release; their code is ompi_coll_tuned_barrier_intra_* (1.8,
  1.10) and ompi_coll_base_barrier_intra_* (ompi/mca/coll/base/coll_base_barrier.c, 2.0
  on), with the same messages in every release;
- the fixed decision, ompi_coll_tuned_barrier_intra_dec_fixed
  (coll_tuned_decision_fixed.c): up to 4.0, two_proc at 2 ranks, recursive doubling at a
  power of two, bruck otherwise; from 4.1 a table by communicator size;
- the rules file, coll_tuned_dynamic_file.c and coll_tuned_dynamic_rules.c: the classic
  reader skips from ``#`` to the end of the line wherever it expects a number
  (ompi_coll_base_file_getnext_long, coll_base_util.c; getnext in 1.8/1.10); barrier is
  collective 6 in every release (enum COLLTYPE: coll_tuned.h up to 1.10,
  coll_base_functions.h from 2.0); up to 5.0 a communicator takes the last rule whose
  size is <= its size, or the first rule if none is (ompi_coll_tuned_get_com_rule_ptr),
  while 6.0 (branch v6.0.x, main; commit e973840e2b) reads the classic rule i as the sizes
  from rule i-1's size to its own size - 1, the last rule up to any size, and reads JSON
  first (first match of comm_size_min..comm_size_max; no match: the fixed decision);
- a rule whose algorithm is 0 gives the choice back to the fixed decision (to a forced
  coll_tuned_barrier_algorithm first), in every release; from 5.0 a forced algorithm
  comes before the file (ompi_coll_tuned_barrier_intra_dec_dynamic).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from railgauge.emit import Emitted, _comment, resolve_version
from railgauge.export.files import ExportError
from railgauge.stacks import BarrierChoice, StackAlgorithm

STACK = "openmpi"
FORMATS = ("openmpi", "openmpi-json")
#: Barrier's collective id in the classic rules file (enum COLLTYPE), every release.
BARRIER_ID = 6
#: The first release whose coll_tuned reads a JSON rules file.
JSON_SINCE = (6, 0)
#: From this release a classic rule's size ends its range (coll_tuned_dynamic_file.c).
CLASSIC_UPPER_SINCE = (6, 0)
#: From this release a forced coll_tuned_barrier_algorithm comes before the file's rules
#: (ompi_coll_tuned_barrier_intra_dec_dynamic; up to 4.1 the file's rules come first).
FORCED_FIRST_SINCE = (5, 0)
#: From this release the fixed decision is a table by size (coll_tuned_decision_fixed.c).
FIXED_TABLE_SINCE = (4, 1)
#: From this release coll/han (priority 35, above tuned's 30) takes the barrier of
#: communicators that span nodes (coll_han_component.c; in 4.1 its priority is 0).
HAN_SINCE = (5, 0)
#: 4.1's fixed decision: (communicator size below, algorithm id); else bruck.
_FIXED_TABLE: tuple[tuple[int, int], ...] = (
    (4, 3), (8, 1), (64, 3), (256, 4), (512, 6), (1024, 4), (4096, 6))
_FIXED_TABLE_ELSE = 4

_SENDRECV = ("each exchange is a receive posted before a standard send "
             "(ompi_coll_base_sendrecv_zero)")
#: id, name, railgauge's schedule, min_P, max_P, what differs from the schedule.
_ALGORITHMS: tuple[tuple[int, str, str, int, int | None, str], ...] = (
    (1, "linear", "linear", 1, None,
     "rank 0 posts its receives from MPI_ANY_SOURCE, waits for all, then sends to 1..P-1 in "
     "order; the others send to 0, then receive from 0 (standard sends)"),
    (2, "double_ring", "ring", 1, None,
     "two rounds of the ring: rank 0 sends right and receives from its left, the others "
     "receive from the left before they send right; the second round's sends are "
     "synchronous"),
    (3, "recursive_doubling", "recdbl", 1, None,
     "ranks >= 2^k fold onto rank - 2^k, then rank XOR 2^j; " + _SENDRECV + "; the last "
     "send, to a folded rank, is synchronous"),
    (4, "bruck", "dissem", 1, None,
     "to rank + 2^j, from rank - 2^j (mod P): dissemination; " + _SENDRECV),
    (5, "two_proc", "recdbl", 2, 2,
     "one exchange with the other rank; " + _SENDRECV + "; any other size but 1 fails "
     "with MPI_ERR_UNSUPPORTED_OPERATION"),
    (6, "tree", "binomial", 1, None,
     "up and down the binomial tree (children rank + 2^i, parent rank - 2^j of the lowest "
     "set bit j), standard sends"),
)

_BARRIER_SRC = """#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int i, n;
    MPI_Init(&argc, &argv);
    n = argc > 1 ? atoi(argv[1]) : 1;
    for (i = 0; i < n; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""


class ProofError(RuntimeError):
    """A proof run could not be made or read: mpicc or mpirun failed, no monitoring."""


# ---- releases -----------------------------------------------------------------------------

def _release(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a checked Open MPI version; ExportError for an unknown one."""
    version = resolve_version(STACK, version, (STACK,))
    m = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", version)
    assert m is not None  # resolve_version accepted it
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def barrier_algorithms(version: str) -> list[StackAlgorithm]:
    """coll_tuned's barrier algorithms of Open MPI ``version`` (the values of
    coll_tuned_barrier_algorithm but 0, "ignore"), each with railgauge's schedule."""
    rel = _release(version)
    out = []
    for aid, name, sched, lo, hi, note in _ALGORITHMS:
        if name == "double_ring" and (rel < (4, 0, 7) or (4, 1, 0) <= rel < (4, 1, 2)):
            note += ("; rank 0 receives from MPI_ANY_SOURCE (its left computed as -1), fixed "
                     "in 4.0.7 and 4.1.2: the same messages")
        out.append(StackAlgorithm(STACK, name, aid, sched, lo, hi, note))
    return out


def _by_id(version: str) -> dict[int, StackAlgorithm]:
    return {a.id: a for a in barrier_algorithms(version) if a.id is not None}


def fixed_barrier_id(version: str, P: int) -> int:
    """The algorithm id of ompi_coll_tuned_barrier_intra_dec_fixed for P ranks."""
    if P < 1:
        raise ExportError(f"P = {P}: a communicator has at least 1 rank")
    if _release(version)[:2] >= FIXED_TABLE_SINCE:
        return next((alg for below, alg in _FIXED_TABLE if below > P), _FIXED_TABLE_ELSE)
    if P == 2:
        return 5
    return 3 if P & (P - 1) == 0 else 4


def default_barrier(version: str, P: int, nodes: int = 1) -> StackAlgorithm:
    """The barrier Open MPI ``version`` runs on P ranks over ``nodes`` nodes when nothing is
    set: coll_tuned's fixed decision, or from 5.0 on more than one node coll/han's
    hierarchical barrier (no railgauge schedule)."""
    if nodes < 1:
        raise ExportError(f"nodes = {nodes}: at least 1")
    aid = fixed_barrier_id(version, P)
    if nodes > 1 and _release(version)[:2] >= HAN_SINCE:
        return StackAlgorithm(
            STACK, "han", None, None, 2, None,
            "coll/han (priority 35) takes the barrier of a communicator that spans nodes: "
            "a barrier on each node, one among the nodes' leaders, a barrier on each node; "
            "each of them is coll_tuned's on its communicator (here "
            f"{_by_id(version)[aid].name} for the whole, by size)")
    return _by_id(version)[aid]


# ---- the rules ------------------------------------------------------------------------------

@dataclass(frozen=True)
class RuleSpan:
    """Communicator sizes lo..hi (hi None: any larger) and the algorithm written for them;
    ``algorithm`` None: the rule gives the choice back to the fixed decision (alg 0)."""

    lo: int
    hi: int | None
    algorithm: StackAlgorithm | None
    asked: int | None


def rule_spans(choices: Sequence[BarrierChoice], version: str) -> list[RuleSpan]:
    """The sizes each rule covers: every asked P from its own P up to the next asked P - 1
    (the last: any larger), the smallest also below itself (as Open MPI's classic lookup
    does); where an algorithm cannot run on the larger sizes of its span (two_proc), those
    go back to the fixed decision. ExportError for a choice Open MPI cannot take."""
    algs = _by_id(version)
    seen: dict[int, StackAlgorithm] = {}
    for c in choices:
        if not isinstance(c, BarrierChoice):
            raise ExportError(f"not a BarrierChoice: {c!r}")
        a = c.algorithm
        if a.stack != STACK or a.id not in algs or algs[a.id].name != a.name:
            raise ExportError(f"P = {c.P}: {a.stack} {a.name} is not a coll_tuned barrier "
                              f"algorithm of Open MPI {version}")
        if c.P < 1 or not a.accepts(c.P):
            raise ExportError(f"P = {c.P}: Open MPI does not run {a.name} on {c.P} ranks")
        if c.P in seen:
            raise ExportError(f"P = {c.P}: chosen twice")
        seen[c.P] = algs[a.id]
    if not seen:
        raise ExportError("no barrier choices to write")
    asked = sorted(seen)
    spans: list[RuleSpan] = []
    for i, P in enumerate(asked):
        a = seen[P]
        hi = asked[i + 1] - 1 if i + 1 < len(asked) else None
        if a.max_P is not None and (hi is None or hi > a.max_P):
            spans.append(RuleSpan(P, a.max_P, a, P))
            spans.append(RuleSpan(a.max_P + 1, hi, None, None))
        else:
            spans.append(RuleSpan(P, hi, a, P))
    return spans


def mpirun_args(rules_file: str | Path) -> list[str]:
    """The mpirun options that load a rules file."""
    return ["--mca", "coll_tuned_use_dynamic_rules", "1",
            "--mca", "coll_tuned_dynamic_rules_filename", str(rules_file)]


def _span_text(s: RuleSpan, first: bool) -> str:
    below = "1" if first else str(s.lo)
    sizes = f"{below}..{s.hi}" if s.hi is not None else f"{below} and up"
    if s.algorithm is None:
        return f"sizes {sizes}: Open MPI's fixed decision (algorithm 0)"
    return (f"P = {s.asked}: {s.algorithm.name} (algorithm {s.algorithm.id}), for "
            f"communicator sizes {sizes}")


def _classic_text(spans: Sequence[RuleSpan], rel: tuple[int, int, int],
                  head: Sequence[str]) -> str:
    upper = rel[:2] >= CLASSIC_UPPER_SINCE
    lines = [c for h in head for c in _comment(h)]
    lines += ["1  # number of collectives",
              f"{BARRIER_ID}  # collective id: barrier",
              f"{len(spans)}  # number of communicator sizes"]
    for i, s in enumerate(spans):
        if not upper:
            size = s.lo
        elif i + 1 < len(spans):
            size = (s.hi if s.hi is not None else s.lo) + 1
        else:
            size = s.lo  # the last rule's size is not read as a bound
        lines += _comment(_span_text(s, i == 0))
        alg = s.algorithm.id if s.algorithm is not None else 0
        lines += [f"{size}  # communicator size", "1  # number of message sizes",
                  f"0 {alg} 0 0  # message size, algorithm, fan in/out, segment size"]
    return "\n".join(lines) + "\n"


def _json_doc(spans: Sequence[RuleSpan]) -> dict[str, object]:
    rules: list[dict[str, object]] = []
    for i, s in enumerate(spans):
        if s.algorithm is None:
            continue  # no rule: the fixed decision
        rule: dict[str, object] = {"comm_size_min": 0 if i == 0 else s.lo}
        if s.hi is not None:
            rule["comm_size_max"] = s.hi
        rule["rules"] = [{"msg_size_min": 0, "alg": s.algorithm.name}]
        rules.append(rule)
    return {"rule_file_version": 3, "module": "tuned", "collectives": {"barrier": rules}}


def emit_barrier(choices: Sequence[BarrierChoice], version: str, fmt: str, *,
                 rules_file: str = "THIS_FILE") -> Emitted:
    """The chosen barriers as Open MPI ``version``'s dynamic rules file: ``fmt``
    "openmpi" (the classic text) or "openmpi-json" (from 6.0). ``rules_file`` is where the
    file will be (give an absolute path: each rank opens it); the settings and the load
    line name it."""
    if fmt not in FORMATS:
        raise ExportError(f"--emit {fmt!r}: not an Open MPI format ({', '.join(FORMATS)})")
    version = resolve_version(STACK, version, (STACK,))
    rel = _release(version)
    if fmt == "openmpi-json" and rel[:2] < JSON_SINCE:
        raise ExportError(f"--emit openmpi-json: Open MPI {version} reads only the classic "
                          "rules file (JSON from 6.0); use --emit openmpi")
    spans = rule_spans(choices, version)
    em = Emitted(STACK, version)
    em.settings["coll_tuned_use_dynamic_rules"] = "1"
    em.settings["coll_tuned_dynamic_rules_filename"] = rules_file
    load = "mpirun " + " ".join(mpirun_args(rules_file)) + " ..."
    em.reasons.append(f"Load with: {load} (or the same two MCA parameters in any other way); "
                      "coll_tuned reads the file when MPI starts.")
    for i, s in enumerate(spans):
        em.reasons.append(_span_text(s, i == 0) + ".")
    em.reasons.append(_fallback_reason(spans, rel))
    if rel[:2] >= FORCED_FIRST_SINCE:
        em.reasons.append("Leave coll_tuned_barrier_algorithm unset: from 5.0 a forced "
                          "algorithm comes before the file's rules.")
    else:
        em.reasons.append("The file's rules come before coll_tuned_barrier_algorithm; a rule "
                          "of algorithm 0 gives the choice back to it, then to the fixed "
                          "decision.")
    if rel[:2] >= HAN_SINCE:
        em.reasons.append("On more than one node Open MPI 5.0 and later run coll/han's "
                          "barrier (a barrier per node, one among leaders, one per node), in "
                          "which these rules choose only for the sub-communicators' sizes; "
                          "--mca coll ^han leaves the whole barrier to coll_tuned.")
    em.reasons.append("Open MPI says nothing about a rules file it cannot read: it falls back "
                      "to the fixed decision" + (" (coll_tuned_verbose 1 shows why)."
                                                 if rel[:2] >= CLASSIC_UPPER_SINCE else
                                                 " (its messages exist only in debug builds)."))
    head = [f"Open MPI {version} coll_tuned dynamic rules: the barrier railgauge chose, "
            "written by railgauge tune barrier.", f"Load with: {load}"]
    if fmt == "openmpi-json":
        em.text = json.dumps(_json_doc(spans), indent=2) + "\n"
    else:
        em.text = _classic_text(spans, rel, head)
    return em


def _fallback_reason(spans: Sequence[RuleSpan], rel: tuple[int, int, int]) -> str:
    smallest = spans[0]
    text = (f"Sizes between two asked P get the rule of the smaller one, sizes below "
            f"{smallest.lo} the rule of P = {smallest.lo}, sizes above the largest its rule")
    if any(s.algorithm is None for s in spans):
        text += ", except where a rule of algorithm 0 gives them back to the fixed decision"
    if rel[:2] >= CLASSIC_UPPER_SINCE:
        text += (" (Open MPI 6.0 reads a classic rule's size as the end of its range, so each "
                 "rule is written with the size after its last one)")
    return text + "."


# ---- reading a rules file as Open MPI does ------------------------------------------------

def _classic_numbers(text: str) -> list[int]:
    """The numbers coll_tuned's classic reader takes from text: comments (``#`` to the end
    of the line) skipped, any other non-number character skipped one by one."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        out += [int(tok, 0) for tok in re.findall(r"[+-]?(?:0[xX][0-9a-fA-F]+|\d+)", line)]
    return out


def classic_barrier_id(text: str, version: str, P: int) -> int:
    """The barrier algorithm id a classic rules file gives P ranks under Open MPI
    ``version`` (0: the fixed decision); ExportError where the reader rejects the file."""
    rel = _release(version)
    nums = iter(_classic_numbers(text))
    rules: list[tuple[int, int]] = []
    try:
        for _ in range(next(nums)):
            cid, ncs = next(nums), next(nums)
            for _ in range(ncs):
                size, nms = next(nums), next(nums)
                alg0 = None
                for k in range(nms):
                    ms, alg, _fan, _seg = next(nums), next(nums), next(nums), next(nums)
                    if k == 0 and ms != 0:
                        raise ExportError("the first message size of a rule is not 0")
                    alg0 = alg if ms == 0 else alg0
                if cid == BARRIER_ID:
                    rules.append((size, alg0 or 0))
    except StopIteration:
        raise ExportError("the rules file ends early") from None
    if not rules:
        return 0
    if rel[:2] >= CLASSIC_UPPER_SINCE:
        lo = 0
        for i, (size, alg) in enumerate(rules):
            hi = size - 1 if i + 1 < len(rules) else None
            if lo <= P and (hi is None or hi >= P):
                return alg
            lo = (hi if hi is not None else 0) + 1
        return 0
    best = rules[0]
    for size, alg in rules:
        if size > P:
            break
        best = (size, alg)
    return best[1]


def json_barrier_id(doc: dict[str, object], version: str, P: int) -> int:
    """The barrier algorithm id a JSON rules document gives P ranks (0: fixed decision)."""
    names = {a.name: a.id for a in barrier_algorithms(version)}
    colls = doc.get("collectives")
    rules = colls.get("barrier", []) if isinstance(colls, dict) else []
    for rule in rules:
        lo, hi = rule.get("comm_size_min", 0), rule.get("comm_size_max")
        if lo <= P and (hi is None or hi >= P):
            msg = rule.get("rules", [])
            alg = msg[0].get("alg", 0) if msg else 0
            return int(names.get(alg, 0) or 0) if isinstance(alg, str) else int(alg)
    return 0


# ---- the proof: pml monitoring ---------------------------------------------------------------

Signature = dict[int, dict[int, int]]


def build_barrier_program(workdir: Path, mpicc: str = "mpicc.openmpi") -> Path:
    """A program that calls MPI_Barrier N times (its argument), built with ``mpicc``."""
    src = Path(workdir) / "rg_barrier_loop.c"
    exe = Path(workdir) / "rg_barrier_loop"
    src.write_text(_BARRIER_SRC, encoding="utf-8")
    if shutil.which(mpicc) is None:
        raise ProofError(f"{mpicc} not found (apt-get install libopenmpi-dev)")
    res = subprocess.run([mpicc, "-O2", "-o", str(exe), str(src)], capture_output=True,
                         text=True, check=False, timeout=120)
    if res.returncode != 0:
        raise ProofError(f"{mpicc} failed: {res.stderr.strip()[-400:]}")
    return exe


def monitoring_args(prefix: Path) -> list[str]:
    """pml monitoring with internal (collective) messages apart, one file per rank."""
    return ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output",
            "3", "--mca", "pml_monitoring_filename", str(prefix)]


def read_monitoring(prefix: Path, P: int) -> Signature:
    """Per rank, {peer: messages sent} of the internal messages (the ``I`` lines of the
    files ``prefix.<rank>.prof`` Open MPI's pml monitoring writes)."""
    out: Signature = {}
    for rank in range(P):
        path = Path(f"{prefix}.{rank}.prof")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ProofError(f"{path}: no monitoring file ({exc.strerror})") from None
        peers: dict[int, int] = {}
        for line in text.splitlines():
            f = line.split("\t")
            if len(f) >= 5 and f[0] == "I" and int(f[1]) == rank:
                peers[int(f[2])] = peers.get(int(f[2]), 0) + int(f[4].split()[0])
        out[rank] = peers
    return out


@dataclass
class BarrierRun:
    """One proof: the internal messages per barrier of each rank, and what mpirun said."""

    P: int
    signature: Signature
    stderr: str
    command: list[str]


def run_barrier(program: Path, P: int, rules_file: Path | None, *, iters: int = 8,
                workdir: Path | None = None, timeout_s: float = 60.0) -> BarrierRun:
    """Runs ``program`` (build_barrier_program) on P ranks under mpirun.openmpi with the
    rules file (None: without one) and pml monitoring, with 0 and ``iters`` barriers: the
    signature is the difference per barrier (MPI_Init and MPI_Finalize's own messages
    cancel)."""
    from railgauge.mpilaunch import run_mpi

    work = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="rgompi-"))
    sigs = []
    stderr = ""
    cmd: list[str] = []
    for n in (0, iters):
        prefix = work / f"mon-P{P}-n{n}"
        opts = (mpirun_args(rules_file) if rules_file is not None else []) + \
            monitoring_args(prefix)
        res = run_mpi("openmpi", [*opts, str(program), str(n)], P, timeout_s=timeout_s,
                      bind="none")
        if res.returncode != 0:
            raise ProofError(f"{' '.join(res.command)}: {res.failure}\n{res.stderr[-800:]}")
        sigs.append(read_monitoring(prefix, P))
        stderr += res.stderr
        cmd = res.command
    per: Signature = {}
    for rank in range(P):
        base, full = sigs[0][rank], sigs[1][rank]
        peers = {}
        for q in sorted(set(base) | set(full)):
            d = full.get(q, 0) - base.get(q, 0)
            if d % iters:
                raise ProofError(f"rank {rank}: {d} messages to {q} in {iters} barriers")
            if d:
                peers[q] = d // iters
        per[rank] = peers
    return BarrierRun(P, per, stderr, cmd)


def schedule_signature(schedule: str, P: int, tool: str | None = None) -> Signature:
    """Per rank, {peer: messages sent} in one barrier of railgauge's schedule (the sends
    of `railgauge-sim barrier --trace`, from native/src/coll/sched.c)."""
    from railgauge.native import find_tool
    from railgauge.sim import run_sim

    with tempfile.TemporaryDirectory(prefix="rgsig-") as tmp:
        trace = Path(tmp) / "trace.json"
        run_sim(tool or find_tool("railgauge-sim"),
                ["barrier", "--algorithm", schedule, "-P", str(P)], {"L": 1.0, "o": 1.0},
                trace=trace, timeout=60)
        doc = json.loads(trace.read_text(encoding="utf-8"))
    out: Signature = {r: {} for r in range(P)}
    for ev in doc.get("traceEvents", []) if isinstance(doc, dict) else doc:
        m = re.match(r"send \d+b to (\d+)", str(ev.get("name", "")))
        if ev.get("ph") == "X" and ev.get("tid") == 0 and m:
            peers = out[int(ev["pid"])]
            peers[int(m.group(1))] = peers.get(int(m.group(1)), 0) + 1
    return out
