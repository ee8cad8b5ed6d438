"""Measure grounded answers: FriendsQA dev questions (answerable) plus out-of-scope questions (should refuse).

Cases: a seeded sample of the dev questions of `<data>/friends/friends_questions.jsonl` that have gold answers
(leaving out those a trained part of the pipeline has seen: `seen_in_training`), and the questions of
`out_of_scope.txt`. Per question the `Answerer` result is scored; LLM failures (no answer, no
refusal) are counted apart and left out of every rate.

Metrics (all rates in [0, 1]):
- `gold_span_rate` (dev): the answer contains a gold answer, both normalised (`citations.normalise`, possessive
  "'s" dropped) and matched on word boundaries; a refusal counts as a miss.
- `answer_f1` (dev, mean): SQuAD's token F1 between the answer and its best gold answer (both normalised as
  above, `[n]` markers and articles dropped); a refusal scores 0. Partial credit where the span test is
  all-or-nothing ("6-hour trip to London" against "Six - hour trip").
- `citation_precision` (dev, pooled over valid citations): the cited scene is a gold scene, or its text contains a
  gold answer (normalised).
- `oos_refusal_rate`: out-of-scope questions refused.
- `false_refusal_rate` (dev): answerable questions refused (including those whose gold scene was not retrieved;
  `gold_in_sources` tells how often it was).
- `faithfulness` (answers that are not refusals, pooled over sentences): a sentence of the answer (split after
  . ! ? or a line break, `[n]` markers removed) is supported when it shares at least one content word
  (`citations.content_words`: normalised, stopwords dropped) with the valid quotes of that answer, speakers
  included. Sentences with no content words are skipped. An answer without valid citations supports nothing.
- `ttft_p50_ms` / `total_p50_ms`: median time to the first LLM token (from the LLM call) and of the whole ask.
"""

from __future__ import annotations

import json
import random
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ragfunnel.embedding import embedder_meta
from ragfunnel.corpus.friends_questions import load_friends_set, training_split
from ragfunnel.generate.answer import AnswerResult, Answerer
from ragfunnel.generate.citations import CheckedCitation, content_words, normalise
from ragfunnel.generate.evidence import evidence_model_dir
from ragfunnel.generate.gate import read_gate_model
from ragfunnel.pipeline import Pipeline, reranker_model_dir

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKER = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class AnswerCase:
    qid: str
    question: str
    kind: str  # "dev" (answerable) or "oos" (out of scope)
    gold_scenes: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()


