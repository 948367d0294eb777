"""Several hosts on one machine: ranks in network namespaces joined by rails
(railgauge.netns), the tcp and ofi:tcp transports between them, the launcher's
--netns, `railgauge testbed`, and that nothing of a testbed outlives its test.

Needs root and iproute2 (CI has both); elsewhere every test here skips, naming why.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import railgauge
from conftest import netns_testbed
from railgauge import netns
from railgauge.launcher import LaunchError, launch
from railgauge.netns import Testbed

TOOL = "railgauge-xport-test"
SUITE = ("api", "ordering", "boundaries", "sizes", "any", "truncate", "bidir")
PYPATH = str(Path(railgauge.__file__).resolve().parent.parent)


def _libfabric_installed() -> bool:
    if shutil.which("pkg-config") is None:
        return False
    return subprocess.run(["pkg-config", "--exists", "libfabric"], check=False).returncode == 0


needs_ofi = pytest.mark.skipif(
    not _libfabric_installed(), reason="libfabric not installed (apt-get install libfabric-dev)"
)
TRANSPORTS = ["tcp", pytest.param("ofi:tcp", marks=needs_ofi)]


def _gone(names: list[str]) -> list[str]:
    """The names that still exist."""
    have = set(netns.list_namespaces())
    return [n for n in names if n in have]


def _python_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYPATH + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                  else "")
    env.update(extra)
    return env


def _drop_everything(tb: Testbed, host: int, rail: int = 0) -> None:
    """Host `host` silently drops everything it sends on the rail (a queue of length
    0): peers get no answer at all, as behind a filter."""
    tc = shutil.which("tc") or "/usr/sbin/tc"
    res = subprocess.run([tc, "-n", tb.hosts[host], "qdisc", "replace", "dev",
                          tb.rails[rail].ifname, "root", "pfifo", "limit", "0"],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot install a dropping qdisc (pfifo limit 0): {res.stderr.strip()}")


# ---- transports across namespaces ------------------------------------------------------


@pytest.mark.native
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_conformance_across_namespaces(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed,
    transport: str,
) -> None:
    """The whole conformance suite, rank 0 on one host and rank 1 on the other, each
    finding its own address from one setting (RG_TCP_IFACE / RG_OFI_IFACE=rail0)."""
    result = launch([native_tool(TOOL), "--transport", transport], 2, netns=two_hosts.hosts,
                    env=two_hosts.rank_env(), timeout_s=60)
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    assert "FAIL" not in out
    for test in SUITE:
        assert f"ok test={test} transport={transport} ranks=2" in out


@pytest.mark.native
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rank_announces_its_rail_address(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed,
    transport: str,
) -> None:
    """The measurement header names the address the subnet setting picked on rank 0's
    host; the run itself goes over the rail."""
    var = "RG_TCP_SUBNET" if transport == "tcp" else "RG_OFI_SUBNET"
    result = launch([native_tool("railgauge-bench"), "pingpong", "--transport", transport,
                     "--sizes", "8,64KiB"], 2, netns=two_hosts.hosts,
                    env={var: two_hosts.rails[0].subnet}, timeout_s=60)
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    header = json.loads(next(ln for ln in out.splitlines() if '"type":"header"' in ln))
    info = header["transport_info"]
    if transport == "tcp":
        assert info["address"] == two_hosts.address(0)
        assert var in info["address_from"]
    else:
        assert info["source"].startswith(f"{two_hosts.address(0)} on rail0")
    assert sum('"type":"pingpong"' in ln for ln in out.splitlines()) == 2


@pytest.mark.native
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_three_hosts_on_a_bridge(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], transport: str
) -> None:
    """More than two hosts share a rail through a bridge in a switch namespace."""
    with netns_testbed(3, 2) as tb:
        assert tb.switch is not None
        result = launch([native_tool(TOOL), "--transport", transport], 3, netns=tb.hosts,
                        env=tb.rank_env(1), timeout_s=60)
        out = capfd.readouterr().out
        assert result.returncode == 0, f"{result.failure}\n{out}"
        for test in SUITE:
            assert f"ok test={test} transport={transport} ranks=3" in out


@pytest.mark.native
@needs_ofi
def test_gauge_ofi_tcp_across_namespaces(tmp_path: Path, two_hosts: Testbed) -> None:
    """`railgauge gauge --transport ofi:tcp --netns A,B`: the main job between two hosts."""
    out = tmp_path / "rep"
    proc = subprocess.run(
        [sys.executable, "-m", "railgauge.cli.main", "gauge", "--quick", "--transport",
         "ofi:tcp", "--netns", ",".join(two_hosts.hosts), "--out", str(out), "--max-size",
         "64KiB", "--budget", "8"],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
        env=_python_env(RG_OFI_IFACE="rail0"))
    assert proc.returncode == 0, proc.stderr
    model = json.loads((out / "model-loggp.json").read_text())
    assert model["transport"] == "ofi:tcp"
    assert model["ranges"]
    header = json.loads((out / "measurements.jsonl").read_text().splitlines()[0])
    assert header["transport_info"]["source"].startswith(two_hosts.address(0))
    assert (out / "report.html").is_file()


# ---- addresses that do not work: clear errors, quickly ----------------------------------


@pytest.mark.native
@pytest.mark.parametrize(
    ("transport", "env", "needles"),
    [
        ("tcp", {"RG_TCP_IFACE": "rail7"}, ["RG_TCP_IFACE='rail7'", "no interface"]),
        ("tcp", {"RG_TCP_SUBNET": "198.19.254.0/24"},
         ["RG_TCP_SUBNET='198.19.254.0/24'", "no interface here has an address in it",
          "rail0 198.18.0."]),
        ("tcp", {"RG_TCP_SUBNET": "198.19.254.0"}, ["RG_TCP_SUBNET", "CIDR"]),
        ("tcp", {"RG_TCP_ADDR": "198.18.7.7"}, ["cannot bind", "198.18.7.7"]),
        ("tcp", {"RG_TCP_ADDR": "198.18.0.1", "RG_TCP_IFACE": "rail0"},
         ["set only one"]),
        pytest.param("ofi:tcp", {"RG_OFI_IFACE": "rail7"},
                     ["RG_OFI_IFACE='rail7'", "no interface"], marks=needs_ofi),
        pytest.param("ofi:tcp", {"RG_OFI_SUBNET": "198.19.254.0/24"},
                     ["RG_OFI_SUBNET='198.19.254.0/24'", "no interface here"], marks=needs_ofi),
    ],
)
def test_address_on_no_interface_fails_fast(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed,
    transport: str, env: dict[str, str], needles: list[str],
) -> None:
    start = time.monotonic()
    result = launch([native_tool(TOOL), "--transport", transport, "--test", "sizes"], 2,
                    netns=two_hosts.hosts, env=env, timeout_s=60)
    out = capfd.readouterr().out
    assert time.monotonic() - start < 5, out
    assert result.returncode == 1, out
    for needle in needles:
        assert needle in out, out


@pytest.mark.native
def test_interface_down_is_named(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed
) -> None:
    two_hosts.set_link(0, up=False, host=1)
    result = launch([native_tool(TOOL), "--transport", "tcp", "--test", "sizes"], 2,
                    netns=two_hosts.hosts, env=two_hosts.rank_env(), timeout_s=60)
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "RG_TCP_IFACE='rail0': the interface is down" in out


@pytest.mark.native
def test_loopback_across_namespaces_is_refused(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed
) -> None:
    """Without an address setting, tcp listens on 127.0.0.1, which the other host cannot
    reach: every rank says so at once instead of connecting to a stranger."""
    start = time.monotonic()
    result = launch([native_tool(TOOL), "--transport", "tcp", "--test", "sizes"], 2,
                    netns=two_hosts.hosts, timeout_s=60)
    out = capfd.readouterr().out
    assert time.monotonic() - start < 5
    assert result.returncode == 1
    assert "listens on loopback" in out and "RG_TCP_IFACE or RG_TCP_SUBNET" in out


@pytest.mark.native
@pytest.mark.parametrize(
    ("transport", "env", "needles"),
    [
        ("tcp", {"RG_TCP_CONNECT_TIMEOUT": "1s"},
         ["cannot connect to rank 0 at 198.18.0.1:", "no answer", "RG_TCP_CONNECT_TIMEOUT"]),
        pytest.param("ofi:tcp", {"RG_OFI_CONNECT_TIMEOUT": "2s"},
                     ["could not reach rank", "198.18.0.", "RG_OFI_CONNECT_TIMEOUT"],
                     marks=needs_ofi),
    ],
)
def test_silent_peer_fails_in_bounded_time(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed,
    transport: str, env: dict[str, str], needles: list[str],
) -> None:
    """A path that drops every packet: the open fails after the connect timeout with a
    message naming the peer and its address, never a hang."""
    _drop_everything(two_hosts, 1)
    start = time.monotonic()
    result = launch([native_tool(TOOL), "--transport", transport, "--test", "sizes"], 2,
                    netns=two_hosts.hosts, env={**two_hosts.rank_env(), **env}, timeout_s=60)
    out = capfd.readouterr().out
    assert time.monotonic() - start < 10, out
    assert result.returncode == 1, out
    for needle in needles:
        assert needle in out, out


@pytest.mark.native
def test_unreachable_peer_is_named(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed
) -> None:
    """Rank 1 routes rank 0's address through a gateway that does not exist: the kernel
    gives up resolving it (No route to host) and the open fails, naming the peer."""
    ip = netns.ip_command()
    assert ip is not None
    subprocess.run([ip, "-n", two_hosts.hosts[1], "route", "add",
                    f"{two_hosts.address(0)}/32", "via", "198.18.0.99", "dev", "rail0"],
                   check=True)
    start = time.monotonic()
    result = launch([native_tool(TOOL), "--transport", "tcp", "--test", "sizes"], 2,
                    netns=two_hosts.hosts, env=two_hosts.rank_env(), timeout_s=60)
    out = capfd.readouterr().out
    assert time.monotonic() - start < 10, out
    assert result.returncode == 1
    assert "cannot connect to rank 0 at 198.18.0.1:" in out
    assert "No route to host" in out and "no path to that address" in out


# ---- the launcher in namespaces ---------------------------------------------------------


def test_ranks_run_in_their_namespaces(
    capfd: pytest.CaptureFixture[str], two_hosts: Testbed
) -> None:
    """Rank r runs in netns[r % 2], keeps its bootstrap fd, and is reported so."""
    ip = netns.ip_command()
    script = (f'echo "rank=$RG_RANK ns=$({ip} netns identify) '
              'boot=$(readlink /proc/$$/fd/$RG_BOOT_FD)"')
    events: list[str] = []
    result = launch(["sh", "-c", script], 3, netns=two_hosts.hosts, timeout_s=30,
                    on_event=events.append)
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    for r in range(3):
        assert f"rank={r} ns={two_hosts.hosts[r % 2]} boot=socket:" in out, out
    assert any(f"in network namespace {two_hosts.hosts[1]}" in e for e in events), events


@pytest.mark.native
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_dead_rank_across_namespaces(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], two_hosts: Testbed,
    transport: str,
) -> None:
    """Rank 1 dies (SIGKILL) mid-transfer on the other host: rank 0 learns it within
    5 s and the failure names rank 1."""
    start = time.monotonic()
    result = launch([native_tool(TOOL), "--transport", transport, "--test", "peer-dies"], 2,
                    netns=two_hosts.hosts, env=two_hosts.rank_env(), timeout_s=60,
                    kill_on_failure=False)
    out = capfd.readouterr().out
    assert time.monotonic() - start < 5
    assert result.failed_rank == 1, f"{result}\n{out}"
    assert result.returncodes[1] == -signal.SIGKILL
    assert result.returncodes[0] == 42, out
    assert "RG_ERR_PEER_DEAD" in out


def test_launch_rejects_unknown_namespace(two_hosts: Testbed) -> None:
    with pytest.raises(LaunchError, match="no network namespace named railgauge-nope"):
        launch(["true"], 2, netns=[two_hosts.hosts[0], "railgauge-nope"])
    with pytest.raises(LaunchError, match="bad network namespace name"):
        launch(["true"], 2, netns=["../etc"])


def test_run_cli_netns(two_hosts: Testbed) -> None:
    ip = netns.ip_command()
    proc = subprocess.run(
        [sys.executable, "-m", "railgauge.cli.main", "run", "-n", "2", "--netns",
         ",".join(two_hosts.hosts), "--", "sh", "-c", f"{ip} netns identify"],
        capture_output=True, text=True, timeout=60, env=_python_env(),
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == sorted(two_hosts.hosts)
    proc = subprocess.run(
        [sys.executable, "-m", "railgauge.cli.main", "run", "-n", "2", "--netns",
         "railgauge-nope", "--", "true"],
        capture_output=True, text=True, timeout=60, env=_python_env(),
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "no network namespace named railgauge-nope" in proc.stderr


# ---- the testbed itself, and its cleanup -----------------------------------------------


def test_rails_addresses_and_rates() -> None:
    with netns_testbed(2, 2, "50mbit,none") as tb:
        assert [r.subnet for r in tb.rails] == ["198.18.0.0/24", "198.18.1.0/24"]
        assert tb.address(1, 1) == "198.18.1.2"
        ip, tc = netns.ip_command() or "ip", shutil.which("tc") or "/usr/sbin/tc"
        for h in range(2):
            addrs = subprocess.run([ip, "-n", tb.hosts[h], "-br", "addr"], capture_output=True,
                                   text=True, check=True).stdout
            assert f"198.18.0.{h + 1}/24" in addrs and f"198.18.1.{h + 1}/24" in addrs
            assert "lo " in addrs and "UNKNOWN" in addrs.splitlines()[0]
            q0 = subprocess.run([tc, "-n", tb.hosts[h], "qdisc", "show", "dev", "rail0"],
                                capture_output=True, text=True, check=True).stdout
            q1 = subprocess.run([tc, "-n", tb.hosts[h], "qdisc", "show", "dev", "rail1"],
                                capture_output=True, text=True, check=True).stdout
            assert "tbf" in q0 and "rate 50Mbit" in q0, q0
            assert "tbf" not in q1, q1
        if shutil.which("iperf3") is None:
            return
        # The shaped rail carries at most its rate; the other one more than twice that.
        rates = []
        for rail in (0, 1):
            server = tb.popen(1, ["iperf3", "-s", "-1", "-B", tb.address(1, rail)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                # The server may not listen yet (iperf3 -J exits 0 even then).
                report: dict[str, Any] = {}
                for _ in range(100):
                    res = tb.run(0, ["iperf3", "-c", tb.address(1, rail), "-t", "1", "-J"],
                                 capture_output=True, timeout=30)
                    report = json.loads(res.stdout or "{}")
                    if "error" not in report or "refused" not in report["error"]:
                        break
                    time.sleep(0.05)
                assert "error" not in report, report
                rates.append(report["end"]["sum_received"]["bits_per_second"])
            finally:
                server.kill()
                server.wait()
        assert rates[0] <= 50e6 * 1.05, rates
        assert rates[1] > 2 * 50e6, rates


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="2 rates for 3 rails"):
        netns.create(2, 3, "1gbit,2gbit")
    with pytest.raises(ValueError, match="not a tc rate"):
        netns.parse_rate("fast")
    with pytest.raises(ValueError, match="hosts must be"):
        netns.create(1, 1)
    assert netns.parse_rate("1gbit") == 10**9
    assert netns.parse_rate("100mbps") == 8 * 10**8
    assert netns.parse_rates("1gbit,none", 2) == [10**9, None]


def test_namespaces_gone_after_failing_rank_and_exception(
    capfd: pytest.CaptureFixture[str],
) -> None:
    names: list[str] = []
    with pytest.raises(RuntimeError, match="the test failed"), netns_testbed(3, 2) as tb:
        names = tb.namespaces
        assert _gone(names) == names
        result = launch(["sh", "-c", 'if [ "$RG_RANK" = 1 ]; then exit 3; fi; sleep 30'], 3,
                        netns=tb.hosts, timeout_s=30)
        assert result.failed_rank == 1 and result.returncode == 3
        raise RuntimeError("the test failed")
    assert len(names) == 4
    assert _gone(names) == []


# The holder starts with the default action for SIGHUP: run under nohup (which ignores
# it, and netns then keeps ignoring it after removing the testbed) it would not end.
# The holder's signals start from their defaults whatever it inherits: a test run started
# in the background of a non-interactive shell (nohup ... &) inherits SIGINT ignored, and
# Python then installs no KeyboardInterrupt handler.
_HOLDER = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from railgauge import netns
    {how}
    print(" ".join(tb.namespaces), flush=True)
    {then}
""")


