"""A BEIR folder as a corpus (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`): the collection `beir-<name>`.

Document ids are BEIR's own `_id`s, so the qrels judge them as they are. A BEIR document is a short text (an
abstract, a passage); its units are the title and the sentences of its text, so that sentence windows (`w3s1`) and
single sentences (`utt`) are views that mean something (whole paragraphs as units would make them all one chunk).
Each judged split is a question set (`test`, `dev`, `train`), graded as qrels grade them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from ragfunnel.corpus.base import BaseCorpus, Domain, QuestionLoader
from ragfunnel.corpus.loaders.base import LoadedFile
from ragfunnel.corpus.loaders.beir import beir_splits, load_beir_corpus, load_beir_queries
from ragfunnel.questions import Question, question_from_record
from ragfunnel.types import Document, Unit

# a sentence ends at . ! ? followed by space and a capital, digit or bracket: abbreviations inside ("e.g. the")
# and decimals stay in their sentence
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def sentences(text: str) -> list[tuple[str, int, int]]:
    """(sentence, start, end) of `text`, character offsets into it."""
    out, pos = [], 0
    for match in [*_SENTENCE_END.finditer(text), None]:
        end = match.start() if match else len(text)
        piece = text[pos:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            out.append((stripped, pos + lead, pos + lead + len(stripped)))
        pos = match.end() if match else pos
    return out


def beir_document(record: LoadedFile) -> Document:
    """One record as a document: the title (when there is one) and the sentences of its text as units; a
    sentence's offsets are in the record's text (its paragraphs joined, as `LoadedFile` holds it)."""
    doc_id = str(record.key)
    units: list[Unit] = [Unit(f"{doc_id}:0000", record.title)] if record.title else []
    for block in record.blocks:
        for text, start, end in sentences(block.text):
            units.append(Unit(f"{doc_id}:{len(units) + 1:04d}", text, start=block.start + start, end=block.start + end))
    metadata = {k: v for k, v in record.metadata.items() if k not in ("path", "format", "label")}
    metadata.update(format="beir", label=f"{doc_id} {record.title}".strip()[:100])
    return Document(doc_id, record.title or doc_id, tuple(units), metadata)


class BeirCorpus(BaseCorpus):
    """The documents of a BEIR folder and its judged splits as question sets."""

    name = "beir"
    domain = Domain(line="from the documents of a BEIR collection", sources="documents")

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).expanduser()

    def documents(self) -> Iterator[Document]:
        container = load_beir_corpus(self.folder)
        return (beir_document(f) for f in container.files)

    def question_sets(self) -> Mapping[str, QuestionLoader]:
        return {split: (lambda s=split: self.questions(s)) for split in beir_splits(self.folder)}

    def questions(self, split: str) -> list[Question]:
        return [question_from_record(r, r["id"]) for r in load_beir_queries(self.folder, split)]
