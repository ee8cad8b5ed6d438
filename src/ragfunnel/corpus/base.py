"""The Corpus protocol: what the funnel needs to know about a collection, whatever it holds.

A corpus
- yields its `Document`s (each a tuple of `Unit`s plus metadata): `documents()`;
- names its labelled question sets: `question_sets()` maps a set name to a loader of `Question`s;
- tells the answer prompt what it is about: `domain` (a `Domain`: the line "about the TV show Friends", what its
  sources are, what an off-topic question looks like);
- labels a document in citations and source blocks: `citation_label(doc)`;
- reads metadata filters from a question: `query_filter(question)` returns the metadata values a question names
  (Friends: `{"season": 8, "episode": 16}` for "in S08E16"), or None. The pipeline searches the index with them
  as an equality filter (`store.filters.Filter.equal`), joined to the user's filter; when no document matches
  them, it searches without them and says so.

`FriendsCorpus` (corpus/friends.py) is one implementation; `BaseCorpus` gives a new one the generic defaults (no question
sets, no filters, the generic domain line), so a corpus of its own is a `documents()` method. Register a factory
under a name in corpus/registry.py; `ragfunnel index` records the name in the index (`StoreSettings.corpus`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ragfunnel.errors import RagfunnelError
from ragfunnel.questions import Question
from ragfunnel.types import Document

QuestionLoader = Callable[[], list[Question]]


@dataclass(frozen=True)
class Domain:
    """How the answer prompt names the corpus: "You answer questions <line> using only the <sources> ("sources")
    in the user's message", and, as the example of a question the sources cannot answer, "<off_topic>"."""

    line: str = "from the user's documents"
    sources: str = "passages"
    off_topic: str = "the passages do not mention it"


GENERIC_DOMAIN = Domain()


@runtime_checkable
class Corpus(Protocol):
    name: str
    domain: Domain

    def documents(self) -> Iterator[Document]:
        """Every document of the corpus, in a stable order."""

    def question_sets(self) -> Mapping[str, QuestionLoader]:
        """Set name -> a loader of its labelled questions (loaded only when called); empty when there are none."""

    def citation_label(self, doc: Document) -> str:
        """How sources and citations name `doc` ("S08E16, Scene 9")."""

    def query_filter(self, question: str) -> dict[str, Any] | None:
        """The metadata values `question` names (e.g. {"season": 8}), or None when it names none."""


class BaseCorpus:
    """The generic defaults: no question sets, no query filters, the generic domain line, the document's label."""

    name = "documents"
    domain = GENERIC_DOMAIN

    def documents(self) -> Iterator[Document]:
        raise NotImplementedError

    def question_sets(self) -> Mapping[str, QuestionLoader]:
        return {}

    def citation_label(self, doc: Document) -> str:
        return doc.label

    def query_filter(self, question: str) -> dict[str, Any] | None:
        return None


class DocumentsCorpus(BaseCorpus):
    """A corpus held in memory: documents, and optionally question sets (name -> questions), a domain and a filter."""

    def __init__(
        self,
        docs: Iterable[Document],
        name: str = "documents",
        question_sets: Mapping[str, list[Question]] | None = None,
        domain: Domain = GENERIC_DOMAIN,
        query_filter: Callable[[str], dict[str, Any] | None] | None = None,
    ):
        self.name, self.domain = name, domain
        self._docs = list(docs)
        self._sets = dict(question_sets or {})
        self._filter = query_filter

    def documents(self) -> Iterator[Document]:
        return iter(self._docs)

    def question_sets(self) -> Mapping[str, QuestionLoader]:
        return {name: (lambda qs=qs: list(qs)) for name, qs in self._sets.items()}

    def query_filter(self, question: str) -> dict[str, Any] | None:
        return self._filter(question) if self._filter else None


def question_set(corpus: Corpus, name: str) -> list[Question]:
    """The questions of one of `corpus`'s sets; an unknown name says which sets there are."""
    sets = corpus.question_sets()
    if name not in sets:
        known = f"choose one of {', '.join(sets)}" if sets else f"the {corpus.name} corpus names none"
        raise RagfunnelError(f"unknown question set {name!r}: {known}, or pass --questions")
    return sets[name]()
