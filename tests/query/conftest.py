"""The list-question test modules share one shape: a module's `DOCS` indexed once, and a list-question reader over
that index (its relation classifier cached beside it). A module that needs another index defines its own `store`."""

from __future__ import annotations

import pytest

from ragfunnel.query.list_question import ListQuestionReader, RelationModel
from ragfunnel.query.vocabulary import Vocabulary
from ragfunnel.store import StoreSettings, build_index


@pytest.fixture(scope="module")
def store(request, session_cache, tmp_path_factory):
    s = build_index(request.module.DOCS, tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]) / "index",
                    StoreSettings(), session_cache)
    yield s
    s.close()


@pytest.fixture(scope="module")
def reader(store, tmp_path_factory):
    cache = tmp_path_factory.mktemp("list-reader-cache")
    return ListQuestionReader(Vocabulary(store, "utt", cache=cache), RelationModel(cache_dir=cache))
