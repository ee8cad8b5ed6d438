"""Cohere's hosted reranker (v2 rerank API), degrading to the fused order whenever it cannot answer.

One request: POST {base_url}/v2/rerank, `Authorization: Bearer <key>`, JSON {"model", "query", "documents",
"top_n"}; the reply is {"results": [{"index": int, "relevance_score": float}, ...]}.

Failure handling, in order:
- no key at all (argument or `COHERE_API_KEY`, else `COHERE_API_KEY_FALLBACK`) -> the fused order, noted;
- the primary key's request is retried once on a timeout, a connection error, 429 or 5xx (see `rerank.http`);
- if it still fails with 401/403/429/5xx or a timeout, the fallback key (argument or `COHERE_API_KEY_FALLBACK`)
  is tried once, without a retry (a refused connection or a 4xx such as 400 is not: another key cannot help);
- any final failure (unreachable, rate-limited, 5xx, malformed JSON, a reply of the wrong shape, no valid index)
  -> the fused order with a note such as "cohere rerank failed (HTTP 500); kept the fused order".
Out-of-range and repeated indices are dropped (the first of a repeated index counts); passages the reply did not
score follow the scored ones in their fused order. Keys never appear in notes, errors or `repr`.
"""

from __future__ import annotations

import math
import os
from typing import Any

from ragfunnel.rerank.base import Passage, RerankResult, keep_order
from ragfunnel.rerank.http import HTTPFailure, post_json
from ragfunnel.rerank.ordering import rank_partial

KEY_ENV = "COHERE_API_KEY"
FALLBACK_KEY_ENV = "COHERE_API_KEY_FALLBACK"


class ReplyShapeError(ValueError):
    """The reply is JSON but not the v2 rerank shape."""


def _fallback_worthy(failure: HTTPFailure) -> bool:
    if failure.status is not None:
        return failure.status in (401, 403, 429) or 500 <= failure.status < 600
    return failure.reason == "timed out"


def parse_results(reply: Any, n: int) -> tuple[dict[int, float], int]:
    """(position -> relevance score, number of dropped out-of-range or repeated indices) from a v2 reply."""
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


class CohereReranker:
    def __init__(
        self,
        api_key: str | None = None,
        fallback_api_key: str | None = None,
        model: str = "rerank-v3.5",
        base_url: str = "https://api.cohere.com",
        timeout: float = 10.0,
        name: str = "cohere",
        *,
        backoff: float = 0.25,
        max_retry_after: float = 2.0,
    ):
        self._api_key, self._fallback_api_key = api_key, fallback_api_key
        self.model, self.base_url, self.timeout, self.name = model, base_url.rstrip("/"), timeout, name
        self.backoff, self.max_retry_after = backoff, max_retry_after

    def __repr__(self) -> str:
        return f"CohereReranker(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout}, name={self.name!r})"

    def _keys(self) -> list[str]:
        primary = self._api_key if self._api_key is not None else os.environ.get(KEY_ENV)
        fallback = self._fallback_api_key if self._fallback_api_key is not None else os.environ.get(FALLBACK_KEY_ENV)
        keys: list[str] = []
        for key in (primary, fallback):
            if key and key.strip() and key.strip() not in keys:
                keys.append(key.strip())
        return keys

    def _post(self, key: str, payload: dict[str, Any], retries: int) -> Any:
        return post_json(
            f"{self.base_url}/v2/rerank",
            payload,
            {"Authorization": f"Bearer {key}"},
            timeout=self.timeout,
            retries=retries,
            backoff=self.backoff,
            max_retry_after=self.max_retry_after,
        )

    def rerank(self, question: str, passages: list[Passage]) -> RerankResult:
        if not passages:
            return RerankResult([])
        keys = self._keys()
        if not keys:
            return keep_order(passages, f"{self.name}: no {KEY_ENV} set; kept the fused order")
        payload = {
            "model": self.model,
            "query": question,
            "documents": [p.text for p in passages],
            "top_n": len(passages),
        }
        notes: list[str] = []
        try:
            try:
                reply = self._post(keys[0], payload, retries=1)
            except HTTPFailure as failure:
                if len(keys) < 2 or not _fallback_worthy(failure):
                    raise
                notes.append(f"{self.name}: primary key failed ({failure}); tried the fallback key")
                reply = self._post(keys[1], payload, retries=0)
            scores, dropped = parse_results(reply, len(passages))
        except HTTPFailure as failure:
            return self._degraded(passages, notes, str(failure))
        except ReplyShapeError as exc:
            return self._degraded(passages, notes, f"unexpected reply: {exc}")
        if not scores:
            return self._degraded(passages, notes, "no valid index in the reply")
        if dropped:
            notes.append(f"{self.name}: dropped {dropped} out-of-range or repeated indices from the reply")
        if len(scores) < len(passages):
            notes.append(
                f"{self.name}: scored {len(scores)} of {len(passages)} passages; the rest kept their fused order"
            )
        return RerankResult(rank_partial(passages, scores), notes=notes)

    def _degraded(self, passages: list[Passage], notes: list[str], why: str) -> RerankResult:
        result = keep_order(passages, f"{self.name} rerank failed ({why}); kept the fused order")
        result.notes[:0] = notes
        return result
