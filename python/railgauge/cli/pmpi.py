"""`railgauge pmpi`: where the PMPI library is, that puts coll/'s barrier under MPI_Barrier."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from railgauge.cli.common import UserError
from railgauge.terminal import Terminal

#: The MPI flavours a library is built for (one each: they are not ABI-compatible).
PMPI_FLAVOURS = ("openmpi", "mpich")
LAUNCHERS = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}


def pmpi_library_path(flavour: str) -> Path:
    """The path of ``librailgauge-pmpi-<flavour>.so``: in ``$RG_NATIVE_DIR`` (a build
    tree), else beside the native tools or in ``lib/railgauge/`` of their installation
    (``pip install .``), else in the ``build/native`` tree of a source checkout.
    Raises UserError naming where it looked."""
    if flavour not in PMPI_FLAVOURS:
        raise UserError(f"--mpi {flavour}: unknown MPI flavour (known: openmpi, mpich)")
    name = f"librailgauge-pmpi-{flavour}.so"
    dirs: list[Path] = []
    env_dir = os.environ.get("RG_NATIVE_DIR")
    if env_dir:
        dirs.append(Path(env_dir))
    else:
        scripts = Path(sys.executable).parent
        dirs += [scripts, scripts.parent / "lib" / "railgauge",
                 Path(sys.prefix) / "lib" / "railgauge",
                 Path(__file__).resolve().parents[3] / "build" / "native"]
    for d in dirs:
        cand = d / name
        if cand.is_file():
            return cand.resolve()
    where = ", ".join(str(d) for d in dirs)
    raise UserError(f"{name} not found (looked in {where}); it is built where "
                    f"mpicc.{flavour} is installed: apt-get install "
                    f"{'libopenmpi-dev' if flavour == 'openmpi' else 'libmpich-dev'}, then "
                    "rebuild (python3 -m pip install .)")


@click.command("pmpi")
@click.option("--mpi", "flavour", type=click.Choice(PMPI_FLAVOURS), required=True,
              help="The MPI library of the program: openmpi or mpich.")
@click.option("--print-path", is_flag=True,
              help="Print only the library's path (for LD_PRELOAD=$(...)).")
def pmpi(flavour: str, print_path: bool) -> int:
    """The PMPI library that replaces MPI_Barrier with a barrier of coll/.

    LD_PRELOAD=$(railgauge pmpi --print-path --mpi openmpi) RG_PMPI_BARRIER=nway:3
    mpirun.openmpi -n 16 ./app   (RG_PMPI_BARRIER, formerly RAILGAUGE_BARRIER, still read:
    linear, binomial, recdbl, dissem, nway:N, ring, kdissem:K, recexch:K; `railgauge tune
    barrier` gives the choice for a model; `railgauge-bench --print-config` lists every
    RG_PMPI_ setting; docs/coll.md)."""
    path = pmpi_library_path(flavour)
    term = Terminal()
    if print_path:
        term.result(str(path))
        return 0
    term.result(f"librailgauge-pmpi ({flavour}): {path}")
    term.result(f"use: LD_PRELOAD={path} RG_PMPI_BARRIER=nway:3 "
                f"{LAUNCHERS[flavour]} -n 16 ./app")
    return 0
