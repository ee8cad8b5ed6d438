"""Learned, query-dependent fusion: the weight of each retriever's list is set per question by a small log-linear
model over features of the question and of the lists themselves (no torch, numpy only, well under a millisecond).

A candidate parent d gets

    score(d) = sum over lists i, evidence types f of  W[i, f](q) * x[i, f](d)
    W[i, f](q) = exp(b[i, f] + theta[i] . phi(q))

where x[i, f](d) is list i's evidence for d (`rrf10` = 11 / (10 + rank), `rrf60` = 61 / (60 + rank), `score` = the
list's score min-max scaled over its top `SCORE_DEPTH`; 0 when d is not in list i), and phi(q) the standardised
query features of `query_features` (length, IDF statistics, names and quotes, question word, the lists' score gaps and
the agreement between sparse and dense lists). With theta = 0 the model is a fixed convex combination of RRF and
normalised scores; the weights are positive, so every list can only raise a parent it ranks higher. The model is fit
by `ragfunnel train fusion` (train/fusion.py) and stored with the collection (`<models>/fusion/model.json`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.retrieve.fusion import ranked_candidates
from ragfunnel.types import Candidate

MODEL_FILE = "model.json"
MODEL_KIND = "learned_fusion"
EVIDENCE_KINDS = ("rrf1", "rrf10", "rrf60", "score", "found", "chunks")
EVIDENCE = ("rrf10", "rrf60", "score")  # what `ragfunnel train fusion` uses
SCORE_DEPTH = 100  # a list's scores are min-max scaled over its best SCORE_DEPTH parents
AGREE_AT = 10
WH = ("who", "what", "where", "when", "why", "how", "which")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{3,})[\"“”]|(?:^|\s)'([^']{3,}\s[^']{2,})'")
_PREPOSITIONS = {"in", "on", "at", "to", "for", "from", "with", "by", "of", "about", "and", "so", "but"}
_FIRST_PERSON = {"i", "i'm", "i’m", "my", "me", "remember"}

Lists = Mapping[str, list[Candidate]]


def question_features(question: str, idfs: Mapping[str, float | None]) -> dict[str, float]:
    """What the question itself says: length, IDF of its terms (in the index's first sparse view), words the index
    never saw, capitalised words (names), a quoted phrase, its question word, a question mark, first person."""
    words = _WORD.findall(question)
    known = [v for v in idfs.values() if v is not None]
    first = words[0].lower() if words else ""
    later = words[1:]
    out = {
        "q_words": math.log1p(len(words)),
        "q_terms": math.log1p(len(idfs)),
        "idf_mean": sum(known) / len(known) if known else 0.0,
        "idf_max": max(known, default=0.0),
        "idf_min": min(known, default=0.0),
        "oov": (len(idfs) - len(known)) / max(len(idfs), 1),
        "names": sum(w[0].isupper() for w in later) / max(len(later), 1),
        "quoted": float(bool(_QUOTED.search(question))),
        "question_mark": float(question.rstrip().endswith("?")),
        "first_person": float(any(w.lower() in _FIRST_PERSON for w in words)),
    }
    lead = [w.lower() for w in words[:2]]  # "Who ...?", "In which episode ...?" (not "the scene where ...")
    wh = lead[0] if lead and lead[0] in WH else (lead[1] if len(lead) > 1 and lead[0] in _PREPOSITIONS and lead[1] in WH else "")
    for w in WH:
        out[f"wh_{w}"] = float(wh == w)
    out["wh_none"] = float(not wh)
    return out


def list_features(lists: Lists, kinds: Mapping[str, str], names: Sequence[str]) -> dict[str, float]:
    """What the lists say: each list's top score and how far its first parent stands out (gap to the 2nd and the
    10th, relative to the top), and how much the sparse and the dense lists agree on their top 10."""
    out: dict[str, float] = {}
    for name in names:
        scores = [c.score for c in lists.get(name, [])[:AGREE_AT]]
        top = scores[0] if scores else 0.0
        scale = abs(top) or 1.0
        out[f"{name}:top"] = top
        out[f"{name}:gap2"] = (top - scores[1]) / scale if len(scores) > 1 else 0.0
        out[f"{name}:gap10"] = (top - scores[-1]) / scale if len(scores) > 1 else 0.0
    tops = {n: {c.doc_id for c in lists.get(n, [])[:AGREE_AT]} for n in names}
    sparse = [n for n in names if kinds.get(n) == "sparse"]
    dense = [n for n in names if kinds.get(n) != "sparse"]

    def agreement(a: Sequence[str], b: Sequence[str]) -> float:
        pairs = [(x, y) for x in a for y in b if x != y]
        return sum(len(tops[x] & tops[y]) for x, y in pairs) / (AGREE_AT * len(pairs)) if pairs else 0.0

    out["agree_sparse_dense"] = agreement(sparse, dense)
    out["agree_sparse"] = agreement(sparse, sparse)
    out["agree_dense"] = agreement(dense, dense)
    return out


def feature_names(names: Sequence[str]) -> list[str]:
    """The order of phi(q) for lists `names` (question features, then list features)."""
    q = list(question_features("x", {}))
    lst = list(list_features({}, {}, names))
    return q + lst


def evidence(lists: Lists, names: Sequence[str], limit_per_list: int | None = None,
             kinds: Sequence[str] = EVIDENCE) -> tuple[list[str], np.ndarray]:
    """Every parent in any list (first seen first) and its evidence x[d, i, f] (parents x lists x `kinds`, each of
    EVIDENCE_KINDS: `rrfK` = (K + 1) / (K + rank), `score` min-max scaled over the list's top SCORE_DEPTH, `found` 1,
    `chunks` how many of the parent's chunks the list holds, log-scaled to the list's most)."""
    index: dict[str, int] = {}
    rows: list[tuple[int, int, int, float, float]] = []  # (parent, list, rank, scaled score, scaled chunk count)
    for i, name in enumerate(names):
        cands = lists.get(name, [])
        if limit_per_list is not None:
            cands = cands[:limit_per_list]
        if not cands:
            continue
        head = [c.score for c in cands[:SCORE_DEPTH]]
        hi, lo = max(head), min(head)
        span = (hi - lo) or 1.0
        most = math.log1p(max(len(c.best_chunks) for c in cands)) or 1.0
        for c in cands:
            j = index.setdefault(c.doc_id, len(index))
            rows.append((j, i, c.rank, max((c.score - lo) / span, 0.0), math.log1p(len(c.best_chunks)) / most))
    x = np.zeros((len(index), len(names), len(kinds)), dtype=np.float64)
    if rows:
        arr = np.asarray(rows, dtype=np.float64)
        j, i, rank, scaled, chunks = arr[:, 0].astype(int), arr[:, 1].astype(int), arr[:, 2], arr[:, 3], arr[:, 4]
        for f, kind in enumerate(kinds):
            if kind == "score":
                x[j, i, f] = scaled
            elif kind == "chunks":
                x[j, i, f] = chunks
            elif kind == "found":
                x[j, i, f] = 1.0
            elif kind.startswith("rrf") and kind[3:].isdigit():
                k = float(kind[3:])
                x[j, i, f] = (k + 1.0) / (k + rank)
            else:
                raise ConfigError(f"unknown fusion evidence {kind!r}: choose from {', '.join(EVIDENCE_KINDS)} (rrfK)")
    return list(index), x


class LearnedFusion:
    """A fitted model (see the module doc): `weights(phi)` per list and evidence type, `fuse` ranks the parents."""

    def __init__(self, model: Mapping[str, Any], path: Path | None = None):
        if model.get("kind") != MODEL_KIND:
            raise ConfigError(f"{path or 'the model'} is not a learned fusion model (kind {model.get('kind')!r})")
        self.model = dict(model)
        self.path = path
        self.retrievers: list[str] = list(model["retrievers"])
        self.features: list[str] = list(model["features"])
        self.evidence: list[str] = list(model.get("evidence", EVIDENCE))
        self.modes: list[str] = list(model.get("modes", []))  # the modes it fuses for (unless a mode opts out)
        self.idf_view: str | None = model.get("idf_view")  # the view whose IDF the question features read
        self.encoder: str | None = model.get("encoder")  # the index's encoder when it was trained
        self.mean = np.asarray(model["mean"], dtype=np.float64)
        self.std = np.asarray(model["std"], dtype=np.float64)
        self.bias = np.asarray(model["bias"], dtype=np.float64).reshape(len(self.retrievers), len(self.evidence))
        self.theta = np.asarray(model["theta"], dtype=np.float64).reshape(len(self.retrievers), len(self.features))
        if self.mean.shape != (len(self.features),) or self.std.shape != (len(self.features),):
            raise ConfigError(f"{path or 'the model'}: feature statistics do not match its {len(self.features)} features")

    @classmethod
    def load(cls, directory: str | Path) -> LearnedFusion:
        path = Path(directory).expanduser() / MODEL_FILE
        try:
            model = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"no trained fusion in {path.parent}: train one with `ragfunnel train fusion`") from None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: not a readable fusion model ({exc})") from None
        try:
            return cls(model, path)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: not a valid fusion model ({exc})") from None

    def mismatch(self, retrievers: Mapping[str, Any], encoder: str | None) -> str | None:
        """Why this model cannot fuse for a configuration with `retrievers` over an index of `encoder`, or None."""
        missing = [r for r in self.retrievers if r not in retrievers]
        if missing:
            return f"it fuses retrievers this configuration does not define ({', '.join(missing)})"
        if self.encoder is not None and encoder is not None and self.encoder != encoder:
            return (f"it was trained on an index embedded with {self.encoder!r}, this one with {encoder!r}: train it "
                    "again (`ragfunnel train fusion`)")
        return None

    @property
    def query_dependent(self) -> bool:
        return bool(np.any(self.theta))

    def phi(self, question: str, idfs: Mapping[str, float | None], lists: Lists, kinds: Mapping[str, str]) -> np.ndarray:
        raw = {**question_features(question, idfs), **list_features(lists, kinds, self.retrievers)}
        return np.asarray([raw.get(f, 0.0) for f in self.features], dtype=np.float64)

    def weights(self, phi: np.ndarray) -> np.ndarray:
        """W[i, f] for standardised-on-the-fly features `phi` (raw values)."""
        z = (phi - self.mean) / self.std
        return np.exp(self.bias + (self.theta @ z)[:, None])

    def explain(self, phi: np.ndarray, top: int = 4) -> dict[str, Any]:
        """The weights chosen (per list, summed over evidence types, as shares) and the features that moved them most
        from the model's average question (feature, its standardised value, its pull on each list's log weight)."""
        w = self.weights(phi)
        base = np.exp(self.bias)
        share = w.sum(axis=1) / w.sum()
        base_share = base.sum(axis=1) / base.sum()
        z = (phi - self.mean) / self.std
        pull = self.theta * z[None, :]  # lists x features
        spread = pull - pull.mean(axis=0, keepdims=True)  # what shifts weight between lists
        order = np.argsort(-np.abs(spread).sum(axis=0))[:top]
        return {
            "weights": {r: round(float(s), 3) for r, s in zip(self.retrievers, share)},
            "default_weights": {r: round(float(s), 3) for r, s in zip(self.retrievers, base_share)},
            "evidence": {r: {f: round(float(v), 4) for f, v in zip(self.evidence, row)} for r, row in zip(self.retrievers, w)},
            "why": [{"feature": self.features[k], "value": round(float(z[k]), 2),
                     "pull": {r: round(float(spread[i, k]), 3) for i, r in enumerate(self.retrievers)}}
                    for k in order if abs(z[k]) > 0.05],
        }

    def scores(self, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.einsum("dif,if->d", x, weights) if len(x) else np.zeros(0)

    def fuse(self, lists: Lists, kinds: Mapping[str, str], phi: np.ndarray, limit: int | None = None) -> list[Candidate]:
        ids, x = evidence(lists, self.retrievers, kinds=self.evidence)
        s = self.scores(x, self.weights(phi))
        return ranked_candidates(dict(zip(ids, s.tolist())), {n: lists[n] for n in self.retrievers if n in lists}, limit)
