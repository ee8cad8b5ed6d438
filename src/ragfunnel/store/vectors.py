"""The vectors of an index's dense chunks: which texts the encoder embeds (through the embedding cache), and the
vectors of derived views (`StoreSettings.derived_views`), made from their units' vectors with no encoder call: a
window's vector is the mean of the vectors of the utterances it holds, each weighted by its length in tokens (what
mean pooling over the window's own tokens would weigh it by), normalised. Measured against plain means and encoded
windows in docs/results/first_stage/cheaper_vectors.md.

A late-chunked view (`StoreSettings.late_chunked_views`: utt) is read in context: each document's units are packed
in order into passes of at most max_length tokens, each pass is encoded once, and a unit's vector is the mean of its
own tokens' vectors in that pass (measured as `late_both` in cheaper_vectors.md). Its vectors are cached under the
encoder's id with `LATE` appended, keyed by the pass's texts and the unit's place in it: an edited line changes the
vectors of its own pass only.

Every backend writes its vectors through these functions, so the same settings give the same vectors everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from ragfunnel.embedding import EmbeddingCache, cached_vectors, ensure_cached, normalise, shared_encoder, text_hash
from ragfunnel.errors import IndexUnusableError
from ragfunnel.store.base import Progress, StoreSettings
from ragfunnel.types import Chunk

_WORDS = re.compile(r"\w+|[^\w\s]")
LATE = "+late"  # appended to the encoder's model id for the vectors of units read in context
_PASS_SEPARATOR, _PLACE_SEPARATOR = "\x1e", "\x1f"


Member = tuple[str, str, int]  # (view, doc id, unit index)
Pass = tuple[list[list[int]], list[Member]]  # the token ids of each unit read together, and the units


class UnitTexts(dict):
    """(view, doc id, unit index) -> the text of that one-unit chunk, for the views that derived views are made from
    and the late-chunked views; with the passes the late-chunked units are read in (`_passes`) and their cache keys
    (`late_keys`), each made once."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passes: list[Pass] | None = None
        self.keys: dict[Member, str] | None = None


def late_views(settings: StoreSettings) -> set[str]:
    """The dense views read in context: those of `late_chunked_views`, when the encoder gives token vectors."""
    if not settings.late_chunked_views:
        return set()
    encoder = shared_encoder(settings.encoder, settings.max_length)
    return set(settings.late_chunked_views) if callable(getattr(encoder, "encode_in_context", None)) else set()


