"""The evidence selector: rank the units (utterances; paragraphs of a file) of the top retrieved parents and return
the best few lines with their context, before any LLM.

It looks at the top `DEFAULT_PARENTS` (20) retrieved parents, not only those that fit a prompt: the answer line
is often in a scene the prompt leaves out. Every unit of those parents gets the evidence the index already holds
(`unit_features`): its dense cosine with the question (the `utt` view) and that of its neighbours and of the best
window holding it (`w3s1`), its rank among the parent's and the pool's lines, the IDF-weighted share of the
question's terms in it, in its neighbours and in its 3-line window, the parent's fused rank and score, the
question's names among its speakers and in its words, the question type (who / what / where / why / when /
how many / how / which), its length, position, whether it is a stage direction, and whether it holds a number or
a name the question does not.

Two scorers over those features:
- `LambdaMARTScorer`: LightGBM lambdarank trained on FriendsQA dev answer utterances (`ragfunnel train evidence`,
  train/evidence.py; saved as `model.txt` + `meta.json` under `<home>/models/evidence`);
- `UnsupervisedScorer`: for collections without labels (or without lightgbm), a fixed weighting of the line's
  dense cosine, its term coverage, the best window's cosine and the parent's rank.

`EvidenceSelector.select(question, candidates)` returns `Evidence`: the best `lines` units, each with a line
before and after as context.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragfunnel.embedding import shared_encoder
from ragfunnel.registry import require
from ragfunnel.retrieve.dense import embed_query
from ragfunnel.store.base import Store
from ragfunnel.types import Candidate, Document

DEFAULT_PARENTS = 20
DEFAULT_LINES = 3
MODEL_FILE, META_FILE = "model.txt", "meta.json"
QUESTION_TYPES = ("who", "what", "where", "why", "when", "how_many", "how", "which", "other")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_NUMBER = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|thousand|million)\b",
    re.IGNORECASE,
)
_NOT_NAMES = {"i", "the", "a", "what", "who", "where", "when", "why", "how", "which", "did", "does", "do", "is", "was"}

FEATURES = (
    "dense_utt", "dense_prev", "dense_next", "dense_window", "dense_doc_rrank", "dense_gap_doc", "dense_pool_rrank",
    "cover", "cover_prev", "cover_next", "cover_window", "cover_terms",
    "parent_rrank", "parent_score", "parent_dense_max",
    "names_speaking", "names_mentioned", "names_near", "speaker_new", "name_new", "has_number",
    "is_direction", "log_chars", "position", "n_units",
    *[f"wh_{t}" for t in QUESTION_TYPES],
)


def line_passage(line: str, before: str, after: str) -> str:
    """What the line cross-encoder reads for a line: the line, then the lines before and after it."""
    return f"{line} || before: {before[:300]} || after: {after[:300]}"


def question_type(question: str) -> str:
    words = re.findall(r"[a-z]+", question.lower())
    if "how" in words:
        at = words.index("how")
        if at + 1 < len(words) and words[at + 1] in ("many", "much"):
            return "how_many"
    for w in words[:4]:
        if w in QUESTION_TYPES:
            return w
    return "other"


@dataclass(frozen=True)
class QuestionContext:
    text: str
    idfs: dict[str, float]  # analysed term -> BM25 IDF (terms the corpus never uses left out)
    names: frozenset[str]  # capitalised words of the question, lower-cased
    kind: str  # question_type
    vector: np.ndarray


@dataclass(frozen=True)
class Pool:
    """Every unit of the parents looked at: (parent index, unit index) and their feature rows."""

    docs: list[Document]
    candidates: list[Candidate]
    keys: list[tuple[int, int]]
    x: np.ndarray


@dataclass(frozen=True)
class EvidenceLine:
    doc: Document
    index: int  # of the unit in doc.units
    score: float
    parent_rank: int
    context: tuple[int, ...]  # unit indexes shown with it (itself included), in document order

    @property
    def unit(self):
        return self.doc.units[self.index]


@dataclass
class Evidence:
    lines: list[EvidenceLine]
    scorer: str
    pool: int  # units ranked
    parents: int
    timings: dict[str, float] = field(default_factory=dict)


class Scorer(Protocol):
    name: str

    def scores(self, x: np.ndarray) -> np.ndarray: ...


class UnsupervisedScorer:
    """For collections without labels: the line's dense cosine and term coverage, its best window's cosine and the
    parent's rank, weighted by hand (no training)."""

    name = "unsupervised"
    WEIGHTS = {"dense_utt": 1.0, "cover": 0.5, "dense_window": 0.5, "cover_window": 0.25, "parent_rrank": 0.3,
               "dense_gap_doc": 0.3}

    def __init__(self) -> None:
        self._w = np.zeros(len(FEATURES), dtype=np.float32)
        for name, weight in self.WEIGHTS.items():
            self._w[FEATURES.index(name)] = weight

    def scores(self, x: np.ndarray) -> np.ndarray:
        return x @ self._w


