"""`railgauge compare-models`: fit PRAM, BSP, LogP, LogGP and LoP to the same measurements
and rank them by their error on held-out points."""

from __future__ import annotations

import json
from pathlib import Path

import click

from railgauge.cli.common import UserError, no_file
from railgauge.terminal import Terminal


@click.command("compare-models")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("railgauge-compare"), show_default=True,
              help="Folder for compare-models.png and compare-models.json.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison JSON to stdout.")
@click.option("--folds", type=click.IntRange(2, 100), default=5, show_default=True,
              help="Cross-validation folds over s and over p.")
@click.option("--stat", type=click.Choice(["median", "min"]), default="median",
              show_default=True, help="Statistic of the onen round times to predict.")
@click.option("--models", "model_names", default=None,
              help="Comma-separated subset of pram,bsp,logp,loggp,lop (default: all).")
def compare_models(files: tuple[Path, ...], out: Path, as_json: bool, folds: int, stat: str,
                   model_names: str | None) -> int:
    """Rank PRAM, BSP, LogP, LogGP and LoP by how well they predict held-out points of
    FILES: PRTT JSON Lines of `railgauge gauge`/`measure`, and onen JSON Lines or CSV of
    `railgauge-bench onen` (told apart by content). Prints a table (or --json) and draws
    measured against predicted per model into --out."""
    from railgauge.compare import build_dataset, read_inputs
    from railgauge.compare import compare_models as run
    from railgauge.models import MODELS
    from railgauge.report.compare import as_text, comparison_table, plot_comparison

    term = Terminal()
    for f in files:
        if not f.is_file():
            raise UserError(no_file(f))
    chosen = list(MODELS.values())
    if model_names is not None:
        names = [n.strip().lower() for n in model_names.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown or not names:
            raise UserError(f"unknown model(s) {', '.join(unknown) or model_names!r}; choose "
                            f"from {', '.join(MODELS)}")
        chosen = [MODELS[n] for n in names]
    try:
        prtt, onen = read_inputs(list(files))
        data, notes = build_dataset(prtt, onen, stat=stat)
        comp = run(data, models=chosen, folds=folds)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    comp.notes.extend(notes)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {out}: {exc.strerror}") from None
    plot = out / "compare-models.png"
    plot_comparison(comp, plot)
    doc = comp.to_json(plot=str(plot))
    (out / "compare-models.json").write_text(json.dumps(doc, indent=2) + "\n")
    if as_json:
        term.result(json.dumps(doc, indent=2))
        return 0
    term.result(as_text(comparison_table(comp)))
    pts = doc["points"]
    term.result(
        f"\n{', '.join(f'{v} {k} points' for k, v in pts.items())}; cross-validation over "
        f"{'s (' + str(comp.s_folds) + ' folds)' if comp.s_folds else ''}"
        f"{' and ' if comp.s_folds and comp.p_folds else ''}"
        f"{'p (' + str(comp.p_folds) + ' folds)' if comp.p_folds else ''}; "
        f"ranking: {' > '.join(doc['ranking'])}"
    )
    for note in comp.notes:
        term.warn(note)
    term.result(f"plot: {plot}\njson: {out / 'compare-models.json'}")
    return 0
