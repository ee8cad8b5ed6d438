"""Metadata filters read from the question (the Friends corpus's season/episode parser), and the pipeline applying
them."""

from __future__ import annotations

import pytest

from ragfunnel.corpus import DocumentsCorpus
from ragfunnel.corpus.friends import FriendsCorpus, parse_season_episode
from ragfunnel.retrieve.filters import MetadataFilter


@pytest.mark.parametrize("question, season, episode", [
    ("Who did Joey have feelings for in season 8?", 8, None),
    ("Who did Joey have feelings for in Season eight?", 8, None),
    ("What happened in the eighth season?", 8, None),
    ("What does Ross say in S08E16?", 8, 16),
    ("what does ross say in s8 e16", 8, 16),
    ("In season 2 episode 5, who pays for dinner?", 2, 5),
    ("What happens in episode 12?", None, 12),
])
def test_friends_reads_season_and_episode(question, season, episode):
    wanted = parse_season_episode(question)
    assert MetadataFilter.of(wanted) == MetadataFilter.where(season=season, episode=episode)
    assert FriendsCorpus("unused").query_filter(question) == wanted


@pytest.mark.parametrize("question", [
    "Who was Joey in love with?", "What is the capital of France?", "Why is it the season of giving?",
    "How many episodes of his soap did Joey film?", "Who sells 8 cookies?",
])
def test_no_filter_without_a_season_or_episode_number(question):
    assert parse_season_episode(question) is None


def test_matches_compares_only_what_was_named():
    assert MetadataFilter.where(season=8).matches({"season": 8, "episode": 3})
    assert not MetadataFilter.where(season=8, episode=16).matches({"season": 8, "episode": 3})
    assert not MetadataFilter.where(season=8).matches({})  # a document without the field is not from season 8
    assert MetadataFilter.where(season=None, episode=3).describe() == "episode 3"
    assert MetadataFilter.of({"season": 8, "episode": 16}).describe() == "season 8, episode 16"


def test_any_metadata_key_can_be_filtered():
    wanted = MetadataFilter.of({"author": "Ada", "year": 1843})
    assert wanted.matches({"author": "Ada", "year": 1843, "title": "Notes"})
    assert not wanted.matches({"author": "Ada", "year": 1842})
    assert wanted.describe() == "author Ada, year 1843"


def test_nothing_named_is_no_filter():
    assert MetadataFilter.of(None) is None and MetadataFilter.of({}) is None
    assert MetadataFilter.where(season=None) is None


def test_the_pipeline_keeps_only_the_named_episode(small_pipeline):
    plain = small_pipeline.search("Who is Monica's date?", k=20)
    assert {c.doc_id[:8] for c in plain.candidates} > {"s01_e02_"}  # several episodes without the filter
    filtered = small_pipeline.search("Who is Monica's date in episode 2?", k=20)
    assert filtered.candidates and {c.doc_id[:8] for c in filtered.candidates} == {"s01_e02_"}
    assert [c.rank for c in filtered.candidates] == list(range(1, len(filtered.candidates) + 1))
    (stage,) = [s for s in filtered.trace.stages if s.name == "filter"]
    assert stage.detail["filter"] == "episode 2" and stage.detail["after"] < stage.detail["before"]


def test_a_filter_nothing_matches_is_not_applied(small_pipeline):
    result = small_pipeline.search("Who is Monica's date in season 9?", k=5)
    assert len(result.candidates) == 5
    assert any("season 9" in n and "not applied" in n for n in result.trace.notes)


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
    assert stage.detail["filter"] == "episode 4" and {c.doc_id[:8] for c in custom.candidates} == {"s01_e04_"}


def test_filters_can_be_switched_off(small_pipeline):
    from ragfunnel.pipeline import Pipeline

    settings = small_pipeline.settings.model_copy(update={"query_filters": False})
    result = Pipeline(settings, store=small_pipeline.store).search("Who is Monica's date in episode 2?", k=20)
    assert not any(s.name == "filter" for s in result.trace.stages)
    assert len({c.doc_id[:8] for c in result.candidates}) > 1
