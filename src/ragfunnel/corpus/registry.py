"""Corpora by name: name -> factory(path) -> `Corpus`. The index records the name it was built from
(`StoreSettings.corpus`), so the pipeline finds the corpus's query filters and prompt domain again.

A new corpus: implement the protocol in corpus/base.py (subclass `BaseCorpus` for the defaults) and
`register_corpus("name", factory)`; `path` is where its data lives (default `<data>/<name>`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragfunnel.corpus.base import Corpus
from ragfunnel.corpus.beir import BeirCorpus
from ragfunnel.corpus.folder import FolderCorpus
from ragfunnel.corpus.friends import FriendsCorpus
from ragfunnel.errors import ConfigError

CorpusFactory = Callable[[Path], Corpus]

CORPORA: dict[str, CorpusFactory] = {"friends": FriendsCorpus, "files": FolderCorpus, "beir": BeirCorpus}


def register_corpus(name: str, factory: CorpusFactory) -> None:
    CORPORA[name] = factory


def make_corpus(name: str, path: str | Path) -> Corpus:
    """The corpus `name` with its data at `path` (cheap: nothing is read until asked)."""
    factory = CORPORA.get(name)
    if factory is None:
        raise ConfigError(f"unknown corpus {name!r}: choose one of {', '.join(sorted(CORPORA))}")
    return factory(Path(path).expanduser())