def encoded_chunks(settings: StoreSettings, chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks whose vectors the encoder makes: those of dense views that are not derived (a late-chunked one's
    in the pass of its document that holds it)."""
    dense, derived = set(settings.dense_views), settings.derived_views
    return [c for c in chunks if c.view in dense and c.view not in derived]


def encoder_work(settings: StoreSettings, chunks: Sequence[Chunk]) -> int:
    """How many vectors the encoder makes for `chunks` at most: distinct texts, and every late-chunked unit."""
    late = late_views(settings)
    encoded = encoded_chunks(settings, chunks)
    return len({c.text for c in encoded if c.view not in late}) + sum(c.view in late for c in encoded)


def unit_texts(settings: StoreSettings, chunks: Sequence[Chunk]) -> UnitTexts:
    """The texts of the one-unit chunks that derived views are made from and of the late-chunked views, by (view,
    document, unit)."""
    wanted = set(settings.derived_views.values()) | late_views(settings)
    return UnitTexts({(c.view, c.doc_id, c.start): c.text for c in chunks if c.view in wanted})


def late_keys(settings: StoreSettings, units: UnitTexts) -> dict[Member, str]:
    """The cache key text of every late-chunked unit of `units`: its pass (the texts of the units packed with it)
    and its place there."""
    if units.keys is None:
        units.keys = {}
        for _, members in _passes(settings, units):
            text = _PASS_SEPARATOR.join(units[m] for m in members)
            for place, member in enumerate(members):
                units.keys[member] = f"{text}{_PLACE_SEPARATOR}{place}"
    return units.keys


def _passes(settings: StoreSettings, units: UnitTexts) -> list[Pass]:
    """Each document's late-chunked units in order, packed into passes of at most max_length - 2 tokens (a unit is
    never split; a longer one is cut and goes alone). Made once per `units` (tokenizing every unit)."""
    if units.passes is None:
        units.passes = _packed(settings, units, late_views(settings))
    return units.passes


def _packed(settings: StoreSettings, units: UnitTexts, late: set[str]) -> list[Pass]:
    members = sorted(k for k in units if k[0] in late)
    if not members:
        return []
    encoder = shared_encoder(settings.encoder, settings.max_length)
    ids = encoder.unit_token_ids([units[m] for m in members])  # type: ignore[attr-defined]
    limit = settings.max_length - 2
    out: list[Pass] = []
    current: Pass = ([], [])
    size = 0
    for member, tokens in zip(members, ids):
        if current[1] and (member[:2] != current[1][-1][:2] or size + len(tokens) > limit):
            out.append(current)
            current, size = ([], []), 0
        current[0].append(tokens)
        current[1].append(member)
        size += len(tokens)
    if current[1]:
        out.append(current)
    return out


def _embed_in_context(settings: StoreSettings, cache: EmbeddingCache, units: UnitTexts,
                      report: Callable[[int, int], None] | None) -> None:
    """Encode the passes of late-chunked units whose vectors the cache lacks, committing a batch of passes at a
    time (an interrupted build keeps what it embedded)."""
    late = late_views(settings)
    if not late:
        return
    keys = late_keys(settings, units)
    model = shared_encoder(settings.encoder, settings.max_length).model_id + LATE
    present: set[bytes] = set()
    hashes = {m: text_hash(k) for m, k in keys.items()}
    distinct = list(dict.fromkeys(hashes.values()))
    for start in range(0, len(distinct), 10_000):
        present |= cache.present(model, distinct[start : start + 10_000])
    todo = [(ids, members) for ids, members in _passes(settings, units)
            if any(hashes[m] not in present for m in members)]
    total = sum(len(members) for _, members in todo)
    if report:
        report(0, total)
    encoder = shared_encoder(settings.encoder, settings.max_length)
    done = 0
    for start in range(0, len(todo), PASSES_PER_COMMIT):
        part = todo[start : start + PASSES_PER_COMMIT]
        made = encoder.encode_in_context([ids for ids, _ in part])  # type: ignore[attr-defined]
        cache.put_many(model, [(hashes[m], v) for (_, members), vectors in zip(part, made)
                               for m, v in zip(members, vectors)])
        done += sum(len(members) for _, members in part)
        if report:
            report(done, total)


PASSES_PER_COMMIT = 64


def embed_missing(settings: StoreSettings, cache: EmbeddingCache, chunks: Sequence[Chunk],
                  progress: Progress | None = None) -> None:
    """Put the vector of every encoded chunk of `chunks` in the cache (only what it lacks is embedded)."""
    late = late_views(settings)
    encoded = encoded_chunks(settings, chunks)
    texts = [c.text for c in encoded if c.view not in late]
    report = (lambda done, total: progress("embedding", done, total)) if progress else None
    if texts:
        ensure_cached(shared_encoder(settings.encoder, settings.max_length), texts, cache, progress=report)
    if any(c.view in late for c in encoded):
        _embed_in_context(settings, cache, unit_texts(settings, chunks), report)


def chunk_vectors(settings: StoreSettings, cache: EmbeddingCache, chunks: Sequence[Chunk], units: UnitTexts,
                  dtype: type = np.float32) -> np.ndarray:
    """The vectors of `chunks` (of dense views; every encoded text cached already), one row each, in order: an
    encoded chunk's from the cache, a late-chunked one's from its pass's entry, a derived chunk's made from the
    cached vectors of its units (`units`)."""
    late = late_views(settings)
    if chunks and (late or any(c.view in settings.derived_views for c in chunks)):
        return _assembled(settings, cache, chunks, units, dtype, late)
    model = shared_encoder(settings.encoder, settings.max_length).model_id
    return cached_vectors(model, [c.text for c in chunks], cache, dtype)


def _assembled(settings: StoreSettings, cache: EmbeddingCache, chunks: Sequence[Chunk], units: UnitTexts,
               dtype: type, late: set[str]) -> np.ndarray:
    """`chunk_vectors` with derived or late-chunked views: a late-chunked chunk's vector and a derived chunk's
    units' vectors read in context come from the late cache entries (`late_keys`), the others' from the plain ones;
    a derived chunk's vector is its units' token-weighted mean (`derive`)."""
    model = shared_encoder(settings.encoder, settings.max_length).model_id
    keys = late_keys(settings, units)
    out: np.ndarray | None = None
    groups: dict[str, list[int]] = {"late": [], "plain": [], "derived": []}
    for i, c in enumerate(chunks):
        groups["derived" if c.view in settings.derived_views else "late" if c.view in late else "plain"].append(i)

    def put(rows: list[int], matrix: np.ndarray) -> None:
        nonlocal out
        if out is None:
            out = np.empty((len(chunks), matrix.shape[1]), dtype=dtype)
        out[rows] = matrix

    def unit_key(view: str, doc_id: str, n: int) -> str:
        key = keys.get((view, doc_id, n))
        if key is None:
            raise IndexUnusableError(f"unit {n} of {doc_id}: the {view} chunks its vector is read with are not in this "
                                     "write (a bug); rebuild with `ragfunnel index --rebuild`")
        return key

    if groups["plain"]:
        put(groups["plain"], cached_vectors(model, [chunks[i].text for i in groups["plain"]], cache, np.float32))
    if groups["late"]:
        put(groups["late"], cached_vectors(model + LATE, [unit_key(chunks[i].view, chunks[i].doc_id, chunks[i].start)
                                                           for i in groups["late"]], cache, np.float32))
    if groups["derived"]:
        members, texts, lookups = [], [], []
        at: dict[Member, int] = {}
        for i in groups["derived"]:
            c = chunks[i]
            source = settings.derived_views[c.view]
            row = []
            for n in range(c.start, c.end):
                member = (source, c.doc_id, n)
                if member not in units:
                    raise IndexUnusableError(f"chunk {c.chunk_id}: the {source} chunks its vector is derived from are not "
                                             "in this write (a bug); rebuild with `ragfunnel index --rebuild`")
                if member not in at:
                    at[member] = len(texts)
                    texts.append(units[member])
                    lookups.append(member)
                row.append(at[member])
            members.append(row)
        vectors = np.empty((len(texts), 0), dtype=np.float32)
        in_context = [j for j, m in enumerate(lookups) if m[0] in late]
        alone = [j for j, m in enumerate(lookups) if m[0] not in late]
        for rows, found in ((in_context, lambda: cached_vectors(model + LATE, [unit_key(*lookups[j]) for j in in_context],
                                                                   cache, np.float32)),
                            (alone, lambda: cached_vectors(model, [texts[j] for j in alone], cache, np.float32))):
            if rows:
                matrix = found()
                if vectors.shape[1] == 0:
                    vectors = np.empty((len(texts), matrix.shape[1]), dtype=np.float32)
                vectors[rows] = matrix
        put(groups["derived"], derive(vectors, members, token_weights(settings, texts)))
    assert out is not None
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


