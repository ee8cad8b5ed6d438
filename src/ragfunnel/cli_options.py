"""Command-line options shared by every command module (cli.py, generate/cli.py, serve/cli.py, ...)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML settings file (default: $RAGFUNNEL_HOME/config.toml)")]
IndexOpt = Annotated[Optional[Path], typer.Option("--index", help="index directory (default: $RAGFUNNEL_HOME/index)")]
DataOpt = Annotated[Optional[Path], typer.Option("--data", help="data root holding friends/ (default: $RAGFUNNEL_DATA or ../shared/data)")]
CollectionOpt = Annotated[
    Optional[str],
    typer.Option("--collection", "-c", help="which collection: friends (default), or a name given to "
                                           "`ragfunnel index PATH --collection NAME`; env RAGFUNNEL_COLLECTION"),
]


@contextmanager
def progress_bars(enabled: bool = True):
    """Yields a callback (task, done, total) that draws one bar per task."""
    if not enabled:
        yield lambda task, done, total: None
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
FilterOpt = Annotated[
    Optional[list[str]],
    typer.Option("--filter", "-f", help="only documents whose metadata matches, applied inside the index (repeatable, all "
                                       "must hold): format=pdf, 'year>=2019', 'path=reviews/*', 'season in 8,9', "
                                       "'date>=2020-01-01', section=Methods, 'page<=3' (docs/filters.md)"),
]