def question_lines(text: str) -> list[str]:
    """The questions of a one-question-a-line text; blank lines and `#` comments skipped."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _bundled(name: str) -> list[str]:
    return question_lines(resources.files("ragfunnel.generate").joinpath(name).read_text(encoding="utf-8"))


def out_of_scope_questions() -> list[str]:
    """What `eval answers` asks as out of scope."""
    return _bundled("out_of_scope.txt")


def off_topic_training_questions() -> list[str]:
    """What the answerability gate is trained and tuned on; disjoint from `out_of_scope_questions()`."""
    return _bundled("off_topic_training.txt")


def load_cases(friends_dir: str | Path, limit: int | None = 50, seed: int = 13, oos_limit: int | None = None,
               exclude: frozenset[str] | set[str] = frozenset()) -> list[AnswerCase]:
    """A seeded sample of `limit` answerable dev questions (none of `exclude`, the ids a trained part of the
    pipeline has seen) followed by the out-of-scope questions."""
    dev = [q for q in load_friends_set("dev", friends_dir) if any(normalise(a) for a in q.answers)]
    dev.sort(key=lambda q: q.qid)
    picked = random.Random(seed).sample(dev, min(limit, len(dev))) if limit is not None else dev
    if exclude and any(q.qid in exclude for q in picked):  # else the same sample as without exclusions
        pool = [q for q in dev if q.qid not in exclude]
        picked = random.Random(seed).sample(pool, min(limit, len(pool))) if limit is not None else pool
    cases = [AnswerCase(q.qid, q.text, "dev", q.gold, q.answers) for q in picked]
    oos = out_of_scope_questions()
    oos = oos[:oos_limit] if oos_limit is not None else oos
    return cases + [AnswerCase(f"oos_{i:02d}", text, "oos") for i, text in enumerate(oos, 1)]


def seen_in_training(pipeline: Pipeline, mode: str) -> tuple[set[str], list[str]]:
    """Ids of the FriendsQA questions that a trained part of this pipeline has seen, and what saw them.

    The bi-encoder of `ragfunnel train embedder` (when the index was built with it) learnt from its split's training
    questions; a reranker of `ragfunnel train reranker` (when `mode` uses one) from the training questions and,
    for choosing its rounds or as its whole fit, the hold-out; the index's answerability gate from the dev questions
    its `gate.json` names. Answers to those questions would score the pipeline on seen data, so `eval answers`
    leaves them out.
    """
    settings, friends_dir = pipeline.settings, Path(pipeline.settings.friends_dir)
    seen: set[str] = set()
    why: list[str] = []
    meta = embedder_meta(pipeline.store.settings.encoder)
    if meta is not None:
        ids = {q.qid for q in training_split(friends_dir, int(meta.get("seed", 13))).train}
        seen |= ids
        why.append(f"the {len(ids)} training questions of the index's bi-encoder")
    spec = settings.modes[settings.resolve_mode(mode)[0]]
    if spec.rerank is not None and spec.rerank.method in ("ltr", "cross_encoder"):
        report = reranker_model_dir(spec.rerank, settings) / "training_report.json"
        if report.is_file():
            split = training_split(friends_dir, int(json.loads(report.read_text()).get("seed", 13)))
            ids = {q.qid for q in split.train + split.holdout}
            seen |= ids
            why.append(f"the {len(ids)} training and hold-out questions of the reranker")
    gate = read_gate_model(pipeline.store)
    if gate is not None:
        ids = gate_question_ids(gate, friends_dir)
        if ids is not None:
            seen |= ids
            why.append(f"the {len(ids)} questions the answerability gate was trained on")
    evidence_meta = evidence_model_dir(settings.models_dir) / "meta.json"
    if evidence_meta.is_file():  # the evidence selector (the LLM reads its lines; it is the fallback answer)
        try:
            trained = json.loads(evidence_meta.read_text())
        except ValueError:
            trained = {}
        if "training_split" in str(trained.get("trained_on", "")):
            ids = {q.qid for q in training_split(friends_dir, int(trained.get("seed", 13))).train}
            seen |= ids
            why.append(f"the {len(ids)} training questions of the evidence selector")
    return seen, why


def gate_questions(gate_model: dict[str, Any], friends_dir: str | Path) -> list | None:
    """The FriendsQA dev questions a gate model was trained on, in training order; None when they came from a file."""
    # gates trained before the source was recorded were trained on the default sample
    source = gate_model.get("answerable_from") or {"friendsqa_dev": {"n": 300, "seed": 99}}
    if "friendsqa_dev" not in source:
        return None
    return tuning_questions(friends_dir, int(source["friendsqa_dev"]["n"]), int(source["friendsqa_dev"]["seed"]))


def gate_question_ids(gate_model: dict[str, Any], friends_dir: str | Path) -> set[str] | None:
    """Ids of the FriendsQA dev questions a gate model was trained on; None when its questions came from a file."""
    questions = gate_questions(gate_model, friends_dir)
    return None if questions is None else {q.qid for q in questions}


_POSSESSIVE = re.compile(r"\s*['’]s\b", re.IGNORECASE)


def _span_norm(text: str) -> str:
    return normalise(_POSSESSIVE.sub("", text))  # "Monica's" and FriendsQA's tokenised "Monica 's" -> "monica"


def tuning_questions(friends_dir: str | Path, n: int, seed: int, eval_limit: int = 50) -> list:
    """A seeded sample of answerable dev questions outside the `load_cases` sample of size `eval_limit` (seed 13):
    what thresholds of the answer step are tuned on, so the evaluation stays a test."""
    evaluated = {c.qid for c in load_cases(friends_dir, limit=eval_limit, oos_limit=0)}
    dev = sorted((q for q in load_friends_set("dev", friends_dir)
                  if q.qid not in evaluated and any(normalise(a) for a in q.answers)), key=lambda q: q.qid)
    return random.Random(seed).sample(dev, min(n, len(dev)))


def contains_span(text: str, spans: Sequence[str]) -> bool:
    padded = f" {_span_norm(text)} "
    return any(norm and f" {norm} " in padded for norm in map(_span_norm, spans))


_ARTICLES = frozenset({"a", "an", "the"})


def token_f1(text: str, spans: Sequence[str]) -> float:
    """The best SQuAD-style token F1 of `text` against any of `spans` (normalised, articles dropped)."""
    words = [w for w in _span_norm(_MARKER.sub(" ", text)).split() if w not in _ARTICLES]
    best = 0.0
    for span in spans:
        gold = [w for w in _span_norm(span).split() if w not in _ARTICLES]
        common = sum((Counter(words) & Counter(gold)).values())
        if common:
            precision, recall = common / len(words), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def exact_match(text: str, spans: Sequence[str]) -> bool:
    """SQuAD's exact match: `text` equals one of `spans` once both are normalised (as `token_f1`, articles dropped)."""
    words = [w for w in _span_norm(_MARKER.sub(" ", text)).split() if w not in _ARTICLES]
    return bool(words) and any(words == [w for w in _span_norm(span).split() if w not in _ARTICLES] for span in spans)


