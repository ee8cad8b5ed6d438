"""`ragfunnel bench scale` on a tiny generated corpus, on both backends: every chunk's vector comes from the
generated cache (nothing embedded), the 1% filter returns every admitted chunk, exact and ANN agree."""

from __future__ import annotations

import json

import pytest

from ragfunnel.embedding import EmbeddingCache, shared_encoder
from ragfunnel.evaluate.scale import generate, generate_docs_only, run_in_subprocess, run_one
from tests.conftest import CORPUS_FILE


@pytest.mark.parametrize("backend", ["embedded", "postgres"])
def test_scale_run_on_a_tiny_corpus(backend, request, small_index, session_cache, friends_dir, tmp_path):
    dsn = request.getfixturevalue("pg_dsn") if backend == "postgres" else None
    questions = ["Who did Rachel dump at the altar?", "Where does Joey work?", "What does Ross teach?"] * 4
    if backend == "embedded":  # the command's way: the corpus generated in one process, measured in another
        questions_file = tmp_path / "questions.jsonl"
        questions_file.write_text("".join(json.dumps({"question": q}) + "\n" for q in questions))
        result = run_in_subprocess(backend, 300, tmp_path, dsn, session_cache.path, friends_dir / CORPUS_FILE,
                                   questions_file, len(questions))
    else:
        result = run_one(backend, 300, tmp_path, dsn, session_cache.path, friends_dir / CORPUS_FILE, questions)
    assert result["backend"] == backend and result["chunks"] == 300 and result["queries"] == 12
    assert result["fewest_filtered"] == 3  # group 7 of 100: 3 of 300 documents, all of them found
    # HNSW is approximate even on 300 vectors, and usearch's threaded inserts build a slightly different graph on
    # each run (CI once saw 0.975); a broken ANN path would score near 10/300
    assert result["ann_recall@10"] >= 0.9
    # a 300-chunk build may round to 0.0 s on a quiet machine
    assert result["build_s"] >= 0 and result["disk_mb"] >= 0 and result["peak_rss_mb"] > 0
    cache = EmbeddingCache(tmp_path / "cache-300.sqlite")
    assert cache.count(shared_encoder().model_id) == 300  # the generated vectors only: nothing was embedded
    for name in ("bm25", "vector", "hybrid", "hybrid 1% filter"):
        assert result[f"{name} p50"] <= result[f"{name} p99"]


def test_generated_texts_are_reproducible_and_distinct():
    lines = ["how you doin", "we were on a break", "pivot pivot pivot", "could I be any more"]
    a, b = generate_docs_only(50, lines), generate_docs_only(50, lines)
    assert [d.units[0].text for d in a] == [d.units[0].text for d in b]
    assert len({d.units[0].text for d in a}) == 50 and {d.metadata["group"] for d in a} == set(range(50))
    assert callable(generate)
