"""The `ragfunnel` command line: data, index, search, eval, bench."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ragfunnel.cli_options import CollectionOpt, ConfigOpt, DataOpt, DsnOpt, FilterOpt, IndexOpt, LLMOpt, RouteOpt, progress_bars
from ragfunnel.config import COLLECTION_FILE, Settings, settings_from_options
from ragfunnel.corpus import question_set
from ragfunnel.corpus.friends import is_friends_collection
from ragfunnel.errors import ConfigError, QueryError, RagfunnelError
from ragfunnel.pipeline import Pipeline, check_question
from ragfunnel.present import search as present_search
from ragfunnel.questions import load_questions
from ragfunnel.registry import install_hint
from ragfunnel.schema import SearchResponse, to_json

app = typer.Typer(
    help="ragfunnel: retrieve the few passages that hold the answer (BM25 + dense + fusion), over Friends or your corpus.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
eval_app = typer.Typer(help="Measure retrieval and answers on labelled questions.", no_args_is_help=True)
data_app = typer.Typer(help="Get corpora.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
bench_app = typer.Typer(help="Measure speed.", no_args_is_help=True)
train_app = typer.Typer(help="Train models (needs the 'train' extra, see docs/reranker.md).", no_args_is_help=True)
app.add_typer(train_app, name="train")
app.add_typer(data_app, name="data")
app.add_typer(bench_app, name="bench")
db_app = typer.Typer(help="A local PostgreSQL with pgvector for the postgres store (the 'postgres' extra).",
                     no_args_is_help=True)
app.add_typer(db_app, name="db")

console = Console()
err = Console(stderr=True, soft_wrap=True, markup=False)  # messages hold paths, titles, questions: text, never markup


@app.command()
def index(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="files or folders of your own documents (Markdown, HTML, text, PDF, DOCX, JSONL, code); omit for the Friends corpus")] = None,
    data: DataOpt = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    config: ConfigOpt = None,
    corpus: Annotated[Optional[Path], typer.Option(help="Friends corpus file or directory (default: <data>/<corpus>, i.e. <data>/friends)")] = None,
    include: Annotated[Optional[list[str]], typer.Option("--include", help="only files matching this glob (path or name; repeatable)")] = None,
    exclude: Annotated[Optional[list[str]], typer.Option("--exclude", help="leave out files matching this glob (repeatable)")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="build a whole new index, even if nothing changed (a collection otherwise syncs)")] = False,
    encoder: Annotated[Optional[str], typer.Option(help="embedding model: 'default' (bundled MiniLM), 'int8' (the bundled MiniLM with int8 weights, made from it once: ~1.7x faster to embed, hybrid recall@5 within about a point; see docs/results/first_stage/cold_build.md), 'tuned' (from `ragfunnel train embedder`), 'tuned-int8' (its int8 copy, made once), 'onnx:<dir>', 'int8:<dir>' (an int8 copy of that model) or 'st:<model>', or 'openai:<base_url>|<model>' (a server of the OpenAI embeddings API: Ollama, llama.cpp, vLLM, TEI, OpenAI; key in RAGFUNNEL_EMBEDDINGS_API_KEY or OPENAI_API_KEY; see docs/encoders.md); default: the one the existing index was built with; a new folder collection gets 'int8' when onnx is installed (the files extra), else 'default'")] = None,
    vectors: Annotated[Optional[str], typer.Option("--vectors", help="the Friends index's chunk views with vectors, comma-separated: 'w3s1,utt' (the default: what the hybrid mode reads), 'scene,w3s1,utt' for the vector_scene and all4 modes too, or 'default'; default: the views the existing index has, else the store setting dense_views (a collection's are in its collection.toml). By default the lines are read in context (late chunking: one encoder pass per stretch of a scene) and the windows' vectors made from their lines' (store settings late_chunked_views, derived_views; set them to [] and {} to encode each window and line alone)")] = None,
    device: Annotated[Optional[str], typer.Option(help="where an ONNX encoder embeds: auto (a CUDA GPU when onnxruntime-gpu is installed and starts, else the CPU), cpu or cuda; default: RAGFUNNEL_ONNX_DEVICE, else auto")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report (added / updated / deleted / unchanged / skipped) as JSON")] = False,
    on_duplicate: Annotated[str, typer.Option("--on-duplicate", help="a document id that appears twice in the corpus: error (default; names both places), keep-first or keep-last")] = "error",
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
):
    """Build the index (BM25 + vectors). With PATHs: the files under them become the collection NAME
    (default: the first PATH's folder name); running it again syncs (only new, changed and deleted files are
    written) and reports what was added, updated, deleted, unchanged or skipped (with the reason). Without: the
    Friends corpus, or the sources a collection was indexed from. A first Friends build is searchable (BM25) about a
    minute in, while its vectors are embedded; searches say how far they are. Interrupted builds and syncs resume."""
    import os

    from ragfunnel.collections import default_name, encoder_name, index_collection
    from ragfunnel.embedding import ONNX_DEVICE_ENV, onnx_device, onnx_providers

    if device:
        os.environ[ONNX_DEVICE_ENV] = onnx_device(device)  # read where the encoder loads, deep in the store
        onnx_providers(os.environ[ONNX_DEVICE_ENV])  # cuda without onnxruntime-gpu: the message now, not mid-build
    if paths and not collection:
        collection = default_name(paths)
    settings = settings_from_options(config, index, data, collection)
    if encoder:
        settings.choose_encoder(encoder_name(encoder, settings))
    with progress_bars(not quiet and not as_json) as progress:
        report = index_collection(settings, paths or (), include or (), exclude or (), rebuild, progress,
                                  corpus=corpus, vectors=vectors, on_duplicate=on_duplicate, say=err.print,
                                  warn=lambda line: err.print(Text(line, style="yellow")))
    if paths or not is_friends_collection(settings) or as_json:
        _print_sync(report, settings.index_dir, as_json)


def _print_sync(report, target: Path, as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
        return
    for rel, why in sorted(report.skipped.items()):
        err.print(Text(f"skipped {rel}: {why}", style="yellow"))
    for rel, problems in sorted(report.problems.items()):
        err.print(Text(f"{rel}: {len(problems)} problem(s) (parts skipped or repaired), first: {problems[0]}",
                       style="yellow"))
    counts = ", ".join(f"{v} {k}" for k, v in report.counts().items())
    done = {"built": f"new index of {report.documents:,} documents at {target} ({report.rebuild_reason})",
            "synced": f"synced: {report.documents:,} documents at {target}",
            "none": "up to date, index unchanged"}[report.action]
    err.print(Text(f"collection {report.collection}: {counts}; {done} ({report.seconds:.1f}s)"))
    if report.action == "built":
        err.print(Text(f'search it: ragfunnel search --collection {report.collection} "your question"'))


@app.command("collections")
def collections_cmd(
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """List the collections under $RAGFUNNEL_HOME with their size and settings."""
    from ragfunnel.collections import list_collections

    rows = list_collections(settings_from_options(config))
    if as_json:
        console.print_json(json.dumps([c.summary().model_dump(mode="json") for c in rows]))
        return
    table = Table("collection", "documents", "chunks", "corpus", "encoder", "sources")
    for c in rows:
        if c.info is None:
            table.add_row(Text(c.name), "not built", "", "", "", Text(", ".join((c.sources or {}).get("roots", []))))
            continue
        table.add_row(Text(c.name), f"{c.info.documents:,}", f"{sum(c.info.chunks.values()):,}", c.info.settings.corpus,
                      c.info.settings.encoder, Text(", ".join((c.sources or {}).get("roots", []))))
    console.print(table)


def plugin_registries() -> list[tuple[str, Any]]:
    """Every plug-in point, as (kind, its `ragfunnel.registry.Registry`), in the order a question meets them."""
    from ragfunnel.chunking.registry import CHUNKERS
    from ragfunnel.corpus.loaders.registry import LOADERS
    from ragfunnel.corpus.registry import CORPORA
    from ragfunnel.embedding import ENCODERS
    from ragfunnel.generate.answer import READERS
    from ragfunnel.generate.llm import LLM_BACKENDS
    from ragfunnel.rerank.registry import RERANKERS
    from ragfunnel.retrieve.fusion import FUSERS
    from ragfunnel.retrieve.registry import RETRIEVERS
    from ragfunnel.store.registry import STORE_BACKENDS

    return [("corpus", CORPORA), ("loader", LOADERS), ("chunker", CHUNKERS), ("encoder", ENCODERS),
            ("store", STORE_BACKENDS), ("retriever", RETRIEVERS), ("fuser", FUSERS), ("reranker", RERANKERS),
            ("reader", READERS), ("llm", LLM_BACKENDS)]


@app.command("plugins")
def plugins_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON list of {kind, name, extra, installed, description, usage}")] = False,
):
    """List what can be plugged in: corpora, loaders, chunkers, encoders, stores, retrievers, fusers, rerankers,
    readers and LLMs, each with the extra it needs (and whether that is installed now) and what it is."""
    rows = [{"kind": kind, "name": e.name, "extra": e.extra, "installed": not e.missing(), "description": e.description,
             "usage": e.usage} for kind, registry in plugin_registries() for e in registry.entries()]
    if as_json:
        print(json.dumps(rows))
        return
    table = Table("kind", "name", "extra", "installed", "description")
    for row in rows:
        table.add_row(row["kind"], Text(row["name"]), row["extra"] or "", "yes" if row["installed"] else "no",
                      Text(row["description"]))
    console.print(table)
    missing = sorted({row["extra"] for row in rows if row["extra"] and not row["installed"]})
    if missing:
        err.print("not installed: " + ", ".join(f"{extra} ({install_hint(extra)})" for extra in missing))


@data_app.command("friends")
def data_friends(
    dest: Annotated[Path, typer.Option(help="where to put friends_season_XX.json")] = Path("~/.ragfunnel/data/friends"),
):
    """Download Emory's Friends transcripts (friends_season_01..10.json). Needs internet."""
    from ragfunnel.corpus.download import download_friends

    with progress_bars() as progress:
        files = download_friends(dest, progress=lambda d, t: progress("seasons", d, t))
    err.print(f"{len(files)} season files in {dest.expanduser()}; index them with: ragfunnel index --corpus {dest}")


