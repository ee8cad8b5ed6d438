"""`ragfunnel ask` and `ragfunnel eval answers`, added to the main app by `register(app, eval_app)`.

`ask` streams the answer to the terminal (the `CITATION [n]: "..."` lines are held back from the stream), then
lists the cited scenes with their supporting lines; `--json` prints the `AnswerResponse`
(`ragfunnel.schema`, as the `done` event of the HTTP API's `POST /ask`) instead.
Settings come from `config.settings_from_options`, as in `ragfunnel.cli`; user errors raise `RagfunnelError`, which the
entry point prints as one line.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragfunnel.cli_options import CollectionOpt, ConfigOpt, DataOpt, DsnOpt, FilterOpt, IndexOpt, LLMOpt, RouteOpt
from ragfunnel.config import settings_from_options
from ragfunnel.evaluate.report import header, markdown_table
from ragfunnel.generate import evaluate as ev
from ragfunnel.errors import ConfigError, QueryError
from ragfunnel.generate.answer import PHRASED_CANDIDATES, READERS, Answerer, AnswerSettings
from ragfunnel.generate.citations import is_refusal
from ragfunnel.generate.llm import GGUF_NAME, llama_cpp_available, make_llm
from ragfunnel.generate.stream import CitationLineFilter
from ragfunnel.pipeline import Pipeline, check_question
from ragfunnel.schema import to_json

__all__ = ["CitationLineFilter", "ask_cmd", "eval_answers_cmd", "register"]


def _make_llm(name: str | None, home: Path):
    """`make_llm`, saying so first when the bundled model is about to be joined (1.1 GB, once)."""
    spec = (name or os.environ.get("RAGFUNNEL_LLM") or "local").strip()
    target = home.expanduser() / "models" / GGUF_NAME
    if spec == "local" and llama_cpp_available() and not target.exists():
        typer.echo(f"preparing the bundled local LLM (once): joining 22 parts into {target}", err=True)
    return make_llm(name, home)


def lazy_llm(name: str | None, home: Path):
    """`_make_llm`, called when first needed and then kept: one model for a command's answers and query transforms."""
    return functools.cache(lambda: _make_llm(name, home))


def _print_scenes(title: str, scenes: list[dict]) -> None:
    typer.echo(title)
    for s in scenes:
        tag = f"[{s['source_id']}] " if s["source_id"] is not None else ""
        typer.echo(f"  {tag}{s['label']} — {s['title']}  (rank {s['rank']}, score {s['score']:.4f})")


ReaderOpt = Annotated[str, typer.Option(
    "--reader", help="auto (default): the LLM when one is configured (--llm or RAGFUNNEL_LLM), else evidence; "
    "extractive: a short answer copied from a cited line by the span reader (no LLM; experimental: `ragfunnel train "
    "reader`); llm: "
    "the LLM's checked answer; evidence: the selected lines (no LLM; `ragfunnel train evidence` trains the selector)")]


EvalReaderOpt = Annotated[str, typer.Option(
    "--reader", help="llm (default): the LLM's checked answers; extractive: the span reader's; evidence: the selected lines")]


def chosen_reader(reader: str, llm: str | None, pipeline: Pipeline) -> str:
    """`auto`: the LLM when one is configured (--llm, RAGFUNNEL_LLM), else the evidence lines. The extractive reader
    only when asked: on the hold-out its short answers score higher (token F1 0.152 against 0.079) but its one cited
    line holds a gold span for 0.180 of questions against 0.325 for the evidence lines' three
    (docs/results/answers/reader_extractive_holdout.md, reader_evidence_holdout.md), so it is not yet a default. Any other reader as asked."""
    if reader != "auto":
        return reader
    if llm or os.environ.get("RAGFUNNEL_LLM"):
        return "llm"
    return "evidence"


def _print_evidence(title: str | None, result: dict) -> None:
    if title is not None:
        typer.echo(title)
    for c in result["citations"]:
        typer.echo(f"  [{c['source_id']}] {c['label']} — {c['title']}")
        for line in c["lines"]:
            typer.echo(f"      {line}")