class LambdaMARTScorer:
    """A LightGBM lambdarank model saved by `ragfunnel train evidence` (`model.txt`, `meta.json` in `model_dir`)."""

    name = "lambdamart"

    def __init__(self, model_dir: str | Path):
        self.model_dir = Path(model_dir).expanduser()
        meta = json.loads((self.model_dir / META_FILE).read_text())
        if list(meta.get("features", [])) != list(FEATURES):
            raise ValueError(f"{self.model_dir}: trained on other features; train it again (ragfunnel train evidence)")
        lgb = require("lightgbm", "rerank", "the trained evidence selector")
        self.booster = lgb.Booster(model_file=str(self.model_dir / MODEL_FILE))
        self.meta = meta

    def scores(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.booster.predict(x, num_threads=1), dtype=np.float32)


def trained_scorer(*model_dirs: str | Path | None) -> Scorer:
    """The LambdaMART scorer saved in the first of `model_dirs` that holds one, else the unsupervised one (no model
    there, or lightgbm missing)."""
    for model_dir in model_dirs:
        if model_dir is not None and (Path(model_dir).expanduser() / MODEL_FILE).is_file():
            try:
                return LambdaMARTScorer(model_dir)
            except (ValueError, OSError, ImportError):
                pass
            except Exception as exc:  # noqa: BLE001 - a missing extra (ConfigError) or a broken file: fall back
                if type(exc).__name__ not in ("ConfigError", "LightGBMError"):
                    raise
    return UnsupervisedScorer()


def evidence_model_dirs(models_dir: str | Path, corpus: Any = None) -> list[Path]:
    """Where a collection's selector is looked for: its own (`ragfunnel train evidence`), then the one its corpus
    ships (`Corpus.trained_models`)."""
    dirs = [evidence_model_dir(models_dir)]
    shipped = getattr(corpus, "trained_models", None)
    if shipped is not None:
        dirs.append(Path(shipped) / "evidence")
    return dirs


