"""The `ragfunnel` command line: data, index, search, eval, bench."""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from ragfunnel.errors import RagfunnelError

app = typer.Typer(
    help="ragfunnel: retrieve the few passages that hold the answer (BM25 + dense + fusion), over Friends or your corpus.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
eval_app = typer.Typer(help="Measure retrieval on labelled questions.", no_args_is_help=True)
data_app = typer.Typer(help="Get corpora.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
app.add_typer(data_app, name="data")

console = Console()
err = Console(stderr=True)

ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML settings file (default: $RAGFUNNEL_HOME/config.toml)")]
IndexOpt = Annotated[Optional[Path], typer.Option("--index", help="index directory (default: $RAGFUNNEL_HOME/index)")]
DataOpt = Annotated[Optional[Path], typer.Option("--data", help="data root holding friends/ (default: $RAGFUNNEL_DATA or ../shared/data)")]


def _settings(config=None, index=None, data=None):
    from ragfunnel.config import load_settings

    return load_settings(config, index=index, data=data)


@contextmanager
def progress_bars(enabled: bool = True):
    """Yields a callback (task, done, total) that draws one bar per task."""
    if not enabled:
        yield lambda task, done, total: None
        return
    bars = Progress(
        TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), console=err, transient=False,
    )
    tasks: dict[str, int] = {}

    def update(task: str, done: int, total: int) -> None:
        if task not in tasks:
            tasks[task] = bars.add_task(task, total=total)
        bars.update(tasks[task], completed=done, total=total)

    with bars:
        yield update


@app.command()
def index(
    data: DataOpt = None,
    index: IndexOpt = None,
    config: ConfigOpt = None,
    corpus: Annotated[Optional[Path], typer.Option(help="corpus file or directory (default: <data>/friends)")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="build again even if an index exists")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
):
    """Build the index (BM25 + vectors) of the Friends corpus. Interrupted builds resume from the embedding cache."""
    from ragfunnel.corpus import load_friends
    from ragfunnel.embedding import EmbeddingCache
    from ragfunnel.store import build_index
    from ragfunnel.store.embedded import MANIFEST

    settings = _settings(config, index, data)
    target = settings.index_dir
    if (target / MANIFEST).exists() and not rebuild:
        manifest = json.loads((target / MANIFEST).read_text())
        if manifest.get("complete") and manifest.get("settings") == settings.store.model_dump():
            err.print(f"index at {target} is up to date ({manifest.get('documents')} documents); --rebuild to redo it")
            return
    source = corpus or settings.friends_dir
    t0 = time.perf_counter()
    docs = load_friends(source)
    err.print(f"loaded {len(docs):,} scenes, {sum(len(d.units) for d in docs):,} utterances from {source}")
    cache = EmbeddingCache(settings.cache_path)
    with progress_bars(not quiet) as progress:
        store = build_index(docs, target, settings.store, cache, progress)
    counts = {v: store.count_chunks(v) for v in settings.store.views}
    err.print(f"index ready at {target} in {time.perf_counter() - t0:.1f}s: chunks {counts}")
    store.close()


def _print_hits(views, question: str, mode: str, seconds: float) -> None:
    console.print(f"[bold]{question}[/bold]  [dim]mode={mode}  {seconds * 1000:.1f} ms[/dim]\n")
    for v in views:
        console.print(f"[bold cyan]{v.rank}. {v.label}[/bold cyan] — {v.title}  [dim]score {v.score:.4f}  {v.doc_id}[/dim]")
        for line in v.lines:
            text = Text("   " + line.text)
            for s, e in line.spans:
                text.stylize("bold yellow", s + 3, e + 3)
            console.print(text)
        console.print()


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="the question")],
    mode: Annotated[Optional[str], typer.Option(help="retrieval mode: bm25, vector, hybrid (= fast), …")] = None,
    k: Annotated[int, typer.Option(min=1, max=100, help="scenes to show")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    index: IndexOpt = None,
    config: ConfigOpt = None,
):
    """Search the index and print the top scenes with their best-matching lines."""
    from ragfunnel.pipeline import Pipeline, check_question
    from ragfunnel.present import scene_views

    question = check_question(question)
    settings = _settings(config, index)
    pipeline = Pipeline(settings)
    result = pipeline.search(question, mode, k=k)
    views = scene_views(pipeline.store, result.candidates, question)
    if as_json:
        print(json.dumps({"question": question, "mode": result.mode, "results": [v.to_dict() for v in views],
                          "trace": result.trace.to_dict()}, indent=2))
    else:
        _print_hits(views, question, result.mode, result.trace.total_seconds)


def _fmt(x: float) -> str:
    return f"{x:.3f}"


@eval_app.command("friends")
def eval_friends(
    set_: Annotated[str, typer.Option("--set", help="direct | reworded | heavy | dev")] = "direct",
    questions: Annotated[Optional[Path], typer.Option(help="JSONL of questions (gold_scene_ids or ground_truth_scene_id)")] = None,
    mode: Annotated[Optional[str], typer.Option(help="retrieval mode (default: hybrid)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    limit: Annotated[Optional[int], typer.Option(min=1, help="only the first N questions")] = None,
    index: IndexOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Recall@k, MRR@10, nDCG@10 of one mode on a question set, plus the union ceiling of its retrievers."""
    from ragfunnel.evaluate.datasets import load_friends_set, load_questions
    from ragfunnel.evaluate.runner import ceilings, metrics_for, run_modes
    from ragfunnel.pipeline import Pipeline

    settings = _settings(config, index, data)
    qs = load_questions(questions) if questions else load_friends_set(set_, settings.friends_dir)
    qs = qs[:limit] if limit else qs
    pipeline = Pipeline(settings)
    mode_name, _ = settings.resolve_mode(mode)
    with progress_bars(not as_json and sys.stderr.isatty()) as progress:
        runs = run_modes(pipeline, qs, [mode or settings.default_mode], lambda d, t: progress("questions", d, t))
    run = next(iter(runs.values()))
    report = {"set": str(questions) if questions else set_, "mode": mode_name, **metrics_for(run, qs), **ceilings(run, qs)}
    if as_json:
        print(json.dumps(report))
        return
    table = Table(title=f"{report['set']} · mode {mode_name} · n={report['n']}")
    for key in report:
        if key not in ("set", "mode"):
            table.add_column(key)
    table.add_row(*[str(v) if isinstance(v, int) else _fmt(v) for k, v in report.items() if k not in ("set", "mode")])
    console.print(table)


def main() -> None:
    try:
        app()
    except RagfunnelError as exc:
        err.print(f"[bold red]error:[/bold red] {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/yellow]: nothing is lost; run the same command again to resume.")
        sys.exit(130)


if __name__ == "__main__":
    main()