def ask_cmd(
    question: Annotated[str, typer.Argument(help="the question")],
    mode: Annotated[str, typer.Option(help="retrieval mode: fast (= hybrid), accurate, bm25, …")] = "fast",
    k: Annotated[int, typer.Option(min=1, max=20, help="scenes retrieved; the best (at most 5; 3 for the local model; token budget permitting) go to the LLM")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="print the AnswerResult as one JSON object")] = False,
    filter_: FilterOpt = None,
    llm: LLMOpt = None,
    reader: ReaderOpt = "auto",
    route: RouteOpt = "auto",
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    config: ConfigOpt = None,
):
    """Answer a question from the retrieved scenes, with verified quotes (or say it does not know). Aggregation
    questions ("In which scenes does Ross say 'we were on a break'?", "How many times ...") get every matching
    scene or episode, each with its own cited lines (no LLM)."""
    from ragfunnel.generate.reader import usable_reader
    from ragfunnel.query.router import OVERRIDES
    from ragfunnel.store.filters import Filter

    question = check_question(question)
    if route not in OVERRIDES:
        raise QueryError(f"unknown route {route!r}: choose one of {', '.join(OVERRIDES)}")
    where = Filter.parse(filter_)
    settings = settings_from_options(config, index, collection=collection)
    settings.resolve_mode(mode)
    if reader not in ("auto", *READERS):
        raise ConfigError(f"unknown reader {reader!r}: choose one of auto, {', '.join(READERS)}")
    shared_llm = lazy_llm(llm, settings.home)
    pipeline = Pipeline(settings, llm=shared_llm)
    reader = chosen_reader(reader, llm, pipeline)
    routed = pipeline.route(question, route)
    # an aggregation or out-of-scope question needs no LLM: do not load one for it
    model = shared_llm() if reader == "llm" and routed.path == "lookup" else None
    answerer = Answerer(pipeline, model, settings=AnswerSettings(
        reader=reader if model is not None or reader != "llm" else "evidence", llm_input="scenes"))
    if as_json:
        typer.echo(to_json(answerer.ask(question, mode, k, where, route=route).to_schema()))
        return
    if routed.path != "lookup":
        result = answerer.ask(question, mode, k, where, route=route).to_dict()
        typer.echo(result["answer"].split("\n")[0] if result["items"] is not None else result["answer"])
        for item in result["items"] or []:
            typer.echo(f"  {item['text']}")
            for c in item["citations"]:
                typer.echo(f"      {c['quote']}")
        for note in result["notes"]:
            typer.echo(f"note: {note}", err=True)
        info = result["route_info"]
        typer.echo(f"[route {info['route']} ({info['source']}: {info['reason']}) · total {result['timings']['total'] / 1000:.1f}s]", err=True)
        return
    if reader == "extractive":
        result = answerer.ask(question, mode, k, where, route=route).to_dict()
        typer.echo(result["answer"])
        _print_evidence(None, result)
        others = [f"{o['text']} ({o['score']:.2f})" for o in (result["candidates"] or [])[1:4]]
        if others and not result["refused"]:
            typer.echo(f"other candidates: {'; '.join(others)}")
        for note in result["notes"]:
            typer.echo(f"note: {note}", err=True)
        t = result["timings"]
        typer.echo(f"[extractive · mode {result['mode']} · retrieval {t['retrieval']:.0f} ms · reader "
                   f"{t.get('reader', 0):.0f} ms · total {t['total'] / 1000:.1f}s]", err=True)
        return
    if reader == "evidence":
        result = answerer.ask(question, mode, k, where, route=route).to_dict()
        typer.echo(result["answer"])
        if result["citations"]:
            _print_evidence("\nCited lines:", result)
        for note in result["notes"]:
            typer.echo(f"note: {note}", err=True)
        t = result["timings"]
        typer.echo(f"[evidence · mode {result['mode']} · retrieval {t['retrieval']:.0f} ms · evidence "
                   f"{t.get('evidence', 0):.0f} ms · total {t['total'] / 1000:.1f}s]", err=True)
        return
    shown = CitationLineFilter()
    result, printed = None, ""
    for event in answerer.ask_stream(question, mode, k, where, route=route):
        if event["type"] == "evidence":
            if event["result"]["citations"]:
                _print_evidence("Evidence (the selected lines, before the LLM's answer):", event["result"])
                typer.echo("")
            continue
        if event["type"] == "extractive":
            early = event["result"]
            typer.echo(f"Reader: {early['answer']}")
            for c in early["citations"]:
                typer.echo(f"  [{c['source_id']}] {c['label']} — {c['title']}\n      {c['lines'][0]}")
            if not early["refused"]:
                typer.echo("")
            continue
        if event["type"] == "token":
            text = shown.feed(event["text"])
        elif event["type"] == "retry":
            text = shown.flush()
            typer.echo(text, nl=False)
            typer.echo("\n(no verifiable quote in that reply; asking again with a stricter prompt)\n", err=True)
            shown, text = CitationLineFilter(), ""
        else:
            text = shown.flush()
            result = event["result"]
        typer.echo(text, nl=False)
        printed += text
    assert result is not None
    if printed.strip():
        typer.echo("" if printed.endswith("\n") else "\n", nl=False)
    if result["reader"] == "evidence" and result["drafts"]:
        typer.echo("(the reply above could not be verified against the sources, so it was withdrawn; the selected "
                   "evidence lines instead:)")
        typer.echo(result["answer"])
    elif result["refused"] and result["drafts"] and not is_refusal(result["drafts"][-1]):
        typer.echo(f"{result['answer']} (the reply above could not be verified against the sources, so it was withdrawn)")
    elif result["refused"] and not printed.strip():
        typer.echo(result["answer"])  # refused before any LLM call (nothing retrieved is close to the question)
    if result["citations"]:
        typer.echo("\nCited scenes:")
        for c in result["citations"]:
            typer.echo(f"  [{c['source_id']}] {c['label']} — {c['title']}")
            for line in c["lines"]:
                typer.echo(f"      {line}")
    elif not result["refused"]:
        typer.echo("No answer: the LLM failed (see the note below).")
        _print_scenes("\nRetrieved scenes:", result["scenes"])
    for note in result["notes"]:
        typer.echo(f"note: {note}", err=True)
    t = result["timings"]
    first = f", first token {t['llm_first_token'] / 1000:.1f}s" if "llm_first_token" in t else ""
    typer.echo(f"[{result['llm']} · mode {result['mode']} · retrieval {t['retrieval']:.0f} ms{first} · total {t['total'] / 1000:.1f}s]", err=True)


