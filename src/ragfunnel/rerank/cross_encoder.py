"""Our trained cross-encoder (ONNX, CPU) as a Reranker. Train it with `ragfunnel train reranker`."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.base import Passage, RerankResult, reorder

MISSING = "no trained reranker at {path}: run `ragfunnel train reranker` (the fast mode works without it)"


class OnnxCrossEncoder:
    def __init__(self, model_dir: str | Path, max_length: int | None = None, threads: int | None = None,
                 name: str = "cross_encoder"):
        self.model_dir = Path(model_dir).expanduser()
        self.max_length = max_length
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self.name = name
        self._session = None
        self._tok = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            model = self.model_dir / "model.onnx"
            if not model.is_file():
                raise ConfigError(MISSING.format(path=self.model_dir))
            import onnxruntime as ort

            meta = json.loads((self.model_dir / "meta.json").read_text()) if (self.model_dir / "meta.json").is_file() else {}
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            self._tok = pair_tokenizer(self.model_dir, self.max_length or meta.get("max_length", 192))
            self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def scores(self, question: str, texts: list[str]) -> np.ndarray:
        self.warm_up()
        if not texts:
            return np.zeros(0, dtype=np.float32)
        (out,) = self._session.run(None, encode_pairs(self._tok, question, texts))
        return np.asarray(out, dtype=np.float32).reshape(-1)

    def rerank(self, question: str, passages: list[Passage]) -> RerankResult:
        scores = self.scores(question, [p.text for p in passages])
        return RerankResult(reorder(passages, scores.tolist()))


def pair_tokenizer(model_dir: Path, max_length: int) -> Tokenizer:
    """The (question, passage) tokenizer of a cross-encoder: training and inference read pairs the same way."""
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length, strategy="only_second")
    return tok


def encode_pairs(tok, question: str, passages: Sequence[str]) -> dict[str, np.ndarray]:
    encs = tok.encode_batch([(question, p) for p in passages])
    width = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for i, e in enumerate(encs):
        n = len(e.ids)
        ids[i, :n], mask[i, :n], types[i, :n] = e.ids, 1, e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
