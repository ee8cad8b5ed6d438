"""Learning-to-rank reranker: LightGBM LambdaMART over first-stage evidence, text features and (optionally) the
cross-encoder's score. Train it with `ragfunnel train reranker`."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.base import Passage, RerankResult, reorder
from ragfunnel.rerank.cross_encoder import MISSING, OnnxCrossEncoder
from ragfunnel.registry import require
from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.store.base import Store


class LTRReranker:
    def __init__(self, store: Store, model_dir: str | Path, cross_encoder: OnnxCrossEncoder | None = None,
                 name: str = "ltr"):
        self.store, self.model_dir, self.name = store, Path(model_dir).expanduser(), name
        self.cross_encoder = cross_encoder
        self._booster = None
        self._extractor: FeatureExtractor | None = None
        self._uses_ce = False
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        if self._booster is not None:
            return
        with self._lock:
            if self._booster is not None:
                return
            meta_file, model_file = self.model_dir / "meta.json", self.model_dir / "model.txt"
            if not model_file.is_file() or not meta_file.is_file():
                raise ConfigError(MISSING.format(path=self.model_dir))
            lgb = require("lightgbm", "rerank", "the ltr reranker (--mode accurate)")

            meta = json.loads(meta_file.read_text())
            self._extractor = FeatureExtractor(self.store, meta["retrievers"], window_view=meta.get("window_view"),
                                               utt_view=meta.get("utt_view"))
            self._uses_ce = "cross_encoder" in meta["features"]
            if self._uses_ce and self.cross_encoder is None:
                raise ConfigError(f"{self.model_dir} uses cross-encoder scores but no cross-encoder was given")
            if self._uses_ce:
                self.cross_encoder.warm_up()
            self._booster = lgb.Booster(model_file=str(model_file))

    def rerank(self, question: str, passages: list[Passage]) -> RerankResult:
        self.warm_up()
        if not passages:
            return RerankResult([])
        ex = self._extractor
        docs = [p.document or self.store.document(p.candidate.doc_id) for p in passages]
        x = ex.features(ex.question_context(question), [p.candidate for p in passages], docs)
        if self._uses_ce:
            ce = self.cross_encoder.scores(question, [p.text for p in passages])
            x = np.hstack([x, ce[:, None]])
        return RerankResult(reorder(passages, self._booster.predict(x, num_threads=1).tolist()))
