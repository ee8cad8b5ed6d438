"""The MiniLM encoder and the embedding cache (nothing embedded twice; resume after a kill)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from ragfunnel.embedding import (
    DEFAULT_MODEL,
    EmbeddingCache,
    OnnxMiniLM,
    SentenceTransformerEncoder,
    cached_vectors,
    embed_with_cache,
    ensure_cached,
    make_encoder,
    normalise,
    shared_encoder,
    text_hash,
)
from ragfunnel.errors import ConfigError, IndexUnusableError


class CountingEncoder:
    """Wraps an encoder and records every text it is asked to embed; can fail after a number of batches."""

    def __init__(self, inner, fail_after_batches: int | None = None):
        self.inner, self.fail_after = inner, fail_after_batches
        self.model_id, self.dim = inner.model_id, inner.dim
        self.batches: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [t for b in self.batches for t in b]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.batches) >= self.fail_after:
            raise KeyboardInterrupt("killed mid-build")
        self.batches.append(list(texts))
        return self.inner.encode(texts)


TEXTS = [
    "Rachel ran out of her wedding and left Barry at the altar.",
    "Rachel did not marry Barry; she fled the ceremony.",
    "The quarterly earnings report beat analyst expectations.",
    "Joey loves sandwiches.",
    "Ross is a paleontologist who studies dinosaurs.",
]


def test_minilm_vectors_are_normalised_384d(encoder):
    vectors = encoder.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert encoder.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, 384)


def test_similar_texts_are_closer(encoder):
    v = encoder.encode(TEXTS)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    assert sims[0, 1] > sims[0, 3] and sims[0, 1] > sims[0, 4]
    assert sims[4, 0] < 0.5


def test_encoding_does_not_depend_on_the_batch(encoder):
    together = encoder.encode(TEXTS)
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-4)  # padding is masked out of the mean


def test_long_texts_are_truncated(encoder):
    long = " ".join(["word"] * 2000)
    assert encoder.token_lengths([long, "short"])[0] == encoder.max_length
    assert encoder.encode([long]).shape == (1, 384)


def test_encoder_factory():
    assert isinstance(make_encoder(DEFAULT_MODEL), OnnxMiniLM)
    assert make_encoder(DEFAULT_MODEL, max_length=128).model_id == f"{DEFAULT_MODEL}-128"
    st = make_encoder("st:some/model")
    assert isinstance(st, SentenceTransformerEncoder) and st.model_id == "st:some/model"
    with pytest.raises(ConfigError, match="unknown encoder"):
        make_encoder("word2vec")
    assert shared_encoder() is shared_encoder()


def test_normalise_and_hash():
    x = normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(x, [[0.6, 0.8], [0.0, 0.0]])
    assert text_hash("a") == text_hash("a") and len(text_hash("a")) == 16
    assert text_hash("a") != text_hash("b") and text_hash("é") != text_hash("e")


def test_cache_roundtrip_per_model(tmp_path):
    path = tmp_path / "sub" / "emb.sqlite"
    cache = EmbeddingCache(path)
    v = np.arange(4, dtype=np.float32)
    cache.put_many("m1", [(text_hash("x"), v), (text_hash("y"), v * 2)])
    assert cache.count("m1") == 2 and cache.count("m2") == 0
    assert cache.get_many("m2", [text_hash("x")]) == {}
    cache.close()
    reopened = EmbeddingCache(path)
    got = reopened.get_many("m1", [text_hash("y"), text_hash("z")])
    assert list(got) == [text_hash("y")]
    np.testing.assert_array_equal(got[text_hash("y")], v * 2)
    reopened.close()


def test_nothing_is_embedded_twice(tmp_path, encoder):
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    counting = CountingEncoder(encoder)
    texts = [TEXTS[0], TEXTS[1], TEXTS[0], TEXTS[2], TEXTS[1]]
    calls = []
    first = embed_with_cache(counting, texts, cache, batch_size=2, progress=lambda d, t: calls.append((d, t)))
    assert sorted(counting.texts) == sorted(set(texts))  # each distinct text once
    assert calls[0] == (0, 3) and calls[-1] == (3, 3)
    assert first.shape == (5, 384)
    np.testing.assert_allclose(first, encoder.encode(texts), atol=1e-4)  # rows follow the input order
    assert cache.count(encoder.model_id) == 3

    second = embed_with_cache(counting, list(reversed(texts)) + [TEXTS[3]], cache, batch_size=2)
    assert counting.texts.count(TEXTS[3]) == 1 and len(counting.texts) == 4  # only the new text
    np.testing.assert_array_equal(second[:5], first[::-1])
    assert embed_with_cache(counting, [], cache).shape == (0, 384)
    cache.close()


def test_half_precision_rows_in_slices_match_the_full_vectors(tmp_path, encoder, monkeypatch):
    import ragfunnel.embedding as embedding

    monkeypatch.setattr(embedding, "CACHE_READ_SLICE", 2)  # the cache read in several slices
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    embed_with_cache(encoder, TEXTS[:3], cache)  # three cached, two to embed
    texts = [TEXTS[4], TEXTS[0], TEXTS[3], TEXTS[0], TEXTS[2], TEXTS[1]]
    half = embed_with_cache(encoder, texts, cache, dtype=np.float16)
    assert half.dtype == np.float16 and half.shape == (6, 384)
    np.testing.assert_array_equal(half, embed_with_cache(encoder, texts, cache).astype(np.float16))
    np.testing.assert_allclose(half.astype(np.float32), encoder.encode(texts), atol=2e-3)
    cache.close()


def test_ensure_cached_then_read_back_a_slice_at_a_time(tmp_path, encoder, monkeypatch):
    """What a big embedded build does: embed the missing texts once, then read the vectors back per slice, the
    same rows (to the bit) as embed_with_cache gives."""
    import ragfunnel.embedding as embedding

    monkeypatch.setattr(embedding, "CACHE_READ_SLICE", 2)
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    embed_with_cache(encoder, TEXTS[:2], cache)
    counting = CountingEncoder(encoder)
    texts = [TEXTS[3], TEXTS[0], TEXTS[2], TEXTS[3], TEXTS[1]]
    calls = []
    ensure_cached(counting, texts, cache, batch_size=1, progress=lambda d, t: calls.append((d, t)))
    assert sorted(counting.texts) == sorted([TEXTS[2], TEXTS[3]]) and calls[-1] == (2, 2)  # only the missing, once
    ensure_cached(counting, texts, cache)
    assert len(counting.texts) == 2  # all cached now: nothing embedded
    for dtype in (np.float16, np.float32):
        got = cached_vectors(encoder.model_id, texts, cache, dtype)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, embed_with_cache(encoder, texts, cache, dtype=dtype))
    with pytest.raises(IndexUnusableError, match="1 vectors of this write are missing from the embedding cache"):
        cached_vectors(encoder.model_id, [TEXTS[4], TEXTS[0]], cache)
    cache.close()


def test_resume_after_partial_work(tmp_path, encoder):
    path = tmp_path / "emb.sqlite"
    cache = EmbeddingCache(path)
    killed = CountingEncoder(encoder, fail_after_batches=1)
    with pytest.raises(KeyboardInterrupt):
        embed_with_cache(killed, TEXTS, cache, batch_size=2)
    assert cache.count(encoder.model_id) == 2  # the committed batch survived
    done_before = set(killed.texts)
    cache.close()

    cache = EmbeddingCache(path)  # a new process
    resumed = CountingEncoder(encoder)
    vectors = embed_with_cache(resumed, TEXTS, cache, batch_size=2)
    assert set(resumed.texts) == set(TEXTS) - done_before and len(resumed.texts) == 3
    np.testing.assert_allclose(vectors, encoder.encode(TEXTS), atol=1e-4)
    assert cache.count(encoder.model_id) == len(TEXTS)
    cache.close()


# ---- the int8 copy of the bundled MiniLM ------------------------------------------------------------------------------


def test_int8_model_is_made_once_deterministically_and_keyed_apart_from_fp32(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    from ragfunnel.embedding import INT8_MODEL, int8_encoder, quantised_minilm_dir

    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    made = quantised_minilm_dir()
    assert made == tmp_path / "home" / "models" / INT8_MODEL
    weights = made / "onnx" / "model.onnx"
    stamp = weights.stat().st_mtime_ns
    assert quantised_minilm_dir() == made and weights.stat().st_mtime_ns == stamp  # made on first use only
    again = quantised_minilm_dir(tmp_path / "other") / "onnx" / "model.onnx"
    assert again.read_bytes() == weights.read_bytes()  # same fp32 file, same onnxruntime: same bytes
    assert weights.stat().st_size < 30_000_000  # int8 weights: about a quarter of the 90 MB fp32 file
    assert not list(made.rglob("*.partial"))

    encoder = int8_encoder()
    fp32 = make_encoder(DEFAULT_MODEL)
    assert encoder.model_id.startswith(f"{INT8_MODEL}:") and encoder.model_id.endswith("-256")
    assert encoder.model_id != fp32.model_id
    assert make_encoder(INT8_MODEL, max_length=128).model_id == encoder.model_id[:-3] + "128"
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    embed_with_cache(encoder, TEXTS, cache)
    assert cache.count(encoder.model_id) == len(TEXTS) and cache.count(fp32.model_id) == 0
    cache.close()


@pytest.mark.integration
def test_int8_vectors_match_fp32_on_friends_windows(small_docs, encoder):
    pytest.importorskip("onnx")
    from ragfunnel.chunking import chunk_documents
    from ragfunnel.embedding import INT8_MODEL

    texts = sorted({c.text for c in chunk_documents(small_docs, ["w3s1"])})[:300]
    assert len(texts) == 300
    fp32 = encoder.encode(texts)
    int8 = shared_encoder(INT8_MODEL).encode(texts)
    cosine = (fp32 * int8).sum(axis=1)
    assert cosine.mean() > 0.98 and cosine.min() > 0.93
    # what matters for retrieval: each window's nearest fp32 neighbour among the others mostly stays the same
    sims32, sims8 = fp32 @ fp32.T, int8 @ int8.T
    np.fill_diagonal(sims32, -1)
    np.fill_diagonal(sims8, -1)
    assert (sims32.argmax(axis=1) == sims8.argmax(axis=1)).mean() > 0.8


def test_int8_vectors_depend_a_little_on_their_batch():
    """Dynamic quantisation scales the activations per batch (padding included), so a text's int8 vector moves a
    little with its batch mates; a build batches by length, deterministically, and a query is embedded alone."""
    pytest.importorskip("onnx")
    from ragfunnel.embedding import INT8_MODEL

    int8 = shared_encoder(INT8_MODEL)
    alone = np.stack([int8.encode([t])[0] for t in TEXTS])
    together = int8.encode(TEXTS)
    cosine = (alone * together).sum(axis=1)
    assert cosine.min() > 0.97 and not np.allclose(alone, together, atol=1e-4)
    np.testing.assert_allclose(int8.encode(TEXTS), together, atol=1e-6)  # the same batch: the same vectors


@pytest.mark.integration
def test_an_int8_index_embeds_questions_with_int8_too(small_docs, tmp_path):
    pytest.importorskip("onnx")
    from ragfunnel.config import load_settings
    from ragfunnel.embedding import INT8_MODEL
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.store import StoreSettings, build_index

    docs = small_docs[:6]
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    settings = StoreSettings(sparse_views=["w3s1"], dense_views=["w3s1"], encoder=INT8_MODEL)
    store = build_index(docs, tmp_path / "index", settings, cache)
    int8_id = shared_encoder(INT8_MODEL).model_id
    assert store.info().encoder_model_id == int8_id
    assert cache.count(int8_id) > 0 and cache.count(shared_encoder().model_id) == 0
    pipeline = Pipeline(load_settings(index=tmp_path / "index"), store=store)
    retriever = pipeline.retriever("dense_w3s1")
    assert retriever.encoder.model_id == int8_id
    window = store.view_chunks("w3s1")[7]
    top = retriever.retrieve(window.text, limit=1)[0]
    # not exactly 1: int8 activations are scaled per batch, and the window was embedded in a batch of 64
    assert top.chunk_id == window.chunk_id and top.score > 0.98
    store.close()
    cache.close()


def test_batches_hold_texts_of_about_the_same_token_count(tmp_path, encoder):
    """A batch is padded to its longest text: texts go to the encoder sorted by token count (where it counts tokens),
    not by characters, which rank digits and long words differently."""

    class TokenCounting(CountingEncoder):
        def token_lengths(self, texts):
            return self.inner.token_lengths(texts)

    words = "photosynthesis " * 5  # 75 characters, a few tokens a word: 17 tokens
    digits = "1 2 3 4 5 6 7 8 9 " * 3  # 54 characters, a token a digit: 29 tokens
    short = "a cat"
    assert encoder.token_lengths([words])[0] < encoder.token_lengths([digits])[0] and len(words) > len(digits)
    counting = TokenCounting(encoder)
    embed_with_cache(counting, [digits, words, short], EmbeddingCache(tmp_path / "emb.sqlite"), batch_size=1)
    assert counting.texts == [short, words, digits]  # by tokens
    plain = CountingEncoder(encoder)  # an encoder that cannot count tokens (an API): by characters
    embed_with_cache(plain, [digits, words, short], EmbeddingCache(tmp_path / "emb2.sqlite"), batch_size=1)
    assert plain.texts == [short, digits, words]
