"""`ragfunnel eval questions FILE` and `ragfunnel eval beir --data DIR`: retrieval quality on any collection.

    ragfunnel eval questions qs.jsonl --collection mydocs [--mode hybrid] [--k 10] [--json]
    ragfunnel eval beir --data ../shared/data/beir/scifact [--split test] [--mode accurate] [--json]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from ragfunnel.cli_options import CollectionOpt, ConfigOpt, FilterOpt, progress_bars
from ragfunnel.collections import beir_collection_name, index_beir
from ragfunnel.config import DEFAULT_COLLECTION, settings_from_options
from ragfunnel.corpus.beir import BeirCorpus
from ragfunnel.corpus.friends import is_builtin_collection
from ragfunnel.errors import ConfigError
from ragfunnel.evaluate.judged import check_judgments, judged_metrics, run_judged
from ragfunnel.pipeline import Pipeline
from ragfunnel.questions import Question, load_questions
from ragfunnel.store import Filter

console = Console()
err = Console(stderr=True, soft_wrap=True, markup=False)  # paths and names are text, never Rich markup

ModeOpt = Annotated[Optional[str], typer.Option(help="retrieval mode: bm25, vector, hybrid (default), accurate (once `ragfunnel train reranker` ran for the collection), or any mode of its settings")]
KOpt = Annotated[int, typer.Option("--k", min=1, max=100, help="also report nDCG / recall / MRR at this cut-off (10 always)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object (ndcg@10, recall@10, recall@100, mrr@10, n, ...)")]
LimitOpt = Annotated[Optional[int], typer.Option(min=1, help="only the first N questions")]


def _evaluate(settings, questions: list[Question], mode: str | None, k: int, as_json: bool, label: str,
              extra: dict | None = None, where: Filter | None = None) -> None:
    mode_name, _ = settings.resolve_mode(mode)
    pipeline = Pipeline(settings)
    try:
        missing = check_judgments(pipeline, questions, settings.collection)
        with progress_bars(not as_json) as progress:
            run = run_judged(pipeline, questions, mode, progress=lambda d, t: progress("questions", d, t), where=where)
    finally:
        pipeline.close()
    report = {"questions": label, "collection": settings.collection, "mode": mode_name, **(extra or {}),
              **({"filter": where.describe()} if where is not None else {}),
              **judged_metrics(run, k), "relevant_not_in_index": missing}
    if as_json:
        print(json.dumps(report))
        return
    if missing:
        err.print(f"note: {missing} relevant documents of the questions are not in the collection (they count as misses)")
    table = Table(title=f"{label} · collection {settings.collection} · mode {mode_name}")
    shown = {k_: v for k_, v in report.items() if isinstance(v, (int, float)) and k_ != "relevant_not_in_index"}
    for key in shown:
        table.add_column(key)
    table.add_row(*[str(v) if isinstance(v, int) else f"{v:.3f}" if not key.endswith("_ms") else f"{v:.1f}"
                    for key, v in shown.items()])
    console.print(table)


def eval_questions(
    file: Annotated[Path, typer.Argument(help='JSONL, one question per line: {"id": ..., "question": ..., "relevant": {"<document id>": grade, ...}}')],
    collection: CollectionOpt = None,
    mode: ModeOpt = None,
    k: KOpt = 10,
    as_json: JsonOpt = False,
    limit: LimitOpt = None,
    filter_: FilterOpt = None,
    config: ConfigOpt = None,
) -> None:
    """nDCG@10, recall@10 / @100 and MRR@10 of a collection on your own judged questions (graded relevance; a
    document id is the file's path relative to the PATH indexed, RELPATH#<id> for a JSONL record)."""
    where = Filter.parse(filter_)  # a bad filter or file is an error before the index opens
    questions = load_questions(file)
    settings = settings_from_options(config, collection=collection)
    _evaluate(settings, questions[:limit] if limit else questions, mode, k, as_json, str(file), where=where)


def eval_beir(
    data: Annotated[Path, typer.Option("--data", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")],
    split: Annotated[str, typer.Option(help="the qrels split to score (test, dev, train)")] = "test",
    mode: ModeOpt = None,
    k: KOpt = 10,
    as_json: JsonOpt = False,
    limit: LimitOpt = None,
    collection: Annotated[Optional[str], typer.Option("--collection", "-c", help="collection to index it as (default: beir-<folder name>)")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="index the folder again even if its collection is up to date")] = False,
    filter_: FilterOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Score a BEIR dataset through the product: index the folder as collection `beir-<name>` when needed (BM25
    over documents, sentence windows and sentences; a vector per document), then rank its judged queries."""
    where = Filter.parse(filter_)
    folder = data.expanduser()
    name = collection or beir_collection_name(folder)
    if is_builtin_collection(name):
        raise ConfigError(f"'{DEFAULT_COLLECTION}' is the Friends collection: name the BEIR one otherwise")
    questions = BeirCorpus(folder).questions(split)  # a bad folder or split fails before anything is indexed
    settings = settings_from_options(config, collection=name)
    with progress_bars() as progress:  # on stderr even with --json: a first index takes minutes
        info, built = index_beir(settings, folder, rebuild, progress)
    if built:
        err.print(f"indexed {folder} as collection {name!r}: {info.documents:,} documents")
    settings = settings_from_options(config, collection=name)  # with the collection's own settings (index_beir writes them)
    _evaluate(settings, questions[:limit] if limit else questions, mode, k, as_json, f"{folder.name} {split}",
              {"split": split}, where)


def register(eval_app: typer.Typer) -> None:
    eval_app.command("questions")(eval_questions)
    eval_app.command("beir")(eval_beir)