@pytest.mark.parametrize(
    ("how", "then", "signum"),
    [
        ("ctx = netns.testbed(2, 1, '1gbit'); tb = ctx.__enter__()", "time.sleep(60)",
         signal.SIGTERM),
        ("ctx = netns.testbed(3, 1); tb = ctx.__enter__()", "time.sleep(60)", signal.SIGHUP),
        ("ctx = netns.testbed(2, 1); tb = ctx.__enter__()", "time.sleep(60)", signal.SIGINT),
        ("tb = netns.create(2, 1)", "sys.exit(0)", None),
        ("tb = netns.create(2, 1)", "raise SystemExit('boom')", None),
    ],
)
def test_namespaces_gone_when_the_owner_ends(how: str, then: str, signum: int | None) -> None:
    """Signals, sys.exit and an uncaught exception of the process that owns a testbed
    all remove it."""
    try:
        netns.check_available()
    except netns.TestbedUnavailable as exc:
        pytest.skip(str(exc))
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER.format(how=how, then=then)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_python_env())
    names: list[str] = []
    try:
        assert proc.stdout is not None
        names = proc.stdout.readline().split()
        assert names, proc.stderr.read() if proc.stderr else ""
        if signum is not None:
            assert _gone(names) == names
            proc.send_signal(signum)
        proc.wait(timeout=30)
        assert _gone(names) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for name in _gone(names):
            subprocess.run([netns.ip_command() or "ip", "netns", "del", name], check=False)


