"""Small builders shared by the tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ragfunnel.types import Candidate, Chunk, Document, Hit, Unit


def make_doc(doc_id: str, lines: Sequence[str | tuple[str, str]], title: str = "", **metadata) -> Document:
    """Lines are `(speaker, text)` (speaker may be "A & B") or a bare string for a stage direction."""
    units = []
    for i, line in enumerate(lines, 1):
        uid = f"{doc_id}_u{i:03d}"
        if isinstance(line, str):
            units.append(Unit(uid, line, (), True))
        else:
            speaker, text = line
            units.append(Unit(uid, text, tuple(speaker.split(" & ")) if speaker else (), False))
    return Document(doc_id, title, tuple(units), dict(metadata))


def hit(chunk_id: str, score: float, rank: int, retriever: str = "r") -> Hit:
    return Hit(chunk_id, Chunk.parent_of(chunk_id), score, rank, retriever)


def cands(doc_ids: Sequence[str], scores: Sequence[float] | None = None, name: str = "r") -> list[Candidate]:
    scores = scores if scores is not None else [float(len(doc_ids) - i) for i in range(len(doc_ids))]
    return [
        Candidate(d, s, r, {name: (r, s)}, (f"{d}#w3s1/{r:04d}",))
        for r, (d, s) in enumerate(zip(doc_ids, scores), 1)
    ]


# Eight short scenes, each about one unmistakable topic, for store tests that need to embed little.
TOPICS = {
    "s09_e01_c01": [
        "[Scene: Central Perk]",
        ("Joey Tribbiani", "I ordered a large pizza with extra pepperoni."),
        ("Chandler Bing", "Could this pizza be any greasier?"),
        ("Joey Tribbiani", "Joey doesn't share food!"),
    ],
    "s09_e01_c02": [
        ("Ross Geller", "The dinosaur exhibit at the museum opens on Monday."),
        ("Rachel Green", "Ross, nobody cares about the fossils."),
        ("Ross Geller", "The velociraptor skeleton is incredible though."),
        "(Ross storms off)",
    ],
    "s09_e01_c03": [
        ("Phoebe Buffay", "Smelly cat, smelly cat, what are they feeding you?"),
        ("Phoebe Buffay", "I wrote a new song on my guitar."),
        ("Monica Geller", "It is lovely, Phoebe."),
    ],
    "s09_e01_c04": [
        ("Monica Geller", "The Thanksgiving turkey needs four more hours in the oven."),
        ("Joey Tribbiani", "I put my head inside the turkey."),
        ("Monica Geller & Chandler Bing", "Take it off!"),
        ("Joey Tribbiani", "I can't see anything."),
        "[Scene: Monica's kitchen]",
    ],
    "s09_e01_c05": [
        ("Rachel Green", "I have a job interview at Ralph Lauren tomorrow."),
        ("Monica Geller", "Wear the blue suit for the fashion people."),
    ],
    "s09_e02_c01": [
        ("Chandler Bing", "My boss moved me to Tulsa, Oklahoma."),
        ("Monica Geller", "You fell asleep in the meeting!"),
        ("Chandler Bing", "I was very tired in that meeting."),
    ],
    "s09_e02_c02": [
        ("Ross Geller", "We were on a break!"),
        ("Rachel Green", "You slept with the copy girl."),
        ("Ross Geller", "It was a break, a real break."),
        ("Rachel Green", "Get out of my apartment."),
    ],
    "s09_e02_c03": [
        ("Joey Tribbiani", "My agent Estelle got me an audition for a soap opera."),
        ("Joey Tribbiani", "I'll play a neurosurgeon called Drake Ramoray."),
        ("Phoebe Buffay", "You will be a great doctor on television."),
    ],
}


def topic_docs() -> list[Document]:
    return [make_doc(doc_id, lines, title=f"Episode {doc_id[:7]}") for doc_id, lines in TOPICS.items()]


def write_topics_corpus(path: Path) -> Path:
    """TOPICS as a Friends-format JSONL corpus file (one scene a line), for `ragfunnel index --corpus`."""
    records = []
    for scene_id, lines in TOPICS.items():
        utterances = [
            {"utterance_id": f"{scene_id}_u{i:03d}", "speakers": [] if isinstance(line, str) else line[0].split(" & "),
             "transcript": line if isinstance(line, str) else line[1], "stage_direction": isinstance(line, str)}
            for i, line in enumerate(lines, 1)
        ]
        records.append({"scene_id": scene_id, "episode_title": "Tiny", "utterances": utterances})
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def add_loader(monkeypatch, ext: str, load) -> None:
    """Read files of `ext` with `load` for this test only (a copy of the loader registry, put back after)."""
    from ragfunnel.corpus.loaders import registry

    loaders = registry.LOADERS.copy()
    loaders.register(ext, load, description="a test's loader")
    monkeypatch.setattr(registry, "LOADERS", loaders)


def list_keys(store, reader, question: str, same_word=None) -> list[str]:
    """The keys (scenes, episodes) of the list the aggregation path answers `question` with over `store`."""
    from ragfunnel.query.aggregate import Aggregator

    return [i.key for i in Aggregator(store, same_word=same_word).run(reader.read(question)).items]
