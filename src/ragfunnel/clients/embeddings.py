"""The OpenAI embeddings API, one raw call: POST {base_url}/v1/embeddings with JSON {"model", "input": [texts]}; the
reply is {"data": [{"index": int, "embedding": [floats]}, ...]} (OpenAI, Ollama, llama.cpp server, vLLM, TEI,
LM Studio, LocalAI... all serve it). `base_url` may end in `/v1` or not.

`EmbeddingsClient.embed` returns one vector a text, in the order given: the reply is checked (one embedding per
input, each index once, numbers only, finite, every vector of the same width) and sorted by `index`. It raises
`HTTPFailure` (see `clients.http`: timeouts, retries of a connection error, 408, 429 with its Retry-After and 5xx
with exponential backoff, messages safe to show) or `ReplyShapeError` (JSON, but not that shape). A batch whose reply
is over the reply size limit, or that the server refuses as too large (HTTP 413), is sent again in halves. The key
is sent as `Authorization: Bearer <key>` when there is one; it never appears in an error or a `repr`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragfunnel.clients.http import HTTPFailure, ReplyShapeError, post_json

__all__ = ["EmbeddingsClient", "ReplyShapeError", "embeddings_url", "parse_embeddings"]


def embeddings_url(base_url: str) -> str:
    """{base_url}/v1/embeddings, `base_url` with or without its `/v1`."""
    root = base_url.rstrip("/")
    return f"{root if root.endswith('/v1') else root + '/v1'}/embeddings"


def parse_embeddings(reply: Any, n: int) -> list[list[float]]:
    """The `n` vectors of an embeddings reply, in input order (by `index`; a reply without indices is taken in its
    order). Every malformation is a `ReplyShapeError` naming it."""
    if isinstance(reply, dict) and reply.get("error"):
        raise ReplyShapeError("an error reply")
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        raise ReplyShapeError("no data list")
    if len(data) != n:
        raise ReplyShapeError(f"{len(data)} embeddings for {n} inputs")
    vectors: list[list[float] | None] = [None] * n
    width = None
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise ReplyShapeError("an item of data is not an object")
        index = item.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise ReplyShapeError("an embedding has no valid index")
        if vectors[index] is not None:
            raise ReplyShapeError(f"index {index} appears twice")
        vector = item.get("embedding")
        if not isinstance(vector, list) or not vector:
            raise ReplyShapeError("an embedding is not a list of numbers (encoding_format base64?)")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
            raise ReplyShapeError("an embedding holds something other than finite numbers")
        if width is None:
            width = len(vector)
        elif len(vector) != width:
            raise ReplyShapeError(f"embeddings of {width} and {len(vector)} dimensions in one reply")
        vectors[index] = vector
    return vectors  # type: ignore[return-value]  (every slot filled: n items, each index once)


class EmbeddingsClient:
    def __init__(
        self,
        base_url: str,
        model: str,
        timeout: float = 60.0,
        *,
        retries: int = 5,
        backoff: float = 0.5,
        max_retry_after: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.base_url, self.model, self.timeout = base_url.rstrip("/"), model, timeout
        self.retries, self.backoff, self.max_retry_after, self._sleep = retries, backoff, max_retry_after, sleep

    def __repr__(self) -> str:
        return f"EmbeddingsClient(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout})"

    @property
    def url(self) -> str:
        return embeddings_url(self.base_url)

    def embed(self, texts: Sequence[str], key: str | None = None, retries: int | None = None) -> list[list[float]]:
        """One vector a text, in order (an empty list for no text); `retries` (default: the client's) bounds the
        retries of this call."""
        if not texts:
            return []
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        retries = self.retries if retries is None else retries
        try:
            reply = post_json(self.url, {"model": self.model, "input": list(texts)}, headers, timeout=self.timeout,
                              retries=retries, backoff=self.backoff, max_retry_after=self.max_retry_after,
                              sleep=self._sleep)
        except HTTPFailure as failure:
            too_large = failure.reason == "reply too large" or failure.status == 413
            if not too_large or len(texts) == 1:
                raise
            half = len(texts) // 2
            return self.embed(texts[:half], key, retries) + self.embed(texts[half:], key, retries)
        return parse_embeddings(reply, len(texts))
