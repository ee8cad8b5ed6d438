"""The Store conformance suite: what every backend of the `Store` protocol must do, in one mixin of tests.

It checks, on a small in-memory corpus (ten documents, one of them empty): documents, metadata and chunks read
back as written, per view and per document in unit order; `doc_vectors` rows line up with `doc_chunks`; counts
and `info()` agree; upsert replaces (no duplicate chunk in any index), delete removes from every index and
returns how many existed, `apply` (upserts and deletes in one write, as a folder sync makes) equals a fresh build of
its result; a reopened store answers exactly as before; the fingerprint is stable across reopen and changed by a
write; BM25 agrees with an independent implementation (rank_bm25's Okapi with Lucene's IDF: float32-exact for
chunks under 24 terms, within a factor [1, 8/7] above, since tantivy keeps lengths in one byte), also after
replaces and deletes; `term_idfs` is exact; exact dense search equals a numpy cosine ranking over the stored
vectors (to 2e-3: they may be half precision); views without an index are refused; and, for backends that say how
to simulate them, interrupted writes (an upsert, an apply) are repaired on open to all or nothing of the write.
Filters (`where=`): every hit satisfies the filter (checked against predicates written out here, not the filter's
own code) with the score it has without one, and none left out could have beaten the last kept; a filter that
matches 1% of 400 documents still returns k results; a filter nothing matches returns nothing; one that admits
everything, and none, leave results as they were; `count_matching` counts the documents; writes are seen at once.
Artifacts (`write_artifact` / `read_artifact`, the trained gate) read back, survive a sync and a reopen, not a rebuild.

Adding a backend
----------------
Register it with `ragfunnel.store.registry.register_backend` (into `STORE_BACKENDS`), then add `tests/store/test_contract_<name>.py`:

    import pytest
    from tests.store.contract import ContractBackend, StoreContract

    class TestMyStoreContract(StoreContract):
        @pytest.fixture(scope="class")
        @classmethod
        def backend(cls):
            return ContractBackend.from_registry(
                "mine",                   # build/open through build_index / open_store(backend_name="mine")
                damage=None,              # or: (location) -> None, leave it as a killed write would
                kill_next_write=None,     # or: (store, monkeypatch) -> None, make the next upsert die midway
            )

A backend that does not live in a directory (a database server) gets a fresh temporary directory per store as
`location` and can derive its own names from it (a schema per directory), with its own `build` / `reopen`.
Every test is a method of `StoreContract`; a backend that cannot pass one should fix the backend, not skip it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragfunnel.analysis import build_analyzer
from ragfunnel.chunking import chunk_documents
from ragfunnel.embedding import EmbeddingCache
from ragfunnel.errors import IndexUnusableError
from ragfunnel.store import Store, StoreSettings, build_index, open_store
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Document, Unit
from tests.helpers import TOPICS, make_doc

# Three views: `scene` is BM25 only, `utt` vectors only, `w3s1` both, so both kinds of refusal can be checked.
SETTINGS = StoreSettings(sparse_views=["scene", "w3s1"], dense_views=["w3s1", "utt"], derived_views={},
                         late_chunked_views=[])  # every vector encoded from its own text
ALL = 10_000
K1, B = 1.2, 0.75  # tantivy's (and Lucene's) BM25 constants
# Lengths of 24 terms and more may be stored rounded down by up to 1/8 (Lucene/tantivy keep a document's length
# in one byte; below 24 it is exact). A shorter length only lowers the length penalty, so such a score lies
# between the exact one and 8/7 of it; chunks shorter than 24 terms must score exactly (up to float32).
EXACT_LENGTH_BELOW = 24
LENGTH_ROUNDING = 8 / 7
F32 = 1e-4  # relative slack for scores computed in float32
# Vectors may be stored in half precision (`vector_dtype="f16"`, the default) and scored in it: cosines agree
# with a float32 brute force over the stored vectors to about 1e-3.
COS_ATOL = 2e-3

QUERIES = [
    "pizza pepperoni",
    "dinosaur museum fossils",
    "turkey oven Thanksgiving",
    "break copy girl",
    "soap opera doctor",
    "Monica Monica Chandler",  # a repeated term counts twice, as in a boolean query of SHOULD clauses
    "Who did Joey tell about the audition?",
    "xylophone",  # no chunk has it
]


def contract_docs() -> list[Document]:
    """Nine one-topic scenes with metadata, and one document without units (it has no chunks)."""
    docs = [
        make_doc(doc_id, lines, title=f"Episode {doc_id[:7]}", season=int(doc_id[1:3]), episode=int(doc_id[5:7]),
                 label=f"S{doc_id[1:3]}E{doc_id[5:7]} scene {int(doc_id[9:])}", tags=["topic", doc_id[-1]])
        for doc_id, lines in TOPICS.items()
    ]
    long_scene = make_doc("s09_e02_c04", [  # long enough (60+ terms) that a stored length may be rounded
        "[Scene: Monica and Rachel's apartment, Monica is cleaning everything]",
        ("Monica Geller", "Nobody touches the towels. I have eleven categories of towels."),
        ("Rachel Green", "Eleven? Monica, who needs eleven categories of towels?"),
        ("Monica Geller", "Everyday use, fancy, guest, and the ones for the kitchen."),
        ("Chandler Bing", "Could she be any more organised about the kitchen towels?"),
        ("Monica Geller", "I vacuumed the vacuum cleaner and alphabetised the spices."),
        ("Ross Geller", "She labelled the label maker when we were kids."),
        "(Monica scrubs the counter while everyone watches in silence)",
    ], title="Episode s09_e02", season=9, episode=2, label="S09E02 scene 4")
    # documents of a folder: path ids (a JSONL record's holds a '#'), units with sections, pages and offsets
    guide = Document("guides/setup.md", "Setting up the espresso machine", (
        Unit("guides/setup.md:0001", "Descale the espresso machine every month.", section=("Care",), start=0, end=41),
        Unit("guides/setup.md:0002", "Grind the beans just before brewing.", section=("Brewing", "Beans"), start=43,
             end=79),
    ), {"path": "guides/setup.md", "format": "markdown", "label": "guides/setup.md", "updated": "2021-05-03",
        "author": {"name": "Gunther"}})
    record = Document("notes.jsonl#7", "Balloon", (
        Unit("notes.jsonl#7:0001", "The hot-air balloon flight to Oslo was delayed.", page=3, start=0, end=47),
    ), {"path": "notes.jsonl", "format": "jsonl", "label": "notes.jsonl#7", "updated": "2019-12-31T23:00:00"})
    return [*docs, long_scene, guide, record, make_doc("s09_e09_c09", [], title="Empty", season=9, episode=9)]


NEW_DOC = make_doc("s09_e03_c01", [("Gunther", "Rachel, I love you."), "(Gunther polishes the espresso machine)",
                                   ("Rachel Green", "What, Gunther?"), ("Gunther", "Nothing.")], title="New", season=9)


def replacement_for(doc: Document) -> Document:
    return make_doc(doc.doc_id, [("Ross Geller", "I bought a zeppelin ticket to Minsk."),
                                 ("Phoebe Buffay", "A zeppelin? Like the airship?"),
                                 ("Ross Geller", "It floats over Minsk all day.")], title="Replaced", season=99)


# Filters and what they mean, written out as plain predicates over (document, the units of a chunk): the suite
# checks every hit against these, not against the filter's own matching code.
UnitsPredicate = Callable[[Document, Sequence[Unit]], bool]
FILTERS: list[tuple[str, Filter, UnitsPredicate]] = [
    ("episode 1", Filter.parse("episode=1"), lambda d, us: d.metadata.get("episode") == 1),
    ("season in", Filter.parse("season in 8, 9"), lambda d, us: d.metadata.get("season") in (8, 9)),
    ("two conditions", Filter.parse(["season=9", "episode>=2"]),
     lambda d, us: d.metadata.get("season") == 9 and (d.metadata.get("episode") or 0) >= 2),
    ("list element", Filter.from_json({"tags": "3"}), lambda d, us: "3" in d.metadata.get("tags", [])),
    ("path glob", Filter.from_json({"path": {"glob": "guides/*"}}), lambda d, us: d.doc_id.startswith("guides/")),
    ("id glob", Filter.parse("id=s09_e02_*"), lambda d, us: d.doc_id.startswith("s09_e02_")),
    ("not markdown", Filter.parse("format!=markdown"), lambda d, us: d.metadata.get("format") != "markdown"),
    ("nested field", Filter.parse("author.name=gunther"), lambda d, us: d.doc_id == "guides/setup.md"),
    ("date range", Filter.parse("updated>=2020-01-01"), lambda d, us: d.metadata.get("updated", "") >= "2020"),
    ("whole day", Filter.parse("updated<=2019-12-31"), lambda d, us: d.metadata.get("updated", "9")[:4] <= "2019"),
    ("section", Filter.parse("section=beans"), lambda d, us: any("Beans" in u.section for u in us)),
    ("page", Filter.from_json({"page": {"gte": 3}}), lambda d, us: any((u.page or 0) >= 3 for u in us)),
    ("most units", Filter.parse("section!=Care"), lambda d, us: any("Care" not in u.section for u in us)),
    ("section and episode", Filter.parse(["section=Care", "format=markdown"]),
     lambda d, us: any(u.section == ("Care",) for u in us)),
]
FILTER_QUERIES = [*QUERIES, "espresso machine beans month", "balloon Oslo flight", "Ross Rachel Monica Joey break"]
MANY = 400  # documents of `many_docs`; a group is 4 of them, 1%


def admitted_chunks(docs: Sequence[Document], view: str, predicate: UnitsPredicate) -> set[str]:
    by_id = {d.doc_id: d for d in docs}
    return {c.chunk_id for c in chunk_documents(docs, [view]) if predicate(by_id[c.doc_id], by_id[c.doc_id].units[c.start:c.end])}


def many_docs() -> list[Document]:
    """400 one-line documents in 100 groups of 4: a group is 1% of them. Their lines come from the topic scenes
    (few distinct texts: little to embed), each with the word "coffee", so every document matches a query of it."""
    lines = [f"{u.render()} Over coffee." for d in contract_docs()[:9] for u in d.units]
    return [Document(f"many/{i:03d}", f"Line {i}", (Unit(f"many/{i:03d}:1", lines[i % len(lines)]),),
                     {"group": i // 4, "year": 2000 + i % 25}) for i in range(MANY)]


def exact_bounds(chunk_id: str, ref: float) -> tuple[float, float]:
    return ref * (1 - F32) - 1e-6, ref * (1 + F32) + 1e-6


@dataclass(frozen=True)
class ContractBackend:
    """How the suite makes and reopens stores of one backend, and which failures it can simulate."""

    name: str
    build: Callable[[Sequence[Document], Path, StoreSettings, EmbeddingCache], Store]
    reopen: Callable[[Path, EmbeddingCache], Store]
    # Leave the (closed) store at `location` as a write killed midway would; reopening must repair it.
    damage: Callable[[Path], None] | None = None
    # Make the next `upsert` of this store die midway (raise KeyboardInterrupt); reopening must give all or
    # nothing of that write.
    kill_next_write: Callable[[Store, pytest.MonkeyPatch], None] | None = None

    @classmethod
    def from_registry(cls, name: str, for_sync: bool = False, **hooks: Any) -> ContractBackend:
        """Build and open through the registry; `for_sync`: every store is built as a folder collection's is."""
        return cls(
            name,
            lambda docs, location, settings, cache: build_index(docs, location, settings, cache, backend_name=name,
                                                                for_sync=for_sync),
            lambda location, cache: open_store(location, cache, backend_name=name),
            **hooks,
        )


