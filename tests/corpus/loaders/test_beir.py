"""The BEIR layout: corpus.jsonl as a container keyed by `_id`, and the judged queries of a split as records of
the evaluation's questions file ({"id", "question", "relevant": {doc id: grade}}); on a small folder written here
and on the real SciFact data when it is there."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders.base import LoaderOptions
from ragfunnel.corpus.loaders.beir import beir_splits, load_beir_corpus, load_beir_queries
from ragfunnel.errors import CorpusError

REPO = Path(__file__).resolve().parents[3]
SCIFACT = Path(os.environ.get("RAGFUNNEL_DATA") or REPO.parent / "shared" / "data").expanduser() / "beir" / "scifact"


def beir_folder(root: Path) -> Path:
    root.mkdir()
    (root / "corpus.jsonl").write_text("\n".join([
        json.dumps({"_id": "d1", "title": "Cells", "text": "Cells divide.", "metadata": {"url": "u1", "n": [1]}}),
        json.dumps({"_id": "d2", "title": "", "text": "Water boils.\n\nAt 100 degrees.", "metadata": {}}),
        "{broken",
        json.dumps({"_id": 3, "title": "Numbers", "text": "Three.", "year": 2001}),
    ]) + "\n", encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "q1", "text": "Do cells divide?", "metadata": {}},
        {"_id": "q2", "text": "When does water boil?"},
        {"_id": 3, "text": "Not judged in test."},
    ]) + "\n", encoding="utf-8")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td2\t2\nq1\td1\t1\nq2\t3\t0\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n3\td1\t1\n")
    return root


def test_corpus_records_keyed_by_id(tmp_path):
    container = load_beir_corpus(beir_folder(tmp_path / "tiny"))
    assert [f.key for f in container.files] == ["d1", "d2", "3"]
    assert container.problems[0].startswith("line 3: not JSON")
    d1, d2, d3 = container.files
    assert (d1.title, d1.text, d1.format, d1.metadata) == ("Cells", "Cells divide.", "beir", {"url": "u1"})
    assert [b.text for b in d2.blocks] == ["Water boils.", "At 100 degrees."]
    assert d3.metadata == {"year": 2001}


def test_queries_of_a_split_with_graded_relevance(tmp_path):
    folder = beir_folder(tmp_path / "tiny")
    assert beir_splits(folder) == ["test", "train"]
    assert load_beir_queries(folder, "test") == [
        {"id": "q1", "question": "Do cells divide?", "relevant": {"d1": 1}},
        {"id": "q2", "question": "When does water boil?", "relevant": {"d2": 2, "3": 0}},
    ]
    assert load_beir_queries(folder, "train") == [{"id": "3", "question": "Not judged in test.", "relevant": {"d1": 1}}]


def test_missing_and_broken_files_are_corpus_errors(tmp_path):
    folder = beir_folder(tmp_path / "tiny")
    with pytest.raises(CorpusError, match=r"dev.tsv: not found \(splits here: test, train\)"):
        load_beir_queries(folder, "dev")
    (folder / "qrels" / "bad.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    with pytest.raises(CorpusError, match="bad.tsv, line 2: not a qrels row"):
        load_beir_queries(folder, "bad")
    (folder / "qrels" / "unknown.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(CorpusError, match="1 judged queries not in queries.jsonl"):
        load_beir_queries(folder, "unknown")
    with pytest.raises(CorpusError, match="corpus.jsonl: not found"):
        load_beir_corpus(tmp_path)
    with pytest.raises(CorpusError, match="larger than 10 bytes"):
        load_beir_corpus(folder, LoaderOptions(max_bytes=10))
    (folder / "corpus.jsonl").write_text("[1]\n")
    with pytest.raises(CorpusError, match="no record loaded"):
        load_beir_corpus(folder)


@pytest.mark.integration
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(), reason="BEIR SciFact not found in shared/data/beir")
def test_scifact():
    container = load_beir_corpus(SCIFACT)
    assert len(container.files) == 5183 and container.problems == ()
    assert len({f.key for f in container.files}) == 5183
    assert all(f.title and f.text for f in container.files)
    queries = load_beir_queries(SCIFACT, "test")
    assert len(queries) == 300
    assert sum(len(q["relevant"]) for q in queries) == 339
    keys = {f.key for f in container.files}
    assert all(doc in keys and grade > 0 for q in queries for doc, grade in q["relevant"].items())
    assert len(load_beir_queries(SCIFACT, "train")) == 809