def _print_hits(response: SearchResponse) -> None:
    # questions, labels and titles are text: `[/red]` in one is printed, never read as Rich markup
    route = f"  route={response.route}" if response.route_info else ""
    console.print(Text.assemble((response.question, "bold"), "  ",
                                (f"mode={response.mode}{route}  {response.took_ms:.1f} ms", "dim"), "\n"))
    if response.route_info is not None and response.route_info.route != "lookup":
        info = response.route_info
        console.print(Text(f"route {info.route} ({info.source}: {info.reason})\n", style="dim"))
    fuse = next((st for st in response.trace.stages if st.name == "fuse"), None)
    extra = fuse.model_extra or {} if fuse is not None else {}
    if extra.get("method") == "learned":  # the trained fusion: the weights it chose for this question, and why
        weights = ", ".join(f"{name} {w:.2f}" for name, w in extra.get("weights", {}).items())
        why = ", ".join(f"{w['feature']} {w['value']:+.1f}" for w in extra.get("why", [])[:3])
        console.print(Text(f"learned fusion: {weights}" + (f" (moved most by {why})" if why else "") + "\n", style="dim"))
    if response.items is not None:
        if response.count is not None:
            console.print(Text(f"count: {response.count}", style="bold"))
        if response.exhaustive is False:  # the note says why: nothing matched exactly, or the exact list was too broad
            why = next((n for n in response.notes if n.endswith("not an exhaustive one")), "a ranked list, not an exhaustive one")
            console.print(Text(why, style="dim"))
        console.print(f"{len(response.items)} item(s):")
        for item in response.items:
            detail = f"score {item.score:.4f}" if item.score is not None else f"{item.matches} line(s)"
            console.print(Text.assemble((item.text, "bold cyan"), "  ", (detail, "dim")))
            for c in item.citations:
                console.print(Text(f"   {c.label}: {c.quote}"))
        return
    for hit in response.results:
        console.print(Text.assemble((f"{hit.rank}. {hit.label}", "bold cyan"), f" — {hit.title}  ",
                                    (f"score {hit.score:.4f}  {hit.id}", "dim")))
        for line in hit.lines:
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
    as_json: Annotated[bool, typer.Option("--json", help="print the SearchResponse (as POST /search returns it) as one JSON object")] = False,
    filter_: FilterOpt = None,
    route: RouteOpt = "auto",
    llm: LLMOpt = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    config: ConfigOpt = None,
):
    """Search the index and print the top scenes with their best-matching lines (for an aggregation question:
    every matching scene, episode or document, each with its lines; the ranked list, said to be one, when nothing
    matches exactly)."""
    from ragfunnel.query.router import OVERRIDES
    from ragfunnel.store.filters import Filter

    question = check_question(question)
    if route not in OVERRIDES:
        raise QueryError(f"unknown route {route!r}: choose one of {', '.join(OVERRIDES)}")
    where = Filter.parse(filter_)  # a bad filter is an error before the index opens
    settings = settings_from_options(config, index, collection=collection)
    pipeline = Pipeline(settings, llm=_lazy_llm(llm, settings))
    response = present_search(pipeline, question, mode, k=k, where=where, route=route)
    pending = pipeline.store.pending_vectors()
    if pending is not None and any(n.startswith("vectors:") for n in response.notes):
        err.print(pending.line())  # once: the mode's vector retrievers are left out until the build has them
    if as_json:
        print(to_json(response))
    else:
        _print_hits(response)


def _lazy_llm(name: str | None, settings: Settings):
    """The LLM of a mode's query transforms (`--llm`, else RAGFUNNEL_LLM, else local), made when first needed."""
    from ragfunnel.generate.cli import lazy_llm

    return lazy_llm(name, settings.home)


def _fmt(x: float) -> str:
    return f"{x:.3f}"


