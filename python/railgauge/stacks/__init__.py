"""The MPI stacks' own collective algorithms, as railgauge simulates and writes them
(issue 21, item 1: `railgauge tune barrier --emit openmpi|openmpi-json|mpich`).

Each stack has a module of plain functions that never print:

- :mod:`railgauge.stacks.openmpi`: Open MPI's ``coll_tuned`` barrier algorithms per
  release, its fixed decision (the default), the dynamic rules file in the classic text
  format and in the JSON format of Open MPI's published schema, and the proof by pml
  monitoring;
- :mod:`railgauge.stacks.mpich`: MPICH's barrier algorithms per release and the settings
  of every layer that must agree (device, posix, MPIR), its JSON selection file (that
  release's default tree with only the barrier changed), and the proof.

Both modules offer the same three functions::

    barrier_algorithms(version: str) -> list[StackAlgorithm]
    default_barrier(version: str, P: int, nodes: int = 1) -> StackAlgorithm
    emit_barrier(choices: Sequence[BarrierChoice], version: str, fmt: str) -> Emitted

``StackAlgorithm.schedule`` is railgauge's barrier spec that simulates the stack's algorithm
as the stack implements it (``railgauge-sim barrier --algorithm SPEC``; the schedules are in
native/src/coll/sched.c): ``linear``, ``binomial``, ``recdbl``, ``dissem``, ``nway:N``,
``ring`` (Open MPI's double ring), ``kdissem:K`` (MPICH's k-dissemination as written, with
its wrapped sends), ``recexch:K`` (MPICH's recursive exchange). None where railgauge has
no faithful schedule; such an algorithm is written and measured but never chosen.

Bad input (an unknown stack, format or version) raises
:class:`~railgauge.export.files.ExportError`, which the CLI prints in one line with exit 2.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The stacks ``tune barrier --emit`` writes for, and the formats of each.
BARRIER_FORMATS: dict[str, str] = {
    "openmpi": "openmpi",
    "openmpi-json": "openmpi",
    "mpich": "mpich",
}


@dataclass(frozen=True)
class StackAlgorithm:
    """One barrier algorithm of one stack release.

    ``name`` is the stack's own name in that release (Open MPI: ``recursive_doubling``;
    MPICH: ``dissemination``), ``id`` the stack's number (Open MPI's
    ``coll_tuned_barrier_algorithm`` value) or None, ``schedule`` railgauge's spec that
    simulates it or None, ``min_P``/``max_P`` the communicator sizes the stack accepts it
    for (Open MPI's ``two_proc``: 2..2), ``note`` what differs from the schedule, if
    anything (a synchronous send, a self-message skipped)."""

    stack: str
    name: str
    id: int | None
    schedule: str | None
    min_P: int = 1
    max_P: int | None = None
    note: str = ""

    def accepts(self, P: int) -> bool:
        """Whether the stack runs this algorithm on P ranks."""
        return self.min_P <= P and (self.max_P is None or self.max_P >= P)


@dataclass(frozen=True)
class BarrierChoice:
    """The algorithm written for communicators of P ranks, and its simulated time."""

    P: int
    algorithm: StackAlgorithm
    predicted_us: float