# ---- independent references ------------------------------------------------------------------------------------


def lucene_idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


class LuceneIdfBM25Okapi(BM25Okapi):
    """rank_bm25's Okapi BM25 (exact lengths) with Lucene's always-positive IDF instead of Robertson's with an
    epsilon floor: the formula tantivy ranks by."""

    def __init__(self, corpus: list[list[str]]):
        super().__init__(corpus, k1=K1, b=B)

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = lucene_idf(self.corpus_size, freq)


def assert_ranking(got: list[tuple[str, float]], expected: dict[str, float],
                   bounds: Callable[[str, float], tuple[float, float]], limit: int, what: str) -> None:
    """`got` is a best-first top-`limit` list; each score lies within `bounds(chunk id, reference score)`, and no
    chunk left out could have beaten the last one kept (so ties and tolerances may reorder, nothing more)."""
    ids = [cid for cid, _ in got]
    assert len(ids) == len(set(ids)), f"{what}: a chunk returned twice"
    scores = [s for _, s in got]
    assert all(a >= b - 1e-6 for a, b in pairwise(scores)), f"{what}: not best first: {got}"
    for cid, score in got:
        assert cid in expected, f"{what}: {cid} should not match"
        lo, hi = bounds(cid, expected[cid])
        assert lo <= score <= hi, f"{what}: {cid} scored {score}, reference {expected[cid]}"
    assert len(got) == min(limit, len(expected)), f"{what}: {len(got)} results, expected {min(limit, len(expected))}"
    if got:
        for cid, ref in expected.items():
            if cid not in ids:
                assert bounds(cid, ref)[0] <= scores[-1] + 1e-6, f"{what}: {cid} ({ref}) left out, last {scores[-1]}"


