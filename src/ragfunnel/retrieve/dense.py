"""Dense (bi-encoder) retrieval over one chunk view: embed the query, search the HNSW index.

`ef` is the HNSW search depth (usearch `expansion_search`): higher finds more true neighbours, slower.
`exact=True` scans every vector instead; the default (None) scans exactly while the view holds at most
`EXACT_BELOW` vectors: at Friends' size (~61k windows) a scan costs ~5 ms on 2 cores and finds scenes HNSW
misses at ef <= 600 (docs/results/first_stage/ann_depth.md).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ragfunnel.embedding import Encoder
from ragfunnel.store.base import Store
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Hit

EXACT_BELOW = 200_000


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
        store: Store,
        encoder: Encoder,
        view: str = "w3s1",
        depth: int = 100,
        ef: int | None = 600,
        exact: bool | None = None,
        name: str | None = None,
    ):
        self.store, self.encoder, self.view, self.depth, self.ef, self.exact = store, encoder, view, depth, ef, exact
        self.name = name or f"dense_{view}"

    def _embed(self, query: str) -> np.ndarray:
        return embed_query(self.encoder, query)

    def warm_up(self) -> None:
        self.store.count_dense(self.view)
        self.encoder.encode(["warm up"])  # loads the model and its inference session

    def retrieve(self, query: str, limit: int | None = None, where: Filter | None = None) -> list[Hit]:
        vector = self._embed(query)
        exact = self.exact if self.exact is not None else self.store.count_dense(self.view) <= EXACT_BELOW
        results = self.store.search_dense(self.view, vector, limit or self.depth, ef=self.ef, exact=exact, where=where)
        return [Hit(cid, Chunk.parent_of(cid), score, rank, self.name) for rank, (cid, score) in enumerate(results, 1)]
