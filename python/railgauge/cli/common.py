"""Pieces shared by the CLI modules: error kinds, option parsers."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import Any

import click

from railgauge.units import parse_size


class UserError(Exception):
    """Bad input from the user: exit 2, one line."""


def no_file(path: Any) -> str:
    """Why ``path`` cannot be read as an input file, in one clause: it does not exist, it is
    a folder, or it is not a regular file (a device, a pipe: railgauge reads its inputs
    more than once)."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        return f"{p} is a folder, not a file"
    if p.exists():
        return f"{p} is not a regular file (save it to a file first)"
    return f"no such file: {p}"


class FailError(Exception):
    """A failed measurement or run: exit 1 with the cause."""


def size_option(ctx: click.Context, param: click.Parameter, value: Any) -> int | None:
    """click callback: a size with units, as an int."""
    if value is None:
        return None
    try:
        return parse_size(str(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def verbosity(verbose: int, quiet: int) -> int:
    return verbose - quiet


class TransportType(click.ParamType):
    """A transport name: one of railgauge.measure.TRANSPORTS, tcp:<where>,
    ofi:<provider> or ofi:<provider>@<where>."""

    name = "transport"

    def get_metavar(self, param: click.Parameter, *args: Any, **kwargs: Any) -> str:
        # click 8.1 passes (param), 8.2 and later (param, ctx): both are taken.
        from railgauge.measure import TRANSPORTS

        return "[" + "|".join(TRANSPORTS) + "|tcp:WHERE|ofi:PROV]"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        from railgauge.measure import transport_error

        bad = transport_error(str(value))
        if bad is not None:
            self.fail(bad, param, ctx)
        return str(value)


TRANSPORT = TransportType()


@dataclass(frozen=True)
class MeasureArgs:
    """The options `gauge` and `measure` share, as given (None: not given), handed to the
    command as one argument ``margs`` and turned into a plan by :func:`make_plan`."""

    transport: str
    quick: bool
    min_size: int
    max_size: int
    n_msgs: int
    budget: float | None
    no_refine: bool
    refine_support: float | None
    per_octave: int | None
    passes: int | None
    confirm: int | None
    netns: str | None
    launcher: str | None
    hosts: str | None
    hostfile: str | None


def measure_options(f: Any) -> Any:
    """The options `gauge` and `measure` share: the command gets them as ``margs``
    (:class:`MeasureArgs`), and ``verbose`` and ``quiet``."""
    names = [fl.name for fl in fields(MeasureArgs)]

    @functools.wraps(f)
    def command(**kw: Any) -> Any:
        margs = MeasureArgs(**{k: kw.pop(k) for k in names})
        return f(margs=margs, **kw)

    opts = [
        click.option("--transport", type=TRANSPORT, default="shm",
                     show_default=True, help="Transport to measure."),
        click.option("--quick", is_flag=True,
                     help="Trade precision for time (one size per octave, looser targets)."),
        click.option("--min-size", default="1", callback=size_option, show_default=True,
                     help="Smallest message size (units allowed: 64KiB)."),
        click.option("--max-size", default="1MiB", callback=size_option, show_default=True,
                     help="Largest message size."),
        click.option("--per-octave", type=click.IntRange(1, 16), default=None,
                     help="Sizes per doubling of the sweep (default 4, --quick 1)."),
        click.option("--n", "n_msgs", type=click.IntRange(2, 4096), default=16,
                     show_default=True, help="Successive messages of PRTT(n,*,s)."),
        click.option("--budget", type=click.FloatRange(1.0, 86400.0), default=None,
                     help="Seconds the PRTT measurement may take, spread over its passes "
                          "(default 18 over shm, 45 over the others; --quick 15)."),
        click.option("--no-refine", is_flag=True,
                     help="Skip the refinement sweep around protocol changes."),
        click.option("--refine-support", type=click.FloatRange(0.0, 1.0), default=None,
                     help="Also refine around the quick fit's bends (breaks merged away "
                          "for too little support) whose break support is at least this "
                          "(default: around its protocol changes only)."),
        click.option("--passes", type=click.IntRange(1, 9), default=None,
                     help="Sweeps over the sizes, each in its own shuffled order, pooled per "
                          "point without the passes slowed by a burst of load (default 3, "
                          "--quick 2; 1: one sweep in order)."),
        click.option("--confirm", type=click.IntRange(0, 8), default=None,
                     help="With passes: up to this many more passes over the points whose "
                          "fastest pass no other pass confirms, in the budget's last 15% "
                          "(default 2, --quick 1; 0: none)."),
        click.option("-v", "--verbose", count=True, help="More detail on stderr."),
        click.option("-q", "--quiet", count=True, help="Less output on stderr."),
        _NETNS_OPTION,
        *_MPI_OPTIONS,
    ]
    out: Any = command
    for opt in reversed(opts):
        out = opt(out)
    return out


#: The default PRTT budget over shm (s).
SHM_BUDGET_S = 18.0


def make_plan(a: MeasureArgs) -> Any:
    """The measurement plan of the shared options; UserError names a bad one."""
    from railgauge.measure import MeasurePlan

    plan = MeasurePlan.quick() if a.quick else MeasurePlan()
    plan.transport = a.transport
    plan.netns = netns_option(a.netns)
    _mpi_options(plan, a)
    plan.min_size = a.min_size
    plan.max_size = a.max_size
    plan.n = a.n_msgs
    plan.refine = not a.no_refine
    plan.refine_support = a.refine_support
    if a.per_octave is not None:
        plan.per_octave = a.per_octave
    budget, passes, confirm = a.budget, a.passes, a.confirm
    if budget is not None:
        plan.budget_s = budget
    elif a.transport == "shm" and not a.quick:
        # The main job (two local ranks over shm) stays within half a minute, its 1:n
        # measurement, flag model and fits included, even on a busy host.
        plan.budget_s = SHM_BUDGET_S
    if passes is not None:
        plan.passes = passes
    if confirm is not None:
        plan.confirm = confirm
    try:
        plan.validate()
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return plan


def run_measurement(plan: Any, out: Any, term: Any) -> Any:
    """PRTT into out with a progress display (railgauge.gauge.measure_prtt_step); a
    failure is a FailError."""
    from railgauge.gauge import GaugeError, measure_prtt_step

    try:
        return measure_prtt_step(plan, out, term)
    except GaugeError as exc:
        raise FailError(str(exc)) from None


# ---- network namespaces (--netns of run, gauge and measure) ----------------------------

def netns_option(text: str | None) -> list[str] | None:
    """--netns NS0,NS1,... as a list; "testbed" is the hosts of `railgauge testbed up`.

    Raises UserError for an empty name or when no testbed is up."""
    if text is None:
        return None
    if text.strip() == "testbed":
        from railgauge.netns import TestbedError, load_state

        try:
            tb = load_state()
        except TestbedError as exc:
            raise UserError(str(exc)) from None
        if tb is None:
            raise UserError("--netns testbed: no testbed is up (railgauge testbed up)")
        return list(tb.hosts)
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise UserError(f"--netns {text!r}: give network namespace names separated by commas")
    return names


_NETNS_OPTION = click.option(
    "--netns", default=None, metavar="NS0,NS1,...",
    help="Run rank r in network namespace NS[r mod count] (root); 'testbed' takes the hosts "
         "of `railgauge testbed up`. Set RG_TCP_IFACE or RG_OFI_IFACE (or the SUBNET "
         "variants) so that each rank finds its address.")


# ---- MPI launchers (--launcher, --hosts, --hostfile of gauge and measure) --------------

_LAUNCHER_CHOICES = ("local", "mpirun", "mpiexec", "mpirun.openmpi", "mpiexec.mpich")


def _mpi_options(plan: Any, a: MeasureArgs) -> None:
    """--launcher, --hosts and --hostfile into the plan; UserError names a bad one."""
    plan.launcher = plan.hosts = plan.hostfile = None
    if a.launcher is not None:
        from railgauge.mpilaunch import flavour_from_name

        plan.launcher = "local" if a.launcher == "local" else flavour_from_name(a.launcher)
    if a.hosts is not None:
        hosts = [h.strip() for h in a.hosts.split(",")]
        if not all(hosts):
            raise UserError(f"--hosts {a.hosts!r}: give host names separated by commas")
        plan.hosts = hosts
    if a.hostfile is not None:
        plan.hostfile = str(a.hostfile)


_MPI_OPTIONS = (
    click.option("--launcher", type=click.Choice(_LAUNCHER_CHOICES), default=None,
                 help="Who starts the ranks: local (railgauge's launcher), mpirun "
                      "(Open MPI's mpirun.openmpi) or mpiexec (MPICH's mpiexec.mpich). "
                      "Default: local; for --transport mpi, mpirun where Open MPI is "
                      "installed, else mpiexec."),
    click.option("--hosts", default=None, metavar="H1,H2,...",
                 help="Run the ranks on these hosts (MPI launchers; rank 0, which writes "
                      "the measurements, on the first)."),
    click.option("--hostfile", type=click.Path(exists=True, dir_okay=False), default=None,
                 help="The MPI launcher's hostfile (Open MPI: 'host slots=N' lines; "
                      "MPICH: 'host:N')."),
)
