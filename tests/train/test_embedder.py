"""Bi-encoder fine-tuning: pairs of a question and the chunks holding its gold answer line, hard negatives from
other scenes, a short run exported to ONNX that the query-time encoder loads, and an index built with it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ragfunnel.embedding import DEFAULT_MODEL, make_encoder, onnx_encoder
from ragfunnel.errors import ConfigError, RagfunnelError
from ragfunnel.train.embedder import (Pair, answer_chunks, build_pairs, judged_pairs, load_pairs, resolve_device,
                                      save_pairs, train_embedder, widest_dense_view)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pairs(small_store, encoder, session_cache, small_questions):
    return build_pairs(small_store, encoder, session_cache, small_questions[:12], views=("w3s1", "utt"), per_view=2, pool=5)


def test_positives_hold_a_gold_answer_line(small_store, small_questions):
    q = next(q for q in small_questions if q.meta.get("gold_utterance_ids"))
    doc = small_store.document(q.gold[0])
    lines = {u.unit_id: u.render() for u in doc.units}
    wanted = [lines[uid] for uid in q.meta["gold_utterance_ids"] if uid in lines]
    for view in ("w3s1", "utt"):
        chunks = answer_chunks(small_store, q, view)
        assert chunks and all(any(line in c for line in wanted) for c in chunks)
    assert answer_chunks(small_store, q, "utt") == [c for c in answer_chunks(small_store, q, "utt") if "\n" not in c]


def test_a_question_without_answer_lines_gives_no_positive(small_store, small_questions):
    from dataclasses import replace

    q = replace(small_questions[0], meta={**small_questions[0].meta, "gold_utterance_ids": []})
    assert answer_chunks(small_store, q, "w3s1") == []


def test_pairs_and_hard_negatives(pairs, small_store, small_questions):
    assert pairs
    by_text = {q.text: q for q in small_questions[:12]}
    gold_texts = {}
    for q in small_questions[:12]:
        doc = small_store.document(q.gold[0])
        gold_texts[q.text] = {c.text for v in ("w3s1", "utt") for c in small_store.doc_chunks(v, doc.doc_id)}
    per_question: dict[str, int] = {}
    for p in pairs:
        assert p.question in by_text
        assert p.positive in gold_texts[p.question]
        assert 0 < len(p.negatives) <= 5
        assert not set(p.negatives) & gold_texts[p.question]  # never a chunk of the gold scene
        per_question[p.question] = per_question.get(p.question, 0) + 1
    assert max(per_question.values()) <= 4  # per_view=2, two views


def test_judged_pairs_take_the_relevant_documents_closest_chunks(small_store, encoder, session_cache, small_questions):
    """Document judgments (BEIR qrels): positives are the relevant documents, highest grade first, each by its chunk
    closest to the question in the widest view; negatives never come from a judged document."""
    from ragfunnel.questions import Question

    assert widest_dense_view(small_store) == "scene"  # one chunk a document
    ids = small_store.doc_ids()
    base = small_questions[0]
    q = Question("j1", base.text, (ids[1],), grades={ids[1]: 1.0, ids[2]: 2.0, ids[3]: 1.0, ids[4]: 0.0})
    unknown = Question("j2", "a question about nothing indexed", ("not-in-the-index",))
    for view in ("scene", "w3s1"):
        pairs = judged_pairs(small_store, encoder, session_cache, [q, unknown], view, per_question=2, pool=6)
        assert [p.question for p in pairs] == [q.text, q.text]  # two positives; none for the unknown document
        chunks = {d: small_store.doc_chunks(view, d) for d in ids[:5]}
        vec = encoder.encode([q.text])[0]
        for pair, doc_id in zip(pairs, (ids[2], ids[1])):  # grade 2 first, then the first of the grade-1 ties by id
            texts = [c.text for c in chunks[doc_id]]
            best = max(texts, key=lambda t: float(encoder.encode([t])[0] @ vec))
            assert pair.positive == best
            judged_texts = {c.text for d in ids[1:5] for c in chunks[d]}
            assert len(pair.negatives) == 6 and not set(pair.negatives) & judged_texts


def test_pairs_file_round_trip(pairs, tmp_path):
    """Each text is stored once; loading gives the same pairs, in order, with `about`."""
    path = tmp_path / "pairs.json.gz"
    save_pairs(pairs, path, {"collection": "friends", "max_passage": 128})
    loaded, about = load_pairs(path)
    assert loaded == list(pairs) and about == {"collection": "friends", "max_passage": 128}
    texts = {t for p in pairs for t in (p.question, p.positive, *p.negatives)}
    assert len(json.loads(__import__("gzip").decompress(path.read_bytes()))["texts"]) == len(texts)
    assert not path.with_name(path.name + ".partial").exists()


@pytest.mark.parametrize("content", [b"", b"not gzip", __import__("gzip").compress(b'{"format": "other"}'),
                                     __import__("gzip").compress(b'{"format": "ragfunnel-embedder-pairs/1"}')])
def test_a_file_that_is_not_a_pairs_file_is_a_one_line_error(tmp_path, content):
    path = tmp_path / "p.json.gz"
    path.write_bytes(content)
    with pytest.raises(RagfunnelError, match="is not a pairs file") as e:
        load_pairs(path)
    assert "\n" not in str(e.value)
    with pytest.raises(RagfunnelError, match="no pairs file"):
        load_pairs(tmp_path / "missing.json.gz")


def test_devices():
    torch = pytest.importorskip("torch")
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(RagfunnelError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RagfunnelError, match="no CUDA GPU"):
            resolve_device("cuda")


def test_no_pairs_is_an_error(tmp_path):
    with pytest.raises(RagfunnelError, match="no training pairs"):
        train_embedder([], tmp_path / "m")


@dataclass
class Tiny:
    path: Path
    meta: dict
    pairs: list[Pair]
    progress: list


@pytest.fixture(scope="module")
def tiny_embedder(pairs, tmp_path_factory):
    out = tmp_path_factory.mktemp("embedder") / "model"
    seen: list = []
    chosen = pairs[:8]
    meta = train_embedder(chosen, out, epochs=2, lr=1e-4, batch_size=4, seed=13, threads=1,
                          progress=lambda d, t: seen.append((d, t)))
    return Tiny(out, meta, chosen, seen)


def test_training_writes_the_bundled_layout(tiny_embedder):
    t = tiny_embedder
    assert (t.path / "onnx" / "model.onnx").is_file() and (t.path / "tokenizer.json").is_file()
    meta = json.loads((t.path / "meta.json").read_text())
    assert meta == t.meta
    assert (meta["kind"], meta["pairs"], meta["steps"], meta["epochs"], meta["batch_size"]) == ("bi_encoder", 8, 4, 2, 4)
    assert len(meta["model_sha256"]) == 64 and meta["train_seconds"] > 0
    assert t.progress == [(i, 4) for i in range(1, 5)]


def test_the_tuned_encoder_loads_without_torch_and_moved_towards_the_positives(tiny_embedder, encoder):
    """Not a quality test (two epochs on eight pairs): on its own training pairs, the positive gains on its hard
    negative relative to the bundled model."""
    tuned = onnx_encoder(tiny_embedder.path)
    assert tuned.model_id.startswith("onnx:" + tiny_embedder.meta["model_sha256"][:16])
    assert tuned.model_id != encoder.model_id
    questions = [p.question for p in tiny_embedder.pairs]
    positives = [p.positive for p in tiny_embedder.pairs]
    negatives = [p.negatives[0] for p in tiny_embedder.pairs]

    def margin(enc) -> float:
        q, pos, neg = enc.encode(questions), enc.encode(positives), enc.encode(negatives)
        assert np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-5)
        return float(np.mean((q * pos).sum(1) - (q * neg).sum(1)))

    assert margin(tuned) > margin(encoder)


def test_an_int8_copy_of_the_tuned_encoder(tiny_embedder, tmp_path):
    """`int8:<dir>` quantises a trained encoder once, beside it, and keys its vectors apart; `tuned-int8` names the
    collection's; its vectors stay close to the fp32 model's."""
    pytest.importorskip("onnx")
    from ragfunnel.collections import encoder_name as _encoder_name
    from ragfunnel.config import load_settings
    from ragfunnel.embedding import embedder_meta

    source = tmp_path / "model"
    __import__("shutil").copytree(tiny_embedder.path, source)
    int8 = make_encoder(f"int8:{source}")
    made = source / "int8" / "onnx" / "model.onnx"
    stamp = made.stat().st_mtime_ns
    assert int8.model_id.startswith("int8:") and int8.model_id.endswith("-256")
    assert make_encoder(f"int8:{source}").model_id == int8.model_id and made.stat().st_mtime_ns == stamp
    assert json.loads((source / "int8" / "meta.json").read_text())["source"] == f"onnx:{source}"
    fp32 = onnx_encoder(source)
    texts = [p.positive for p in tiny_embedder.pairs]
    cosine = (int8.encode(texts) * fp32.encode(texts)).sum(1)
    assert cosine.min() > 0.95 and int8.model_id != fp32.model_id
    assert embedder_meta(f"int8:{source}")["kind"] == "bi_encoder"  # the fp32 model's training record
    settings = load_settings(collection="notes")
    assert _encoder_name("tuned-int8", settings) == f"int8:{settings.embedder_dir}"
    with pytest.raises(ConfigError, match="no encoder at"):
        make_encoder(f"int8:{tmp_path / 'missing'}")


def test_encoder_names():
    assert make_encoder(DEFAULT_MODEL).model_id == f"{DEFAULT_MODEL}-256"
    with pytest.raises(ConfigError, match="ragfunnel train embedder"):
        make_encoder("onnx:/nonexistent/model")
    with pytest.raises(ConfigError, match="onnx:<model dir>"):
        make_encoder("word2vec")


def test_an_index_built_with_the_tuned_encoder_remembers_it(tiny_embedder, tmp_path, monkeypatch):
    """`ragfunnel index --encoder onnx:<dir>`: the manifest keeps the encoder, a later plain `index` finds the
    index up to date (it does not fall back to the bundled model), and search embeds queries with it."""
    from typer.testing import CliRunner

    from ragfunnel.cli import app
    from tests.helpers import TOPICS

    corpus = tmp_path / "tiny.jsonl"
    corpus.write_text("\n".join(json.dumps({
        "scene_id": sid, "episode_title": "Tiny",
        "utterances": [{"utterance_id": f"{sid}_u{i:03d}", "speakers": [] if isinstance(x, str) else x[0].split(" & "),
                        "transcript": x if isinstance(x, str) else x[1], "stage_direction": isinstance(x, str)}
                       for i, x in enumerate(lines, 1)]}) for sid, lines in TOPICS.items()) + "\n")
    runner = CliRunner()
    index = tmp_path / "index"
    name = f"onnx:{tiny_embedder.path}"
    built = runner.invoke(app, ["index", "--corpus", str(corpus), "--index", str(index), "--quiet", "--encoder", name])
    assert built.exit_code == 0, built.output
    manifest = json.loads((index / "manifest.json").read_text())
    assert manifest["settings"]["encoder"] == name
    assert manifest["encoder_model_id"] == onnx_encoder(tiny_embedder.path).model_id
    again = runner.invoke(app, ["index", "--corpus", str(corpus), "--index", str(index), "--quiet"])
    assert again.exit_code == 0 and "up to date" in again.stderr
    found = runner.invoke(app, ["search", "pepperoni pizza", "--index", str(index), "--json", "--k", "1", "--mode", "vector"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["results"][0]["id"] == "s09_e01_c01"
    back = runner.invoke(app, ["index", "--corpus", str(corpus), "--index", str(tmp_path / "back"), "--quiet",
                               "--encoder", "default"])
    assert back.exit_code == 0, back.output
    assert json.loads((tmp_path / "back" / "manifest.json").read_text())["settings"]["encoder"] == DEFAULT_MODEL
    # the reranker's split must be the bi-encoder's, or the hold-out would hold the bi-encoder's training questions
    clash = runner.invoke(app, ["train", "reranker", "--seed", "5", "--index", str(index), "--out", str(tmp_path / "r")])
    assert isinstance(clash.exception, ConfigError) and "--seed 13" in str(clash.exception)
    bad = runner.invoke(app, ["train", "reranker", "--fit-on", "all", "--index", str(index), "--out", str(tmp_path / "r")])
    assert isinstance(bad.exception, ConfigError) and not (tmp_path / "r").exists()
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))  # no `train embedder` model there
    missing = runner.invoke(app, ["index", "--corpus", str(corpus), "--index", str(tmp_path / "other"), "--quiet",
                                  "--encoder", "tuned"])
    assert isinstance(missing.exception, ConfigError) and "ragfunnel train embedder" in str(missing.exception)


def test_pairs_do_not_depend_on_the_index_vectors(pairs, small_store, encoder, session_cache, small_questions,
                                                  monkeypatch):
    """Hard negatives come from the bundled model's vectors (the cache), not from what the index holds, so a retrain
    on an index already re-embedded with a tuned model builds the same pairs."""

    def no_index_vectors(*args, **kwargs):
        raise AssertionError("the index's vectors were used")

    monkeypatch.setattr(small_store, "search_dense", no_index_vectors)
    monkeypatch.setattr(small_store, "doc_vectors", no_index_vectors)
    again = build_pairs(small_store, encoder, session_cache, small_questions[:12], views=("w3s1", "utt"), per_view=2, pool=5)
    assert again == pairs


def test_an_index_whose_encoder_was_retrained(tiny_embedder, small_docs, session_cache, tmp_path):
    """After `train embedder` replaced the model an index was built with, searching that index asks for a rebuild,
    while `train embedder` itself (text only) can still open it."""
    import shutil

    from ragfunnel.embedding import shared_encoder
    from ragfunnel.errors import IndexUnusableError
    from ragfunnel.store import StoreSettings, build_index, open_store

    model = tmp_path / "model"
    shutil.copytree(tiny_embedder.path, model)
    settings = StoreSettings(sparse_views=["w3s1"], dense_views=["w3s1"], encoder=f"onnx:{model}")
    build_index(small_docs[:3], tmp_path / "index", settings, session_cache).close()
    meta = json.loads((model / "meta.json").read_text())
    (model / "meta.json").write_text(json.dumps({**meta, "model_sha256": "f" * 64}))  # as if retrained
    shared_encoder.cache_clear()
    try:
        with pytest.raises(IndexUnusableError, match="rebuild"):
            open_store(tmp_path / "index", session_cache)
        store = open_store(tmp_path / "index", session_cache, check_encoder=False)
        assert store.view_chunks("w3s1") and store.document(small_docs[0].doc_id) is not None
        store.close()
    finally:
        shared_encoder.cache_clear()