@eval_app.command("friends")
def eval_friends(
    set_: Annotated[str, typer.Option("--set", help="a question set of the index's corpus (Friends: direct | reworded | heavy | dev | holdout)")] = "direct",
    questions: Annotated[Optional[Path], typer.Option(help="JSONL of questions (gold_scene_ids or ground_truth_scene_id)")] = None,
    mode: Annotated[Optional[str], typer.Option(help="retrieval mode (default: hybrid)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    limit: Annotated[Optional[int], typer.Option(min=1, help="only the first N questions")] = None,
    filter_: FilterOpt = None,
    llm: LLMOpt = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Recall@k, MRR@10, nDCG@10 of one mode on a question set, plus the union ceiling of its retrievers."""
    from ragfunnel.evaluate.runner import ceilings, metrics_for, run_modes
    from ragfunnel.store.filters import Filter

    where = Filter.parse(filter_)
    settings = settings_from_options(config, index, data, collection)
    qs = load_questions(questions) if questions else None  # a bad file is an error before the index opens
    pipeline = Pipeline(settings, llm=_lazy_llm(llm, settings))
    qs = question_set(pipeline.corpus, set_) if qs is None else qs
    qs = qs[:limit] if limit else qs
    mode_name, _ = settings.resolve_mode(mode)
    with progress_bars(not as_json) as progress:
        runs = run_modes(pipeline, qs, [mode or settings.default_mode], lambda d, t: progress("questions", d, t), where=where)
    run = next(iter(runs.values()))
    report = {"set": str(questions) if questions else set_, "mode": mode_name, **metrics_for(run, qs), **ceilings(run, qs)}
    if where is not None:
        report["filter"] = where.describe()
    if as_json:
        print(json.dumps(report))
        return
    table = Table(title=f"{report['set']} · mode {mode_name} · n={report['n']}")
    for key in report:
        if key not in ("set", "mode"):
            table.add_column(key)
    table.add_row(*[str(v) if isinstance(v, int) else _fmt(v) for k, v in report.items() if k not in ("set", "mode")])
    console.print(table)


@eval_app.command("rerank")
def eval_rerank(
    sets: Annotated[str, typer.Option(help="comma-separated: direct,reworded,heavy,dev,holdout")] = "direct,reworded,heavy,holdout",
    rerankers: Annotated[str, typer.Option(help="comma-separated reranker methods (ltr, cross_encoder, cohere, …)")] = "ltr",
    candidates: Annotated[str, typer.Option(help="comma-separated N (fused top-N reranked)")] = "20,50",
    base_mode: Annotated[str, typer.Option(help="first-stage mode")] = "hybrid",
    out: Annotated[Optional[Path], typer.Option(help="write the Markdown table here")] = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """The precision stage like the published table: no-rerank floor, each reranker, the ceiling (gold among the
    N candidates) and the share of the floor-to-ceiling gap closed at recall@5."""
    from ragfunnel.config import RerankSpec
    from ragfunnel.evaluate.metrics import first_rank, summarize
    from ragfunnel.evaluate.report import header, markdown_table
    from ragfunnel.types import Trace

    settings = settings_from_options(config, index, data, collection)
    pipeline = Pipeline(settings)
    ns = [int(n) for n in candidates.split(",")]
    cols = ["set", "N", "reranker", "recall@1", "recall@5", "recall@10", "mrr@10", "ceiling (gold in N)", "gap closed @5", "p50 ms"]
    rows, notes = [], []
    ltr_fit = _ltr_holdout_report(settings.reranker_dir)
    with progress_bars() as progress:
        for set_name in sets.split(","):
            qs = question_set(pipeline.corpus, set_name)
            fused = []
            for i, q in enumerate(qs, 1):
                fused.append(pipeline.search(q.text, base_mode, k=max(ns)).candidates)
                progress(f"{set_name} first stage", i, len(qs))
            golds = [q.gold for q in qs]
            for n in ns:
                ceiling = sum(first_rank([c.doc_id for c in f[:n]], g) is not None for f, g in zip(fused, golds)) / len(qs)
                floor = summarize([([c.doc_id for c in f], g) for f, g in zip(fused, golds)])
                rows.append([set_name, n, "none (fused order)", floor["recall@1"], floor["recall@5"], floor["recall@10"],
                             floor["mrr@10"], ceiling, 0.0, 0.0])
                for method in rerankers.split(","):
                    if method == "ltr" and set_name == "holdout" and ltr_fit:
                        note = (f"- `ltr` was fit on the hold-out (cross-validated), so its hold-out rows are left out; "
                                f"its out-of-fold recall@5 at N = {ltr_fit['ltr']['candidates']} was "
                                f"{ltr_fit['holdout_ltr_recall@5_out_of_fold']:.3f} (training_report.json).\n")
                        notes += [note] if note not in notes else []
                        continue
                    spec = RerankSpec(method=method, candidates=n)
                    ranked, times = [], []
                    for i, (q, f) in enumerate(zip(qs, fused), 1):
                        t0 = time.perf_counter()
                        out_c = pipeline.rerank(q.text, f, spec, Trace(q.text, "eval"))
                        times.append((time.perf_counter() - t0) * 1000)
                        ranked.append([c.doc_id for c in out_c])
                        progress(f"{set_name} {method}@{n}", i, len(qs))
                    m = summarize(list(zip(ranked, golds)))
                    gap = (m["recall@5"] - floor["recall@5"]) / (ceiling - floor["recall@5"]) if ceiling > floor["recall@5"] else 0.0
                    rows.append([set_name, n, method, m["recall@1"], m["recall@5"], m["recall@10"], m["mrr@10"], ceiling,
                                 gap, sorted(times)[len(times) // 2]])
    doc = header("Precision stage: reranking the fused candidates") + markdown_table(cols, rows)
    doc += ("\n" + "".join(notes)) if notes else ""
    console.print(doc)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(doc)


def _ltr_fit_on_holdout(settings, mode: str) -> dict | None:
    """The LambdaMART training report when `mode` reranks with a LambdaMART fit on the hold-out, else None."""
    spec = settings.modes[settings.resolve_mode(mode)[0]]
    if spec.rerank is None or spec.rerank.method != "ltr":
        return None
    from ragfunnel.pipeline import reranker_model_dir

    return _ltr_holdout_report(reranker_model_dir(spec.rerank, settings))


def _ltr_holdout_report(model_dir: Path) -> dict | None:
    report = model_dir / "training_report.json"
    data = json.loads(report.read_text()) if report.is_file() else {}
    return data if data.get("fit_on") == "holdout" else None


@eval_app.command("table")
def eval_table(
    sets: Annotated[str, typer.Option(help="comma-separated: direct,reworded,heavy,dev,holdout, or NAME=FILE for a JSONL file of judged questions (e.g. vague=bench/query/vague_heldout.jsonl)")] = "direct,reworded,heavy,dev",
    modes: Annotated[Optional[str], typer.Option(help="comma-separated modes (default: every mode that needs no LLM)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="write the Markdown table here (and .json beside it)")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="only the first N questions of each set")] = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Every mode on every set (each retriever runs once per question), with union ceilings: the results table."""
    from ragfunnel.evaluate.report import header, markdown_table
    from ragfunnel.evaluate.runner import CEILING_KS, metrics_for, run_modes
    from ragfunnel.evaluate.metrics import union_coverage

    settings = settings_from_options(config, index, data, collection)
    # modes that transform the question need an LLM and seconds a question: named with --modes, not by default
    mode_list = modes.split(",") if modes else [name for name, spec in settings.modes.items() if not spec.transforms]
    for m in mode_list:
        settings.resolve_mode(m)
    pipeline = Pipeline(settings)
    if not modes:  # by default, the modes this index can run: not vector_scene / all4 without scene vectors
        have = set(pipeline.store.settings.dense_views)
        lacking = {m: sorted({settings.retrievers[r].view for r in settings.modes[m].retrievers
                              if settings.retrievers[r].kind.startswith("dense") and settings.retrievers[r].view not in have})
                   for m in mode_list}
        lacking = {m: views for m, views in lacking.items() if views}
        if lacking:
            err.print(f"left out {', '.join(lacking)}: this index has no vectors of "
                      f"{', '.join(sorted({v for views in lacking.values() for v in views}))} (ragfunnel index --vectors)")
            mode_list = [m for m in mode_list if m not in lacking]
    results: dict[str, dict] = {}
    doc = header("First-stage retrieval on Friends")
    metric_cols = ["recall@1", "recall@5", "recall@10", "recall@20", "recall@50", "mrr@10", "ndcg@10"]
    with progress_bars() as progress:
        for set_name in sets.split(","):
            set_name, _, path = set_name.partition("=")
            qs = load_questions(Path(path)) if path else question_set(pipeline.corpus, set_name)
            qs = qs[:limit] if limit else qs
            runs = run_modes(pipeline, qs, mode_list, lambda d, t, s=set_name: progress(s, d, t))
            results[set_name] = {m: metrics_for(r, qs) for m, r in runs.items()}
            in_sample = {m: r for m in mode_list if set_name == "holdout" and (r := _ltr_fit_on_holdout(settings, m))}
            rows = [[m + (" ¹" if m in in_sample else ""), *[results[set_name][m][c] for c in metric_cols]] for m in mode_list]
            doc += f"## {set_name} (n={len(qs)})\n\n" + markdown_table(["mode", *metric_cols], rows) + "\n"
            if in_sample:
                doc += ("¹ in-sample: its LambdaMART was fit on the hold-out (cross-validated; out-of-fold recall@5 "
                        f"{next(iter(in_sample.values()))['holdout_ltr_recall@5_out_of_fold']:.3f}, "
                        "training_report.json)\n\n")
            lists: dict[str, list[list[str]]] = {}
            for r in runs.values():
                lists.update(r.lists)
            golds = [q.gold for q in qs]
            ceiling_rows = [
                [name, *[union_coverage([ranked], golds, k) for k in CEILING_KS]] for name, ranked in lists.items()
            ]
            ceiling_rows.append(["union of all", *[union_coverage(list(lists.values()), golds, k) for k in CEILING_KS]])
            for m in mode_list:
                if len(settings.modes[settings.resolve_mode(m)[0]].retrievers) > 1:
                    ceiling_rows.append([f"fused: {m}", *[union_coverage([runs[m].ranked], golds, k) for k in CEILING_KS]])
            results[set_name]["_ceilings"] = {row[0]: dict(zip([f"@{k}" for k in CEILING_KS], row[1:])) for row in ceiling_rows}
            doc += f"Gold scene within the top k (union ceiling), {set_name}:\n\n"
            doc += markdown_table(["list", *[f"@{k}" for k in CEILING_KS]], ceiling_rows) + "\n"
            mean_ms = {m: 1000 * sum(r.seconds) / max(len(r.seconds), 1) for m, r in runs.items()}
            results[set_name]["_mean_ms"] = mean_ms
    console.print(doc)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(doc)
        out.with_suffix(".json").write_text(json.dumps(results, indent=2))
        err.print(f"wrote {out} and {out.with_suffix('.json')}")


def _labelled_questions(questions: Path, split: str) -> list:
    """A collection's labelled questions for training: a BEIR folder's `split` judgments, or a JSONL questions file."""
    from ragfunnel.corpus.beir import BeirCorpus

    return BeirCorpus(questions).questions(split) if questions.is_dir() else load_questions(questions)


@train_app.command("reranker")
def train_reranker_cmd(
    seed: Annotated[int, typer.Option(help="random seed (split, sampling, initialisation)")] = 13,
    epochs: Annotated[int, typer.Option(min=1, help="cross-encoder epochs")] = 1,
    max_minutes: Annotated[float, typer.Option(help="stop cross-encoder training after this long")] = 40.0,
    candidates: Annotated[Optional[int], typer.Option(min=2, help="fused top-N the reranker sees (default: the accurate mode's, 20 for Friends)")] = None,
    questions: Annotated[Optional[Path], typer.Option(help="labelled questions of the collection: a JSONL file (eval questions format, or Friends') or a BEIR folder (its --split judgments); default: the Friends training split")] = None,
    split: Annotated[str, typer.Option(help="with a BEIR folder as --questions: the qrels split to train on (never the one you report)")] = "train",
    cross_encoder: Annotated[bool, typer.Option("--cross-encoder", help="also fine-tune the MiniLM cross-encoder (~25 min on 2 cores; needs the train extra) and feed its score to LambdaMART")] = False,
    limit: Annotated[Optional[int], typer.Option(min=4, help="only the first N training questions (smoke test)")] = None,
    fit_on: Annotated[str, typer.Option(help="questions LambdaMART is fit on: 'train' (early-stopped on the hold-out), 'holdout' (cross-validated), or 'auto' = 'holdout' when the index's bi-encoder was fine-tuned on the training questions")] = "auto",
    out: Annotated[Optional[Path], typer.Option(help="model directory (default: $RAGFUNNEL_HOME/models/reranker)")] = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Train the reranker of --mode accurate: LambdaMART over first-stage evidence (and optionally a cross-encoder
    fine-tuned from the bundled MiniLM) on FriendsQA dev minus the 800-question sample and its paraphrases, or, for
    any collection, on --questions (80% to fit, 20% to stop early). It is saved with the collection."""
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.embedding import embedder_meta
    from ragfunnel.train.run import train_reranker

    settings = settings_from_options(config, index, data, collection)
    if fit_on not in ("auto", "train", "holdout", "cv"):
        raise ConfigError(f"--fit-on must be auto, train, holdout or cv, not {fit_on!r}")
    labelled = None
    if questions is not None:
        labelled = _labelled_questions(questions, split)
        if fit_on == "holdout" or cross_encoder:
            raise ConfigError("--questions trains LambdaMART on a split of them: --fit-on holdout and --cross-encoder "
                              "are for the Friends recipe")
    elif not is_friends_collection(settings):
        raise ConfigError(f"collection {settings.collection!r} has no training questions: pass --questions FILE "
                          f"(JSONL, or a BEIR folder with --split train)")
    if candidates is None:
        accurate = settings.modes.get("accurate")
        candidates = accurate.rerank.candidates if accurate and accurate.rerank else 20
    pipeline = Pipeline(settings)
    tuned = embedder_meta(pipeline.store.settings.encoder)
    if tuned is not None and tuned.get("seed", seed) != seed:
        pipeline.close()
        raise ConfigError(
            f"the index's bi-encoder was fine-tuned on the split of seed {tuned['seed']}: train the reranker with "
            f"--seed {tuned['seed']}, or its hold-out would contain the bi-encoder's training questions"
        )
    if fit_on == "auto":
        fit_on = "holdout" if tuned is not None else "train"
    target = out or settings.reranker_dir
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        import shutil

        shutil.rmtree(partial)
    try:
        with progress_bars() as progress:
            report = train_reranker(
                pipeline, partial, seed=seed, epochs=epochs, max_minutes=max_minutes, candidates=candidates,
                limit=limit, cross_encoder=cross_encoder, fit_on=fit_on, progress=progress, questions=labelled,
            )
    finally:
        pipeline.close()
    if target.exists():
        import shutil

        shutil.rmtree(target)
    partial.replace(target)
    console.print_json(json.dumps({k: v for k, v in report.items() if k not in ("ltr",)}))
    err.print(f"reranker saved to {target}; use it with --mode accurate")


@train_app.command("fusion")
def train_fusion_cmd(
    questions: Annotated[Optional[list[Path]], typer.Option(help="judged questions of the collection: a JSONL file (eval questions format, or Friends') or a BEIR folder (its --split judgments); repeat for several sets, each then weighs the same in training; default for Friends: FriendsQA's training split and the bundled vague-moment training set")] = None,
    split: Annotated[str, typer.Option(help="with a BEIR folder as --questions: the qrels split to train on (never the one you report)")] = "train",
    mode: Annotated[str, typer.Option(help="the mode it fuses for (and every mode with the same retrievers and fusion, e.g. accurate for hybrid)")] = "hybrid",
    retrievers: Annotated[Optional[str], typer.Option(help="comma-separated retrievers whose lists it fuses (default: the mode's, plus dense_scene for Friends)")] = None,
    query_dependent: Annotated[Optional[bool], typer.Option("--query-dependent/--convex", help="weights set per question from its features, or one convex combination for every question (default: chosen by cross-validation; convex under 150 questions)")] = None,
    seed: Annotated[int, typer.Option(help="seed of the Friends training split and of the cross-validation folds")] = 13,
    limit: Annotated[Optional[int], typer.Option(min=10, help="only the first N questions of each set (smoke test)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="model directory (default: the collection's <models>/fusion, where hybrid finds it)")] = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Fit the collection's learned fusion: per-question weights for each retriever list (a log-linear model over the
    question's length, IDF, names, quotes, question word and the lists' score gaps and agreement; numpy at query
    time), or one convex combination when the questions are few. Saved with the collection; `hybrid` (and `accurate`)
    then fuse with it, and the trace shows the weights chosen and why. A few minutes on 2 cores for Friends."""
    from ragfunnel.train.fusion import collect, friends_training_sets, serving_modes, train_fusion

    settings = settings_from_options(config, index, data, collection)
    mode_name, spec = settings.resolve_mode(mode)
    if spec.transforms or len(spec.retrievers) < 2:
        raise ConfigError(f"mode {mode_name!r} does not fuse lists of several retrievers: name one that does (hybrid)")
    if questions:
        sets = [(str(q), _labelled_questions(q, split)) for q in questions]
    elif is_friends_collection(settings):
        sets = friends_training_sets(settings.friends_dir, seed)
    else:
        raise ConfigError(f"collection {settings.collection!r} has no judged questions: pass --questions FILE (JSONL "
                          f"with relevant documents, or a BEIR folder with --split train)")
    names = retrievers.split(",") if retrievers else list(spec.retrievers)
    if retrievers is None and is_friends_collection(settings) and "dense_scene" not in names:
        names.append("dense_scene")  # scene vectors: cheap (3,107 of them), and they find described moments
    unknown = [r for r in names if r not in settings.retrievers]
    if unknown:
        raise ConfigError(f"unknown retrievers {', '.join(unknown)}: choose from {', '.join(settings.retrievers)}")
    pipeline = Pipeline(settings)
    target = out or settings.fusion_dir
    partial = target.with_name(target.name + ".partial")
    try:
        with progress_bars() as progress:
            data_sets, weights = [], []
            for label, qs in sets:
                qs = qs[:limit] if limit else qs
                got = collect(pipeline, qs, names, progress=lambda t, d, n, label=label: progress(f"lists {Path(label).name}", d, n))
                data_sets += got
                weights += [1.0 / max(len(got), 1)] * len(got)  # each set weighs the same
            kinds = {name: pipeline.retriever(name).kind for name in names}
            report = train_fusion(
                data_sets, names, kinds, partial, seed=seed, query_dependent=query_dependent, progress=progress,
                weights=weights, modes=serving_modes(settings, mode_name), encoder=pipeline.store.settings.encoder,
                idf_view=next((pipeline.retriever(n).view for n in names if kinds[n] == "sparse"), None),
                question_sets={Path(label).name: len(qs[:limit] if limit else qs) for label, qs in sets},
                collection=settings.collection,
            )
    finally:
        pipeline.close()
    if target.exists():
        import shutil

        shutil.rmtree(target)
    partial.replace(target)
    console.print_json(json.dumps(report))
    err.print(f"fusion saved to {target}; modes {', '.join(report['modes'])} fuse with it now (retrain the reranker, "
              "`ragfunnel train reranker`, so that accurate learns from the new candidates)")


@train_app.command("embedder")
def train_embedder_cmd(
    seed: Annotated[int, typer.Option(help="random seed (split, sampling, initialisation)")] = 13,
    epochs: Annotated[int, typer.Option(min=1, help="passes over the training pairs")] = 3,
    limit: Annotated[Optional[int], typer.Option(min=4, help="only the first N training questions (smoke test)")] = None,
    questions: Annotated[Optional[Path], typer.Option(help="labelled questions of the collection: a JSONL file with `relevant` documents, or a BEIR folder (its --split judgments); default: the Friends training split")] = None,
    split: Annotated[str, typer.Option(help="with a BEIR folder as --questions: the qrels split to train on (never the one you report)")] = "train",
    max_passage: Annotated[Optional[int], typer.Option(min=16, max=512, help="tokens of a passage in training (default: 128 for Friends' windows; the index's max length with --questions)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="model directory (default: $RAGFUNNEL_HOME/models/embedder; <collection>/models/embedder for any other collection)")] = None,
    device: Annotated[str, typer.Option(help="where to train: auto (a CUDA GPU when torch sees one, else the CPU), cpu or cuda")] = "auto",
    save_pairs: Annotated[Optional[Path], typer.Option("--save-pairs", help="write the training pairs (questions, positives, hard negatives) to this file and stop: train them on another machine with --pairs")] = None,
    pairs_file: Annotated[Optional[Path], typer.Option("--pairs", help="train on the pairs of a --save-pairs file instead of reading the index (e.g. on a machine with a GPU)")] = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Fine-tune the bundled MiniLM bi-encoder with hard negatives the bundled model finds in the index, and export
    it to ONNX. Friends: on the reranker's training questions (FriendsQA dev minus the 800-question sample and its
    paraphrases), positives the windows holding a gold answer line. Any collection: on --questions (document
    judgments), positives the relevant documents' closest chunks. Then rebuild the index with it (`--encoder tuned`)
    and retrain the reranker and the gate. On 2 CPU cores a step of 64 pairs takes ~30-60 s: build the pairs with
    --save-pairs where the index is, and train them with --pairs on a GPU."""
    from ragfunnel.embedding import EmbeddingCache, shared_encoder
    from ragfunnel.store import open_store
    from ragfunnel.corpus.friends_questions import training_split
    from ragfunnel.train.embedder import build_pairs, judged_pairs, load_pairs, resolve_device, widest_dense_view
    from ragfunnel.train.embedder import save_pairs as write_pairs

    if save_pairs is not None and pairs_file is not None:
        raise ConfigError("--save-pairs and --pairs exclude each other: save the pairs on one run, train them on another")
    settings = settings_from_options(config, index, data, collection)
    target = out or settings.embedder_dir
    if save_pairs is None:
        device = resolve_device(device)  # no GPU where one was asked for: an error before any pairs are built
    if pairs_file is not None:
        pairs, about = load_pairs(pairs_file)
        about["pairs_from"] = str(pairs_file)
        saved_width = about.pop("max_passage", 128)  # the meta records the width the training used
        width = max_passage or saved_width
        _fine_tune_and_publish(pairs, target, settings, epochs, seed, width, about, device)
        return
    if questions is not None:
        labelled = _labelled_questions(questions, split)[:limit]
    elif not is_friends_collection(settings):
        raise ConfigError(f"collection {settings.collection!r} has no training questions: pass --questions FILE "
                          f"(JSONL with relevant documents, or a BEIR folder with --split train)")
    else:
        labelled = training_split(settings.friends_dir, seed=seed).train[:limit]
    # the index's own encoder is not needed (negatives come from the bundled model), and it may be the very model
    # this run replaces: open the index for its text only
    cache = EmbeddingCache(settings.cache_path)
    store = open_store(settings.index_location, cache, check_encoder=False, backend_name=settings.backend)
    try:
        with progress_bars() as progress:
            negatives = lambda d, t: progress("hard negatives", d, t)  # noqa: E731
            about: dict = {"questions": len(labelled)}
            if questions is not None:
                view = widest_dense_view(store)
                pairs = judged_pairs(store, shared_encoder(), cache, labelled, view, progress=negatives)
                width = max_passage or store.settings.max_length
                # what it learnt from (the Friends recipe's split is fixed by its seed)
                about.update(questions_from=str(questions), split=split if questions.is_dir() else None, view=view)
            else:
                views = [v for v in store.settings.dense_views if v != "scene"]
                pairs = build_pairs(store, shared_encoder(), cache, labelled, views=views, progress=negatives)
                width = max_passage or 128
    finally:
        store.close()
    if save_pairs is not None:
        write_pairs(pairs, save_pairs, {**about, "collection": settings.collection, "max_passage": width})
        console.print_json(json.dumps({"pairs": len(pairs), "questions": len(labelled), "saved": str(save_pairs)}))
        err.print(f"pairs saved to {save_pairs}; train them with: ragfunnel train embedder --pairs {save_pairs} "
                  f"--out DIR (then copy DIR to {target})")
        return
    _fine_tune_and_publish(pairs, target, settings, epochs, seed, width, about, device)


def _fine_tune_and_publish(pairs, target: Path, settings: Settings, epochs: int, seed: int, width: int, about: dict,
                           device: str) -> None:
    """Train into `<target>.partial` and swap it in whole, so a crash never leaves half a model at `target`."""
    import shutil

    from ragfunnel.train.embedder import train_embedder

    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    with progress_bars() as progress:
        meta = train_embedder(pairs, partial, epochs=epochs, seed=seed, max_passage=width, device=device,
                              progress=lambda d, t: progress("fine-tuning", d, t), about=about)
    if target.exists():
        shutil.rmtree(target)
    partial.replace(target)
    console.print_json(json.dumps(meta))
    use = ("ragfunnel index --rebuild --encoder tuned" if is_friends_collection(settings) else
           f"encoder = \"onnx:{target}\" in the [store] section of {settings.collection_dir / COLLECTION_FILE}, "
           "then index the collection again")
    err.print(f"encoder saved to {target}; use it with: {use} (then ragfunnel train reranker and ragfunnel train "
              "gate, whose features read the vectors)")


@train_app.command("gate")
def train_gate_cmd(
    questions: Annotated[Optional[Path], typer.Option(help="answerable questions, one a line (default: a seeded sample of FriendsQA dev questions outside `eval answers`' sample)")] = None,
    off_topic: Annotated[Optional[Path], typer.Option(help="questions the corpus cannot answer, one a line (default: the bundled off_topic_training.txt)")] = None,
    n: Annotated[int, typer.Option(min=10, help="FriendsQA dev questions to sample (without --questions)")] = 300,
    target_refusal: Annotated[float, typer.Option(min=0.0, max=0.5, help="share of the answerable questions the gate may refuse (set on cross-validated scores)")] = 0.05,
    mode: Annotated[str, typer.Option(help="retrieval mode whose top-k the gate sees")] = "fast",
    k: Annotated[int, typer.Option(min=1, max=20, help="scenes retrieved per question")] = 5,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Train the answerability gate of `ask` (a logistic regression over retrieval evidence) and save it beside the
    index; without it `ask` uses the similarity threshold."""
    from ragfunnel.generate.evaluate import off_topic_training_questions, question_lines, tuning_questions
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.train.gate import train_gate

    settings = settings_from_options(config, index, data, collection)
    settings.resolve_mode(mode)

    def read_lines(path: Path) -> list[str]:
        if not path.is_file():
            raise ConfigError(f"no such file: {path}")
        return question_lines(path.read_text(encoding="utf-8"))

    answerable = read_lines(questions) if questions else [q.text for q in tuning_questions(settings.friends_dir, n, seed=99)]
    unanswerable = read_lines(off_topic) if off_topic else off_topic_training_questions()
    pipeline = Pipeline(settings)
    try:
        with progress_bars(not quiet) as progress:
            model = train_gate(pipeline, answerable, unanswerable, mode=mode, k=k, target_refusal=target_refusal, progress=progress,
                               answerable_from={"file": str(questions)} if questions else {"friendsqa_dev": {"n": n, "seed": 99}})
    finally:
        pipeline.close()
    report = {key: model[key] for key in ("cross_validated", "similarity_gate", "threshold", "path")}
    console.print_json(json.dumps(report))
    err.print(f"gate saved to {model['path']}; `ragfunnel ask` uses it from now on (delete the file to go back to the similarity gate)")


@train_app.command("evidence")
def train_evidence_cmd(
    mode: Annotated[str, typer.Option(help="retrieval mode whose top parents the selector ranks the lines of")] = "hybrid",
    parents: Annotated[int, typer.Option(min=1, max=100, help="retrieved parents whose lines are ranked")] = 20,
    seed: Annotated[int, typer.Option(help="seed of the training split (its hold-out is what `eval answers --reader evidence` measures)")] = 13,
    limit: Annotated[Optional[int], typer.Option(min=10, help="only the first N training questions (smoke test)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="model folder (default: $RAGFUNNEL_HOME/models/evidence, where `ask` looks)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Train the evidence selector (LambdaMART over the lines of the top retrieved scenes) on the FriendsQA dev
    answer utterances of the training split; `ask --reader evidence` uses it from then on."""
    from ragfunnel.corpus.friends_questions import training_split
    from ragfunnel.generate.evidence import EvidenceSelector, evidence_model_dir
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.registry import require
    from ragfunnel.train.evidence import fit_evidence, question_pools

    require("lightgbm", "train", "ragfunnel train evidence")
    settings = settings_from_options(config, index, data)
    settings.resolve_mode(mode)
    split = training_split(Path(settings.friends_dir), seed)
    questions = split.train[:limit] if limit else split.train
    pipeline = Pipeline(settings)
    try:
        selector = EvidenceSelector(pipeline.store, parents=parents)
        with progress_bars(not quiet) as progress:
            pools = question_pools(pipeline, selector, questions, mode, parents,
                                   progress=lambda n, total: progress("questions", n, total))
        target = out or evidence_model_dir(settings.models_dir)
        meta = fit_evidence(pools, target, seed=seed, meta={
            "trained_on": "FriendsQA dev answer utterances, training part of training_split", "mode": mode,
            "parents": parents, "index": str(settings.index_dir), "index_fingerprint": pipeline.store.info().fingerprint,
        })
    finally:
        pipeline.close()
    console.print_json(json.dumps({k: meta[k] for k in ("questions", "questions_with_gold_in_pool", "rounds", "top_features", "seconds")}))
    err.print(f"evidence selector saved to {target}")


@train_app.command("reader")
def train_reader_cmd(
    mode: Annotated[str, typer.Option(help="retrieval mode whose top parents the reader's windows come from")] = "hybrid",
    seed: Annotated[int, typer.Option(help="seed of the training split (its hold-out is what `eval answers` measures) and of the training")] = 13,
    epochs: Annotated[int, typer.Option(min=1, max=50, help="passes over the training questions (the best epoch on the validation part is kept)")] = 3,
    lr: Annotated[float, typer.Option(min=1e-6, max=1e-2, help="peak learning rate (linear warm-up and decay)")] = 5e-4,
    lora_rank: Annotated[int, typer.Option(min=0, max=256, help="rank of the low-rank updates of the trained layers' weights; 0 trains the weights themselves (a larger adapter)")] = 32,
    train_layers: Annotated[int, typer.Option(min=0, max=6, help="the top encoder layers that learn (0: all six); the frozen ones below are computed once per window, which is what makes a CPU run feasible")] = 2,
    groups: Annotated[str, typer.Option(help="windows a question trains on: small (3: the answer's and 2 retrieved distractors), compact (6: 2 with the answer, 3 distractors, 1 more of the gold scene) or full (the 8 retrieved windows, and the whole gold scene with 3 distractors; for a GPU)")] = "small",
    limit: Annotated[Optional[int], typer.Option(min=4, help="only the first N training questions (smoke test)")] = None,
    questions: Annotated[Optional[Path], typer.Option(help="questions of the collection with answer strings (JSONL: `question`, `answers`, `relevant`); default: Friends' training questions")] = None,
    out: Annotated[Optional[Path], typer.Option(help="model folder (default: the collection's models/reader, where `ask` looks)")] = None,
    device: Annotated[str, typer.Option(help="where to train: auto (a CUDA GPU when torch sees one), cpu or cuda")] = "auto",
    save_examples: Annotated[Optional[Path], typer.Option("--save-examples", help="write the training windows to this file and stop (train them elsewhere with --examples)")] = None,
    examples_file: Annotated[Optional[Path], typer.Option("--examples", help="train on the windows of a --save-examples file instead of reading the index")] = None,
    save_weights: Annotated[Optional[Path], typer.Option("--save-weights", help="write the fine-tuned weights (half precision) to this file and stop: a GPU machine's part")] = None,
    weights: Annotated[Optional[Path], typer.Option("--weights", help="skip the training: export these --save-weights weights and fit the answer scorer")] = None,
    decline: Annotated[float, typer.Option(min=0.0, max=0.5, help="share of the validation questions (all answerable) the reader may decline: sets the answer score below which it refuses")] = 0.03,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Train the extractive reader of `ask` (a MiniLM span reader over windows of the top retrieved parents, scores
    shared across a question's windows) and fit its answer scorer; saved with the collection's models. On 2 CPU cores
    an epoch over Friends takes tens of minutes: build the windows with --save-examples where the index is, train
    them with --examples --save-weights on a GPU, and finish here with --weights."""
    import shutil

    from ragfunnel.generate.evidence import EvidenceSelector, evidence_model_dirs, trained_scorer
    from ragfunnel.generate.reader import ExtractiveReader, reader_model_dir
    from ragfunnel.train import reader as tr

    if groups not in ("small", "compact", "full"):
        raise ConfigError(f"unknown --groups {groups!r}: choose small, compact or full")
    exclusive = [f for f, v in (("--save-examples", save_examples), ("--examples", examples_file)) if v]
    if len(exclusive) > 1:
        raise ConfigError("--save-examples and --examples exclude each other: save the windows on one run, train them on another")
    if weights is not None and (save_weights is not None or examples_file is not None and save_examples is not None):
        raise ConfigError("--weights skips the training: it does not go with --save-weights")
    if save_examples is None and weights is None:
        device = tr.resolve_device(device)
    log = (lambda text: None) if quiet else err.print
    if examples_file is not None:
        examples, about = tr.load_examples(examples_file)
        about["examples_from"] = str(examples_file)
    else:
        examples, about = _reader_examples(config, index, data, collection, mode, seed, limit, questions, quiet)
    if save_examples is not None:
        tr.save_examples(examples, save_examples, about)
        console.print_json(json.dumps({"examples": len(examples), "saved": str(save_examples)}))
        err.print(f"windows saved to {save_examples}; train them with: ragfunnel train reader --examples "
                  f"{save_examples} --save-weights W.pt (then here: ragfunnel train reader --examples {save_examples} "
                  "--weights W.pt)")
        return
    fit, validation = tr.split_examples(examples, seed)
    if weights is not None:
        model, _ = tr.base_reader("cpu", weights)
        report = {"weights_from": str(weights)}
    else:
        with progress_bars(not quiet) as progress:
            model, report = tr.train_span_model(fit, validation=validation, epochs=epochs, lr=lr, seed=seed,
                                                device=device, log=log, rank=lora_rank,
                                                train_layers=train_layers or None,
                                                kinds=("retrieved", "gold") if groups == "full" else (groups,),
                                                progress=progress)
    if save_weights is not None:
        tr.save_weights(model, save_weights)
        console.print_json(json.dumps({k: v for k, v in report.items() if k != "losses"}))
        err.print(f"weights saved to {save_weights}; finish with: ragfunnel train reader --examples EXAMPLES "
                  f"--weights {save_weights}")
        return
    settings = settings_from_options(config, index, data, collection)
    target = out or reader_model_dir(settings.models_dir)
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    meta = tr.export_reader(model, partial, {**about, "training": report, "fit_questions": len(fit),
                                             "validation_questions": len(validation)})
    pipeline = Pipeline(settings)
    try:
        selector = EvidenceSelector(pipeline.store, trained_scorer(*evidence_model_dirs(settings.models_dir, pipeline.corpus)))
        reader = ExtractiveReader(selector, partial)
        x, y, sizes = tr.candidate_rows(reader, validation, pipeline.store)
        fitted = tr.fit_answer_scorer(x, y)
        if fitted is not None:
            fitted["floor"] = tr.answer_floor(x, sizes, fitted, decline)
            fitted["decline_share"] = decline
        meta["answer_scorer"] = fitted
        meta["validation_best_right"] = {"pooled_probability": tr.scorer_accuracy(x, y, sizes, None),
                                         "answer_scorer": tr.scorer_accuracy(x, y, sizes, fitted)}
    finally:
        pipeline.close()
    (partial / "meta.json").write_text(json.dumps(meta, indent=2))
    if target.exists():
        shutil.rmtree(target)
    partial.replace(target)
    console.print_json(json.dumps({k: meta[k] for k in ("fit_questions", "validation_questions", "validation_best_right")}))
    err.print(f"reader saved to {target}; `ragfunnel ask` answers with it from now on")


def _reader_examples(config, index, data, collection, mode: str, seed: int, limit: int | None,
                     questions: Path | None, quiet: bool):
    """The reader's training windows, built from the index: Friends' training questions, or --questions."""
    from ragfunnel.corpus.friends_questions import reader_training_questions
    from ragfunnel.generate.evidence import EvidenceSelector, evidence_model_dirs, trained_scorer
    from ragfunnel.generate.reader import TokenCounter, reader_tokenizer
    from ragfunnel.train import reader as tr
    from ragfunnel.train.cross_encoder import base_model_dir

    settings = settings_from_options(config, index, data, collection)
    settings.resolve_mode(mode)
    if questions is not None:
        labelled = load_questions(questions)
        source = {"questions_from": str(questions)}
    elif not is_friends_collection(settings):
        raise ConfigError(f"collection {settings.collection!r} has no training questions: pass --questions FILE "
                          "(JSONL with `question`, `answers` and `relevant` documents)")
    else:
        labelled = reader_training_questions(Path(settings.friends_dir), seed)
        source = {"questions_from": "FriendsQA dev (training part of training_split) + the train questions of friends_questions.jsonl"}
    labelled = labelled[:limit] if limit else labelled
    pipeline = Pipeline(settings)
    try:
        selector = EvidenceSelector(pipeline.store, trained_scorer(*evidence_model_dirs(settings.models_dir, pipeline.corpus)))
        counter = TokenCounter(reader_tokenizer(base_model_dir(), tr.MAX_LENGTH))
        with progress_bars(not quiet) as progress:
            examples = tr.build_examples(pipeline, selector, counter, labelled, mode,
                                         progress=lambda d, t: progress("windows", d, t))
        about = {**source, "questions": len(labelled), "examples": len(examples), "mode": mode, "seed": seed,
                 "collection": settings.collection, "index_fingerprint": pipeline.store.info().fingerprint,
                 "selector": selector.scorer.name}
    finally:
        pipeline.close()
    return examples, about


SCALE_NOTES = """Corpus: one-chunk documents (view `utt`, BM25 and vectors) whose text recombines 2-6 random Friends
utterances (real term statistics; "#n" makes each distinct), whose vector is a real MiniLM vector of the Friends
index plus Gaussian noise (sd 0.03 a dimension), renormalised, put in a private embedding cache so the backend's
own build path finds it (nothing is embedded). `group` = n mod 100, so `group=7` is a 1% filter. Queries: the first
questions of the 800-question sample, query vectors made like the chunks'. Each row is a fresh process: `build s`
is the backend's whole build (chunking, analysis, BM25, HNSW; PostgreSQL: COPY, statistics, postings, indexes),
`peak RSS` that process's peak (PostgreSQL: the proportional set size of it and its server's processes together, sampled every 0.2 s: shared buffers counted once). bm25: BM25 top 100;
vector: HNSW top 10 at ef=100; hybrid: both at depth 100, RRF (k=60), top 10; 1% filter: the same under
`group=7`; fewest: the fewest results any filtered query returned (k=10). ANN recall@10: HNSW top 10 against an
exact scan of the same stored vectors."""


@bench_app.command("scale")
def bench_scale(
    backend: Annotated[str, typer.Option(help="comma-separated store backends: embedded, postgres")] = "embedded",
    chunks: Annotated[str, typer.Option(help="comma-separated corpus sizes (chunks)")] = "100000,300000",
    queries: Annotated[int, typer.Option(min=10, help="questions (of the 800-question sample) per size")] = 200,
    work: Annotated[Optional[Path], typer.Option(help="where the generated caches and embedded indexes go (default: $RAGFUNNEL_HOME/scale)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="write a Markdown table here")] = None,
    dsn: DsnOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Build generated corpora of each size on each backend (recombined Friends lines; real MiniLM vectors plus
    noise, so nothing is embedded) and report build time, peak RSS, disk size, p50/p99 of BM25, vector, hybrid and
    hybrid with a 1% filter, and ANN recall@10 against an exact scan. Needs the Friends index's embedding cache."""
    import os

    from ragfunnel.evaluate.report import header, markdown_table, write_report
    from ragfunnel.evaluate.scale import run_in_subprocess

    settings = settings_from_options(config, None, data)
    backends = [b.strip() for b in backend.split(",") if b.strip()]
    sizes = [int(c.replace("_", "")) for c in chunks.split(",") if c.strip()]
    if "postgres" in backends and not settings.dsn:
        raise ConfigError("--backend postgres needs a server: give --dsn (or run `ragfunnel db start`)")
    if not settings.cache_path.is_file():
        raise ConfigError(f"no embedding cache at {settings.cache_path}: build the Friends index first (ragfunnel index)")
    work_dir = (work or settings.home / "scale").expanduser()
    load_start = os.getloadavg()[0]
    rows = []
    for size in sizes:
        for name in backends:
            err.print(f"scale: {name}, {size:,} chunks ...")
            r = run_in_subprocess(name, size, work_dir, settings.dsn, settings.cache_path,
                                  settings.friends_dir / "friends_corpus.jsonl.gz",
                                  settings.friends_dir / "friends_rag_eval_sample.jsonl", queries)
            rows.append([r["backend"], f"{r['chunks']:,}", r["build_s"], r["peak_rss_mb"], r["disk_mb"],
                         r["bm25 p50"], r["bm25 p99"], r["vector p50"], r["vector p99"], r["hybrid p50"],
                         r["hybrid p99"], r["hybrid 1% filter p50"], r["hybrid 1% filter p99"], r["fewest_filtered"],
                         r["ann_recall@10"]])
            err.print(f"  {r}")
    columns = ["backend", "chunks", "build s", "peak RSS MB", "disk MB", "bm25 p50", "bm25 p99", "vector p50",
               "vector p99", "hybrid p50", "hybrid p99", "1% filter p50", "1% filter p99", "fewest (k=10)",
               f"ANN recall@10 (ef={100})"]
    text = header("Store backends at scale: build, memory, disk, latency (ms), ANN recall") + (
        f"\nLoad average of the shared machine at the start: {load_start:.1f}, at the end: {os.getloadavg()[0]:.1f} "
        "(2 cores).\n\n" + markdown_table(columns, rows) + "\n\n" + SCALE_NOTES)
    write_report(out, text)


@bench_app.command("latency")
def bench_latency(
    modes: Annotated[str, typer.Option(help="comma-separated modes")] = "hybrid",
    set_: Annotated[str, typer.Option("--set", help="question set to draw queries from")] = "dev",
    n: Annotated[int, typer.Option(min=10, help="queries per mode")] = 300,
    out: Annotated[Optional[Path], typer.Option(help="write a Markdown table here")] = None,
    filter_: FilterOpt = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
):
    """Per-query latency (query embedding + retrievers + fusion) on the built index: p50, p90, p99, per stage."""
    import statistics

    from ragfunnel.corpus.friends_questions import load_friends_set
    from ragfunnel.evaluate.report import header, markdown_table
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.store.filters import Filter

    where = Filter.parse(filter_)
    settings = settings_from_options(config, index, data, collection)
    qs = load_friends_set(set_, settings.friends_dir)[:n]
    pipeline = Pipeline(settings)
    rows = []
    stage_rows = []
    for mode in modes.split(","):
        for q in qs[:10]:  # warm up: load models and indexes, fill the OS page cache
            pipeline.search(q.text + " warmup", mode, where=where)
        totals, stages = [], {}
        for q in qs:
            t0 = time.perf_counter()
            result = pipeline.search(q.text, mode, k=10, where=where)
            totals.append((time.perf_counter() - t0) * 1000)
            for st in result.trace.stages:
                stages.setdefault(st.name, []).append(st.seconds * 1000)
        qtl = statistics.quantiles(totals, n=100)
        rows.append([mode, len(totals), statistics.median(totals), qtl[89], qtl[98], statistics.fmean(totals)])
        for name, vals in stages.items():
            stage_rows.append([mode, name, statistics.median(vals), statistics.quantiles(vals, n=100)[98]])
    doc = header("Query latency" + (f" (filter {where.describe()})" if where else ""))
    doc += markdown_table(["mode", "queries", "p50 ms", "p90 ms", "p99 ms", "mean ms"], rows)
    doc += "\nPer stage:\n\n" + markdown_table(["mode", "stage", "p50 ms", "p99 ms"], stage_rows)
    console.print(doc)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(doc)


def _db_dir(directory: Path | None) -> Path:
    from ragfunnel.config import load_settings

    return (directory or load_settings().home / "postgres").expanduser().resolve()


DbDirOpt = Annotated[Optional[Path], typer.Option("--dir", help="the server's data directory (default: $RAGFUNNEL_HOME/postgres)")]


@db_app.command("start")
def db_start(
    directory: DbDirOpt = None,
    port: Annotated[int, typer.Option("--port", help="TCP port on 127.0.0.1")] = 5433,
    replica_of: Annotated[Optional[str], typer.Option("--replica-of", metavar="DSN", help="start a hot-standby read replica of the PostgreSQL at DSN (a new --dir is copied from it; searches only, see docs/postgres.md)")] = None,
):
    """Start a local PostgreSQL 18 with pgvector (initialised on first use) and print its DSN as the last line:
    give it to --dsn, RAGFUNNEL_DSN or the store's dsn setting. It runs until `ragfunnel db stop`."""
    from ragfunnel.store import pgserver

    data = _db_dir(directory)
    was = pgserver.status(data)
    server = pgserver.start(data, port, replica_of=replica_of)
    err.print(f"PostgreSQL {'replica ' if replica_of else ''}{'was already running' if was.running else 'started'} on 127.0.0.1:{server.port} "
              f"(data {data}, pid {server.pid}); stop it with: ragfunnel db stop"
              + (f" --dir {data}" if directory else ""))
    print(server.dsn)


@db_app.command("stop")
def db_stop(directory: DbDirOpt = None):
    """Stop the local PostgreSQL started by `ragfunnel db start`."""
    from ragfunnel.store import pgserver

    data = _db_dir(directory)
    if pgserver.stop(data):
        err.print(f"stopped the PostgreSQL of {data}")
    else:
        err.print(f"no PostgreSQL runs from {data}")


@db_app.command("status")
def db_status(directory: DbDirOpt = None):
    """Whether the local PostgreSQL runs; its DSN as the last line when it does (exit 1 when it does not)."""
    from ragfunnel.store import pgserver

    state = pgserver.status(_db_dir(directory))
    if not state.running:
        err.print(f"no PostgreSQL runs from {state.data_dir}: ragfunnel db start")
        raise typer.Exit(1)
    err.print(f"PostgreSQL runs on 127.0.0.1:{state.port} (data {state.data_dir}, pid {state.pid})")
    print(state.dsn)


@app.command("migrate")
def migrate(
    source: Annotated[str, typer.Option("--from", help="the backend the index is in now: embedded, memory, postgres")] = "embedded",
    target: Annotated[str, typer.Option("--to", help="the backend to copy it to")] = "postgres",
    config: ConfigOpt = None,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
):
    """Copy a collection's index to another store backend: documents, chunks and their vectors (nothing is
    embedded again), e.g. `ragfunnel migrate --from embedded --to postgres --dsn postgresql://...`. The source is
    only read; the copy replaces the collection's index on the target when complete."""
    from ragfunnel.embedding import EmbeddingCache
    from ragfunnel.store import copy_index, open_store

    if source == target:
        raise ConfigError(f"--from and --to are both {source}: name two backends")
    settings = settings_from_options(config, index, collection=collection)
    src = settings.model_copy(update={"backend": source})
    dst = settings.model_copy(update={"backend": target})
    t0 = time.perf_counter()
    store = open_store(src.index_location, EmbeddingCache(settings.cache_path), check_encoder=False,
                       backend_name=source)
    try:
        with progress_bars(not quiet) as progress:
            info = copy_index(store, dst.index_location, target, progress)
    finally:
        store.close()
    err.print(f"copied {info.documents:,} documents and chunks {info.chunks} of {settings.collection!r} from {source} "
              f"to {target} in {time.perf_counter() - t0:.1f}s (fingerprint {info.fingerprint})")


@app.command("chat")
def chat_cmd(
    mode: Annotated[str, typer.Option(help="retrieval mode to start with (/mode changes it)")] = "fast",
    reader: Annotated[Optional[str], typer.Option(help="evidence (the selected lines, no LLM) or llm (the LLM's checked answer); default: llm when the local LLM is installed, else evidence (/reader changes it)")] = None,
    llm: Annotated[Optional[str], typer.Option("--llm", help="the LLM of the llm reader, as `ask --llm` takes it")] = None,
    k: Annotated[int, typer.Option(min=1, max=20, help="scenes retrieved per question")] = 5,
    index: IndexOpt = None,
    collection: CollectionOpt = None,
    config: ConfigOpt = None,
):
    """Ask questions in a conversation, one per line (stdin works too): follow-ups such as "Where did she go after
    that?" or "And Monica?" are rewritten into standalone questions (shown before the answer). Commands: /mode NAME,
    /reader evidence|llm, /sources, /history, /reset, /help, /quit."""
    import os

    from ragfunnel.api.chat import HELP, ChatSession, run_chat
    from ragfunnel.api.client import Client
    from ragfunnel.generate.llm import llama_cpp_available

    settings = settings_from_options(config, index, collection=collection)
    settings.resolve_mode(mode)
    spec = llm or os.environ.get("RAGFUNNEL_LLM") or "local"
    if reader is None:
        reader = "llm" if (spec != "local" or llama_cpp_available()) else "evidence"
    client = Client(settings, llm=spec)
    session = ChatSession(client, mode=mode, reader=reader, k=k)
    if reader == "llm":
        client.answerer("llm")  # a missing LLM is one clear line now, not at the first question
    interactive = sys.stdin.isatty()
    if interactive:
        err.print(f"reader {reader} · mode {mode} · {HELP}")
    try:
        run_chat(session, sys.stdin, typer.echo, lambda text: typer.echo(text, err=True),
                 prompt=(lambda: typer.echo("> ", nl=False)) if interactive else None)
    finally:
        client.close()


def _register_extensions() -> None:
    from ragfunnel.generate.cli import register
    from ragfunnel.evaluate.judged_cli import register as register_judged
    from ragfunnel.evaluate.repro_cli import register as register_repro
    from ragfunnel.serve.cli import register as register_serve
    from ragfunnel.serve.mcp_cli import register as register_mcp

    register(app, eval_app)
    register_serve(app)
    register_mcp(app)
    register_repro(app)
    register_judged(eval_app)


_register_extensions()


DEBUG_ENV = "RAGFUNNEL_DEBUG"


def main() -> None:
    """The entry point: a user's mistake is one line on stderr and exit status 2; a failure nobody foresaw is one
    line and status 1 (its traceback only with RAGFUNNEL_DEBUG=1); never a traceback otherwise."""
    import os

    try:
        app()
    except RagfunnelError as exc:
        err.print(error_line(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        err.print(Text.assemble(("interrupted", "yellow"), ": nothing is lost; run the same command again to resume."))
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if os.environ.get(DEBUG_ENV):
            raise
        err.print(Text.assemble(("error:", "bold red"), f" unexpected {type(exc).__name__}: {_one_line(str(exc))} "
                                f"(a bug: please report it; {DEBUG_ENV}=1 shows the traceback)"))
        sys.exit(1)


def _one_line(text: str) -> str:
    return " ".join(text.encode("utf-8", "backslashreplace").decode("utf-8").split())


def error_line(exc: BaseException) -> Text:
    """`error: <message>` as one line of text (the message is never read as Rich markup)."""
    return Text.assemble(("error:", "bold red"), " ", _one_line(str(exc)))


if __name__ == "__main__":
    main()
