"""Dense (bi-encoder) retrieval over one chunk view: embed the query, search the HNSW index.

`ef` is the HNSW search depth (usearch `expansion_search`): higher finds more true neighbours, slower.
`exact=True` scans every vector instead; the default (None) scans exactly while the view holds at most
`EXACT_SCAN_BELOW` vectors (store.base). With the default, `pool` lets the store scan a
projection and rescore the best `pool` in full instead (store.base.Store.search_dense); an explicit `exact=True`
always scans every vector in full.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ragfunnel.embedding import Encoder
from ragfunnel.store.base import EXACT_SCAN_BELOW, DenseIndex
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Hit



@lru_cache(maxsize=2048)
def embed_query(encoder: Encoder, query: str) -> np.ndarray:
    """One query embedding shared by every dense retriever that uses the same encoder."""
    vector = encoder.encode([query])[0]
    vector.setflags(write=False)
    return vector


class DenseRetriever:
    kind = "dense"

    def __init__(
        self,
        store: DenseIndex,
        encoder: Encoder,
        view: str = "w3s1",
        depth: int = 100,
        ef: int | None = 600,
        exact: bool | None = None,
        name: str | None = None,
        pool: int | None = None,
    ):
        self.store, self.encoder, self.view, self.depth, self.ef, self.exact = store, encoder, view, depth, ef, exact
        self.pool = pool
        self.name = name or f"dense_{view}"

    def _embed(self, query: str) -> np.ndarray:
        return embed_query(self.encoder, query)

    def warm_up(self) -> None:
        self.store.count_dense(self.view)
        self.encoder.encode(["warm up"])  # loads the model and its inference session

    def _scan(self) -> dict[str, Any]:
        """How search_dense searches: ef, exact, and the rescoring pool when exactness was left to the default."""
        if self.exact is not None:
            return {"ef": self.ef, "exact": self.exact}
        return {"ef": self.ef, "exact": self.store.count_dense(self.view) <= EXACT_SCAN_BELOW, "pool": self.pool or None}

    def retrieve(self, query: str, limit: int | None = None, where: Filter | None = None) -> list[Hit]:
        vector = self._embed(query)
        results = self.store.search_dense(self.view, vector, limit or self.depth, where=where, **self._scan())
        return [Hit(cid, Chunk.parent_of(cid), score, rank, self.name) for rank, (cid, score) in enumerate(results, 1)]