class EvidenceSelector:
    """Ranks the units of the top `parents` candidates; `select` returns the best `lines` with their context."""

    def __init__(self, store: Store, scorer: Scorer | None = None, *, parents: int = DEFAULT_PARENTS,
                 lines: int = DEFAULT_LINES, utt_view: str = "utt", window_view: str = "w3s1", idf_view: str = "scene"):
        self.store, self.parents, self.lines = store, parents, lines
        self.scorer = scorer or UnsupervisedScorer()
        views = set(store.settings.dense_views)
        self.utt_view = utt_view if utt_view in views else None
        self.window_view = window_view if window_view in views else None
        sparse = list(store.settings.sparse_views)
        self.idf_view = idf_view if idf_view in sparse else (sparse[0] if sparse else None)
        self._terms: dict[str, list[set[str]]] = {}
        self._lock = threading.Lock()

    # ---- features ------------------------------------------------------------------------------------------------

    def context(self, question: str) -> QuestionContext:
        idfs = self.store.term_idfs(self.idf_view, question) if self.idf_view else {}
        names = frozenset(w.lower() for w in _CAPITALISED.findall(question)) - _NOT_NAMES
        encoder = shared_encoder(self.store.settings.encoder, self.store.settings.max_length)
        return QuestionContext(question, {t: v for t, v in idfs.items() if v is not None}, names,
                               question_type(question), embed_query(encoder, question))

    def _unit_terms(self, doc: Document) -> list[set[str]]:
        terms = self._terms.get(doc.doc_id)
        if terms is None:
            terms = [set(self.store.analyze(u.render())) for u in doc.units]
            with self._lock:
                if len(self._terms) > 20000:
                    self._terms.clear()
                self._terms[doc.doc_id] = terms
        return terms

    def _unit_similarities(self, q: QuestionContext, doc: Document) -> tuple[np.ndarray, np.ndarray]:
        """(cosine of each unit, cosine of the best window holding each unit); zeros where the index has no view."""
        n = len(doc.units)
        per_unit, per_window = np.zeros(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
        if self.utt_view:
            chunks, vectors = self.store.doc_chunks(self.utt_view, doc.doc_id), self.store.doc_vectors(self.utt_view, doc.doc_id)
            if len(chunks) == len(vectors) and chunks:
                sims = vectors @ q.vector
                for c, s in zip(chunks, sims):
                    per_unit[c.start:c.end] = np.maximum(per_unit[c.start:c.end], s)
        if self.window_view:
            chunks = self.store.doc_chunks(self.window_view, doc.doc_id)
            vectors = self.store.doc_vectors(self.window_view, doc.doc_id)
            if len(chunks) == len(vectors) and chunks:
                sims = vectors @ q.vector
                for c, s in zip(chunks, sims):
                    per_window[c.start:c.end] = np.maximum(per_window[c.start:c.end], s)
        return per_unit, per_window

    def pool(self, q: QuestionContext, candidates: Sequence[Candidate], docs: Sequence[Document | None] | None = None) -> Pool:
        """Feature rows of every unit of the top `parents` candidates (`docs`: the candidates' documents, when the
        caller has them)."""
        chosen_docs, chosen_cands, keys, rows = [], [], [], []
        total_idf = sum(q.idfs.values()) or 1.0
        wh = [1.0 if q.kind == t else 0.0 for t in QUESTION_TYPES]
        dense_all: list[np.ndarray] = []
        for pos, cand in enumerate(candidates[: self.parents]):
            doc = docs[pos] if docs is not None else self.store.document(cand.doc_id)
            if doc is None or not doc.units:
                continue
            p = len(chosen_docs)
            chosen_docs.append(doc)
            chosen_cands.append(cand)
            terms = self._unit_terms(doc)
            cover = np.array([sum(v for t, v in q.idfs.items() if t in ts) / total_idf for ts in terms], dtype=np.float32)
            counts = [sum(1 for t in q.idfs if t in ts) for ts in terms]
            dense, window = self._unit_similarities(q, doc)
            dense_all.append(dense)
            order = np.argsort(-dense, kind="stable")
            doc_rank = np.empty(len(dense), dtype=np.float32)
            doc_rank[order] = np.arange(1, len(dense) + 1)
            top = float(dense.max())
            n = len(doc.units)
            for i, unit in enumerate(doc.units):
                lo, hi = max(0, i - 1), min(n, i + 2)
                speakers = {w.lower() for s in unit.speakers for w in s.split()}
                near = {w.lower() for j in range(lo, hi) for s in doc.units[j].speakers for w in s.split()}
                words = set(re.findall(r"[a-z]+", unit.text.lower()))
                capitalised = {w.lower() for w in _CAPITALISED.findall(unit.text)} - _NOT_NAMES
                window_terms = set().union(*terms[lo:hi])
                rows.append([
                    dense[i], dense[i - 1] if i > 0 else 0.0, dense[i + 1] if i + 1 < n else 0.0, window[i],
                    1.0 / doc_rank[i], dense[i] - top, 0.0,
                    cover[i], cover[i - 1] if i > 0 else 0.0, cover[i + 1] if i + 1 < n else 0.0,
                    sum(v for t, v in q.idfs.items() if t in window_terms) / total_idf, counts[i],
                    1.0 / cand.rank, cand.score, top,
                    len(q.names & speakers), len(q.names & words), len(q.names & near),
                    1.0 if speakers and not speakers & q.names else 0.0, len(capitalised - q.names),
                    1.0 if _NUMBER.search(unit.text) else 0.0,
                    1.0 if unit.is_direction else 0.0, math.log1p(len(unit.text)), i / max(n - 1, 1), math.log1p(n),
                    *wh,
                ])
                keys.append((p, i))
        x = np.asarray(rows, dtype=np.float32).reshape(len(rows), len(FEATURES))
        if len(rows):
            dense_flat = np.concatenate(dense_all)
            order = np.argsort(-dense_flat, kind="stable")
            rank = np.empty(len(order), dtype=np.float32)
            rank[order] = np.arange(1, len(order) + 1)
            x[:, FEATURES.index("dense_pool_rrank")] = 1.0 / rank
        return Pool(chosen_docs, chosen_cands, keys, x)

    # ---- selection -----------------------------------------------------------------------------------------------

    def rank(self, pool: Pool) -> list[tuple[int, int, float]]:
        """(parent index, unit index, score) of every unit of the pool, best first."""
        if not pool.keys:
            return []
        scores = self.scorer.scores(pool.x)
        order = np.argsort(-scores, kind="stable")
        return [(*pool.keys[i], float(scores[i])) for i in order]

    def select(self, question: str, candidates: Sequence[Candidate], lines: int | None = None,
               docs: Sequence[Document | None] | None = None) -> Evidence:
        """The best `lines` units, each with the line before and after it as context. (Skipping a line next to one
        already chosen, as that one's context, lowered evidence recall@3 on the hold-out from 0.33 to 0.27.)"""
        import time

        t0 = time.perf_counter()
        q = self.context(question)
        pool = self.pool(q, candidates, docs)
        t1 = time.perf_counter()
        ranked = self.rank(pool)
        want = lines or self.lines
        chosen: list[EvidenceLine] = []
        taken: set[tuple[int, int]] = set()
        for p, i, score in ranked:
            if len(chosen) >= want:
                break
            if (p, i) in taken:
                continue
            doc = pool.docs[p]
            context = tuple(range(max(0, i - 1), min(len(doc.units), i + 2)))
            chosen.append(EvidenceLine(doc, i, score, pool.candidates[p].rank, context))
            taken.add((p, i))
        t2 = time.perf_counter()
        return Evidence(chosen, self.scorer.name, len(pool.keys), len(pool.docs),
                        {"features": (t1 - t0) * 1000, "scoring": (t2 - t1) * 1000})


def evidence_model_dir(models_dir: str | Path) -> Path:
    """Where `ragfunnel train evidence` saves the selector and where the answerer looks for it."""
    return Path(models_dir).expanduser() / "evidence"


def describe(scorer: Scorer) -> dict[str, Any]:
    meta = getattr(scorer, "meta", None) or {}
    return {"scorer": scorer.name, **{k: meta[k] for k in ("trained_on", "questions", "seed") if k in meta}}
