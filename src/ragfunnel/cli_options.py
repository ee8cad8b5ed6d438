"""Command-line options shared by every command module (cli.py, generate/cli.py, serve/cli.py, ...); the settings
they give are `config.settings_from_options` (this module sits below config in the layers)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional, TextIO

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML settings file (default: $RAGFUNNEL_HOME/config.toml)")]
IndexOpt = Annotated[Optional[Path], typer.Option("--index", help="index directory (default: $RAGFUNNEL_HOME/index)")]


def _dsn_to_env(value: Optional[str]) -> Optional[str]:
    """--dsn is read as RAGFUNNEL_DSN, so that the settings and worker processes (serve --workers) all see it."""
    if value:
        import os

        os.environ["RAGFUNNEL_DSN"] = value
    return value


DsnOpt = Annotated[Optional[str], typer.Option(
    "--dsn", callback=_dsn_to_env, show_default=False,
    help="a PostgreSQL server to keep the index in (the postgres store; `ragfunnel db start` runs a local one); "
         "env RAGFUNNEL_DSN, or dsn in the config's store section")]
DataOpt = Annotated[Optional[Path], typer.Option("--data", help="data root holding friends/ (default: $RAGFUNNEL_DATA or ../shared/data)")]
CollectionOpt = Annotated[
    Optional[str],
    typer.Option("--collection", "-c", help="which collection: friends (default), or a name given to "
                                           "`ragfunnel index PATH --collection NAME`; env RAGFUNNEL_COLLECTION"),
]


LOG_PROGRESS_EVERY_S = 5.0


class ProgressLines:
    """Progress for a log rather than a terminal: one plain line per task every `every_s` seconds, and one when it
    finishes, so a build run by a scheduler or piped into a file still shows that it moves and how far it is."""

    def __init__(self, stream: TextIO, every_s: float = LOG_PROGRESS_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.stream, self.every_s, self.clock = stream, every_s, clock
        self.started: dict[str, float] = {}
        self.last_line: dict[str, float] = {}
        self.finished: set[str] = set()

    def __call__(self, task: str, done: int, total: int) -> None:
        now = self.clock()
        start = self.started.setdefault(task, now)
        finished = total > 0 and done >= total
        if task in self.finished or (not finished and now - self.last_line.get(task, start) < self.every_s):
            return
        self.last_line[task] = now
        if finished:
            self.finished.add(task)
        share = f" ({100 * done / total:.0f}%)" if total > 0 else ""
        self.stream.write(f"{task}: {done}/{total}{share}, {now - start:.0f} s{' - done' if finished else ''}\n")
        self.stream.flush()


@contextmanager
def progress_bars(enabled: bool = True):
    """Yields a callback (task, done, total): one bar per task on a terminal, a line every few seconds otherwise."""
    if not enabled:
        yield lambda task, done, total: None
        return
    if not sys.stderr.isatty():
        yield ProgressLines(sys.stderr)
        return
    bars = Progress(
        TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), console=Console(stderr=True, soft_wrap=True), transient=False,
    )
    tasks: dict[str, int] = {}

    def update(task: str, done: int, total: int) -> None:
        if task not in tasks:
            tasks[task] = bars.add_task(task, total=total)
        bars.update(tasks[task], completed=done, total=total)

    with bars:
        yield update


LLMOpt = Annotated[
    Optional[str],
    typer.Option("--llm", help="local (default), local:<file.gguf>, fake, anthropic[:<model>], openai:<base_url>|<model>; env "
                               "RAGFUNNEL_LLM (for ask's answers, and for modes that transform the question: deep)"),
]
RouteOpt = Annotated[
    str,
    typer.Option("--route", help="auto (default): the router picks lookup, scoped, aggregate (an exhaustive, cited list "
                                 "or count: 'In which scenes does Ross say \"we were on a break\"?', 'Which documents "
                                 "mention X?'; when nothing matches exactly, the ranked list, marked exhaustive false) or "
                                 "out of scope; lookup or aggregate: force that path"),
]
FilterOpt = Annotated[
    Optional[list[str]],
    typer.Option("--filter", "-f", help="only documents whose metadata matches, applied inside the index (repeatable, all "
                                       "must hold): format=pdf, 'year>=2019', 'path=reviews/*', 'season in 8,9', "
                                       "'date>=2020-01-01', section=Methods, 'page<=3' (docs/filters.md)"),
]
