"""The extractive reader: a span reader reads the best windows of the top retrieved parents and answers with a short
span copied from one line, which is its citation by construction. No LLM.

The funnel's last stage, as in DrQA / R³ and Haystack's ExtractiveReader:

1. **Windows** (`WindowPlanner`). The evidence selector (generate/evidence.py) ranks every line of the top
   `parents` retrieved parents; each of the best lines seeds a window of consecutive lines around it (two before,
   two after, grown or cut to `window_tokens` reader tokens), windows of one parent that overlap are merged while
   they fit. A window keeps its parent's retrieval rank and score and the best selector score of its lines.
2. **Spans** (`SpanModel`). A MiniLM with a start/end head (`ragfunnel train reader`, ONNX, no torch) reads
   `[CLS] question [SEP] window [SEP]`. It was trained with a shared normalisation (Clark & Gardner, 2018): one
   softmax over every start (and every end) position of all of a question's windows, the `[CLS]` positions standing
   for "no answer", so a span's score means the same in any window and reading more windows does not inflate the
   distractors. A span lies inside one line (speaker names included: "who" questions answer with a speaker).
3. **Candidates** (`pool_candidates`). Spans are grouped by their normalised text (case, punctuation, articles; a
   single name joins the longer name it begins, "Rachel" with "Rachel Green"); a group pools its probability mass
   over windows and parents and keeps its occurrences best first.
4. **Answer score** (`AnswerScorer`). A logistic model over a candidate's evidence (pooled and best span
   probability, windows and parents it occurs in, its best parent's retrieval rank and score, the best selector
   score of its lines, the no-answer probability, its length, whether it is a speaker) fitted by `train reader` on
   questions the span model did not learn from; without one, the pooled probability. The best candidate answers
   and cites the line of its best occurrence; the reader declines when the no-answer mass beats it.

`ExtractiveReader.read(question, candidates)` returns a `Reading` (candidates best first, the windows read,
timings); `read_windows` reads given windows (an oracle run over the gold scene, say).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.types import Candidate, Document

if TYPE_CHECKING:
    from ragfunnel.generate.evidence import EvidenceSelector

ADAPTER_FILE, META_FILE = "adapter.npz", "meta.json"
DEFAULT_PARENTS = 20  # parents whose lines the selector ranks (as the evidence reader)
DEFAULT_WINDOWS = 8  # windows read per question
WINDOW_TOKENS = 160  # reader tokens of one window's lines
LINES_BEFORE, LINES_AFTER = 2, 2  # a seed line's window, before it is fitted to WINDOW_TOKENS
MAX_QUESTION_TOKENS = 40
MAX_ANSWER_TOKENS = 30
TOP_POSITIONS = 20  # best starts and ends looked at per window
MISSING = "no trained reader at {path}: run `ragfunnel train reader` (or ask with --reader evidence)"

_ARTICLES = frozenset({"a", "an", "the"})
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_APOSTROPHES = re.compile(r"['’‘`´]")


def answer_key(text: str) -> str:
    """A candidate's normalised form: lower case, apostrophes dropped, punctuation and articles removed."""
    words = _NON_WORD.sub(" ", _APOSTROPHES.sub("", text.lower())).split()
    return " ".join(w for w in words if w not in _ARTICLES)


def line_text(doc: Document, index: int) -> str:
    """A unit as the reader and the citation show it: rendered (`Speaker: words`), whitespace collapsed."""
    return " ".join(doc.units[index].render().split())


@dataclass(frozen=True)
class Window:
    """Consecutive units [start, end) of a document, as one reader input."""

    doc: Document
    start: int
    end: int
    parent_rank: int = 1
    parent_score: float = 0.0
    evidence: float = 0.0  # the best selector score of its lines (0 where no selector ranked them)

    @property
    def lines(self) -> list[str]:
        return [line_text(self.doc, i) for i in range(self.start, self.end)]

    def text(self) -> tuple[str, list[int]]:
        """The window's text (lines joined by newlines) and the character offset of each line in it."""
        starts, at = [], 0
        lines = self.lines
        for line in lines:
            starts.append(at)
            at += len(line) + 1
        return "\n".join(lines), starts