def bm25_bounds(short: set[str], chunk_id: str, ref: float) -> tuple[float, float]:
    """Exact (float32) for a chunk under 24 terms; else between the exact score and 8/7 of it."""
    return ref * (1 - F32), ref * (1 + F32) * (1 if chunk_id in short else LENGTH_ROUNDING)


def cosine_bounds(chunk_id: str, ref: float) -> tuple[float, float]:
    return ref - COS_ATOL, ref + COS_ATOL


# ---- what a store holds -------------------------------------------------------------------------------------------


def all_sparse_ids(store: Store, view: str) -> list[str]:
    """Every chunk the BM25 index of `view` can return: a query with every indexed text."""
    text = " ".join(c.text for c in store.view_chunks(view))
    return [cid for cid, _ in store.search_sparse(view, text, ALL)] if text else []


def all_dense_ids(store: Store, view: str, dim: int) -> list[str]:
    return [cid for cid, _ in store.search_dense(view, np.ones(dim, dtype=np.float32), ALL, exact=True)]


def assert_holds(store: Store, docs: Sequence[Document], dim: int) -> None:
    """Every index of `store` holds exactly the chunks of `docs`, each once, under the same ids."""
    docs = list({d.doc_id: d for d in docs}.values())
    assert store.doc_ids() == sorted(d.doc_id for d in docs)
    for d in docs:
        assert store.document(d.doc_id) == d
    settings = store.settings
    for view in settings.views:
        expected = chunk_documents(docs, [view])
        ids = sorted(c.chunk_id for c in expected)
        assert sorted(c.chunk_id for c in store.view_chunks(view)) == ids, view
        assert store.chunks([c.chunk_id for c in expected]) == expected, view
        assert store.count_chunks(view) == len(expected), view
        if view in settings.sparse_views:
            assert store.count_sparse(view) == len(expected), view
            found = all_sparse_ids(store, view)
            assert len(found) == len(set(found)), f"BM25 {view} returned a chunk twice"
            assert sorted(found) == ids, view
        if view in settings.dense_views:
            assert store.count_dense(view) == len(expected), view
            found = all_dense_ids(store, view, dim)
            assert len(found) == len(set(found)), f"vectors {view} returned a chunk twice"
            assert sorted(found) == ids, view
    assert store.count_chunks() == len(chunk_documents(docs, settings.views))


def snapshot(store: Store, encoder) -> dict:
    out: dict = {}
    for q in QUERIES:
        for view in store.settings.sparse_views:
            out[("bm25", view, q)] = store.search_sparse(view, q, 20)
            out[("idf", view, q)] = store.term_idfs(view, q)
        vec = encoder.encode([q])[0]
        for view in store.settings.dense_views:
            out[("exact", view, q)] = store.search_dense(view, vec, 10, exact=True)
            out[("ann", view, q)] = store.search_dense(view, vec, 10)
    return out


