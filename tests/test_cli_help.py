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


def test_every_verb_says_its_purpose_whole() -> None:
    """`railgauge --help` names every verb's purpose, none cut short by the width."""
    from railgauge.cli.main import SHORT_HELP

    assert set(SHORT_HELP) == set(cli.commands), set(SHORT_HELP) ^ set(cli.commands)
    res = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    assert res.exit_code == 0
    for name, text in SHORT_HELP.items():
        assert f"{name} " in res.output and text in res.output, (name, res.output)
    assert "..." not in res.output.split("Commands:", 1)[1]