@dataclass(frozen=True)
class Span:
    window: int  # index into the windows read
    unit: int  # index of its line in the window's document
    start: int  # character offsets in that line (`line_text`)
    end: int
    text: str
    logit: float  # start + end logit
    prob: float  # shared-normalised over every span and no-answer position of the question's windows


@dataclass
class SpanAnswer:
    text: str  # as copied from its best occurrence
    key: str  # `answer_key`
    prob: float  # pooled span probability
    spans: list[Span]  # occurrences, best first
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0  # the answer score (AnswerScorer): comparable across questions, higher is better


@dataclass
class Reading:
    candidates: list[SpanAnswer]  # best first
    no_answer: float  # pooled probability that no window holds the answer
    windows: list[Window]
    answerable: bool  # the best candidate beats the no-answer mass (and the scorer's floor)
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds: windows, spans, total

    @property
    def best(self) -> SpanAnswer | None:
        return self.candidates[0] if self.candidates else None


# ---- windows ---------------------------------------------------------------------------------------------------------


class TokenCounter:
    """Reader tokens of a line (cached per document)."""

    def __init__(self, tokenizer: Any):
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_str(tokenizer.to_str())  # a copy that counts a long line whole (no truncation)
        self._tok.no_truncation()
        self._tok.no_padding()
        self._cache: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def lengths(self, doc: Document) -> list[int]:
        got = self._cache.get(doc.doc_id)
        if got is None:
            encs = self._tok.encode_batch([line_text(doc, i) for i in range(len(doc.units))], add_special_tokens=False)
            got = [len(e.ids) for e in encs]
            with self._lock:
                if len(self._cache) > 20000:
                    self._cache.clear()
                self._cache[doc.doc_id] = got
        return got


def fit_window(lengths: Sequence[int], seed: int, budget: int, before: int = LINES_BEFORE,
               after: int = LINES_AFTER) -> tuple[int, int]:
    """[start, end) around `seed`: `before` lines before and `after` after where they fit in `budget` tokens (lines
    after the seed first: the answer is often the reply), then grown both ways while more fit."""
    n = len(lengths)
    start, end, used = seed, seed + 1, lengths[seed]
    want_after, want_before = after, before
    while want_after or want_before:
        grew = False
        if want_after and end < n and used + lengths[end] <= budget:
            used += lengths[end]
            end += 1
            want_after -= 1
            grew = True
        elif want_after:
            want_after = 0
        if want_before and start > 0 and used + lengths[start - 1] <= budget:
            start -= 1
            used += lengths[start]
            want_before -= 1
            grew = True
        elif want_before:
            want_before = 0
        if not grew and not (want_after or want_before):
            break
    while True:  # room left: more context on both sides
        grew = False
        if end < n and used + lengths[end] <= budget:
            used += lengths[end]
            end += 1
            grew = True
        if start > 0 and used + lengths[start - 1] <= budget:
            start -= 1
            used += lengths[start]
            grew = True
        if not grew:
            break
    return start, end


def scene_windows(doc: Document, lengths: Sequence[int], budget: int = WINDOW_TOKENS, overlap: int = 2,
                  parent_rank: int = 1, parent_score: float = 0.0) -> list[Window]:
    """A whole document as consecutive windows of at most `budget` tokens, `overlap` lines shared between
    neighbours (the oracle reads the gold scene so; training shows the reader whole scenes so)."""
    out: list[Window] = []
    n, start = len(doc.units), 0
    while start < n:
        end, used = start, 0
        while end < n and (end == start or used + lengths[end] <= budget):
            used += lengths[end]
            end += 1
        out.append(Window(doc, start, end, parent_rank, parent_score))
        if end >= n:
            break
        start = max(start + 1, end - overlap)
    return out


