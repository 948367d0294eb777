"""The flag model of the shared-memory barrier (issue 7): the fit of railgauge-bench flagprtt
records (python/railgauge/fit/flags.py), `railgauge tune barrier` on a model-flags.json and
its engine rule, and the native pattern itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, find_native_tool
from railgauge.fit.flags import (
    FlagFitError,
    fit_flags,
    load_flag_model,
    read_flag_records,
    synth_flag_records,
)
from railgauge.sim import params_from_model
from railgauge.tune import TuneError, resolve_model, tune_barrier

TRUE = {"L": 0.17, "duplex": 0.08, "g": 0.02, "clock": 0.02, "call": 0.03, "o_s": 0.1,
        "o_r": 0.07}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.setdefault("RG_NATIVE_DIR", str(Path(find_native_tool("railgauge-sim")).parent))
    return subprocess.run([sys.executable, "-m", "railgauge.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False, env=env)


def write_flags(path: Path, **kw: float) -> Path:
    path.write_text(json.dumps(fit_flags(synth_flag_records(**{**TRUE, **kw}))))
    return path


@pytest.mark.parametrize("writers", [1, 5])
def test_fit_recovers_the_parameters(writers: int) -> None:
    recs = synth_flag_records(**TRUE, writers=writers, writer_slope=0.05, read_slope=0.004)
    doc = fit_flags(recs, ranks=writers + 1)
    rng = doc["ranges"][0]
    assert rng["L_us"] == pytest.approx(TRUE["L"])
    assert rng["duplex_us"] == pytest.approx(TRUE["duplex"])
    assert rng["o_us"] == 0.0
    # g: the largest per-signal slope, the k writers' where there are some.
    assert rng["g_us"] == pytest.approx(0.05 if writers > 1 else TRUE["g"])
    assert doc["call_us"] == pytest.approx(TRUE["call"])
    paper = doc["paper"]
    assert paper["o_s_us"] == pytest.approx(TRUE["o_s"])
    assert paper["o_r_us"] == pytest.approx(TRUE["o_r"])
    assert paper["L_us"] == pytest.approx(0.0, abs=1e-12)  # L = o_s + o_r here
    assert doc["engine"] == "flags" and doc["model"] == "loggp"
    assert (doc["measured"]["read_slope_k_writers_us"] is None) == (writers == 1)
    # The simulator takes it as any LogGP model.
    p = params_from_model_doc(doc)
    assert p["ranges"][0][1:4] == (pytest.approx(TRUE["L"]), 0.0, pytest.approx(rng["g_us"]))
    assert p["duplex"] == pytest.approx(TRUE["duplex"])


def params_from_model_doc(doc: dict) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "model-flags.json"
        path.write_text(json.dumps(doc))
        return params_from_model(path)


def test_fit_warns_where_the_paper_l_is_negative() -> None:
    # PRTT(1,0) = 2(o_s + o_r) + clock in the synthetic data; a larger o_s in PRTT(n,d)
    # alone makes the paper's L negative.
    recs = synth_flag_records(**TRUE)
    for r in recs:
        if r["kind"] == "prtt" and r["d_us"] > 0:
            r["median_us"] += 7 * 0.1
    doc = fit_flags(recs)
    assert doc["paper"]["L_us"] < 0
    assert any("not additive" in w for w in doc["warnings"])
    assert doc["ranges"][0]["L_us"] == pytest.approx(TRUE["L"])


def test_fit_bad_records(tmp_path: Path) -> None:
    recs = [r for r in synth_flag_records(**TRUE) if r["kind"] != "exchange"]
    with pytest.raises(FlagFitError, match="lack exchange"):
        fit_flags(recs)
    bad = synth_flag_records(**TRUE)
    bad[0]["median_us"] = float("nan")
    with pytest.raises(FlagFitError, match="not a number"):
        fit_flags(bad)
    (tmp_path / "x.jsonl").write_text('{"type": "header"}\n')
    with pytest.raises(FlagFitError, match="no flag records"):
        read_flag_records(tmp_path / "x.jsonl")
    (tmp_path / "m.json").write_text(json.dumps({"model": "loggp"}))
    with pytest.raises(FlagFitError, match="not a flag model"):
        load_flag_model(tmp_path / "m.json")


def test_tune_on_a_flag_model(tmp_path: Path) -> None:
    model = write_flags(tmp_path / "model-flags.json")
    res = tune_barrier(2, model, tool=find_native_tool("railgauge-sim"), ns=(2, 3))
    assert res.engine == "flags" and res.note is None
    pred = {r.algorithm: r.predicted_us for r in res.table}
    # o = 0: an exchange (both ranks signal at once) is L + duplex, the ping-pong of the
    # linear barrier two signals one way at a time, 2L; every prediction adds call_us.
    assert pred["dissem"] == pytest.approx(TRUE["L"] + TRUE["duplex"] + TRUE["call"])
    assert pred["linear"] == pytest.approx(2 * TRUE["L"] + TRUE["call"])
    assert res.algorithm in ("recdbl", "dissem", "nway")


def test_engine_rule(tmp_path: Path) -> None:
    msgs = tmp_path / "model-loggp.json"
    msgs.write_text((ROOT / "docs/data/barrier-16/model-loggp.json").read_text())
    # No flag model beside: messages, no note; --engine flags is an error.
    assert resolve_model(msgs) == (msgs, "messages", None)
    with pytest.raises(TuneError, match="no model-flags\\.json beside it"):
        resolve_model(msgs, "flags")
    flags = write_flags(tmp_path / "model-flags.json")
    path, eng, note = resolve_model(msgs)
    assert (path, eng) == (msgs, "messages") and note and "--engine flags" in note
    path, eng, note = resolve_model(msgs, "flags")
    assert (path, eng) == (flags, "flags") and note and "beside" in note
    assert resolve_model(flags)[:2] == (flags, "flags")
    with pytest.raises(TuneError, match="is a flag model"):
        resolve_model(flags, "messages")


def test_cli_json_contract_and_errors(tmp_path: Path) -> None:
    flags = write_flags(tmp_path / "model-flags.json")
    proc = cli("tune", "barrier", "-P", "4", "--model", str(flags), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc["algorithm"], str) and isinstance(doc["n"], int)
    assert isinstance(doc["predicted_us"], float) and isinstance(doc["table"], list)
    assert doc["engine"] == "flags"
    text = cli("tune", "barrier", "-P", "4", "--model", str(flags))
    assert "engine flags" in text.stdout
    bad = tmp_path / "bad" / "model-flags.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"model": "loggp", "engine": "flags", "call_us": -1,
                               "ranges": json.loads(flags.read_text())["ranges"]}))
    proc = cli("tune", "barrier", "-P", "4", "--model", str(bad))
    assert proc.returncode == 2 and "call_us = -1" in proc.stderr, proc.stderr
    proc = cli("tune", "barrier", "-P", "4", "--model", str(flags), "--engine", "messages")
    assert proc.returncode == 2 and "is a flag model" in proc.stderr, proc.stderr


@pytest.mark.native
def test_flagprtt_pattern_fits(tmp_path: Path) -> None:
    out = tmp_path / "flag.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    bench = find_native_tool("railgauge-bench")
    proc = subprocess.run([sys.executable, "-m", "railgauge.cli.main", "run", "-n", "2", "--",
                           bench, "flagprtt", "--n", "4", "--iterations", "300", "--out",
                           str(out)], capture_output=True, text=True, timeout=120, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[-1] == {"type": "footer",
                                                          "status": "complete",
                                                          "points": len(lines) - 2}
    kinds = [(r["kind"], r["n"], r["writers"]) for r in lines[1:-1]]
    assert kinds[:6] == [("clock", 0, 0), ("call", 0, 0), ("prtt", 1, 1), ("prtt", 4, 1),
                         ("exchange", 1, 1), ("prtt", 4, 1)]
    assert [k for k in kinds if k[0] == "orecv"] == [("orecv", k, 1) for k in range(1, 5)]
    doc = fit_flags(read_flag_records(out))
    assert doc["ranges"][0]["L_us"] > 0 and doc["call_us"] > 0


@pytest.mark.native
@pytest.mark.parametrize(("args", "message"), [(["--n", "1"], "--n must be"),
                                               (["--bogus"], "unknown option")])
def test_flagprtt_usage(args: list[str], message: str) -> None:
    proc = subprocess.run([find_native_tool("railgauge-bench"), "flagprtt", *args],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
