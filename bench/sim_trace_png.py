"""Renders a Chrome trace JSON written by `railgauge sim ... --trace` as a timeline picture
in the style of Perfetto's (one row per track, grouped by rank; send, recv and calc slices in
their own colours, named where they fit), for docs where a screenshot is wanted. It draws
what the file holds and nothing else, except the message arrows, which join a send slice on
a CPU track to the receiving rank's recv slice of the same message (from the slice names).

    .venv/bin/python bench/sim_trace_png.py docs/sim-barrier-8.trace.json \\
        --out docs/sim-barrier-8.png --title "railgauge sim barrier -P 8 --L 5 --o 1 --g 1"
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

COLOURS = {"send": "#4e79a7", "recv": "#59a14f", "calc": "#f28e2b"}
MSG = re.compile(r"^(send|recv) (\S+) (to|from) (\d+) tag (-?\d+)$")


def load(path: Path) -> tuple[list[dict[str, Any]], dict[tuple[int, int], str],
                              dict[int, str]]:
    doc = json.loads(path.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    spans = [e for e in events if e.get("ph") == "X"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    if not spans:
        raise SystemExit(f"{path}: no complete (\"X\") events")
    return spans, threads, procs


def render(path: Path, out: Path, title: str | None) -> None:
    spans, threads, procs = load(path)
    tracks: dict[int, set[int]] = defaultdict(set)
    for e in spans:
        tracks[e["pid"]].add(e["tid"])
    for pid, tid in threads:
        tracks[pid].add(tid)
    rows: dict[tuple[int, int], int] = {}
    labels: list[tuple[float, str, bool]] = []
    y = 0
    for pid in sorted(tracks):
        labels.append((y, procs.get(pid, f"rank {pid}"), True))
        y += 1
        for tid in sorted(tracks[pid]):
            rows[(pid, tid)] = y
            labels.append((y, threads.get((pid, tid), f"track {tid}"), False))
            y += 1
    t_end = max(e["ts"] + e["dur"] for e in spans)
    fig_h = 0.26 * y + 1.2
    fig, ax = plt.subplots(figsize=(13, fig_h), dpi=110)
    for e in spans:
        row = rows[(e["pid"], e["tid"])]
        kind = e["name"].split(" ", 1)[0]
        colour = COLOURS.get(kind, "#9c9c9c")
        ax.add_patch(Rectangle((e["ts"], row - 0.42), e["dur"], 0.84, facecolor=colour,
                               edgecolor="white", linewidth=0.6))
        m = MSG.match(e["name"])
        text = e["name"] if e["dur"] >= 0.2 * t_end or m is None else \
            f"{m.group(3)} {m.group(4)}"
        if e["dur"] >= 0.03 * t_end:
            ax.text(e["ts"] + e["dur"] / 2, row, text, ha="center", va="center",
                    fontsize=6, color="white", clip_on=True)
    # Message arrows: the sender's CPU send slice to the receiver's CPU recv slice.
    recvs: dict[tuple[int, int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in spans:
        m = MSG.match(e["name"])
        if m and m.group(1) == "recv" and threads.get((e["pid"], e["tid"]), "").startswith("cpu"):
            recvs[(int(m.group(4)), e["pid"], m.group(5), m.group(2))].append(e)
    for e in spans:
        m = MSG.match(e["name"])
        if not (m and m.group(1) == "send"
                and threads.get((e["pid"], e["tid"]), "").startswith("cpu")):
            continue
        cands = recvs.get((e["pid"], int(m.group(4)), m.group(5), m.group(2)))
        if not cands:
            continue
        r = cands.pop(0)
        ax.add_patch(FancyArrowPatch((e["ts"] + e["dur"], rows[(e["pid"], e["tid"])]),
                                     (r["ts"], rows[(r["pid"], r["tid"])]),
                                     arrowstyle="-|>", mutation_scale=6, linewidth=0.5,
                                     color="#555555", alpha=0.45))
    ax.set_xlim(0, t_end * 1.01)
    ax.set_ylim(y - 0.5, -0.5)
    ax.set_yticks([lab[0] for lab in labels])
    ax.set_yticklabels([lab[1] for lab in labels], fontsize=7)
    for tick, lab in zip(ax.get_yticklabels(), labels, strict=True):
        if lab[2]:
            tick.set_fontweight("bold")
    for yy, _, is_proc in labels:
        if is_proc:
            ax.axhspan(yy - 0.5, yy + 0.5, color="#eef1f5", zorder=0)
    ax.set_xlabel("simulated time (us)")
    ax.grid(axis="x", color="#dddddd", linewidth=0.5)
    ax.set_axisbelow(True)
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    ax.legend(handles, ["send (CPU o, NIC g)", "recv (handling o, NIC g)", "calc"],
              loc="upper right", fontsize=7, ncols=3, framealpha=0.9)
    ax.set_title(title or f"{path.name}: a rendering of the trace file (open it in "
                 "ui.perfetto.dev)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    render(args.trace, args.out, args.title)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
