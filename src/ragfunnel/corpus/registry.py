"""Corpora by name: `CORPORA` (a `ragfunnel.registry.Registry`) maps a name to a factory(path) -> `Corpus`. The
index records the name it was built from (`StoreSettings.corpus`), so the pipeline finds the corpus's query filters
and prompt domain again.

A new corpus: implement the protocol in corpus/base.py (subclass `BaseCorpus` for the defaults) and
`register_corpus("name", factory, "one-line description")`; `path` is where its data lives (default `<data>/<name>`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragfunnel.corpus.base import Corpus
from ragfunnel.corpus.beir import BeirCorpus
from ragfunnel.corpus.folder import FolderCorpus
from ragfunnel.corpus.friends import FriendsCorpus
from ragfunnel.errors import ConfigError
from ragfunnel.registry import Registry

CorpusFactory = Callable[[Path], Corpus]

CORPORA = Registry("corpus")


def register_corpus(name: str, factory: CorpusFactory, description: str = "", **details: Any) -> None:
    """Add a corpus: `factory(path)` makes it; `details` are the rest of its Entry (the extra it needs...)."""
    CORPORA.register(name, factory, description=description, **details)


register_corpus("friends", FriendsCorpus, "the Friends transcripts: scenes of utterances, with labelled question sets")
register_corpus("files", FolderCorpus, "a folder of your own files, read by the loaders (Markdown, PDF, code...)")
register_corpus("beir", BeirCorpus, "a BEIR dataset: corpus.jsonl with its queries and relevance judgements")


def make_corpus(name: str, path: str | Path) -> Corpus:
    """The corpus `name` with its data at `path` (cheap: nothing is read until asked)."""
    if name not in CORPORA.names():
        raise ConfigError(f"unknown corpus {name!r}: choose one of {', '.join(sorted(CORPORA))}")
    return CORPORA.get(name).factory(Path(path).expanduser())
