"""A sentence-transformers cross-encoder (a model directory, or a hub id for users with a network).

sentence-transformers (and torch) are optional and imported on first use. `warm_up()` loads the model and raises
a `ConfigError` that names the fix: the package to install, the directory that is missing, or the hub id that
could not be fetched. `rerank()` never raises: when the model cannot be loaded or scoring fails it returns the
fused order with that message as its note (and does not retry a failed load on every request).
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.base import Passage, RerankResult, keep_order, reorder

DEFAULT_MODEL = "cross-encoder/ms-marco-MiniLM-L6-v2"  # hub-ok: fetched only when a user picks it and has a network


def looks_like_path(model: str) -> bool:
    """A local directory was meant (not a hub id such as "org/name")."""
    return model.startswith(("/", "./", "../", "~", "\\")) or model.count("/") > 1 or Path(model).expanduser().exists()


class SentenceTransformersCrossEncoder:
    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        max_length: int = 256,
        batch_size: int = 32,
        name: str = "st_cross_encoder",
        *,
        device: str | None = None,
    ):
        self.model, self.max_length, self.batch_size, self.name, self.device = model, max_length, batch_size, name, device
        self._encoder: Any = None
        self._load_error: ConfigError | None = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the cross-encoder now; `ConfigError` when it cannot be loaded."""
        with self._lock:
            if self._encoder is not None:
                return
            if self._load_error is not None:
                raise self._load_error
            try:
                self._encoder = self._load()
            except ConfigError as exc:
                self._load_error = exc
                raise

    def _load(self) -> Any:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ConfigError(
                f"reranker {self.name!r} needs sentence-transformers (and torch): pip install sentence-transformers"
            ) from None
        if looks_like_path(self.model):
            path = Path(self.model).expanduser()
            if not path.is_dir():
                raise ConfigError(f"reranker {self.name!r}: cross-encoder directory not found: {path}")
            source = str(path)
        else:
            source = self.model
        try:
            return CrossEncoder(source, max_length=self.max_length, device=self.device)
        except Exception as exc:  # noqa: BLE001 - OSError, hub errors, bad weights: all one clear message
            where = (
                f"the directory {source}"
                if source != self.model
                else f"the hub id {self.model!r} (no network, or no such model? download it and pass its directory)"
            )
            raise ConfigError(
                f"reranker {self.name!r}: cannot load a cross-encoder from {where}: {type(exc).__name__}"
            ) from None

    def rerank(self, question: str, passages: list[Passage]) -> RerankResult:
        if not passages:
            return RerankResult([])
        try:
            self.warm_up()
        except ConfigError as exc:
            return keep_order(passages, f"{exc}; kept the fused order")
        try:
            raw = self._encoder.predict(
                [(question, p.text) for p in passages], batch_size=self.batch_size, show_progress_bar=False
            )
            scores = [float(s) for s in raw]
            if len(scores) != len(passages) or not all(math.isfinite(s) for s in scores):
                raise ValueError(f"expected {len(passages)} finite scores")
        except Exception as exc:  # noqa: BLE001 - scoring failures degrade, they never break the request
            return keep_order(passages, f"{self.name} failed ({type(exc).__name__}: {str(exc)[:200]}); kept the fused order")
        return RerankResult(reorder(passages, scores))
