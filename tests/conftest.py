"""Shared pytest helpers: where the native tools are, and which processes run."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from railgauge.netns import Testbed

ROOT = Path(__file__).resolve().parent.parent
BUILD_HINT = "cmake -S native -B build/native -G Ninja && ninja -C build/native {name}"


def find_native_tool(name: str) -> str:
    """Path of native tool `name`: $RG_NATIVE_DIR/<name>, else on PATH, else build/native.

    A missing tool fails the test (tests must not skip silently).
    """
    native_dir = os.environ.get("RG_NATIVE_DIR")
    if native_dir:
        path = Path(native_dir) / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        pytest.fail(f"RG_NATIVE_DIR={native_dir} has no executable {name}; build it first")
    found = shutil.which(name)
    if found is not None:
        return found
    path = ROOT / "build" / "native" / name
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    pytest.fail(
        f"native tool {name} not found (RG_NATIVE_DIR unset, not on PATH, not in "
        f"build/native); build it: {BUILD_HINT.format(name=name)}"
    )


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``railgauge ARGS`` from this checkout (python/), with the native tools tests use;
    its output captured as text."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.setdefault("RG_NATIVE_DIR", str(Path(find_native_tool("railgauge-bench")).parent))
    return subprocess.run([sys.executable, "-m", "railgauge.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False, env=env)


@pytest.fixture
def native_tool() -> Callable[[str], str]:
    """The function find_native_tool, as a fixture: native_tool("railgauge-xport-test")."""
    return find_native_tool


def procs_with_marker(marker: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains `marker`."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else "?"
        if needle in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def proc_environ(pid: int) -> dict[str, str]:
    """The environment of a process (empty if it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


# ---- several hosts on this machine: network namespaces (railgauge.netns) ----------------


@pytest.fixture
def two_hosts() -> Iterator[Testbed]:
    """Two hosts (network namespaces) joined by one unshaped rail (veth, 198.18.0.0/24),
    removed after the test whatever happens (a failing rank, an exception, Ctrl-C).

    Ranks run across them with ``launch(argv, 2, netns=tb.hosts, env=tb.rank_env())``
    (``rank_env`` sets RG_TCP_IFACE and RG_OFI_IFACE to the rail, so that the tcp and ofi
    transports announce the rail's address). Skips, with the reason, where no testbed can
    be built here (not root, no iproute2, namespaces not permitted)."""
    with netns_testbed(2, 1) as tb:
        yield tb


@contextlib.contextmanager
def netns_testbed(hosts: int = 2, rails: int = 1,
                  rates: str | None = None) -> Iterator[Testbed]:
    """railgauge.netns.testbed(), turning 'cannot build one here' into a skip."""
    from railgauge.netns import TestbedUnavailable, create, destroy

    try:
        tb = create(hosts, rails, rates)
    except TestbedUnavailable as exc:
        pytest.skip(f"no network namespace testbed here: {exc}")
    try:
        yield tb
    finally:
        destroy(tb)