def faithfulness(result: AnswerResult) -> tuple[int, int]:
    """(supported sentences, sentences with content words) of one answer; see the module docstring."""
    if result.refused or not result.answer:
        return 0, 0
    quoted: set[str] = set()
    for c in result.citations:
        quoted |= content_words(c.quote)
    supported = total = 0
    for sentence in _SENTENCE.split(result.answer):
        words = content_words(_MARKER.sub(" ", sentence))
        if words:
            total += 1
            supported += bool(words & quoted)
    return supported, total


@dataclass
class Scored:
    case: AnswerCase
    result: AnswerResult
    gold_span: bool = False
    f1: float = 0.0
    citations_correct: int = 0
    gold_in_sources: bool = False
    faithful: tuple[int, int] = (0, 0)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "id": self.case.qid, "kind": self.case.kind, "question": self.case.question, "gold_scenes": list(self.case.gold_scenes),
            "gold_answers": list(self.case.answers), "answer": r.answer, "refused": r.refused, "failed": r.failed,
            "citations": [c.to_dict() for c in r.citations], "gold_span": self.gold_span, "answer_f1": self.f1,
            "citations_correct": self.citations_correct, "gold_in_sources": self.gold_in_sources,
            "faithful_sentences": list(self.faithful), "timings": {k: round(v, 1) for k, v in r.timings.items()},
            "notes": r.notes, "drafts": r.drafts, "gate": r.gate, "attempts": r.attempts, "mode": r.mode, "llm": r.llm,
        }

    @classmethod
    def from_dict(cls, case: AnswerCase, d: dict[str, Any]) -> Scored:
        """A scored question back from `to_dict` (what `summarize` and the report need; no scenes, no trace)."""
        citations = [CheckedCitation(c["source_id"], c["id"], c["label"], c["title"], c["quote"], tuple(c["unit_ids"]),
                              tuple(c["lines"])) for c in d["citations"]]
        result = AnswerResult(case.question, d.get("mode", ""), d.get("llm", ""), d["answer"], citations, d["refused"], [],
                              dict(d["timings"]), list(d["notes"]), int(d.get("attempts", 1)), list(d["drafts"]),
                              gate=d.get("gate"))
        return cls(case, result, d["gold_span"], d.get("answer_f1", 0.0), d["citations_correct"], d["gold_in_sources"],
                   tuple(d["faithful_sentences"]))


def score(case: AnswerCase, result: AnswerResult, scene_text: Callable[[str], str]) -> Scored:
    s = Scored(case, result, faithful=faithfulness(result))
    if case.kind == "dev":
        s.gold_span = not result.refused and contains_span(result.answer, case.answers)
        s.f1 = 0.0 if result.refused else token_f1(result.answer, case.answers)
        s.citations_correct = sum(
            c.doc_id in case.gold_scenes or contains_span(scene_text(c.doc_id), case.answers) for c in result.citations
        )
        s.gold_in_sources = any(sc.doc_id in case.gold_scenes and sc.source_id is not None for sc in result.scenes)
    return s


def summarize(scored: Sequence[Scored]) -> dict[str, Any]:
    ok = [s for s in scored if not s.result.failed]
    dev = [s for s in ok if s.case.kind == "dev"]
    oos = [s for s in ok if s.case.kind == "oos"]
    cited = sum(len(s.result.citations) for s in dev)
    supported = sum(s.faithful[0] for s in ok)
    sentences = sum(s.faithful[1] for s in ok)
    ttft = [s.result.timings["llm_first_token"] for s in scored if "llm_first_token" in s.result.timings]
    total = [s.result.timings["total"] for s in scored if "total" in s.result.timings]

    def rate(num: float, den: int) -> float | None:
        return num / den if den else None

    return {
        "dev_questions": sum(s.case.kind == "dev" for s in scored),
        "oos_questions": sum(s.case.kind == "oos" for s in scored),
        "llm_failures": len(scored) - len(ok),
        "gold_span_rate": rate(sum(s.gold_span for s in dev), len(dev)),
        "answer_f1": rate(sum(s.f1 for s in dev), len(dev)),
        "citation_precision": rate(sum(s.citations_correct for s in dev), cited),
        "citations": cited,
        "oos_refusal_rate": rate(sum(s.result.refused for s in oos), len(oos)),
        "false_refusal_rate": rate(sum(s.result.refused for s in dev), len(dev)),
        "gold_in_sources": rate(sum(s.gold_in_sources for s in dev), len(dev)),
        "faithfulness": rate(supported, sentences),
        "faithfulness_sentences": sentences,
        "retried": sum(s.result.attempts > 1 for s in scored),
        "ttft_p50_ms": statistics.median(ttft) if ttft else None,
        "total_p50_ms": statistics.median(total) if total else None,
    }


