"""Features of a (question, candidate scene) pair for the learning-to-rank reranker.

Evidence the first stage already has (rank and score in every retriever, agreement between retrievers) plus cheap
text evidence it does not use: IDF-weighted coverage of the question terms in the scene and in its best
3-line window, character names of the question among the scene's speakers or mentions, question type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from ragfunnel.embedding import shared_encoder
from ragfunnel.retrieve.dense import embed_query
from ragfunnel.store.base import Store
from ragfunnel.types import Candidate, Document

WH = ("what", "who", "where", "when", "why", "how", "which")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")


def feature_names(retrievers: Sequence[str]) -> list[str]:
    names = []
    for r in retrievers:
        names += [f"{r}__found", f"{r}__rrank", f"{r}__score", f"{r}__score_gap"]
    names += [
        "fused__rank", "fused__rrank", "fused__score", "n_found",
        "cover__scene", "cover__scene_idf", "cover__window", "cover__window_idf", "cover__window_count",
        "names__n_question", "names__speaking", "names__mentioned", "names__all_speaking",
        "scene__units", "scene__log_chars", "question__terms", "question__mean_idf",
        "dense__max_window", "dense__top3_window", "dense__max_utt", "dense__top3_utt", "dense__scene_gap",
        *[f"wh__{w}" for w in WH],
    ]
    return names


class FeatureExtractor:
    def __init__(self, store: Store, retrievers: Sequence[str], idf_view: str = "scene",
                 window_view: str | None = None, utt_view: str | None = None):
        """`window_view` / `utt_view`: the dense views read for the "dense__*_window" and "dense__*_utt" evidence;
        by default `w3s1` and `utt`, or (an index without those vectors, e.g. a BEIR collection with whole-document
        vectors only) the view that has vectors, so the features are never silently zero."""
        dense = list(store.settings.dense_views)
        window_view = window_view or ("w3s1" if "w3s1" in dense or not dense else dense[0])
        utt_view = utt_view or ("utt" if "utt" in dense or not dense else window_view)
        self.store, self.retrievers, self.idf_view = store, list(retrievers), idf_view
        self.window_view, self.utt_view = window_view, utt_view
        self.names = feature_names(self.retrievers)
        self._unit_terms: dict[str, list[set[str]]] = {}

    def _dense_evidence(self, qvec: np.ndarray, doc_id: str) -> list[float]:
        """Similarity of the question to every window and line of the scene, not only those retrieved."""
        out = []
        for view in (self.window_view, self.utt_view):
            sims = self.store.doc_vectors(view, doc_id) @ qvec
            if len(sims) == 0:
                out += [0.0, 0.0]
                continue
            top = np.sort(sims)[::-1]
            out += [float(top[0]), float(top[:3].mean())]
        return out

    def _terms_per_unit(self, doc: Document) -> list[set[str]]:
        if doc.doc_id not in self._unit_terms:
            if len(self._unit_terms) > 20000:
                self._unit_terms.clear()
            self._unit_terms[doc.doc_id] = [set(self.store.analyze(u.render())) for u in doc.units]
        return self._unit_terms[doc.doc_id]

    def question_context(self, question: str) -> dict:
        idfs = self.store.term_idfs(self.idf_view, question)
        known = {t: v for t, v in idfs.items() if v is not None}
        names = {w.lower() for w in _CAPITALISED.findall(question)} - {w for w in WH} - {"i", "the", "a"}
        first = question.strip().split()[0].lower() if question.strip() else ""
        encoder = shared_encoder(self.store.settings.encoder, self.store.settings.max_length)
        oov = (len(idfs) - len(known)) / max(len(idfs), 1)  # share of question terms the corpus never uses
        return {"idfs": known, "oov": oov, "names": names, "wh": first, "qvec": embed_query(encoder, question)}  # cached: retrieval embedded it

    def features(self, qctx: dict, cands: Sequence[Candidate], docs: Sequence[Document]) -> np.ndarray:
        rows = []
        best = {r: max((c.sources[r][1] for c in cands if r in c.sources), default=0.0) for r in self.retrievers}
        idfs: dict[str, float] = qctx["idfs"]
        total_idf = sum(idfs.values()) or 1.0
        rows_dense: list[float] = []
        for cand, doc in zip(cands, docs):
            row: list[float] = []
            for r in self.retrievers:
                if r in cand.sources:
                    rank, score = cand.sources[r]
                    row += [1.0, 1.0 / rank, score, best[r] - score]
                else:
                    row += [0.0, 0.0, 0.0, best[r]]
            fused = cand.sources.get("fused", (cand.rank, cand.score))
            row += [fused[0], 1.0 / fused[0], fused[1], sum(r in cand.sources for r in self.retrievers)]
            units = self._terms_per_unit(doc)
            scene_terms = set().union(*units) if units else set()
            q = set(idfs)
            row += [len(q & scene_terms) / max(len(q), 1), sum(idfs[t] for t in q & scene_terms) / total_idf]
            best_cnt, best_idf = 0, 0.0
            for i in range(max(len(units) - 2, 1)):
                window = set().union(*units[i : i + 3])
                hit = q & window
                best_cnt = max(best_cnt, len(hit))
                best_idf = max(best_idf, sum(idfs[t] for t in hit))
            row += [best_cnt / max(len(q), 1), best_idf / total_idf, float(best_cnt)]
            speakers = {s.split()[0].lower() for u in doc.units for s in u.speakers if s}
            names = qctx["names"]
            text_lower = doc.render().lower()
            speaking = len(names & speakers)
            mentioned = sum(1 for n in names if n in text_lower)
            row += [len(names), speaking, mentioned, float(bool(names) and speaking == len(names))]
            row += [len(doc.units), math.log1p(sum(len(u.text) for u in doc.units)), len(q), total_idf / max(len(q), 1)]
            dense = self._dense_evidence(qctx["qvec"], doc.doc_id)
            rows_dense.append(dense[0])
            row += dense
            row += [float(qctx["wh"] == w) for w in WH]
            rows.append(row)
        best_window = max(rows_dense, default=0.0)
        gap_at = self.names.index("dense__scene_gap")
        for row, value in zip(rows, rows_dense):
            row.insert(gap_at, best_window - value)
        return np.asarray(rows, dtype=np.float32)