class WindowPlanner:
    """The windows the reader reads for a question: around the best lines of the top parents (see the module doc)."""

    def __init__(self, selector: EvidenceSelector, counter: TokenCounter, *, windows: int = DEFAULT_WINDOWS,
                 budget: int = WINDOW_TOKENS, parents: int = DEFAULT_PARENTS):
        self.selector, self.counter = selector, counter
        self.windows, self.budget, self.parents = windows, budget, parents

    def plan(self, question: str, candidates: Sequence[Candidate], docs: Sequence[Document | None] | None = None,
             windows: int | None = None) -> list[Window]:
        q = self.selector.context(question)
        pool = self.selector.pool(q, list(candidates)[: self.parents], docs)
        ranked = self.selector.rank(pool)
        return plan_windows(pool.docs, pool.candidates, ranked, self.counter, windows or self.windows, self.budget)


def plan_windows(docs: Sequence[Document], candidates: Sequence[Candidate], ranked: Sequence[tuple[int, int, float]],
                 counter: TokenCounter, limit: int, budget: int) -> list[Window]:
    """Windows seeded by `ranked` lines ((parent index, unit index, score), best first): a line already inside a
    chosen window seeds nothing; a new window that overlaps or touches one of the same parent merges with it when
    the two fit in `budget` together."""
    chosen: list[list[Any]] = []  # [parent index, start, end, best score]
    for p, i, score in ranked:
        if len(chosen) >= limit:
            break
        if any(c[0] == p and c[1] <= i < c[2] for c in chosen):
            continue
        lengths = counter.lengths(docs[p])
        start, end = fit_window(lengths, i, budget)
        merged = False
        for c in chosen:
            if c[0] == p and start <= c[2] and c[1] <= end:
                lo, hi = min(c[1], start), max(c[2], end)
                if sum(lengths[lo:hi]) <= budget:
                    c[1], c[2] = lo, hi
                    merged = True
                    break
        if not merged:
            chosen.append([p, start, end, score])
    return [Window(docs[p], s, e, candidates[p].rank, float(candidates[p].score), float(best))
            for p, s, e, best in chosen]


# ---- the span model --------------------------------------------------------------------------------------------------


def reader_tokenizer(model_dir: Path, max_length: int) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length, strategy="only_second")
    return tok


def question_text(question: str, tok: Any, limit: int = MAX_QUESTION_TOKENS) -> str:
    """The question cut to `limit` reader tokens (a pasted paragraph must not crowd out the window)."""
    enc = tok.encode(question, add_special_tokens=False)
    if len(enc.ids) <= limit:
        return question
    return question[: enc.offsets[limit - 1][1]]


def encode_windows(tok: Any, question: str, texts: Sequence[str]) -> tuple[list[Any], dict[str, np.ndarray]]:
    """Encodings of (question, window text) pairs and the padded model inputs."""
    encs = tok.encode_batch([(question, t) for t in texts])
    width = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), width), dtype=np.int64)
    mask, types = np.zeros_like(ids), np.zeros_like(ids)
    for i, e in enumerate(encs):
        n = len(e.ids)
        ids[i, :n], mask[i, :n], types[i, :n] = e.ids, 1, e.type_ids
    return encs, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


