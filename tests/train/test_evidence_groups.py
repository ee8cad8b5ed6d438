"""Training groups of the line cross-encoder (train/evidence.line_groups): the gold line first, negatives from its
scene (not its neighbours) and from other scenes of the episode, each read as `line_passage`."""

from __future__ import annotations

from ragfunnel.generate.evidence import line_passage
from ragfunnel.questions import Question
from ragfunnel.train.evidence import line_groups
from ragfunnel.types import Document, Unit


def scene(doc_id: str, n: int) -> Document:
    return Document(doc_id, "t", tuple(Unit(f"{doc_id}_u{i:03d}", f"line {doc_id} {i}", ("Ross Geller",)) for i in range(n)))


def test_line_groups():
    docs = {d.doc_id: d for d in (scene("s01_e01_c01", 10), scene("s01_e01_c02", 6), scene("s01_e02_c01", 6))}
    q = Question("q1", "Who?", ("s01_e01_c01",), ("x",), {"gold_utterance_ids": ["s01_e01_c01_u004"]})
    (group,) = line_groups(docs.get, [q, Question("q2", "Lost?", ("nowhere",), ())], negatives=7)
    first = docs["s01_e01_c01"].units
    assert group.question == "Who?" and group.passages[0] == line_passage(first[4].render(), first[3].render(), first[5].render())
    assert len(group.passages) == 8 and len(set(group.passages)) >= 6
    same = [p for p in group.passages[1:] if p.startswith("Ross Geller: line s01_e01_c01 ")]
    assert len(same) == 4 and not any(p.startswith(("Ross Geller: line s01_e01_c01 3 ", "Ross Geller: line s01_e01_c01 5 ")) for p in same)
    others = [p for p in group.passages[1:] if "s01_e01_c02" in p.split(" || ")[0]]
    assert len(others) == 3 and not any("s01_e02" in p.split(" || ")[0] for p in group.passages)  # same episode only