def scene_texts(store: Any) -> Callable[[str], str]:
    """A scene's rendered text by id ("" for an unknown id), each read once: what `score` checks spans against."""
    texts: dict[str, str] = {}

    def scene_text(doc_id: str) -> str:
        if doc_id not in texts:
            doc = store.document(doc_id)
            texts[doc_id] = doc.render() if doc else ""
        return texts[doc_id]

    return scene_text


def run(
    answerer: Answerer, cases: Sequence[AnswerCase], mode: str = "fast", k: int = 5,
    progress: Callable[[int, int], None] | None = None, journal: Path | None = None, run_key: dict[str, Any] | None = None,
) -> list[Scored]:
    """Ask and score every case. With `journal`, each scored question is appended to it as it is done (a JSON line
    after a first line holding `run_key`), and a run with the same key and cases answers only what the journal lacks:
    an interrupted evaluation resumes. A journal of another run is replaced."""
    done = read_journal(journal, run_key or {}, cases) if journal else {}
    if journal:
        journal.parent.mkdir(parents=True, exist_ok=True)
        if not done:
            journal.write_text(json.dumps({"run": run_key or {}, "cases": [c.qid for c in cases]}) + "\n", encoding="utf-8")

    scene_text = scene_texts(answerer.pipeline.store)
    out = []
    for i, case in enumerate(cases, 1):
        if case.qid in done:
            out.append(done[case.qid])
        else:
            out.append(score(case, answerer.ask(case.question, mode, k), scene_text))
            if journal:
                with open(journal, "a", encoding="utf-8") as f:
                    f.write(json.dumps(out[-1].to_dict()) + "\n")
        if progress:
            progress(i, len(cases))
    return out


def read_journal(journal: Path, run_key: dict[str, Any], cases: Sequence[AnswerCase]) -> dict[str, Scored]:
    """The scored questions of an earlier run with the same key and cases (a cut last line is ignored)."""
    if not journal.is_file():
        return {}
    lines = journal.read_text(encoding="utf-8").splitlines()
    try:
        head = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        return {}
    if head.get("run") != json.loads(json.dumps(run_key)) or head.get("cases") != [c.qid for c in cases]:
        return {}
    by_id = {c.qid: c for c in cases}
    done: dict[str, Scored] = {}
    for line in lines[1:]:
        try:
            d = json.loads(line)
            done[d["id"]] = Scored.from_dict(by_id[d["id"]], d)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue  # the line a crash cut short
    return done


METRIC_ROWS = [
    ("gold-span answer rate (dev)", "gold_span_rate", "dev_questions"),
    ("answer token F1 (dev, mean)", "answer_f1", "dev_questions"),
    ("citation precision (dev, per citation)", "citation_precision", "citations"),
    ("refusal rate, out of scope", "oos_refusal_rate", "oos_questions"),
    ("false-refusal rate (dev)", "false_refusal_rate", "dev_questions"),
    ("gold scene among the sources (dev)", "gold_in_sources", "dev_questions"),
    ("faithfulness (per answer sentence)", "faithfulness", "faithfulness_sentences"),
    ("time to first token p50 (ms)", "ttft_p50_ms", None),
    ("total time p50 (ms)", "total_p50_ms", None),
    ("LLM failures (left out of the rates)", "llm_failures", None),
    ("asked again with the strict prompt", "retried", None),
]


def report_rows(summary: dict[str, Any]) -> list[list[object]]:
    rows = []
    for label, key, n_key in METRIC_ROWS:
        value = summary.get(key)
        rows.append([label, "n/a" if value is None else value, summary.get(n_key, "") if n_key else ""])
    return rows
