"""MPICH's barrier: its algorithms per release, its default, and the settings of every layer
that must agree so that the chosen algorithm really runs (issue 21, item 1: `railgauge tune
barrier --emit mpich`). Plain functions that never print.

MPICH selects the barrier in layers (read from the tags v3.3 .. v4.3.0 of pmodels/mpich):

1. ``MPIR_Barrier``: with ``MPIR_CVAR_DEVICE_COLLECTIVES=percoll`` (the default) and
   ``MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE`` true (the default) the device answers first;
   otherwise ``MPIR_Barrier_impl``.
2. The ch4 device (``MPID_Barrier``, src/mpid/ch4/src/ch4_coll.h; its tree
   maint/tuning/coll/ch4/generic.json): a node-aware ("parent") communicator, i.e. any
   communicator with two ranks on one node, gets ``composition_alpha`` (a barrier of each
   node's ranks by the shared-memory module, the netmod's barrier across the nodes' first
   ranks, a 1-byte broadcast on each node); others ``composition_beta`` (the netmod's
   barrier, which is ``MPIR_Barrier_impl``). Where MPICH is built without a shared-memory
   module, the node phases are the netmod's too: **ch4:ucx builds have none by default**
   (configure turns ``--with-ch4-shmmods=auto`` into ``none`` for ucx,
   src/mpid/ch4/subconfigure.m4, every release 3.3 .. 4.3), so alpha runs MPIR's
   barrier on the node's ranks and MPIR's 1-byte broadcast, over UCX: the messages of
   MPIR's ``smp``. Builds with the posix module (ch4:ofi) run posix ``release_gather``
   there (since 3.4).
3. MPIR (``MPIR_Barrier_impl``): ``MPIR_CVAR_BARRIER_INTRA_ALGORITHM`` (auto, or an
   algorithm); auto follows the selection tree, the built-in maint/tuning/coll/mpir/
   generic.json or the file ``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``, which replaces
   the whole tree, every collective included.

So one algorithm for every P is written as ``MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE=0`` and
``MPIR_CVAR_BARRIER_INTRA_ALGORITHM=<name>``; choices that differ by communicator size as a
selection file: the release's default mpir tree (vendored under data/mpich/) with only the
barrier's intra-communicator subtree replaced by ``comm_size<=P`` keys. Where the device's
own composition is chosen at some sizes and MPIR's algorithms at others, a ch4 selection
file (``MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE``) keeps alpha at those sizes and
sends the others to ``composition_beta`` (MPIR).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from railgauge.emit import Emitted, _comment, _parse_version, mpich_device
from railgauge.export.files import ExportError
from railgauge.stacks import BarrierChoice, StackAlgorithm

STACK = "mpich"

#: The releases read, each by its tag in pmodels/mpich.
RELEASES: dict[str, str] = {"3.3": "v3.3", "3.4": "v3.4", "4.0": "v4.0.2", "4.1": "v4.1",
                            "4.2": "v4.2.0", "4.3": "v4.3.0"}
#: The ch4 devices whose barrier is described here.
DEVICES: tuple[str, ...] = ("ch4:ucx", "ch4:ofi")
#: The radices listed for k_dissemination and recexch (4.1+); MPICH takes any k >= 2
#: (MAX_RADIX = 8 only sizes its request arrays).
KVALS: tuple[int, ...] = (2, 3, 4, 5, 6, 7, 8)
#: MPIR_CVAR_BARRIER_DISSEM_KVAL and MPIR_CVAR_BARRIER_RECEXCH_KVAL in 4.1 .. 4.3.
DEFAULT_K = 2
#: MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD: the first node-level collectives of a communicator
#: that posix runs by MPIR's pt2pt algorithms before release_gather (3.4 .. 4.3).
POSIX_NUM_COLLS_THRESHOLD = 5
#: MPIR_CVAR_BCAST_INTRANODE_TREE_KVAL: release_gather's barrier gathers and releases on
#: the bcast tree, a k-ary tree of this radix (flat up to k + 1 ranks).
RELEASE_GATHER_KVAL = 64
#: MPICH's tag for the barrier's messages (src/include/mpir_tags.h): MPIR_BARRIER_TAG.
MPIR_BARRIER_TAG = 1
#: The vendored default trees (data/mpich/<dir>/), per release: identical from v3.4 to
#: v4.0.3 and from v4.1 to v4.3.2 (data/mpich/README.md).
_TREE_DIR = {"3.4": "4.0", "4.0": "4.0", "4.1": "4.1", "4.2": "4.1", "4.3": "4.1"}
MPIR_JSON_NAME = "mpich-coll-selection.json"
CH4_JSON_NAME = "mpich-ch4-coll-selection.json"
_DEVICE_NAMES = ("composition_alpha", "release_gather")
_DISSEM_NOTE = ("MPIR_Barrier_intra_dissemination: in round k rank r sends to r + 2^k and "
                "receives from r - 2^k (mod P) by MPIC_Sendrecv, ceil(log2 P) rounds: "
                "railgauge's dissem peer for peer")


@dataclass
class StackEmitted(Emitted):
    """:class:`~railgauge.emit.Emitted` with the files the settings name: ``files`` maps a
    file name (the settings give it under the ``file_dir`` of :func:`emit_barrier`) to its
    content; empty where the settings alone suffice. ``text`` is the environment file."""

    files: dict[str, str] = field(default_factory=dict)

    def to_json(self, file: str | None) -> dict[str, Any]:
        out = super().to_json(file)
        out["files"] = dict(self.files)
        return out


# ---- the release, the device -----------------------------------------------------------

def release_of(version: str) -> str:
    """The release key ("4.0") of an MPICH version ("4.0.2", "v4.1.3", "4.2"). ExportError
    names a version that is not one of :data:`RELEASES`."""
    parsed = _parse_version(version)
    key = f"{parsed[0]}.{parsed[1]}" if parsed else None
    if key not in RELEASES:
        raise ExportError(f"--stack-version {version!r}: not an MPICH release whose barrier "
                          f"settings are known (known: {', '.join(RELEASES)})")
    return key


def _device(device: str | None) -> str:
    """The device asked for, else the installed MPICH's, else ch4:ofi (MPICH's configure
    default). ExportError names any other."""
    dev = device if device is not None else (mpich_device() or "ch4:ofi")
    if dev not in DEVICES:
        raise ExportError(f"MPICH device {dev!r}: its barrier layers are not described here "
                          f"(known: {', '.join(DEVICES)})")
    return dev


def has_posix_shm(device: str) -> bool:
    """Whether the device's default build has the posix shared-memory module (ch4:ucx
    builds go straight to UCX, src/mpid/ch4/subconfigure.m4)."""
    return device != "ch4:ucx"


# ---- the algorithms -----------------------------------------------------------------------

def _alg(name: str, schedule: str | None, note: str) -> StackAlgorithm:
    return StackAlgorithm(stack=STACK, name=name, id=None, schedule=schedule, note=note)


def _nb(release: str) -> StackAlgorithm:
    where = ("MPIR_Ibarrier_sched_intra_recursive_doubling" if release == "3.3" else
             "the default tree's MPIR_Ibarrier_intra_sched_recursive_doubling")
    return _alg("nb", "dissem",
                f"MPIR_Ibarrier + wait; the ibarrier is {where}, which despite its name is a "
                "dissemination (round k: send to r + 2^k, receive from r - 2^k, then a "
                "schedule barrier): dissem's peers, but each message goes through the "
                "nonblocking schedule and the progress engine, and its tag is a schedule tag "
                "(a new one per call), not MPIR_BARRIER_TAG")


def _smp(via: str) -> StackAlgorithm:
    return _alg("smp", None,
                f"MPIR_Barrier_intra_smp{via}: MPIR_Barrier on each node's ranks, MPIR_Barrier "
                "across the nodes' first ranks, then a 1-byte MPIR_Bcast on each node to "
                "release; on one node a dissemination of the node's ranks followed by a "
                "binomial 1-byte broadcast from its first rank (no single railgauge "
                "schedule). Only on node-aware communicators: elsewhere MPICH falls back "
                "(MPIR_CVAR_COLLECTIVE_FALLBACK) to its auto selection")


def _alpha(release: str, device: str) -> StackAlgorithm:
    if has_posix_shm(device) and release != "3.3":
        node = ("posix release_gather (see release_gather)")
    elif has_posix_shm(device):
        node = "posix's barrier (3.3: MPIR_Barrier_intra_dissemination over shared memory)"
    else:
        node = ("the netmod's barrier, MPIR_Barrier_impl (ch4:ucx has no shared-memory "
                "module), and the 1-byte broadcast is MPIR's binomial one, all over UCX: the "
                "messages of smp")
    return _alg("composition_alpha", None,
                "ch4's MPIDI_Barrier_intra_composition_alpha, the device's choice on "
                "node-aware communicators (two ranks on one node): a barrier of each node's "
                f"ranks, the netmod barrier across the nodes' first ranks (MPIR's selection), "
                f"a 1-byte broadcast on each node; the node phases are {node}")


def _release_gather() -> StackAlgorithm:
    k = RELEASE_GATHER_KVAL
    return _alg("release_gather", None,
                "ch4 composition_alpha with posix MPIDI_POSIX_mpi_barrier_release_gather on "
                "each node (src/mpid/ch4/shm/posix/release_gather/): a shared-memory flag "
                "barrier, one 64-bit flag per rank on its own cache line; gather: each rank "
                "waits for its children's gather flags, then raises its own; release: rank "
                "0 raises its release flag, every other rank waits on its parent's and raises "
                "its own; both on the bcast tree, a k-ary tree with k = "
                f"MPIR_CVAR_BCAST_INTRANODE_TREE_KVAL = {k} (kary; a package-aware tree "
                "instead when the launcher was given a binding, HYDRA_USER_PROVIDED_BINDING), "
                f"so flat up to {k + 1} ranks: railgauge's linear on flags (coll/flags.c) "
                "for the barrier proper, except that the release is one flag all ranks read "
                "where linear writes P - 1 lines; alpha then adds a 1-byte release_gather "
                "broadcast on the node (a second release from rank 0), and the first "
                f"{POSIX_NUM_COLLS_THRESHOLD} node-level collectives of a communicator "
                "(MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD) run MPIR's dissemination instead. "
                "Nearest spec: linear, missing the second release; none faithful")


def barrier_algorithms(version: str, *, device: str | None = None) -> list[StackAlgorithm]:
    """MPICH's barrier algorithms in ``version``'s release on ``device`` ("ch4:ucx",
    "ch4:ofi"; None: the installed MPICH's, else ch4:ofi): the values of
    MPIR_CVAR_BARRIER_INTRA_ALGORITHM (auto left out) and the device's own composition
    (``composition_alpha``; ``release_gather`` where posix shared memory runs it).
    k_dissemination and recexch are listed once per k of :data:`KVALS`, k in the
    schedule. ExportError names an unknown version or device."""
    release = release_of(version)
    dev = _device(device)
    out: list[StackAlgorithm] = []
    if release == "3.3":
        out.append(_alg("recursive_doubling", "dissem",
                        "3.3's value recursive_doubling runs " + _DISSEM_NOTE))
        out.append(_nb(release))
        out.append(_smp(" (3.3: not a value of the variable; auto runs it on node-aware "
                        "communicators when MPIR_CVAR_ENABLE_SMP_BARRIER is true)"))
    elif release in ("3.4", "4.0"):
        out.append(_alg("dissemination", "dissem", _DISSEM_NOTE))
        out.append(_nb(release))
        out.append(_smp(" (3.4: only by the selection file; a value of the variable since "
                        "4.0)" if release == "3.4" else ""))
    else:
        for k in KVALS:
            if k == 2:
                out.append(_alg("k_dissemination", "dissem",
                                "MPIR_Barrier_intra_k_dissemination with k = 2 calls "
                                + _DISSEM_NOTE + " (4.0's dissemination)"))
            else:
                out.append(_alg("k_dissemination", f"kdissem:{k}",
                                f"MPIR_Barrier_intra_k_dissemination, k = {k}: per round "
                                f"{k - 1} irecvs from r - j k^i and isends to r + j k^i (mod "
                                "P, j = 1..k-1, wrapped: sent even where j k^i >= P), "
                                f"ceil(log_{k} P) rounds; k = P where P < k"))
        for k in KVALS:
            out.append(_alg("recexch", f"recexch:{k}",
                            f"MPIR_Barrier_intra_recexch, k = {k}: MPICH's recursive "
                            "exchange (the allreduce recexch with no data); "
                            "MPIR_CVAR_BARRIER_RECEXCH_SINGLE_PHASE_RECV false"))
        out.append(_nb(release))
        out.append(_smp(""))
    out.append(_alpha(release, dev))
    if has_posix_shm(dev) and release != "3.3":
        out.append(_release_gather())
    return out


def _find(algs: Sequence[StackAlgorithm], name: str,
          schedule: str | None = None) -> StackAlgorithm:
    for a in algs:
        if a.name == name and (schedule is None or a.schedule == schedule):
            return a
    raise AssertionError(f"{name} {schedule} not listed")  # pragma: no cover


def _flat_default(algs: Sequence[StackAlgorithm], release: str) -> StackAlgorithm:
    if release == "3.3":
        return _find(algs, "recursive_doubling")
    if release in ("3.4", "4.0"):
        return _find(algs, "dissemination")
    return _find(algs, "k_dissemination", "dissem")


def default_barrier(version: str, P: int, nodes: int = 1, *,
                    device: str | None = None) -> StackAlgorithm:
    """What MPICH ``version`` on ``device`` runs by default for a barrier of P ranks on
    ``nodes`` nodes (ranks spread evenly). A communicator with two ranks on one node is
    node-aware and gets the device's ``composition_alpha`` (``release_gather`` where the
    build has posix shared memory, 3.4+); one rank per node (nodes >= P), or P = 1, the
    flat default of MPIR's tree: dissemination (3.3's ``recursive_doubling`` value, 4.1+'s
    k_dissemination with k = 2). MPIR_CVAR_NOLOCAL=1 makes every communicator flat."""
    release = release_of(version)
    dev = _device(device)
    if P < 1 or nodes < 1:
        raise ExportError(f"P = {P}, nodes = {nodes}: both must be >= 1")
    algs = barrier_algorithms(version, device=dev)
    if P == 1 or nodes >= P:
        return _flat_default(algs, release)
    if has_posix_shm(dev) and release != "3.3":
        return _find(algs, "release_gather")
    return _find(algs, "composition_alpha")


# ---- the settings -------------------------------------------------------------------------

def _canonical(alg: StackAlgorithm) -> str:
    """The same algorithm across releases: the schedule for the dissemination family,
    k_dissemination and recexch, the name otherwise."""
    if alg.name in ("dissemination", "recursive_doubling", "k_dissemination", "recexch"):
        return str(alg.schedule)
    return alg.name


def _in_release(alg: StackAlgorithm, algs: Sequence[StackAlgorithm], release: str,
                dev: str) -> StackAlgorithm:
    if alg.name == "release_gather" and not has_posix_shm(dev):
        raise ExportError(f"release_gather: MPICH {dev} builds have no posix shared-memory "
                          "module (configure turns --with-ch4-shmmods=auto into none for "
                          "ucx); the device's barrier there is composition_alpha")
    want = _canonical(alg)
    for a in algs:
        if _canonical(a) == want:
            return a
    names = sorted({a.name for a in algs})
    raise ExportError(f"barrier algorithm {alg.name} ({alg.schedule or 'no schedule'}): "
                      f"MPICH {release} has no such algorithm (its own: {', '.join(names)})")


def _k_of(alg: StackAlgorithm) -> int:
    if alg.schedule and ":" in alg.schedule:
        return int(alg.schedule.split(":", 1)[1])
    return DEFAULT_K


def load_default_tree(version: str, layer: str = "mpir") -> dict[str, Any]:
    """The release's default selection tree (``layer`` "mpir" or "ch4"), as vendored from
    maint/tuning/coll/<layer>/generic.json of its tag. ExportError for 3.3, which has no
    selection file."""
    release = release_of(version)
    if release not in _TREE_DIR:
        raise ExportError(f"MPICH {release} has no collective selection file (since 3.4): "
                          "one barrier algorithm for every P only")
    path = resources.files("railgauge.stacks").joinpath(
        "data", "mpich", _TREE_DIR[release], f"{layer}-generic.json")
    tree: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return tree


def _mpir_leaf(alg: StackAlgorithm, flat: dict[str, Any]) -> dict[str, Any]:
    if alg.name in ("dissemination", "recursive_doubling"):
        return {"algorithm=MPIR_Barrier_intra_dissemination": {}}
    if alg.name == "k_dissemination":
        return {"algorithm=MPIR_Barrier_intra_k_dissemination": {f"k={_k_of(alg)}": {}}}
    if alg.name == "recexch":
        return {"algorithm=MPIR_Barrier_intra_recexch": {f"k={_k_of(alg)}": {}}}
    if alg.name == "nb":
        return {"algorithm=MPIR_Barrier_allcomm_nb": {}}
    if alg.name == "smp":
        return {"comm_hierarchy=parent": {"algorithm=MPIR_Barrier_intra_smp": {}},
                "comm_hierarchy=any": copy.deepcopy(flat)}
    raise AssertionError(alg.name)  # pragma: no cover


def _by_size(runs: Sequence[tuple[int, StackAlgorithm]],
             leaf: Any) -> dict[str, Any]:
    """comm_size<=P keys in order, the last one comm_size=any."""
    out: dict[str, Any] = {}
    for i, (P, alg) in enumerate(runs):
        key = "comm_size=any" if i == len(runs) - 1 else f"comm_size<={P}"
        out[key] = leaf(alg)
    return out


def _runs(choices: Sequence[tuple[int, StackAlgorithm]]) -> list[tuple[int, StackAlgorithm]]:
    """Consecutive sizes with the same algorithm merged: (largest P, algorithm)."""
    runs: list[tuple[int, StackAlgorithm]] = []
    for P, alg in choices:
        if runs and runs[-1][1] == alg:
            runs[-1] = (P, alg)
        else:
            runs.append((P, alg))
    return runs


def emit_barrier(choices: Sequence[BarrierChoice], version: str, fmt: str = "mpich", *,
                 device: str | None = None, file_dir: str = "") -> StackEmitted:
    """The environment settings that make MPICH ``version`` on ``device`` run the chosen
    barrier algorithm at each communicator size, with their reasons; ``text`` is an
    environment file (``export NAME=value``). An algorithm of another release is taken as
    this release's same algorithm (4.0's dissemination is 4.1's k_dissemination with k = 2
    and back); ExportError where the release has none, for an unknown version, device or
    format, and for choices that differ by size on 3.3 (no selection file).

    Choices that differ by size need selection files: ``files`` holds them by name
    (:data:`MPIR_JSON_NAME`, and :data:`CH4_JSON_NAME` where the device's composition is
    kept at some sizes), and the settings name them under ``file_dir`` (give an absolute
    directory: MPICH opens them from each rank's working directory). Between and beyond
    the chosen sizes the nearest larger choice applies, the largest one above them all."""
    if fmt != "mpich":
        raise ExportError(f"--emit format {fmt!r}: MPICH's barrier is written as 'mpich'")
    release = release_of(version)
    dev = _device(device)
    if not choices:
        raise ExportError("no barrier choices to write")
    algs = barrier_algorithms(version, device=dev)
    chosen = sorted(((c.P, _in_release(c.algorithm, algs, release, dev)) for c in choices),
                    key=lambda t: t[0])
    runs = _runs(chosen)
    em = StackEmitted(stack=STACK, version=version)
    why: dict[str, str] = {}

    def put(name: str, value: str, reason: str) -> None:
        em.settings[name] = value
        why[name] = reason
        em.reasons.append(reason)

    put("MPIR_CVAR_DEVICE_COLLECTIVES", "percoll",
        "percoll (the default): MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE decides whether the "
        "device's barrier answers first")
    device_algs = [a for _, a in runs if a.name in _DEVICE_NAMES]
    mpir_algs = [a for _, a in runs if a.name not in _DEVICE_NAMES]
    named = [a.name + (f" ({a.schedule})" if a.schedule else "") for _, a in runs]
    head = [f"MPICH {version} ({dev}) barrier settings written by railgauge tune barrier: "
            + ("; ".join(f"P <= {P}: {n}" for (P, _), n in zip(runs, named, strict=True))
               + " and larger" if len(runs) > 1 else f"{named[0]} at every P")]
    if len(runs) == 1 and device_algs:
        alg = device_algs[0]
        put("MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE", "1",
            f"{alg.name} is the device's own barrier: the device layer stays on, and ch4 "
            "picks composition_alpha on node-aware communicators (two ranks on a node)")
        put("MPIR_CVAR_BARRIER_INTRA_ALGORITHM", "auto",
            "auto: MPIR's default, which runs across the nodes' first ranks and on "
            "communicators that are not node-aware")
        if alg.name == "release_gather":
            put("MPIR_CVAR_BARRIER_POSIX_INTRA_ALGORITHM", "release_gather",
                "posix runs release_gather on each node's ranks (after the first "
                f"{POSIX_NUM_COLLS_THRESHOLD} node-level collectives, "
                "MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD)")
    elif len(runs) == 1:
        alg = mpir_algs[0]
        put("MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE", "0",
            "the device's composition is skipped: MPI_Barrier goes to MPIR_Barrier_impl")
        put("MPIR_CVAR_BARRIER_INTRA_ALGORITHM", alg.name,
            f"{alg.name} at every communicator size: {alg.note}")
        if alg.name == "k_dissemination":
            put("MPIR_CVAR_BARRIER_DISSEM_KVAL", str(_k_of(alg)),
                f"k = {_k_of(alg)} ({alg.schedule})")
        elif alg.name == "recexch":
            put("MPIR_CVAR_BARRIER_RECEXCH_KVAL", str(_k_of(alg)),
                f"k = {_k_of(alg)} ({alg.schedule})")
    else:
        if release == "3.3":
            raise ExportError("MPICH 3.3 has no collective selection file: its barrier "
                              "cannot differ by communicator size (choose one algorithm)")
        tree = load_default_tree(version, "mpir")
        intra = tree["collective=barrier"]["comm_type=intra"]
        flat = intra["comm_hierarchy=any"]
        default_intra = copy.deepcopy(intra)
        tree["collective=barrier"]["comm_type=intra"] = _by_size(
            runs, lambda a: copy.deepcopy(default_intra) if a.name in _DEVICE_NAMES
            else _mpir_leaf(a, flat))
        em.files[MPIR_JSON_NAME] = json.dumps(tree, indent=2) + "\n"
        if device_algs:
            put("MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE", "1",
                "the device's composition is kept at the sizes it was chosen for; the ch4 "
                "selection file sends the other sizes to composition_beta, MPIR's barrier")
            ch4 = load_default_tree(version, "ch4")
            ch4_intra = ch4["collective=barrier"]["comm_type=intra"]
            beta: dict[str, Any] = {"composition=MPIDI_Barrier_intra_composition_beta": {}}
            ch4["collective=barrier"]["comm_type=intra"] = _by_size(
                runs, lambda a: copy.deepcopy(ch4_intra) if a.name in _DEVICE_NAMES
                else copy.deepcopy(beta))
            em.files[CH4_JSON_NAME] = json.dumps(ch4, indent=2) + "\n"
            put("MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE",
                os.path.join(file_dir, CH4_JSON_NAME),
                f"{CH4_JSON_NAME}: ch4's default tree (maint/tuning/coll/ch4/generic.json "
                f"of {RELEASES[release]}) with the barrier's intra-communicator subtree "
                "keyed by comm_size")
            if any(a.name == "release_gather" for a in device_algs):
                put("MPIR_CVAR_BARRIER_POSIX_INTRA_ALGORITHM", "release_gather",
                    "posix runs release_gather on each node's ranks where alpha is kept")
        else:
            put("MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE", "0",
                "the device's composition is skipped: MPI_Barrier goes to "
                "MPIR_Barrier_impl, which follows the selection file")
        put("MPIR_CVAR_BARRIER_INTRA_ALGORITHM", "auto",
            "auto: MPIR follows the selection tree")
        put("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", os.path.join(file_dir, MPIR_JSON_NAME),
            f"{MPIR_JSON_NAME}: MPIR's default tree (maint/tuning/coll/mpir/generic.json of "
            f"{RELEASES[release]}, every other collective unchanged) with the barrier's "
            "intra-communicator subtree keyed by comm_size; give the file's absolute path "
            "if the ranks start in another directory")
    for _, a in runs:
        if a.name == "smp":
            em.reasons.append("smp runs only on node-aware communicators (two ranks on one "
                              "node); elsewhere MPICH falls back to its auto selection "
                              "(MPIR_CVAR_NOLOCAL=1 makes every communicator flat)")
            break
    em.text = _render_env(head, em, why)
    return em


def _render_env(head: list[str], em: Emitted, why: dict[str, str]) -> str:
    lines = [*(c for h in head for c in _comment(h)), ""]
    for name, value in em.settings.items():
        lines += _comment(why[name])
        lines.append(f"export {name}={value}")
        lines.append("")
    for r in em.reasons:
        if r not in why.values():
            lines += _comment(r)
    if isinstance(em, StackEmitted) and em.files:
        lines += _comment("Files: " + ", ".join(sorted(em.files)) + " (to be written where "
                          "the settings name them)")
    return "\n".join(lines).rstrip("\n") + "\n"


# ---- the proof: MPICH's UCX tags ----------------------------------------------------------

@dataclass(frozen=True)
class UcxTag:
    """One UCX tag of MPICH's ch4:ucx (src/mpid/ch4/netmod/ucx/ucx_impl.h, 4.0.2: 16 bits
    of context id, CH4_UCX_RANKBITS = 16 bits of source rank, 32 bits of MPI tag).
    ``context_id``: the communicator's context id plus 1 for collectives (MPI_COMM_WORLD's
    collectives: 1; its node and node-roots subcommunicators: other ids); ``source``: the
    sender's rank in that communicator."""

    context_id: int
    source: int
    tag: int


def decode_ucx_tag(tag: int, rank_bits: int = 16, context_bits: int = 16) -> UcxTag:
    """The fields of an MPICH ch4:ucx UCX tag."""
    tag_bits = 64 - rank_bits - context_bits
    return UcxTag(context_id=(tag >> (tag_bits + rank_bits)) & ((1 << context_bits) - 1),
                  source=(tag >> tag_bits) & ((1 << rank_bits) - 1),
                  tag=tag & ((1 << tag_bits) - 1))
