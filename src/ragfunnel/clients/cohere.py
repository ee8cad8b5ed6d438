"""Cohere's v2 rerank API, one raw call: POST {base_url}/v2/rerank, `Authorization: Bearer <key>`, JSON {"model",
"query", "documents", "top_n"}; the reply is {"results": [{"index": int, "relevance_score": float}, ...]}.

`CohereClient.rerank` returns the scores by document position; it raises `HTTPFailure` (see `clients.http`: retries,
timeouts, safe messages) or `ReplyShapeError` (JSON, but not that shape). Which key to use, and what to do when the
call fails, is the caller's policy (`rerank.cohere.CohereReranker`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from ragfunnel.clients.http import ReplyShapeError, post_json

__all__ = ["CohereClient", "ReplyShapeError", "parse_results"]


def parse_results(reply: Any, n: int) -> tuple[dict[int, float], int]:
    """(position -> relevance score, number of dropped out-of-range or repeated indices) from a v2 reply; the first
    of a repeated index counts."""
    if not isinstance(reply, dict) or not isinstance(reply.get("results"), list):
        raise ReplyShapeError("no results list")
    scores: dict[int, float] = {}
    dropped = 0
    for item in reply["results"]:
        if not isinstance(item, dict):
            raise ReplyShapeError("a result is not an object")
        index, score = item.get("index"), item.get("relevance_score")
        if not isinstance(index, int) or isinstance(index, bool):
            raise ReplyShapeError("a result has no integer index")
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
            raise ReplyShapeError("a result has no numeric relevance_score")
        if not 0 <= index < n or index in scores:
            dropped += 1
            continue
        scores[index] = float(score)
    return scores, dropped


class CohereClient:
    def __init__(
        self,
        model: str = "rerank-v3.5",
        base_url: str = "https://api.cohere.com",
        timeout: float = 10.0,
        *,
        backoff: float = 0.25,
        max_retry_after: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model, self.base_url, self.timeout = model, base_url.rstrip("/"), timeout
        self.backoff, self.max_retry_after, self._sleep = backoff, max_retry_after, sleep

    def __repr__(self) -> str:
        return f"CohereClient(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/v2/rerank"

    def rerank(self, key: str, query: str, documents: list[str], *, retries: int = 1) -> tuple[dict[int, float], int]:
        """(position -> relevance score, dropped indices) for every document (`top_n` = all of them)."""
        payload = {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}
        reply = post_json(
            self.url, payload, {"Authorization": f"Bearer {key}"}, timeout=self.timeout, retries=retries,
            backoff=self.backoff, max_retry_after=self.max_retry_after, sleep=self._sleep,
        )
        return parse_results(reply, len(documents))