class SpanModel:
    """The span reader: the bundled MiniLM (its ONNX file, as the encoder uses it) with the weights `train reader`
    changed put in its place when the session opens, and a start/end head over its last hidden states.

    A reader folder holds `meta.json` and `adapter.npz`: for each changed weight of the bundled ONNX model either the
    new tensor (`full:<name>`) or a low-rank update (`lora_a:<name>`, `lora_b:<name>`: W + scale · Aᵀ Bᵀ, the LoRA
    factors), and the head (`head.weight`, `head.bias`). A low-rank reader is ~1 MB, one trained whole ~25 MB (the
    six layers in half precision, the embeddings unchanged; the Friends corpus ships one: `Corpus.trained_models`);
    reading the bundled weights to merge low-rank factors needs the `onnx` package (the `reader` extra)."""

    def __init__(self, model_dir: str | Path, threads: int | None = None, base_model: str | Path | None = None):
        self.model_dir = Path(model_dir).expanduser()
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self.base_model = Path(base_model) if base_model else None
        self._session = None
        self._tok = None
        self._head: tuple[np.ndarray, np.ndarray] | None = None
        self._keep: list[Any] = []  # the OrtValues the session reads its replaced weights from
        self._lock = threading.Lock()
        self.meta: dict[str, Any] = {}

    @staticmethod
    def available(model_dir: str | Path) -> bool:
        return (Path(model_dir).expanduser() / ADAPTER_FILE).is_file()

    def warm_up(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            if not self.available(self.model_dir):
                raise ConfigError(MISSING.format(path=self.model_dir))
            import onnxruntime as ort

            from ragfunnel.embedding import bundled_minilm_dir

            meta_file = self.model_dir / META_FILE
            self.meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
            base = self.base_model or bundled_minilm_dir()
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            weights, head = adapted_weights(base / "onnx" / "model.onnx", self.model_dir / ADAPTER_FILE)
            for name, value in weights.items():
                # onnxruntime reads the caller's buffer in place: a strided view would be copied into one it owns
                ort_value = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value))
                self._keep.append(ort_value)
                options.add_initializer(name, ort_value)
            self._head = head
            self._tok = reader_tokenizer(base, int(self.meta.get("max_length", 256)))
            self._session = ort.InferenceSession(str(base / "onnx" / "model.onnx"), options,
                                                 providers=["CPUExecutionProvider"])

    @property
    def tokenizer(self) -> Any:
        self.warm_up()
        return self._tok

    def logits(self, question: str, texts: Sequence[str]) -> tuple[list[Any], np.ndarray, np.ndarray]:
        """(encodings, start logits, end logits), the logits (windows, tokens) with padding at -inf."""
        self.warm_up()
        encs, inputs = encode_windows(self._tok, question_text(question, self._tok), texts)
        (hidden,) = self._session.run(None, inputs)
        weight, bias = self._head
        out = hidden.astype(np.float32) @ weight.T + bias
        pad = inputs["attention_mask"] == 0
        start = np.where(pad, -np.inf, out[..., 0]).astype(np.float64)
        end = np.where(pad, -np.inf, out[..., 1]).astype(np.float64)
        return encs, start, end


