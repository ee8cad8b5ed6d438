"""The answerability gate: should the answer step ask the LLM at all?

A small model asked something the corpus cannot answer ("Who painted the Mona Lisa?") tends to find a line with a
matching word and build an answer on it. Refusing before the LLM is both safer and instant. Two gates share one
protocol (`judge(question, candidates) -> GateDecision | None`):

- `SimilarityGate`: the best dense cosine between the question and any retrieved chunk, against a threshold.
  Needs no training; the fallback.
- `LearnedGate`: a logistic regression over cheap evidence of the top-k retrieved scenes, trained per index with
  `ragfunnel train gate` on answerable questions against off-topic ones. Besides the similarity it sees how much
  of the question's IDF mass the best 3-line window and the scene cover, the question's mean IDF and share of
  words the corpus never uses (general-knowledge questions are full of rare words: "penicillin", "Andromeda"),
  and whether the question's capitalised names speak or are mentioned in the scenes. Those catch the questions
  whose words happen to be close to some line ("Who was Paul Revere?" — Paul is a character).

The learned model is stored beside the index it was trained on (`<index>/gate.json`): a gate is only valid for
its corpus. The threshold is chosen on cross-validated scores so that a set share of the answerable training
questions is refused (default 5%), the rest of the separation goes to the off-topic side.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.store.base import Store, StoreSettings
from ragfunnel.store.vectors import late_views

GATE_FILE = "gate.json"
DEFAULT_MIN_SIMILARITY = 0.46  # the similarity gate's threshold (docs/results/answers/answers_gate.md)
# Lines read in context (late chunking) and windows derived from them sit closer to every question, answerable or not:
# at 0.38 such an index refuses as many of the gate's dev and off-topic questions (0.040 / 0.717) as one with vectors
# encoded alone does at 0.46 (0.047 / 0.717); at 0.46 it refused 0.147 of the dev questions
# (docs/results/answers/answers_gate_in_context.md)
IN_CONTEXT_MIN_SIMILARITY = 0.38
AUTO = "auto"  # the threshold that fits the index's vectors (`similarity_threshold`)
FEATURES = (
    "dense__best", "dense__max_utt", "cover__window_idf", "cover__scene_idf",
    "question__mean_idf", "question__oov", "names__n_question", "names__speaking", "names__mentioned",
)


@dataclass(frozen=True)
class GateDecision:
    answerable: bool
    score: float
    threshold: float
    reason: str  # why it refused (for the result's notes); "" when answerable


class Gate(Protocol):
    name: str

    def describe(self) -> str:
        """One line for reports: which gate, and its threshold."""
        ...

    def judge(self, question: str, candidates: list) -> GateDecision | None:
        """None when the gate has no evidence to judge by (then the LLM decides)."""
        ...


def best_dense_similarity(candidates: list) -> float | None:
    """The best score any dense retriever (named `dense_*`, scores are cosines) gave these candidates, or None."""
    scores = [score for c in candidates for name, (_, score) in c.sources.items() if name.startswith("dense")]
    return max(scores) if scores else None


class SimilarityGate:
    name = "similarity"

    def __init__(self, min_similarity: float):
        self.min_similarity = min_similarity

    def describe(self) -> str:
        return f"similarity ≥ {self.min_similarity:.2f}"

    def judge(self, question: str, candidates: list) -> GateDecision | None:
        similarity = best_dense_similarity(candidates)
        if similarity is None:
            return None
        ok = similarity >= self.min_similarity
        reason = "" if ok else (f"no retrieved passage is close to the question (best similarity {similarity:.2f} < "
                                f"{self.min_similarity:.2f}); refused without asking the LLM")
        return GateDecision(ok, similarity, self.min_similarity, reason)


class GateFeatures:
    """The gate's evidence for one question and its top-k candidates (reuses the reranker's feature code)."""

    def __init__(self, store: Store):
        self.store = store
        self.extractor = FeatureExtractor(store, [])  # no per-retriever columns: any mode's candidates will do
        self._at = {n: i for i, n in enumerate(self.extractor.names)}

    def __call__(self, question: str, candidates: list) -> np.ndarray:
        ctx = self.extractor.question_context(question)
        values = {"dense__best": best_dense_similarity(candidates) or 0.0, "question__oov": ctx["oov"]}
        docs = [self.store.document(c.doc_id) for c in candidates]
        pairs = [(c, d) for c, d in zip(candidates, docs) if d is not None]
        if pairs:
            x = self.extractor.features(ctx, [c for c, _ in pairs], [d for _, d in pairs])
            # the best scene for scene-level evidence; question-level columns are the same in every row
            values.update({name: float(x[:, self._at[name]].max()) for name in FEATURES if name in self._at})
        return np.array([values.get(name, 0.0) for name in FEATURES])


class LearnedGate:
    name = "learned"

    def __init__(self, model: dict[str, Any], features: Callable[[str, list], np.ndarray], path: str | None = None):
        if tuple(model.get("features", ())) != FEATURES:
            raise ConfigError("the answerability gate was trained with other features: run `ragfunnel train gate` again")
        self.model, self.features, self.path = model, features, path
        self.mean, self.scale = np.asarray(model["mean"]), np.asarray(model["scale"])
        self.coef, self.intercept, self.threshold = np.asarray(model["coef"]), float(model["intercept"]), float(model["threshold"])

    @classmethod
    def load(cls, text: str, store: Store, where: str) -> LearnedGate:
        return cls(_parse_gate(text, where), GateFeatures(store), where)

    def describe(self) -> str:
        return f"learned ({self.path or 'in memory'}, threshold {self.threshold:.3f})"

    def probability(self, x: np.ndarray) -> np.ndarray:
        z = ((np.atleast_2d(x) - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def judge(self, question: str, candidates: list) -> GateDecision | None:
        if not candidates:
            return None
        p = float(self.probability(self.features(question, candidates))[0])
        ok = p >= self.threshold
        reason = "" if ok else (f"the retrieved scenes do not look like they answer the question (answerability "
                                f"{p:.2f} < {self.threshold:.2f}, learned gate); refused without asking the LLM")
        return GateDecision(ok, p, self.threshold, reason)


INDEX_GATE = f"{GATE_FILE} of the index"


def _parse_gate(text: str, where: str) -> dict[str, Any]:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"cannot read the answerability gate ({where}): {exc}; run `ragfunnel train gate` again") from exc


def read_gate_model(store: Store) -> dict[str, Any] | None:
    """The learned gate kept with the index (`ragfunnel train gate`), or None when none was trained."""
    text = store.read_artifact(GATE_FILE)
    return None if text is None else _parse_gate(text, INDEX_GATE)


def similarity_threshold(settings: StoreSettings) -> float:
    """The similarity gate's default threshold for an index built with `settings`: lower when its lines are read in
    context."""
    return IN_CONTEXT_MIN_SIMILARITY if late_views(settings) & set(settings.dense_views) else DEFAULT_MIN_SIMILARITY


def load_gate(pipeline: Pipeline, min_similarity: float | str | None) -> Gate | None:
    """The index's learned gate when one was trained, else the similarity gate (None: no gate at all; `AUTO`: the
    threshold that fits the index's vectors)."""
    if min_similarity is None:
        return None
    model = read_gate_model(pipeline.store)
    if model is not None:
        return LearnedGate(model, GateFeatures(pipeline.store), INDEX_GATE)
    if min_similarity == AUTO:
        return SimilarityGate(similarity_threshold(pipeline.store.settings))
    return SimilarityGate(float(min_similarity))
