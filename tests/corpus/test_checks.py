"""Checks before indexing (issue 21.2, 21.6): long units split and long documents cut (reported), duplicate ids an
error naming both places or a choice, field type errors naming file, line and field."""

from __future__ import annotations

import json

import pytest

from ragfunnel.corpus.checks import limit_lengths, unique_documents
from ragfunnel.corpus.friends import load_friends
from ragfunnel.errors import CorpusError
from tests.helpers import make_doc


def test_a_long_unit_is_split_and_reported():
    doc = make_doc("d1", [("Ross", "a" * 25), ("Rachel", "short")])
    (out,), notes = limit_lengths([doc], max_unit_chars=10, max_document_chars=1000)
    assert [u.text for u in out.units] == ["a" * 10, "a" * 10, "a" * 5, "short"]
    assert [u.unit_id for u in out.units][:3] == ["d1_u001", "d1_u001~2", "d1_u001~3"]
    assert all(u.speakers == ("Ross",) for u in out.units[:3])
    assert notes == ["d1_u001: 25 characters, split into 3 parts of at most 10"]


def test_a_long_document_is_cut_and_reported():
    doc = make_doc("d1", [("A", "x" * 8)] * 5)
    (out,), notes = limit_lengths([doc], max_unit_chars=100, max_document_chars=20)
    assert sum(len(u.text) for u in out.units) == 20 and len(out.units) == 3
    assert notes == ["d1: over 20 characters; its last 2 unit(s) were left out"]


def test_documents_within_the_limits_are_the_same_objects():
    doc = make_doc("d1", [("A", "hello")])
    (out,), notes = limit_lengths([doc], 100, 1000)
    assert out is doc and notes == []


def test_a_duplicate_id_names_both_places_or_keeps_one():
    a, b = make_doc("s1", [("A", "first")]), make_doc("s1", [("A", "second")])
    pairs = [(a, "f.jsonl, line 3"), (make_doc("s2", [("A", "x")]), "f.jsonl, line 4"), (b, "f.jsonl, line 9")]
    with pytest.raises(CorpusError, match=r"'s1' appears twice: f.jsonl, line 3 and f.jsonl, line 9"):
        unique_documents(pairs)
    assert [d.units[0].text for d in unique_documents(pairs, "keep-first") if d.doc_id == "s1"] == ["first"]
    assert [d.units[0].text for d in unique_documents(pairs, "keep-last") if d.doc_id == "s1"] == ["second"]
    assert [d.doc_id for d in unique_documents(pairs, "keep-last")] == ["s1", "s2"]


def scene(scene_id="s01_e01_c01", **utterance):
    u = {"utterance_id": f"{scene_id}_u001", "speakers": ["Ross Geller"], "transcript": "hi", **utterance}
    return {"scene_id": scene_id, "utterances": [u]}


@pytest.mark.parametrize("utterance, says", [
    ({"speakers": "Ross Geller"}, "field 'speakers' of utterance s01_e01_c01_u001 must be a list of names, not a string"),
    ({"speakers": 7}, "must be a list of names, not int"),
    ({"transcript": ["hi"]}, "field 'transcript of s01_e01_c01_u001' must be a string, not list"),
    ({"speakers": ["Ross", 3]}, "field 'speakers of s01_e01_c01_u001' must be a string, not int"),
])
def test_type_errors_name_file_line_and_field(tmp_path, utterance, says):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(scene("s01_e01_c02")) + "\n" + json.dumps(scene(**utterance)) + "\n")
    with pytest.raises(CorpusError) as err:
        load_friends(path)
    assert f"{path}, line 2" in str(err.value) and says in str(err.value)


def test_located_friends_documents_say_where_they_are(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(scene("s01_e01_c02")) + "\n\n" + json.dumps(scene()) + "\n")
    assert [(d.doc_id, where) for d, where in load_friends(path, located=True)] == [
        ("s01_e01_c02", f"{path}, line 1"), ("s01_e01_c01", f"{path}, line 3")]
