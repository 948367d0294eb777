"""Every command and subcommand of the CLI prints its help (option metavars included: a
custom parameter type once broke `railgauge gauge --help` under click 8.2, which passes a
context that 8.1 did not)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from railgauge.cli.main import cli


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [prefix]
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            out += _paths(cmd, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


@pytest.mark.parametrize("path", _paths(cli), ids=lambda p: " ".join(p) or "railgauge")
def test_help(path: tuple[str, ...]) -> None:
    res = CliRunner().invoke(cli, [*path, "--help"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "Usage:" in res.output
