"""Cohere's hosted reranker (v2 rerank API, through `clients.cohere.CohereClient`), degrading to the fused order
whenever it cannot answer.

Failure handling, in order:
- no key at all (argument or `COHERE_API_KEY`, else `COHERE_API_KEY_FALLBACK`) -> the fused order, noted;
- the primary key's request is retried once on a timeout, a connection error, 429 or 5xx (see `clients.http`);
- if it still fails with 401/403/429/5xx or a timeout, the fallback key (argument or `COHERE_API_KEY_FALLBACK`)
  is tried once, without a retry (a refused connection or a 4xx such as 400 is not: another key cannot help);
- any final failure (unreachable, rate-limited, 5xx, malformed JSON, a reply of the wrong shape, no valid index)
  -> the fused order with a note such as "cohere rerank failed (HTTP 500); kept the fused order".
Out-of-range and repeated indices are dropped (the first of a repeated index counts); passages the reply did not
score follow the scored ones in their fused order. Keys never appear in notes, errors or `repr`.
"""

from __future__ import annotations

from ragfunnel.clients.cohere import CohereClient, ReplyShapeError
from ragfunnel.clients.http import HTTPFailure, api_key
from ragfunnel.rerank.base import Passage, RerankResult, keep_order
from ragfunnel.rerank.ordering import rank_partial

__all__ = ["CohereReranker", "FALLBACK_KEY_ENV", "KEY_ENV"]

KEY_ENV = "COHERE_API_KEY"
FALLBACK_KEY_ENV = "COHERE_API_KEY_FALLBACK"


def _fallback_worthy(failure: HTTPFailure) -> bool:
    if failure.status is not None:
        return failure.status in (401, 403, 429) or 500 <= failure.status < 600
    return failure.reason == "timed out"


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
        self._api_key, self._fallback_api_key, self.name = api_key, fallback_api_key, name
        self.client = CohereClient(model, base_url, timeout, backoff=backoff, max_retry_after=max_retry_after)
        self.model, self.base_url, self.timeout = self.client.model, self.client.base_url, timeout

    def __repr__(self) -> str:
        return f"CohereReranker(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout}, name={self.name!r})"

    def _keys(self) -> list[str]:
        keys: list[str] = []
        for key in (api_key(self._api_key, KEY_ENV), api_key(self._fallback_api_key, FALLBACK_KEY_ENV)):
            if key is not None and key not in keys:
                keys.append(key)
        return keys

    def rerank(self, question: str, passages: list[Passage]) -> RerankResult:
        if not passages:
            return RerankResult([])
        keys = self._keys()
        if not keys:
            return keep_order(passages, f"{self.name}: no {KEY_ENV} set; kept the fused order")
        texts = [p.text for p in passages]
        notes: list[str] = []
        try:
            try:
                scores, dropped = self.client.rerank(keys[0], question, texts, retries=1)
            except HTTPFailure as failure:
                if len(keys) < 2 or not _fallback_worthy(failure):
                    raise
                notes.append(f"{self.name}: primary key failed ({failure}); tried the fallback key")
                scores, dropped = self.client.rerank(keys[1], question, texts, retries=0)
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
