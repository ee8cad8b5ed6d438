"""Filters in the pipeline: the user's (`where=`) and the ones read from the question (the Friends corpus's
season/episode parser) go into the index together; what the question names is dropped when nothing matches it,
the user's filter never is."""

from __future__ import annotations

import pytest

from ragfunnel.corpus import DocumentsCorpus
from ragfunnel.corpus.friends import FriendsCorpus, parse_season_episode
from ragfunnel.store.filters import Filter


@pytest.mark.parametrize("question, season, episode", [
    ("Who did Joey have feelings for in season 8?", 8, None),
    ("Who did Joey have feelings for in Season eight?", 8, None),
    ("What happened in the eighth season?", 8, None),
    ("What does Ross say in S08E16?", 8, 16),
    ("what does ross say in s8 e16", 8, 16),
    ("In season 2 episode 5, who pays for dinner?", 2, 5),
    ("What happens in episode 12?", None, 12),
    ("S3 scenes where the understudy Lauren talks", 3, None),
    ("Which scenes of the final season mention adoption?", 10, None),
    ("what happened in the last season", 10, None),
])
def test_friends_reads_season_and_episode(question, season, episode):
    wanted = parse_season_episode(question)
    assert Filter.equal(wanted) == Filter.equal({"season": season, "episode": episode})
    assert FriendsCorpus("unused").query_filter(question) == wanted


@pytest.mark.parametrize("question", [
    "Who was Joey in love with?", "What is the capital of France?", "Why is it the season of giving?",
    "How many episodes of his soap did Joey film?", "Who sells 8 cookies?",
])
def test_no_filter_without_a_season_or_episode_number(question):
    assert parse_season_episode(question) is None


def test_the_pipeline_keeps_only_the_named_episode(small_pipeline):
    plain = small_pipeline.search("Who is Monica's date?", k=20)
    assert {c.doc_id[:8] for c in plain.candidates} > {"s01_e02_"}  # several episodes without the filter
    filtered = small_pipeline.search("Who is Monica's date in episode 2?", k=20)
    episode_2 = sum(1 for d in small_pipeline.store.doc_ids() if d.startswith("s01_e02_"))  # 11 scenes
    assert len(filtered.candidates) == episode_2 and {c.doc_id[:8] for c in filtered.candidates} == {"s01_e02_"}
    assert [c.rank for c in filtered.candidates] == list(range(1, len(filtered.candidates) + 1))
    (stage,) = [s for s in filtered.trace.stages if s.name == "filter"]
    assert stage.detail["filter"] == "episode=2" and stage.detail["documents"] == episode_2
    for name, hits in filtered.lists.items():  # inside the index: every retriever's list holds only episode 2
        assert hits and {c.doc_id[:8] for c in hits} == {"s01_e02_"}, name


def test_a_question_filter_nothing_matches_is_dropped(small_pipeline):
    result = small_pipeline.search("Who is Monica's date in season 9?", k=5)
    assert len(result.candidates) == 5
    assert any("season=9" in n and "searched without it" in n for n in result.trace.notes)
    (stage,) = [s for s in result.trace.stages if s.name == "filter"]
    assert stage.detail["dropped"] == "season=9" and stage.detail["filter"] is None


def test_the_users_filter_holds_and_joins_the_questions(small_pipeline):
    where = Filter.parse("episode in 1,4")
    result = small_pipeline.search("Who is Monica's date?", k=10, where=where)
    assert len(result.candidates) == 10 and {c.doc_id[:8] for c in result.candidates} == {"s01_e01_", "s01_e04_"}
    both = small_pipeline.search("Who is Monica's date in episode 4?", k=10, where=where)
    assert {c.doc_id[:8] for c in both.candidates} == {"s01_e04_"}
    (stage,) = [s for s in both.trace.stages if s.name == "filter"]
    assert stage.detail["filter"] == "episode in 1,4, episode=4" and stage.detail["from_question"] == "episode=4"
    # the question names episode 2, the user wants 1 or 4: nothing matches both, so the question's guess goes
    conflict = small_pipeline.search("Who is Monica's date in episode 2?", k=10, where=where)
    assert conflict.candidates and {c.doc_id[:8] for c in conflict.candidates} <= {"s01_e01_", "s01_e04_"}
    assert any("searched without it" in n for n in conflict.trace.notes)


def test_a_users_filter_nothing_matches_returns_nothing(small_pipeline):
    result = small_pipeline.search("Who is Monica's date?", k=5, where=Filter.parse("season=9"))
    assert result.candidates == [] and any("no document matches the filter season=9" in n for n in result.trace.notes)


def test_the_filter_parser_comes_from_the_corpus(small_pipeline):
    """A corpus without a query-filter parser (the generic default) filters nothing; one with its own parser decides."""
    from ragfunnel.pipeline import Pipeline

    question = "Who is Monica's date in episode 2?"
    plain = Pipeline(small_pipeline.settings, store=small_pipeline.store, corpus=DocumentsCorpus([]))
    assert small_pipeline.corpus.name == "friends"  # the small index was built from Friends
    result = plain.search(question, k=20)
    assert not any(s.name == "filter" for s in result.trace.stages) and len({c.doc_id[:8] for c in result.candidates}) > 1
    own = DocumentsCorpus([], query_filter=lambda q: {"episode": 4} if "four" in q else None)
    custom = Pipeline(small_pipeline.settings, store=small_pipeline.store, corpus=own).search(
        "Who is Monica's date in part four?", k=20)
    (stage,) = [s for s in custom.trace.stages if s.name == "filter"]
    assert stage.detail["filter"] == "episode=4" and {c.doc_id[:8] for c in custom.candidates} == {"s01_e04_"}


def test_filters_can_be_switched_off(small_pipeline):
    from ragfunnel.pipeline import Pipeline

    settings = small_pipeline.settings.model_copy(update={"query_filters": False})
    result = Pipeline(settings, store=small_pipeline.store).search("Who is Monica's date in episode 2?", k=20)
    assert not any(s.name == "filter" for s in result.trace.stages)
    assert len({c.doc_id[:8] for c in result.candidates}) > 1


def test_an_episode_named_by_its_title_is_a_filter(small_pipeline):
    question = "Who is Monica's date in The One with the Sonogram at the End?"
    assert small_pipeline.named_filter(question) == {"season": 1, "episode": 2}
    result = small_pipeline.search(question, k=20)
    assert result.candidates and {c.doc_id[:8] for c in result.candidates} == {"s01_e02_"}
    # in lower case after "in", as people type it; a title-like phrase in a sentence is none
    assert small_pipeline.named_filter("what happens in the one with george stephanopoulos") == {"season": 1, "episode": 4}
    assert small_pipeline.named_filter("Who is the one with george stephanopoulos on the phone?") is None
    assert small_pipeline.named_filter("Who is the pilot?") is None  # a title of fewer than four words
