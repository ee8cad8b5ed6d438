"""Metadata filters read from the question, and the pipeline applying them."""

from __future__ import annotations

import pytest

from ragfunnel.retrieve.filters import MetadataFilter, parse_filter


@pytest.mark.parametrize("question, season, episode", [
    ("Who did Joey have feelings for in season 8?", 8, None),
    ("Who did Joey have feelings for in Season eight?", 8, None),
    ("What happened in the eighth season?", 8, None),
    ("What does Ross say in S08E16?", 8, 16),
    ("what does ross say in s8 e16", 8, 16),
    ("In season 2 episode 5, who pays for dinner?", 2, 5),
    ("What happens in episode 12?", None, 12),
])
def test_parse_filter(question, season, episode):
    assert parse_filter(question) == MetadataFilter(season, episode)


@pytest.mark.parametrize("question", [
    "Who was Joey in love with?", "What is the capital of France?", "Why is it the season of giving?",
    "How many episodes of his soap did Joey film?", "Who sells 8 cookies?",
])
def test_no_filter_without_a_season_or_episode_number(question):
    assert parse_filter(question) is None


def test_matches_compares_only_what_was_named():
    assert MetadataFilter(8).matches({"season": 8, "episode": 3})
    assert not MetadataFilter(8, 16).matches({"season": 8, "episode": 3})
    assert not MetadataFilter(8).matches({})  # a document without the field is not from season 8
    assert MetadataFilter(None, 3).describe() == "episode 3"


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


def test_filters_can_be_switched_off(small_pipeline):
    from ragfunnel.pipeline import Pipeline

    settings = small_pipeline.settings.model_copy(update={"query_filters": False})
    result = Pipeline(settings, store=small_pipeline.store).search("Who is Monica's date in episode 2?", k=20)
    assert not any(s.name == "filter" for s in result.trace.stages)
    assert len({c.doc_id[:8] for c in result.candidates}) > 1