def assert_same_results(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, got in a.items():
        if key[0] == "idf":
            assert_same_idfs(got, b[key], key)
            continue
        assert [cid for cid, _ in got] == [cid for cid, _ in b[key]], key
        np.testing.assert_allclose([s for _, s in got], [s for _, s in b[key]], rtol=1e-5, atol=1e-6)


def assert_same_idfs(a: dict[str, float | None], b: dict[str, float | None], what: Any) -> None:
    assert list(a) == list(b), what
    for term, idf in a.items():
        assert (idf is None) == (b[term] is None), (what, term)
        if idf is not None:
            assert idf == pytest.approx(b[term], rel=1e-9), (what, term)


def stored_vectors(store: Store, view: str) -> tuple[list[str], np.ndarray]:
    """Every stored vector of `view`, read back through `doc_chunks` / `doc_vectors`."""
    ids, rows = [], []
    for doc_id in store.doc_ids():
        ids += [c.chunk_id for c in store.doc_chunks(view, doc_id)]
        rows.append(store.doc_vectors(view, doc_id))
    return ids, np.concatenate(rows).astype(np.float32)


# ---- the suite -----------------------------------------------------------------------------------------------------


class StoreContract:
    """Subclass as `Test<Backend>Contract` and provide a class-scoped `backend` fixture (a `ContractBackend`)."""

    # -- fixtures --

    @pytest.fixture(scope="class")
    @classmethod
    def docs(cls) -> list[Document]:
        return contract_docs()

    @pytest.fixture(scope="class")
    @classmethod
    def dim(cls, encoder) -> int:
        return int(encoder.encode(["x"]).shape[1])

    @pytest.fixture(scope="class")
    @classmethod
    def built(cls, backend, docs, session_cache, tmp_path_factory):
        """One store of `docs` for the tests that only read (do not write to it)."""
        store = backend.build(docs, tmp_path_factory.mktemp(f"{backend.name}-contract") / "index", SETTINGS,
                              session_cache)
        yield store
        store.close()

    @pytest.fixture(scope="class")
    @classmethod
    def many(cls, backend, session_cache, tmp_path_factory):
        """A store of `many_docs` (400 documents), to check that a 1% filter still returns k results."""
        store = backend.build(many_docs(), tmp_path_factory.mktemp(f"{backend.name}-many") / "index", SETTINGS,
                              session_cache)
        yield store
        store.close()

    @pytest.fixture
    def location(self, tmp_path) -> Path:
        return tmp_path / "index"

    @pytest.fixture
    def store(self, backend, docs, session_cache, location):
        """A store of `docs` of its own, to write to."""
        store = backend.build(docs, location, SETTINGS, session_cache)
        yield store
        store.close()

    # -- reading back what was written --

    def test_build_holds_every_document_and_chunk(self, built, docs, dim):
        assert_holds(built, docs, dim)

    def test_documents_and_metadata_round_trip(self, built, docs):
        for d in docs:
            got = built.document(d.doc_id)
            assert got == d and got.title == d.title and got.metadata == d.metadata and got.render() == d.render()
        assert built.document("s00_e00_c00") is None
        asked = [docs[3].doc_id, "s00_e00_c00", docs[0].doc_id, docs[-1].doc_id]
        assert built.doc_metadata(asked) == {d.doc_id: d.metadata for d in (docs[3], docs[0], docs[-1])}
        assert built.doc_metadata([]) == {}
        assert built.doc_ids() == sorted(d.doc_id for d in docs)

    def test_chunks_by_id_in_the_order_asked(self, built, docs):
        expected = {c.chunk_id: c for c in chunk_documents(docs, SETTINGS.views)}
        asked = [Chunk.make_id(docs[1].doc_id, "w3s1", 1), "nope#w3s1/0000", Chunk.make_id(docs[0].doc_id, "scene", 0),
                 Chunk.make_id(docs[2].doc_id, "utt", 2)]
        assert built.chunks(asked) == [expected[asked[0]], expected[asked[2]], expected[asked[3]]]
        assert built.chunks([]) == []

    @pytest.mark.parametrize("view", SETTINGS.views)
    def test_view_chunks_are_every_chunk_in_a_stable_order(self, built, docs, view):
        expected = chunk_documents(docs, [view])
        first = built.view_chunks(view)
        assert sorted(first, key=lambda c: c.chunk_id) == sorted(expected, key=lambda c: c.chunk_id)
        assert built.view_chunks(view) == first
        assert built.count_chunks(view) == len(expected)
        assert built.view_chunks("w5s1") == [] and built.count_chunks("w5s1") == 0  # a view never built
        assert built.count_chunks() == len(chunk_documents(docs, SETTINGS.views))

    @pytest.mark.parametrize("view", SETTINGS.views)
    def test_doc_chunks_in_unit_order(self, built, docs, view):
        for d in docs:
            assert built.doc_chunks(view, d.doc_id) == chunk_documents([d], [view]), d.doc_id
        assert built.doc_chunks(view, "s00_e00_c00") == []

    @pytest.mark.parametrize("view", SETTINGS.dense_views)
    def test_doc_vectors_rows_line_up_with_doc_chunks(self, built, docs, encoder, dim, view):
        for d in docs:
            chunks = built.doc_chunks(view, d.doc_id)
            vectors = built.doc_vectors(view, d.doc_id)
            assert vectors.shape == (len(chunks), dim), d.doc_id
            if chunks:
                cos = np.sum(vectors * encoder.encode([c.text for c in chunks]), axis=1)
                assert np.all(cos > 0.99), (d.doc_id, cos)  # row i is chunk i's vector (half precision allowed)
        assert len(built.doc_vectors(view, "s00_e00_c00")) == 0

    def test_counts_and_info(self, built, docs, encoder):
        info = built.info()
        assert info.settings == SETTINGS == built.settings
        assert info.encoder_model_id == encoder.model_id
        assert info.documents == len(docs)
        assert info.chunks == {v: len(chunk_documents(docs, [v])) for v in SETTINGS.views}
        for view in SETTINGS.sparse_views:
            assert built.count_sparse(view) == info.chunks[view]
        for view in SETTINGS.dense_views:
            assert built.count_dense(view) == info.chunks[view]
        assert isinstance(info.fingerprint, str) and info.fingerprint == built.info().fingerprint

    def test_views_without_an_index_are_refused(self, built, docs, encoder):
        vector = encoder.encode(["pizza"])[0]
        refused = [
            lambda: built.search_sparse("utt", "pizza", 3),
            lambda: built.term_idfs("utt", "pizza"),
            lambda: built.count_sparse("utt"),
            lambda: built.search_sparse("w5s1", "pizza", 3),
            lambda: built.search_dense("scene", vector, 3),
            lambda: built.search_dense("scene", vector, 3, exact=True),
            lambda: built.count_dense("scene"),
            lambda: built.doc_vectors("scene", docs[0].doc_id),
            lambda: built.search_dense("w5s1", vector, 3),
        ]
        for call in refused:
            with pytest.raises(IndexUnusableError, match=r"rebuild|ragfunnel index --vectors"):
                call()

    # -- BM25 --

    def test_analyzer_is_the_configured_one(self, built, docs):
        reference = build_analyzer(SETTINGS.analyzer)
        for text in [*QUERIES, *(c.text for c in chunk_documents(docs[:3], ["w3s1"]))]:
            assert built.analyze(text) == reference.analyze(text)

    @pytest.mark.parametrize("view", SETTINGS.sparse_views)
    def test_term_idfs_are_exact(self, built, docs, view):
        texts = [c.text for c in chunk_documents(docs, [view])]
        df: dict[str, int] = {}
        for text in texts:
            for term in set(built.analyze(text)):
                df[term] = df.get(term, 0) + 1
        for q in [*QUERIES, "the and of", ""]:
            expected = {t: lucene_idf(len(texts), df[t]) if t in df else None for t in built.analyze(q)}
            got = built.term_idfs(view, q)
            assert list(got) == list(expected), q  # distinct terms, in query order
            for term, idf in expected.items():
                assert (got[term] is None) if idf is None else got[term] == pytest.approx(idf, rel=1e-9), (q, term)

    @pytest.mark.parametrize("view", SETTINGS.sparse_views)
    def test_bm25_agrees_with_rank_bm25(self, built, docs, view):
        """Scores within float32 of rank_bm25 (Lucene IDF) for chunks under 24 terms, and within the 1/8 length
        rounding (a factor of [1, 8/7]) above; top-k lists that no left-out chunk could beat."""
        chunks = chunk_documents(docs, [view])
        tokens = [built.analyze(c.text) for c in chunks]
        okapi = LuceneIdfBM25Okapi(tokens)
        short = {c.chunk_id for c, t in zip(chunks, tokens) if len(t) < EXACT_LENGTH_BELOW}
        rng = random.Random(7)
        queries = [*QUERIES, *(" ".join(rng.sample(t, min(3, len(t)))) for t in rng.sample(tokens, 6) if t)]
        if view == "scene":
            assert len(short) < len(chunks)  # the rounded-length bound is exercised too
        checked_exact = 0
        for q in queries:
            ref = okapi.get_scores(built.analyze(q))
            expected = {c.chunk_id: float(s) for c, s in zip(chunks, ref) if s > 0}
            checked_exact += len(short & set(expected))
            for limit in (ALL, 3):
                got = built.search_sparse(view, q, limit)
                assert_ranking(got, expected, partial(bm25_bounds, short), limit, f"{view} {q!r} top {limit}")
        assert checked_exact > 10

    def test_sparse_edge_cases(self, built):
        for view in SETTINGS.sparse_views:
            assert built.search_sparse(view, "?! ...", 5) == []
            assert built.search_sparse(view, "the and of", 5) == []  # stopwords only
            assert built.search_sparse(view, "xylophone", 5) == []
            assert list(built.term_idfs(view, "xylophone").values()) == [None]
            assert len(built.search_sparse(view, "pizza Monica Ross", 2)) == 2

    def test_match_sparse_lists_every_chunk_holding_all_terms(self, built, docs):
        """The exhaustive, unranked conjunction: exactly the chunks whose analysed text holds every query term,
        however many (no limit), sorted; nothing for a query without terms."""
        checked = 0
        for view in SETTINGS.sparse_views:
            analysed = {c.chunk_id: set(built.analyze(c.text)) for c in built.view_chunks(view)}
            for q in [*QUERIES, "pizza", "Monica Ross", "Ross"]:
                terms = set(built.analyze(q))
                expected = sorted(cid for cid, have in analysed.items() if terms and terms <= have)
                got = built.match_sparse(view, q)
                assert got == expected, f"{view} {q!r}"
                checked += len(got)
                if len(terms) > 1:  # a conjunction: never more than the chunks of any single term
                    assert set(got) <= set(built.match_sparse(view, next(iter(terms))))
            assert built.match_sparse(view, "the and of") == []
            assert built.match_sparse(view, "xylophone") == []
        assert checked > 20

    @pytest.mark.parametrize("name, where, predicate", FILTERS, ids=[f[0] for f in FILTERS])
    def test_filtered_match_sparse_keeps_only_admitted_chunks(self, built, docs, name, where, predicate):
        for view in SETTINGS.sparse_views:
            admitted = admitted_chunks(docs, view, predicate)
            for q in FILTER_QUERIES:
                expected = [c for c in built.match_sparse(view, q) if c in admitted]
                assert built.match_sparse(view, q, where=where) == expected, f"{name}: {view} {q!r}"

    # -- dense --

    @pytest.mark.parametrize("view", SETTINGS.dense_views)
    def test_exact_dense_search_is_a_cosine_ranking_of_the_stored_vectors(self, built, encoder, view):
        ids, matrix = stored_vectors(built, view)
        assert len(ids) == built.count_dense(view)
        unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        for q in [*QUERIES, "a doctor on a TV soap opera"]:
            vector = encoder.encode([q])[0]
            for scale in (1.0, 3.5):  # cosine, not a dot product: the query's norm does not matter
                expected = dict(zip(ids, (unit @ vector).tolist()))
                for limit in (ALL, 5):
                    got = built.search_dense(view, vector * scale, limit, exact=True)
                    assert_ranking(got, expected, cosine_bounds, limit, f"{view} {q!r} x{scale} top {limit}")

    @pytest.mark.parametrize("view", SETTINGS.dense_views)
    def test_approximate_search_scores_like_exact(self, built, encoder, view):
        """On an index this small the default (ANN) search finds the exact top 5, with the same cosines."""
        for q in QUERIES:
            vector = encoder.encode([q])[0]
            exact = built.search_dense(view, vector, 5, exact=True)
            ann = built.search_dense(view, vector, 5, ef=64)
            assert [c for c, _ in ann] == [c for c, _ in exact], q
            np.testing.assert_allclose([s for _, s in ann], [s for _, s in exact], atol=1e-5)

    def test_search_finds_the_topic(self, built, encoder):
        assert built.search_sparse("scene", "pepperoni pizza", 3)[0][0] == "s09_e01_c01#scene/0000"
        assert Chunk.parent_of(built.search_sparse("w3s1", "velociraptor", 3)[0][0]) == "s09_e01_c02"
        for exact in (True, False):
            hits = built.search_dense("w3s1", encoder.encode(["a doctor on a TV soap opera"])[0], 3, exact=exact)
            assert Chunk.parent_of(hits[0][0]) == "s09_e02_c03"
            assert all(-1.0 - COS_ATOL <= s <= 1.0 + COS_ATOL for _, s in hits)

    def test_a_stored_text_finds_its_own_chunk(self, built, docs, encoder):
        window = chunk_documents([docs[7]], ["w3s1"])[0]
        top = built.search_dense("w3s1", encoder.encode([window.text])[0], 1, exact=True)
        assert top[0][0] == window.chunk_id and top[0][1] == pytest.approx(1.0, abs=COS_ATOL)

    # -- filters --

    @pytest.mark.parametrize("name, where, predicate", FILTERS, ids=[f[0] for f in FILTERS])
    def test_filtered_bm25_keeps_only_admitted_chunks_with_their_scores(self, built, docs, name, where, predicate):
        """The hits are the best admitted chunks, each with the score it has without the filter (the statistics
        stay those of the whole view), as many as asked whenever that many admitted chunks match the query."""
        checked = 0
        for view in SETTINGS.sparse_views:
            admitted = admitted_chunks(docs, view, predicate)
            assert admitted, f"{name}: the filter admits no chunk of {view}: a useless case"
            for q in FILTER_QUERIES:
                expected = {c: s for c, s in built.search_sparse(view, q, ALL) if c in admitted}
                checked += len(expected)
                for limit in (ALL, 2):
                    got = built.search_sparse(view, q, limit, where=where)
                    assert_ranking(got, expected, exact_bounds, limit, f"{name}: {view} {q!r} top {limit}")
        assert checked > 0, f"{name}: no query matched an admitted chunk"

    @pytest.mark.parametrize("name, where, predicate", FILTERS, ids=[f[0] for f in FILTERS])
    def test_filtered_dense_search_keeps_only_admitted_chunks(self, built, docs, encoder, name, where, predicate):
        for view in SETTINGS.dense_views:
            admitted = admitted_chunks(docs, view, predicate)
            assert admitted, f"{name}: the filter admits no chunk of {view}: a useless case"
            for q in FILTER_QUERIES[::3]:
                vector = encoder.encode([q])[0]
                expected = {c: s for c, s in built.search_dense(view, vector, ALL, exact=True) if c in admitted}
                for exact in (True, False):
                    for limit in (ALL, 2):
                        got = built.search_dense(view, vector, limit, exact=exact, where=where)
                        assert_ranking(got, expected, cosine_bounds, limit, f"{name}: {view} {q!r} exact={exact} top {limit}")

    @pytest.mark.parametrize("name, where, predicate", FILTERS, ids=[f[0] for f in FILTERS])
    def test_count_matching_counts_documents(self, built, docs, name, where, predicate):
        expected = sum(1 for d in docs if d.units and predicate(d, d.units))
        empty = [d for d in docs if not d.units and where.matches_document(d.doc_id, d.metadata) and not where.on_units]
        assert built.count_matching(where) == expected + len(empty)  # a document without units: only its metadata

    def test_a_filter_that_matches_nothing_returns_nothing(self, built, encoder):
        vector = encoder.encode(["pizza"])[0]
        for where in (Filter.parse("season=42"), Filter.parse("section=Nowhere"), Filter.parse(["season=9", "format=pdf"])):
            assert built.count_matching(where) == 0
            for view in SETTINGS.sparse_views:
                assert built.search_sparse(view, "pizza Monica Ross espresso", ALL, where=where) == []
            for view in SETTINGS.dense_views:
                assert built.search_dense(view, vector, ALL, where=where) == []
                assert built.search_dense(view, vector, 5, exact=True, where=where) == []

    def test_no_filter_and_a_filter_of_everything_change_nothing(self, built, encoder):
        everything = Filter.parse("id=*")
        assert built.count_matching(everything) == len(built.doc_ids())
        for q in FILTER_QUERIES:
            for view in SETTINGS.sparse_views:
                plain = built.search_sparse(view, q, 20)
                assert built.search_sparse(view, q, 20, where=None) == plain
                assert built.search_sparse(view, q, 20, where=everything) == plain
            vector = encoder.encode([q])[0]
            for view in SETTINGS.dense_views:
                for exact in (True, False):
                    plain = built.search_dense(view, vector, 10, exact=exact)
                    assert built.search_dense(view, vector, 10, exact=exact, where=None) == plain
                    assert built.search_dense(view, vector, 10, exact=exact, where=everything) == plain

    @pytest.mark.parametrize("group", [0, 37, 99])
    def test_a_filter_of_one_percent_still_returns_k(self, many, encoder, group):
        """4 documents of 400 match: all 4 come back from every index, though without the filter none of them
        needs to be in the top 4 (a filter applied after the search would return fewer, often none)."""
        where, k = Filter.parse(f"group={group}"), 4
        members = {f"many/{i:03d}" for i in range(group * 4, group * 4 + 4)}
        assert many.count_matching(where) == k
        vector = encoder.encode(["Joey Monica Ross pizza turkey"])[0]
        for view in SETTINGS.sparse_views:
            hits = many.search_sparse(view, "coffee with Joey, pizza and turkey", k, where=where)
            assert len(hits) == k and {Chunk.parent_of(c) for c, _ in hits} == members, view
        for view in SETTINGS.dense_views:
            for exact in (True, False):
                hits = many.search_dense(view, vector, k, exact=exact, where=where)
                assert len(hits) == k and {Chunk.parent_of(c) for c, _ in hits} == members, (view, exact)
        for plain in (many.search_dense("w3s1", vector, k, exact=True), many.search_sparse("w3s1", "coffee with Joey", k)):
            assert len({Chunk.parent_of(c) for c, _ in plain} & members) < k  # the case a filter is for

    def test_numeric_ranges_on_many(self, many, encoder):
        where = Filter.from_json({"year": {"gte": 2016, "lt": 2019}, "group": {"in": [10, 11, 12, 13]}})
        expected = {f"many/{i:03d}" for i in range(40, 56) if 2016 <= 2000 + i % 25 < 2019}
        assert many.count_matching(where) == len(expected) > 0
        hits = many.search_dense("utt", encoder.encode(["pizza"])[0], ALL, where=where)
        assert {Chunk.parent_of(c) for c, _ in hits} == expected

    def test_filters_see_writes_at_once(self, store, docs, encoder):
        where = Filter.parse("season=99")
        assert store.count_matching(where) == 0 and store.search_sparse("scene", "zeppelin Minsk", 5, where=where) == []
        store.upsert([replacement_for(docs[0])])  # season 99
        assert store.count_matching(where) == 1
        assert {Chunk.parent_of(c) for c, _ in store.search_sparse("scene", "zeppelin Minsk", 5, where=where)} == {docs[0].doc_id}
        hits = store.search_dense("utt", encoder.encode(["zeppelin to Minsk"])[0], 10, where=where)
        assert hits and {Chunk.parent_of(c) for c, _ in hits} == {docs[0].doc_id}
        store.delete([docs[0].doc_id])
        assert store.count_matching(where) == 0 and store.search_dense("utt", encoder.encode(["zeppelin"])[0], 5, where=where) == []

    # -- writes --

    def test_upsert_adds_a_document(self, store, docs, encoder, dim):
        before = store.info()
        store.upsert([NEW_DOC])
        assert_holds(store, [*docs, NEW_DOC], dim)
        assert store.doc_metadata([NEW_DOC.doc_id]) == {NEW_DOC.doc_id: NEW_DOC.metadata}
        assert store.search_sparse("scene", "espresso Gunther", 1)[0][0] == Chunk.make_id(NEW_DOC.doc_id, "scene", 0)
        window = chunk_documents([NEW_DOC], ["w3s1"])[0]
        top = store.search_dense("w3s1", encoder.encode([window.text])[0], 1, exact=True)
        assert top[0][0] == window.chunk_id and top[0][1] == pytest.approx(1.0, abs=COS_ATOL)
        after = store.info()
        assert after.documents == before.documents + 1
        assert after.chunks == {v: len(chunk_documents([*docs, NEW_DOC], [v])) for v in SETTINGS.views}
        assert after.fingerprint != before.fingerprint

    def test_upsert_replaces_in_every_index(self, store, docs, encoder, dim):
        old = docs[0]  # the pizza scene
        new = replacement_for(old)
        old_window = chunk_documents([old], ["w3s1"])[0]
        store.upsert([new])
        store.upsert([new])  # the same id twice: still one copy of each chunk
        current = [new, *docs[1:]]
        assert_holds(store, current, dim)
        assert store.document(old.doc_id).title == "Replaced"
        assert store.doc_metadata([old.doc_id]) == {old.doc_id: {"season": 99}}
        for view in SETTINGS.sparse_views:
            assert store.search_sparse(view, "pepperoni", 5) == []  # the old words are gone from BM25
            hits = store.search_sparse(view, "zeppelin Minsk", ALL)
            assert {Chunk.parent_of(c) for c, _ in hits} == {old.doc_id}
            assert len(hits) == len({c for c, _ in hits}) == len(chunk_documents([new], [view]))
        for view in SETTINGS.dense_views:
            chunk = chunk_documents([new], [view])[0]
            hits = store.search_dense(view, encoder.encode([chunk.text])[0], ALL, exact=True)
            assert hits[0][0] == chunk.chunk_id and hits[0][1] == pytest.approx(1.0, abs=COS_ATOL)
            assert len(hits) == len({c for c, _ in hits}) == len(chunk_documents(current, [view]))
        # the old window's vector is gone: nothing matches its text exactly any more
        assert store.search_dense("w3s1", encoder.encode([old_window.text])[0], 1, exact=True)[0][1] < 0.95
        assert store.info().documents == len(docs)

    def test_upsert_twice_in_one_call_keeps_the_last(self, store, docs, dim):
        a = make_doc("s09_e04_c01", [("Joey Tribbiani", "How you doin'?")])
        b = make_doc("s09_e04_c01", [("Joey Tribbiani", "Joey doesn't share food, ever.")], mood="firm")
        store.upsert([a, b])
        assert_holds(store, [*docs, b], dim)
        assert store.doc_metadata([b.doc_id]) == {b.doc_id: {"mood": "firm"}}
        store.upsert([])  # nothing to do
        assert_holds(store, [*docs, b], dim)

    def test_reads_inside_a_snapshot_see_the_index_and_a_later_write(self, store, docs, encoder, dim):
        """`snapshot()` holds reads of every kind (nested ones too), and a write after it is seen."""
        view, dense = SETTINGS.sparse_views[0], SETTINGS.dense_views[0]
        vec = encoder.encode(["dinosaur fossils"])[0]
        with store.snapshot():
            with store.snapshot():
                doc = store.document(docs[1].doc_id)
            hits = store.search_sparse(view, "velociraptor dinosaur fossils", 3)
            chunks = store.chunks([c for c, _ in hits])
            near = store.search_dense(dense, vec, 3)
        assert doc == docs[1] and hits and [c.chunk_id for c in chunks] == [c for c, _ in hits] and near
        assert all(Chunk.parent_of(c) == docs[1].doc_id for c, _ in hits)
        store.delete([docs[1].doc_id])
        with store.snapshot():
            assert store.document(docs[1].doc_id) is None
            assert store.search_sparse(view, "velociraptor dinosaur fossils", 3) == []

    def test_delete_removes_from_every_index(self, store, docs, encoder, dim):
        gone = docs[1]  # the dinosaur scene
        before = store.info()
        assert store.delete([gone.doc_id, "s00_e00_c00", gone.doc_id]) == 1
        assert store.delete([gone.doc_id]) == 0
        assert store.delete([]) == 0
        rest = [d for d in docs if d.doc_id != gone.doc_id]
        assert_holds(store, rest, dim)
        assert store.document(gone.doc_id) is None and store.doc_metadata([gone.doc_id]) == {}
        for view in SETTINGS.views:
            assert store.doc_chunks(view, gone.doc_id) == []
        for view in SETTINGS.sparse_views:
            assert store.search_sparse(view, "velociraptor dinosaur fossils", ALL) == []
        for view in SETTINGS.dense_views:
            vec = encoder.encode([chunk_documents([gone], [view])[0].text])[0]
            for exact in (True, False):
                hits = store.search_dense(view, vec, ALL if exact else 5, exact=exact)
                assert hits and all(Chunk.parent_of(c) != gone.doc_id for c, _ in hits)
            assert len(store.doc_vectors(view, gone.doc_id)) == 0
        after = store.info()
        assert after.documents == before.documents - 1 and after.fingerprint != before.fingerprint
        assert store.delete([d.doc_id for d in rest]) == len(rest)
        assert_holds(store, [], dim)

    def test_bm25_statistics_follow_writes(self, store, docs, backend, session_cache, tmp_path, dim):
        """After replace and delete, BM25 scores and IDFs are those of a fresh build of what is left: deleted
        chunks no longer count in document frequencies or average lengths."""
        store.upsert([replacement_for(docs[0]), NEW_DOC])
        store.delete([docs[1].doc_id, docs[4].doc_id])
        current = [replacement_for(docs[0]), *[d for d in docs[2:] if d.doc_id != docs[4].doc_id], NEW_DOC]
        assert_holds(store, current, dim)
        fresh = backend.build(current, tmp_path / "fresh", SETTINGS, session_cache)
        try:
            for view in SETTINGS.sparse_views:
                for q in [*QUERIES, "zeppelin Gunther Ross Monica"]:
                    assert_same_idfs(store.term_idfs(view, q), fresh.term_idfs(view, q), (view, q))
                    got, want = store.search_sparse(view, q, ALL), fresh.search_sparse(view, q, ALL)
                    assert dict(got) == pytest.approx(dict(want), rel=F32), (view, q)
        finally:
            fresh.close()

    def test_apply_upserts_and_deletes_in_one_write(self, store, docs, backend, session_cache, tmp_path, dim):
        """`apply` is upsert and delete together: an id in both is upserted, unknown deletes are not counted, and
        the result (BM25 statistics included) is that of a fresh build of what is left."""
        new, gone = replacement_for(docs[0]), docs[1]
        before = store.info()
        deleted = store.apply([new, NEW_DOC, new], [gone.doc_id, "s00_e00_c00", docs[0].doc_id, gone.doc_id])
        assert deleted == 1
        current = [new, *docs[2:], NEW_DOC]
        assert_holds(store, current, dim)
        assert store.info().fingerprint != before.fingerprint
        fresh = backend.build(current, tmp_path / "fresh", SETTINGS, session_cache)
        try:
            assert store.info().fingerprint == fresh.info().fingerprint
            for view in SETTINGS.sparse_views:
                for q in [*QUERIES, "zeppelin Gunther Ross Monica"]:
                    assert dict(store.search_sparse(view, q, ALL)) == pytest.approx(
                        dict(fresh.search_sparse(view, q, ALL)), rel=F32), (view, q)
        finally:
            fresh.close()
        unchanged = store.info()
        assert store.apply([], []) == 0 and store.apply([], ["s00_e00_c00"]) == 0
        assert store.info() == unchanged

    # -- persistence --

    def test_reopen_gives_identical_results(self, store, docs, backend, session_cache, location, encoder, dim):
        store.upsert([NEW_DOC, replacement_for(docs[2])])
        store.delete([docs[3].doc_id])
        current = [d for d in docs if d.doc_id not in (docs[2].doc_id, docs[3].doc_id)]
        current += [NEW_DOC, replacement_for(docs[2])]
        before, info = snapshot(store, encoder), store.info()
        chunk_order = {v: store.view_chunks(v) for v in SETTINGS.views}
        store.close()
        reopened = backend.reopen(location, session_cache)
        try:
            assert reopened.settings == SETTINGS
            assert_holds(reopened, current, dim)
            assert_same_results(before, snapshot(reopened, encoder))
            assert {v: reopened.view_chunks(v) for v in SETTINGS.views} == chunk_order
            assert reopened.info().fingerprint == info.fingerprint
            assert reopened.info().model_dump(exclude={"built_at"}) == info.model_dump(exclude={"built_at"})
        finally:
            reopened.close()

    def test_artifacts_are_kept_with_the_index(self, store, docs, backend, session_cache, location):
        """What is trained for an index (the gate) reads back, is replaced whole, survives a sync and a reopen, and
        does not leak into info(); a rebuild starts without it."""
        assert store.read_artifact("gate.json") is None
        fingerprint = store.info().fingerprint
        where = store.write_artifact("gate.json", '{"threshold": 0.5}')
        assert isinstance(where, str) and where
        store.write_artifact("gate.json", '{"threshold": 0.25, "note": "é"}')
        store.write_artifact("other.json", "[]")
        assert store.read_artifact("gate.json") == '{"threshold": 0.25, "note": "é"}'
        assert store.info().fingerprint == fingerprint  # not content: the fingerprint names documents and settings
        store.apply(upserts=[NEW_DOC], deletes=[docs[0].doc_id])
        assert store.read_artifact("gate.json") == '{"threshold": 0.25, "note": "é"}'
        store.close()
        reopened = backend.reopen(location, session_cache)
        try:
            assert reopened.read_artifact("other.json") == "[]"
            assert reopened.read_artifact("gate.json") == '{"threshold": 0.25, "note": "é"}'
        finally:
            reopened.close()
        rebuilt = backend.build(docs, location, SETTINGS, session_cache)
        try:
            assert rebuilt.read_artifact("gate.json") is None
        finally:
            rebuilt.close()

    def test_build_counts_a_repeated_id_once(self, backend, docs, session_cache, tmp_path, dim):
        store = backend.build([*docs, docs[0]], tmp_path / "index", SETTINGS, session_cache)
        try:
            assert_holds(store, docs, dim)
            assert store.info().documents == len(docs)
        finally:
            store.close()

    def test_fingerprint_names_the_content(self, built, backend, docs, session_cache, tmp_path):
        """Same documents and settings: same fingerprint, whoever built it; other content: another."""
        twin = backend.build(list(reversed(docs)), tmp_path / "twin", SETTINGS, session_cache)
        fewer = backend.build(docs[:-2], tmp_path / "fewer", SETTINGS, session_cache)
        try:
            assert twin.info().fingerprint == built.info().fingerprint
            assert fewer.info().fingerprint != built.info().fingerprint
        finally:
            twin.close()
            fewer.close()

    # -- crash repair --

    def test_damaged_store_is_repaired_on_open(self, store, backend, docs, session_cache, location, encoder, dim):
        if backend.damage is None:
            pytest.skip(f"{backend.name}: no way to simulate a damaged store")
        before = snapshot(store, encoder)
        store.close()
        backend.damage(location)
        repaired = backend.reopen(location, session_cache)
        try:
            assert_holds(repaired, docs, dim)
            assert_same_results(before, snapshot(repaired, encoder))
        finally:
            repaired.close()

    def test_killed_write_is_all_or_nothing_after_reopen(self, store, backend, docs, session_cache, location,
                                                         monkeypatch, dim):
        if backend.kill_next_write is None:
            pytest.skip(f"{backend.name}: no way to kill a write midway")
        backend.kill_next_write(store, monkeypatch)
        with pytest.raises(KeyboardInterrupt):
            store.upsert([NEW_DOC, replacement_for(docs[0])])
        monkeypatch.undo()
        store.close()
        reopened = backend.reopen(location, session_cache)
        try:
            if reopened.document(NEW_DOC.doc_id) is None:
                assert_holds(reopened, docs, dim)  # nothing of the write
            else:
                assert_holds(reopened, [replacement_for(docs[0]), *docs[1:], NEW_DOC], dim)  # all of it
            reopened.upsert([NEW_DOC])  # and it takes writes again
            assert reopened.document(NEW_DOC.doc_id) == NEW_DOC
        finally:
            reopened.close()

    def test_killed_apply_is_all_or_nothing_after_reopen(self, store, backend, docs, session_cache, location,
                                                         monkeypatch, dim):
        """A sync's one write (adds, a replace and a delete) killed midway: after reopening, the old documents or
        the new ones, never some of each."""
        if backend.kill_next_write is None:
            pytest.skip(f"{backend.name}: no way to kill a write midway")
        backend.kill_next_write(store, monkeypatch)
        with pytest.raises(KeyboardInterrupt):
            store.apply([NEW_DOC, replacement_for(docs[0])], [docs[1].doc_id])
        monkeypatch.undo()
        store.close()
        reopened = backend.reopen(location, session_cache)
        try:
            if reopened.document(NEW_DOC.doc_id) is None:
                assert_holds(reopened, docs, dim)
            else:
                assert_holds(reopened, [replacement_for(docs[0]), *docs[2:], NEW_DOC], dim)
        finally:
            reopened.close()