def adapted_weights(base_onnx: Path, adapter: Path) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The weights an adapter replaces (name -> float32 tensor, low-rank updates merged into the bundled weights)
    and its head (weight (2, hidden), bias (2,))."""
    with np.load(adapter) as data:
        arrays = {k: data[k] for k in data.files}
    scale = float(arrays.pop("lora_scale", np.array(1.0)))
    head = (arrays.pop("head.weight").astype(np.float32), arrays.pop("head.bias").astype(np.float32))
    out = {k[len("full:"):]: v.astype(np.float32) for k, v in arrays.items() if k.startswith("full:")}
    low_rank = sorted(k[len("lora_a:"):] for k in arrays if k.startswith("lora_a:"))
    if low_rank:
        base = onnx_initializers(base_onnx, set(low_rank))
        for name in low_rank:
            a, b = arrays[f"lora_a:{name}"].astype(np.float32), arrays[f"lora_b:{name}"].astype(np.float32)
            out[name] = base[name] + scale * (a.T @ b.T)
    return out, head


def onnx_initializers(path: Path, names: set[str]) -> dict[str, np.ndarray]:
    """The named weights of an ONNX model (external data read from beside it)."""
    from ragfunnel.registry import require

    onnx = require("onnx", "reader", "the extractive reader (to merge its weights into the bundled MiniLM)")
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    found = {}
    for tensor in model.graph.initializer:
        if tensor.name in names:
            found[tensor.name] = numpy_helper.to_array(tensor, base_dir=str(path.parent)).astype(np.float32)
    missing = names - set(found)
    if missing:
        raise ConfigError(f"{path}: the reader's adapter names weights this model lacks ({', '.join(sorted(missing)[:3])})")
    return found


def _logsumexp(x: np.ndarray) -> float:
    finite = x[np.isfinite(x)]
    if not len(finite):
        return -math.inf
    top = float(finite.max())
    return top + math.log(float(np.exp(finite - top).sum()))


def _context_positions(enc: Any) -> np.ndarray:
    """Token positions of the window (second sequence), special tokens excluded."""
    seq = enc.sequence_ids
    return np.array([i for i, s in enumerate(seq) if s == 1], dtype=np.int64)


def extract_spans(windows: Sequence[Window], encs: Sequence[Any], start: np.ndarray, end: np.ndarray,
                  max_answer_tokens: int = MAX_ANSWER_TOKENS, top: int = TOP_POSITIONS) -> tuple[list[Span], float]:
    """Every candidate span of the windows (inside one line, whole words) with its shared-normalised probability,
    and the no-answer probability (the [CLS] positions)."""
    contexts = [_context_positions(e) for e in encs]
    z_start = _logsumexp(np.concatenate([np.r_[start[b, 0], start[b, c]] for b, c in enumerate(contexts)]))
    z_end = _logsumexp(np.concatenate([np.r_[end[b, 0], end[b, c]] for b, c in enumerate(contexts)]))
    no_answer = sum(math.exp(start[b, 0] - z_start) * math.exp(end[b, 0] - z_end) for b in range(len(windows)))
    spans: list[Span] = []
    for b, (w, enc, ctx) in enumerate(zip(windows, encs, contexts)):
        if not len(ctx):
            continue
        text, line_starts = w.text()
        offsets = enc.offsets
        line_of = np.searchsorted(np.asarray(line_starts), [offsets[t][0] for t in ctx], side="right") - 1
        where = {int(t): k for k, t in enumerate(ctx)}
        s_top = ctx[np.argsort(-start[b, ctx])[:top]]
        e_top = ctx[np.argsort(-end[b, ctx])[:top]]
        seen: set[tuple[int, int]] = set()
        for s in s_top:
            for e in e_top:
                if e < s or e - s + 1 > max_answer_tokens:
                    continue
                ls, le = int(line_of[where[int(s)]]), int(line_of[where[int(e)]])
                if ls != le:
                    continue
                c0, c1 = _whole_words(text, offsets[s][0], offsets[e][1])
                base = line_starts[ls]
                key = (c0, c1)
                if key in seen or c1 <= c0:
                    continue
                seen.add(key)
                logit = float(start[b, s] + end[b, e])
                prob = math.exp(start[b, s] - z_start) * math.exp(end[b, e] - z_end)
                spans.append(Span(b, w.start + ls, c0 - base, c1 - base, text[c0:c1], logit, prob))
    spans.sort(key=lambda s: -s.prob)
    return spans, no_answer


def _whole_words(text: str, c0: int, c1: int) -> tuple[int, int]:
    """A span widened to whole words (a token may start or end inside one) and stripped of edge punctuation."""
    while c0 > 0 and text[c0 - 1].isalnum():
        c0 -= 1
    while c1 < len(text) and text[c1].isalnum():
        c1 += 1
    while c0 < c1 and not text[c0].isalnum() and text[c0] not in "$£€":
        c0 += 1
    while c1 > c0 and not text[c1 - 1].isalnum() and text[c1 - 1] not in "%)":
        c1 -= 1
    return c0, c1


# ---- candidates and their score --------------------------------------------------------------------------------------

FEATURES = (
    "log_prob", "log_best", "log_no_answer", "margin_no_answer", "windows", "parents", "occurrences",
    "best_parent_rrank", "best_parent_score", "best_evidence", "best_window_rank", "words", "is_speaker",
    "in_question",
)


def pool_candidates(spans: Sequence[Span], windows: Sequence[Window], question: str, no_answer: float,
                    limit: int = 10) -> list[SpanAnswer]:
    """Spans grouped by `answer_key` (a one-word name joins the longer name it begins), their evidence pooled, with
    the features of `AnswerScorer`; the `limit` best by pooled probability."""
    groups: dict[str, SpanAnswer] = {}
    for span in spans:
        key = answer_key(span.text)
        if not key:
            continue
        group = groups.get(key)
        if group is None:
            group = groups[key] = SpanAnswer(span.text, key, 0.0, [])
        group.prob += span.prob
        group.spans.append(span)
    _join_short_names(groups)
    q_words = set(answer_key(question).split())
    ranked = sorted(groups.values(), key=lambda g: -g.prob)[:limit]
    for g in ranked:
        best = g.spans[0]
        g.text = best.text
        parents = {windows[s.window].doc.doc_id for s in g.spans}
        wins = {s.window for s in g.spans}
        top_window = min(wins)
        words = g.key.split()
        line = windows[best.window].doc.units[best.unit]
        speaker_part = best.start < len(" & ".join(line.speakers)) if line.speakers and not line.is_direction else False
        g.features = {
            "log_prob": math.log(max(g.prob, 1e-12)), "log_best": math.log(max(best.prob, 1e-12)),
            "log_no_answer": math.log(max(no_answer, 1e-12)),
            "margin_no_answer": math.log(max(g.prob, 1e-12)) - math.log(max(no_answer, 1e-12)),
            "windows": float(len(wins)), "parents": float(len(parents)), "occurrences": float(len(g.spans)),
            "best_parent_rrank": 1.0 / min(windows[s.window].parent_rank for s in g.spans),
            "best_parent_score": max(windows[s.window].parent_score for s in g.spans),
            "best_evidence": max(windows[s.window].evidence for s in g.spans),
            "best_window_rank": 1.0 / (top_window + 1),
            "words": float(len(words)), "is_speaker": 1.0 if speaker_part else 0.0,
            "in_question": sum(w in q_words for w in words) / max(len(words), 1),
        }
    return ranked


def _join_short_names(groups: dict[str, SpanAnswer]) -> None:
    """A one-word candidate that begins a longer candidate of capitalised words ("Rachel", "Rachel Green") joins it."""
    singles = [k for k in groups if " " not in k and groups[k].text[:1].isupper()]
    for key in singles:
        longer = [g for k, g in groups.items() if k != key and k.split()[0] == key and _is_name(g.text)]
        if longer:
            target = max(longer, key=lambda g: g.prob)
            target.prob += groups[key].prob
            target.spans = sorted(target.spans + groups[key].spans, key=lambda s: -s.prob)
            del groups[key]


def _is_name(text: str) -> bool:
    """Two to four capitalised words and nothing else ("Rachel Green", "Dr. Ramoray")."""
    words = text.replace("&", " ").split()
    return 2 <= len(words) <= 4 and all(w[:1].isupper() for w in words)


class AnswerScorer:
    """A candidate's answer score: a logistic model over `FEATURES` fitted by `train reader` on questions the span
    model did not learn from, else the pooled probability's log. `floor`: below it the reader declines."""

    def __init__(self, weights: dict[str, float] | None = None, bias: float = 0.0, floor: float | None = None,
                 mean: dict[str, float] | None = None, scale: dict[str, float] | None = None):
        self.weights, self.bias, self.floor = weights, bias, floor
        self.mean, self.scale = mean or {}, scale or {}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> AnswerScorer:
        fitted = meta.get("answer_scorer")
        if not fitted:
            return cls()
        return cls(fitted["weights"], fitted["bias"], fitted.get("floor"), fitted.get("mean"), fitted.get("scale"))

    @property
    def fitted(self) -> bool:
        return self.weights is not None

    def score(self, features: dict[str, float]) -> float:
        if self.weights is None:
            return features["log_prob"]
        z = self.bias + sum(w * (features[k] - self.mean.get(k, 0.0)) / (self.scale.get(k, 1.0) or 1.0)
                            for k, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


class ExtractiveReader:
    """Windows → spans → candidates → the best answer (see the module doc). `model_dir`: where `train reader` saved
    the span model (`<home>/models/reader`)."""

    name = "extractive"

    def __init__(self, selector: EvidenceSelector, model_dir: str | Path, *, windows: int | None = None,
                 budget: int | None = None, threads: int | None = None):
        self.selector = selector
        self.model = SpanModel(model_dir, threads)
        self._windows, self._budget = windows, budget
        self._planner: WindowPlanner | None = None
        self._scorer: AnswerScorer | None = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        self.model.warm_up()
        with self._lock:
            if self._planner is None:
                meta = self.model.meta
                self._planner = WindowPlanner(
                    self.selector, TokenCounter(self.model.tokenizer),
                    windows=self._windows or int(meta.get("windows", DEFAULT_WINDOWS)),
                    budget=self._budget or int(meta.get("window_tokens", WINDOW_TOKENS)),
                )
                self._scorer = AnswerScorer.from_meta(meta)

    @property
    def planner(self) -> WindowPlanner:
        self.warm_up()
        return self._planner

    @property
    def scorer(self) -> AnswerScorer:
        self.warm_up()
        return self._scorer

    def read(self, question: str, candidates: Sequence[Candidate], docs: Sequence[Document | None] | None = None) -> Reading:
        t0 = time.perf_counter()
        windows = self.planner.plan(question, candidates, docs)
        reading = self.read_windows(question, windows)
        reading.timings["windows"] = (time.perf_counter() - t0) * 1000 - reading.timings["spans"]
        reading.timings["total"] = (time.perf_counter() - t0) * 1000
        return reading

    def read_windows(self, question: str, windows: Sequence[Window]) -> Reading:
        t0 = time.perf_counter()
        windows = list(windows)
        if not windows:
            return Reading([], 1.0, [], False, {"spans": 0.0})
        encs, start, end = self.model.logits(question, [w.text()[0] for w in windows])
        spans, no_answer = extract_spans(windows, encs, start, end,
                                         int(self.model.meta.get("max_answer_tokens", MAX_ANSWER_TOKENS)))
        found = pool_candidates(spans, windows, question, no_answer)
        for c in found:
            c.score = self.scorer.score(c.features)
        found.sort(key=lambda c: -c.score)
        best = found[0] if found else None
        answerable = best is not None and (
            best.score >= self.scorer.floor if self.scorer.floor is not None else best.prob >= no_answer)
        return Reading(found, no_answer, windows, answerable, {"spans": (time.perf_counter() - t0) * 1000})


def reader_model_dir(models_dir: str | Path) -> Path:
    """Where `ragfunnel train reader` saves a collection's span reader."""
    return Path(models_dir).expanduser() / "reader"


def find_reader(models_dir: str | Path, corpus: Any = None) -> Path | None:
    """The span reader a collection answers with: its own (`ragfunnel train reader`), else the one its corpus ships
    (`Corpus.trained_models`), else None."""
    dirs = [reader_model_dir(models_dir)]
    shipped = getattr(corpus, "trained_models", None)
    if shipped is not None:
        dirs.append(Path(shipped) / "reader")
    return next((d for d in dirs if SpanModel.available(d)), None)


def usable_reader(models_dir: str | Path, corpus: Any = None) -> Path | None:
    """`find_reader`'s reader when it can run here: a low-rank adapter needs the `onnx` package (the `reader` extra)
    to merge into the bundled weights."""
    from ragfunnel.registry import importable

    found = find_reader(models_dir, corpus)
    if found is None:
        return None
    meta_file = found / META_FILE
    low_rank = json.loads(meta_file.read_text()).get("lora_rank", 1) if meta_file.is_file() else 1
    return found if not low_rank or importable("onnx") else None