def test_stale_namespaces_of_a_killed_owner_are_removed() -> None:
    """SIGKILL leaves no chance to clean up: the next cleanup_stale() (which create()
    calls) removes what the dead owner left, and leaves live owners' testbeds alone."""
    try:
        netns.check_available()
    except netns.TestbedUnavailable as exc:
        pytest.skip(str(exc))
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER.format(how="tb = netns.create(2, 1)",
                                              then="time.sleep(60)")],
        stdout=subprocess.PIPE, text=True, env=_python_env())
    names: list[str] = []
    try:
        assert proc.stdout is not None
        names = proc.stdout.readline().split()
        proc.kill()
        proc.wait()
        assert _gone(names) == names  # left behind
        with netns_testbed(2, 1) as mine:
            assert _gone(names) == []  # create() removed them
            assert netns.cleanup_stale() == []
            assert _gone(mine.namespaces) == mine.namespaces
    finally:
        for name in _gone(names):
            subprocess.run([netns.ip_command() or "ip", "netns", "del", name], check=False)


def test_testbed_cli(tmp_path: Path) -> None:
    """railgauge testbed up / status / down, as issue 8's contract has them."""
    try:
        netns.check_available(need_tc=True)
    except netns.TestbedUnavailable as exc:
        pytest.skip(str(exc))
    env = _python_env(RAILGAUGE_TESTBED_STATE=str(tmp_path / "testbed.json"))

    def rg(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "railgauge.cli.main", "testbed", *args],
                              capture_output=True, text=True, timeout=60, env=env,
                              stdin=subprocess.DEVNULL)

    try:
        up = rg("up", "--hosts", "2", "--rails", "2", "--rate", "1gbit,2gbit", "--json")
        assert up.returncode == 0, up.stderr
        state = json.loads(up.stdout)
        hosts = state["hosts"]
        assert _gone(hosts) == hosts
        assert [r["rate"] for r in state["rails"]] == ["1 Gbit/s", "2 Gbit/s"]
        q = subprocess.run([shutil.which("tc") or "/usr/sbin/tc", "-n", hosts[1], "qdisc",
                            "show", "dev", "rail1"], capture_output=True, text=True).stdout
        assert "rate 2Gbit" in q, q
        again = rg("up")
        assert again.returncode == 2 and "already up" in again.stderr
        st = rg("status", "--json")
        assert st.returncode == 0 and json.loads(st.stdout)["up"] is True
        # `run --netns testbed` finds it.
        proc = subprocess.run(
            [sys.executable, "-m", "railgauge.cli.main", "run", "-n", "2", "--netns", "testbed",
             "--", "sh", "-c", f"{netns.ip_command()} netns identify"],
            capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        assert sorted(proc.stdout.split()) == sorted(hosts)
        down = rg("down")
        assert down.returncode == 0 and "removed" in down.stdout
        assert _gone(hosts) == []
        st = rg("status")
        assert st.returncode == 0 and "no testbed is up" in st.stdout
    finally:
        # Whatever this test left up (its own state file only).
        path = tmp_path / "testbed.json"
        if path.is_file():
            netns.destroy(Testbed.from_json(json.loads(path.read_text())))
