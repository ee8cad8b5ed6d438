"""The vectors of an index's dense chunks: which texts the encoder embeds (through the embedding cache), and the
vectors of derived views (`StoreSettings.derived_views`), made from their units' vectors with no encoder call: a
window's vector is the mean of the vectors of the utterances it holds, each weighted by its length in tokens (what
mean pooling over the window's own tokens would weigh it by), normalised. Measured against plain means and encoded
windows in docs/results/first_stage/cheaper_vectors.md.

Every backend writes its vectors through these functions, so the same settings give the same vectors everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragfunnel.embedding import EmbeddingCache, cached_vectors, ensure_cached, normalise, shared_encoder
from ragfunnel.errors import IndexUnusableError
from ragfunnel.store.base import Progress, StoreSettings
from ragfunnel.types import Chunk

_WORDS = re.compile(r"\w+|[^\w\s]")
UnitTexts = dict[tuple[str, str, int], str]  # (source view, doc id, unit index) -> the text of its one-unit chunk


def encoded_chunks(settings: StoreSettings, chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks whose vectors the encoder makes: those of dense views that are not derived."""
    dense, derived = set(settings.dense_views), settings.derived_views
    return [c for c in chunks if c.view in dense and c.view not in derived]


def unit_texts(settings: StoreSettings, chunks: Sequence[Chunk]) -> UnitTexts:
    """The texts of the one-unit chunks that derived views are made from, by (view, document, unit)."""
    sources = set(settings.derived_views.values())
    return {(c.view, c.doc_id, c.start): c.text for c in chunks if c.view in sources}


def embed_missing(settings: StoreSettings, cache: EmbeddingCache, chunks: Sequence[Chunk],
                  progress: Progress | None = None) -> None:
    """Put the vector of every encoded chunk of `chunks` in the cache (only what it lacks is embedded)."""
    texts = [c.text for c in encoded_chunks(settings, chunks)]
    if texts:
        report = (lambda done, total: progress("embedding", done, total)) if progress else None
        ensure_cached(shared_encoder(settings.encoder, settings.max_length), texts, cache, progress=report)


def chunk_vectors(settings: StoreSettings, cache: EmbeddingCache, chunks: Sequence[Chunk], units: UnitTexts,
                  dtype: type = np.float32) -> np.ndarray:
    """The vectors of `chunks` (of dense views; every encoded text cached already), one row each, in order: an
    encoded chunk's from the cache, a derived chunk's made from the cached vectors of its units (`units`)."""
    model = shared_encoder(settings.encoder, settings.max_length).model_id
    plain = [i for i, c in enumerate(chunks) if c.view not in settings.derived_views]
    derived = [i for i, c in enumerate(chunks) if c.view in settings.derived_views]
    if not derived:
        return cached_vectors(model, [c.text for c in chunks], cache, dtype)
    parts: list[list[str]] = []
    for i in derived:
        c = chunks[i]
        source = settings.derived_views[c.view]
        texts = [units.get((source, c.doc_id, n)) for n in range(c.start, c.end)]
        if not texts or any(t is None for t in texts):
            raise IndexUnusableError(f"chunk {c.chunk_id}: the {source} chunks its vector is derived from are not in this "
                              "write (a bug); rebuild with `ragfunnel index --rebuild`")
        parts.append(texts)  # type: ignore[arg-type]
    flat = list(dict.fromkeys(t for texts in parts for t in texts))
    at = {t: n for n, t in enumerate(flat)}
    unit_vectors = cached_vectors(model, flat, cache, np.float32)
    lengths = token_weights(settings, flat)
    out: np.ndarray | None = None
    if plain:
        rows = cached_vectors(model, [chunks[i].text for i in plain], cache, np.float32)
        out = np.empty((len(chunks), rows.shape[1]), dtype=dtype)
        out[plain] = rows
    made = derive(unit_vectors, [[at[t] for t in texts] for texts in parts], lengths)
    if out is None:
        out = np.empty((len(chunks), made.shape[1]), dtype=dtype)
    out[derived] = made
    return out


def token_weights(settings: StoreSettings, texts: Sequence[str]) -> np.ndarray:
    """Each text's length in the encoder's tokens as it embedded them (truncated at its max length, special tokens
    included); for an encoder that does not tokenize here (an API), its words and punctuation marks plus two."""
    encoder = shared_encoder(settings.encoder, settings.max_length)
    counts = getattr(encoder, "token_lengths", None)
    if callable(counts):
        return np.asarray(counts(list(texts)), dtype=np.float32)
    return np.array([len(_WORDS.findall(t)) + 2 for t in texts], dtype=np.float32)


def derive(unit_vectors: np.ndarray, members: Sequence[Sequence[int]], weights: np.ndarray | None = None) -> np.ndarray:
    """For each i, the mean of the rows `members[i]` of `unit_vectors`, each weighted by its `weights` (default:
    equal), normalised (float32)."""
    lengths = np.array([len(m) for m in members])
    flat = np.fromiter((r for m in members for r in m), dtype=np.int64, count=int(lengths.sum()))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    rows = unit_vectors[flat].astype(np.float32)
    if weights is not None:
        rows *= np.asarray(weights, dtype=np.float32)[flat, None]
    return normalise(np.add.reduceat(rows, starts, axis=0))


def all_vectors(settings: StoreSettings, cache: EmbeddingCache, chunks: Sequence[Chunk],
                progress: Progress | None = None) -> dict[str, np.ndarray]:
    """Chunk id -> vector for every dense chunk of `chunks` (embedding what the cache lacks first): for a backend
    that takes one write's vectors at once."""
    dense = [c for c in chunks if c.view in settings.dense_views]
    if not dense:
        return {}
    embed_missing(settings, cache, chunks, progress)
    matrix = chunk_vectors(settings, cache, dense, unit_texts(settings, chunks))
    return {c.chunk_id: matrix[i] for i, c in enumerate(dense)}


