"""One owner of terminal output (as hatch's Terminal): diagnostics go to stderr,
results to stdout, and progress bars appear only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class ProgressSink(Protocol):
    def __call__(self, done: int, total: int, what: str) -> None: ...


class Terminal:
    """Levelled output. verbosity: -1 quiet, 0 normal, 1+ verbose."""

    def __init__(self, verbosity: int = 0, *, interactive: bool | None = None) -> None:
        self.verbosity = verbosity
        self.interactive = sys.stderr.isatty() if interactive is None else interactive

    def info(self, text: str) -> None:
        if self.verbosity >= 0:
            print(text, file=sys.stderr, flush=True)

    def detail(self, text: str) -> None:
        if self.verbosity >= 1:
            print(text, file=sys.stderr, flush=True)

    def warn(self, text: str) -> None:
        print(f"railgauge: warning: {text}", file=sys.stderr, flush=True)

    def result(self, text: str) -> None:
        print(text, flush=True)

    @contextmanager
    def status(self, text: str) -> Iterator[None]:
        """A spinner on stderr while a step without a count runs (interactive only)."""
        if self.verbosity < 0 or not self.interactive:
            yield
            return
        from rich.console import Console

        with Console(stderr=True).status(text):
            yield

    @contextmanager
    def progress(self, title: str) -> Iterator[ProgressSink]:
        """A progress display; yields a callback(done, total, what).

        Interactive: a rich progress bar on stderr. Otherwise: a plain line at
        most every 5 seconds (so that CI logs show a long run is alive)."""
        if self.verbosity < 0:
            yield lambda done, total, what: None
            return
        if self.interactive:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            console = Console(stderr=True)
            with Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[what]}"),
                console=console,
                transient=False,
            ) as bar:
                task = bar.add_task(title, total=None, what="")

                def update(done: int, total: int, what: str) -> None:
                    bar.update(task, completed=done, total=total or None, what=what)

                yield update
            return
        last = [0.0]

        def plain(done: int, total: int, what: str) -> None:
            now = time.monotonic()
            if now - last[0] >= 5.0 or (total and done >= total):
                last[0] = now
                print(f"{title}: {done}/{total or '?'} {what}", file=sys.stderr, flush=True)

        yield plain