def eval_answers_cmd(
    limit: Annotated[int, typer.Option(min=1, help="FriendsQA dev questions (a seeded sample; with --reader evidence: the first N)")] = 50,
    oos: Annotated[Optional[int], typer.Option(min=0, help="out-of-scope questions (default: all of out_of_scope.txt)")] = None,
    seed: Annotated[int, typer.Option(help="seed of the dev sample")] = 13,
    llm: LLMOpt = None,
    mode: Annotated[str, typer.Option(help="retrieval mode")] = "fast",
    k: Annotated[int, typer.Option(min=1, max=20, help="scenes retrieved; at most 5 go to the LLM (3 for the local model)")] = 5,
    out: Annotated[Optional[Path], typer.Option(help="write the Markdown table here (and per-question JSON beside it); "
                                                     "answers are kept in OUT.partial.jsonl as they come, so an "
                                                     "interrupted run resumes")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the metrics as one JSON object")] = False,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    data: DataOpt = None,
    config: ConfigOpt = None,
    reader: EvalReaderOpt = "llm",
    questions: Annotated[Optional[Path], typer.Option(help="questions in the schema of friends_questions.jsonl (--reader evidence; default: the hold-out of the training split)")] = None,
    all_questions: Annotated[bool, typer.Option("--all", help="--reader evidence: every question, not the first --limit")] = False,
    llm_input: Annotated[str, typer.Option(help="what the LLM reads: scenes (the retrieved scenes, cut to a budget), evidence (only the selected lines, one line of context either side) or candidates (the extractive reader's best answers with their lines: it phrases one)")] = "scenes",
    evidence_context: Annotated[int, typer.Option(min=0, max=5, help="--llm-input evidence: lines of context shown either side of each selected line")] = 1,
    oracle: Annotated[bool, typer.Option("--oracle", help="--reader extractive: read each question's gold scene only (no retrieval): the reader's own share of the errors")] = False,
    qa: Annotated[bool, typer.Option("--qa", help="any reader: the QA metrics (exact match, token F1, supported citations) on the training split's hold-out (or --questions), as --reader extractive reports them; implied by --reader extractive and --llm-input candidates")] = False,
):
    """Grounded answers: exact match, token F1, gold-span rate, supported citations, refusals (out of scope / false),
    latency."""
    settings = settings_from_options(config, index, data, collection)
    settings.resolve_mode(mode)
    if reader not in READERS.names():
        raise ConfigError(f"unknown reader {reader!r}: choose one of {', '.join(READERS)}")
    if reader == "evidence" and not oracle and not qa:
        _eval_evidence(settings, mode, k, None if all_questions else limit, oos, questions, out, as_json)
        return
    if reader == "extractive" or oracle or qa or llm_input == "candidates":
        if oracle and reader != "extractive":
            raise ConfigError("--oracle reads the gold scene with the extractive reader: add --reader extractive")
        model = _make_llm(llm, settings.home) if reader == "llm" else None
        _eval_reader(settings, mode, k, None if all_questions else limit, oos, questions, out, as_json, oracle,
                     reader, model, llm_input)
        return
    model = _make_llm(llm, settings.home)
    pipeline = Pipeline(settings, llm=lambda: model)
    seen, seen_by = ev.seen_in_training(pipeline, mode)
    cases = ev.load_cases(settings.friends_dir, limit, seed, oos, exclude=seen)
    answerer = Answerer(pipeline, model,
                        settings=AnswerSettings(llm_input=llm_input, evidence_context=evidence_context))

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\r{done}/{total} questions", end="" if done < total else "\n", file=sys.stderr, flush=True)
        elif done % 10 == 0 or done == total:  # a log file (nohup, CI) gets a line now and then
            print(f"{done}/{total} questions", file=sys.stderr, flush=True)

    journal = out.with_suffix(".partial.jsonl") if out else None
    run_key = {"llm": model.name, "mode": mode, "k": k, "seed": seed, "index": str(settings.index_dir), "llm_input": llm_input}
    if llm_input == "evidence" and evidence_context != 1:  # the key of a default run stays as it was (journals resume)
        run_key["evidence_context"] = evidence_context
    resumed = len(ev.read_journal(journal, run_key, cases)) if journal else 0
    if resumed:
        typer.echo(f"resuming from {journal}: {resumed} of {len(cases)} questions already answered", err=True)
    scored = ev.run(answerer, cases, mode, k, progress, journal=journal, run_key=run_key)
    summary = ev.summarize(scored)
    gate_text = answerer.gate.describe() if answerer.gate is not None else "none"
    summary.update(llm=model.name, mode=mode, k=k, seed=seed, gate=gate_text, left_out_seen=len(seen), llm_input=llm_input)
    if llm_input == "evidence":
        summary["evidence_context"] = evidence_context
    if as_json:
        typer.echo(json.dumps(summary))
    doc = header("Grounded answers on Friends")
    doc += (
        f"LLM `{model.name}` reading the {f'selected evidence lines ({evidence_context} of context either side)' if llm_input == 'evidence' else 'retrieved scenes'}, mode `{mode}`, k={k}; {summary['dev_questions']} FriendsQA dev questions "
        f"(seed {seed}) + {summary['oos_questions']} out-of-scope questions; answerability gate: {gate_text}. Metric rules: "
        "`ragfunnel.generate.evaluate`.\n\n"
    )
    if seen_by:
        doc += f"Dev questions drawn from those no trained part saw: left out {len(seen)} ({'; '.join(seen_by)}).\n\n"
    doc += markdown_table(["metric", "value", "n"], ev.report_rows(summary))
    if not as_json:
        typer.echo(doc)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(doc)
        out.with_suffix(".json").write_text(json.dumps({"summary": summary, "questions": [s.to_dict() for s in scored]}, indent=2))
        journal.unlink(missing_ok=True)
        typer.echo(f"wrote {out} and {out.with_suffix('.json')}", err=True)


def _eval_evidence(settings, mode: str, k: int, limit: int | None, oos: int | None, questions: Path | None,
                   out: Path | None, as_json: bool) -> None:
    from ragfunnel.generate import evaluate_evidence as eve
    from ragfunnel.generate.evidence import describe

    answerer = Answerer(Pipeline(settings), None, settings=AnswerSettings(reader="evidence"))
    answerable = eve.evidence_questions(settings.friends_dir, questions, limit)
    off = ev.out_of_scope_questions()
    off = off[:oos] if oos is not None else off

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            print(f"{done}/{total} questions", file=sys.stderr, flush=True)

    summary, rows = eve.run_evidence(answerer, answerable, off, mode, k, progress)
    selector = describe(answerer.evidence.scorer)
    summary.update(reader="evidence", mode=mode, k=k, parents=answerer.evidence.parents, lines=answerer.evidence.lines,
                   **selector, questions_file=str(questions) if questions else "training_split hold-out (seed 13)")
    if as_json:
        typer.echo(json.dumps(summary))
    doc = header(f"Evidence reader on {_collection_title(settings)}")
    doc += (f"Reader `evidence` (scorer `{selector['scorer']}`), mode `{mode}`, the lines of the top "
            f"{answerer.evidence.parents} retrieved scenes ranked, {answerer.evidence.lines} returned; "
            f"{summary['n']} answerable questions ({summary['questions_file']}) + {summary['n_out_of_scope']} "
            "out-of-scope questions. Metric rules: `ragfunnel.generate.evaluate_evidence`.\n\n")
    metrics = ["evidence_recall@1", "evidence_recall@3", "gold_span_rate", "token_f1", "citation_precision",
               "false_refusal_rate", "out_of_scope_refusal_rate", "ttft_p50_ms", "total_p50_ms", "evidence_p50_ms", "n"]
    doc += markdown_table(["metric", "value"], [[m, summary[m]] for m in metrics])
    if not as_json:
        typer.echo(doc)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(doc)
        out.with_suffix(".json").write_text(json.dumps({"summary": summary, "questions": rows}, indent=2))
        typer.echo(f"wrote {out} and {out.with_suffix('.json')}", err=True)


def _eval_reader(settings, mode: str, k: int, limit: int | None, oos: int | None, questions: Path | None,
                 out: Path | None, as_json: bool, oracle: bool, reader: str = "extractive", model=None,
                 llm_input: str = "candidates") -> None:
    from ragfunnel.generate import evaluate_evidence as eve
    from ragfunnel.generate import evaluate_reader as evr

    answerer = Answerer(Pipeline(settings, llm=lambda: model), model,
                        settings=AnswerSettings(reader=reader, llm_input=llm_input))
    answerable = eve.evidence_questions(settings.friends_dir, questions, limit)
    off = [] if oracle else ev.out_of_scope_questions()
    off = off[:oos] if oos is not None else off

    def progress(done: int, total: int) -> None:
        if done % 25 == 0 or done == total:
            print(f"{done}/{total} questions", file=sys.stderr, flush=True)

    if oracle:
        summary, rows = evr.oracle_reading(answerer.extractive, answerer.pipeline.store, answerable, progress)
    else:
        summary, rows = evr.run_reader(answerer, answerable, off, mode, k, progress)
    uses_reader = reader == "extractive" or (reader == "llm" and llm_input == "candidates")
    summary.update(reader=reader, oracle=oracle, mode=None if oracle else mode, k=k,
                   llm=model.name if model is not None else None, llm_input=llm_input if reader == "llm" else None,
                   questions_file=str(questions) if questions else "training_split hold-out (seed 13)")
    if uses_reader:
        extractive = answerer.extractive
        summary.update(windows=extractive.planner.windows, window_tokens=extractive.planner.budget,
                       answer_scorer="logistic" if extractive.scorer.fitted else "pooled probability",
                       reader_model=str(extractive.model.model_dir),
                       adapter_sha256=extractive.model.meta.get("adapter_sha256", "")[:12])
    if as_json:
        typer.echo(json.dumps(summary))
    title = {"extractive": "Extractive reader", "evidence": "Evidence reader"}.get(reader, f"LLM reader ({llm_input})")
    doc = header(f"{title} on {_collection_title(settings)}" + (" (oracle: the gold scene only)" if oracle else ""))
    if oracle:
        what = "each question's gold scene read whole, as consecutive windows (no retrieval, no gate)"
    elif uses_reader:
        what = (f"mode `{mode}`: windows around the best lines of the top {answerer.extractive.planner.parents} "
                f"retrieved scenes ({summary['windows']} windows of at most {summary['window_tokens']} tokens)")
    else:
        what = f"mode `{mode}`, k={k}"
    if reader == "llm":
        what += (f"; LLM `{summary['llm']}` phrasing one of the reader's {PHRASED_CANDIDATES} best candidates"
                 if llm_input == "candidates" else f"; LLM `{summary['llm']}` reading the {llm_input}")
    reader_text = (f"Reader `{reader}`" + (f" (span model {summary['reader_model']} adapter {summary['adapter_sha256']}, "
                                           f"answer scorer: {summary['answer_scorer']})" if uses_reader else ""))
    doc += (f"{reader_text}, {what}; {summary['n']} answerable questions ({summary['questions_file']})"
            f"{'' if oracle else ' + ' + str(summary['n_out_of_scope']) + ' out-of-scope questions'}. "
            "Exact match and token F1 score the short answer (the span the answer rests on, when there is one). "
            "Metric rules: `ragfunnel.generate.evaluate_reader`.\n\n")
    doc += markdown_table(["metric", "value"], [[m, summary[m]] for m in evr.METRICS])
    if not as_json:
        typer.echo(doc)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(doc)
        out.with_suffix(".json").write_text(json.dumps({"summary": summary, "questions": rows}, indent=2))
        typer.echo(f"wrote {out} and {out.with_suffix('.json')}", err=True)


def _collection_title(settings) -> str:
    """How a report names the collection it measured."""
    return f"collection `{settings.collection}`"


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `ask` to `app` and `answers` to the `eval` group."""
    app.command("ask")(ask_cmd)
    eval_app.command("answers")(eval_answers_cmd)
