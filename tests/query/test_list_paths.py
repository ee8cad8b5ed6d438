"""The list path end to end: a list question nothing matches gets the ranked list (said to be one), `search` is never
empty while the index matches, whatever the router says; and the same path over a folder collection."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragfunnel.cli import app
from ragfunnel.pipeline import RANKED_FALLBACK_K
from ragfunnel.present import search as present_search

runner = CliRunner()


def test_a_list_question_nothing_matches_gets_the_ranked_list_and_says_so(small_pipeline):
    r = small_pipeline.search("Which scenes mention the hoverboard?", k=5, route="aggregate")
    agg = r.aggregate
    assert agg is not None and agg.exhaustive is False and agg.count is None
    assert len(r.candidates) == 5
    n = min(RANKED_FALLBACK_K, len(small_pipeline.store.doc_ids()))
    assert [i.key for i in agg.items][:5] == [c.doc_id for c in r.candidates] and len(agg.items) == n
    assert all(i.score is not None and i.matches and i.matches[0].how == "ranked" for i in agg.items)
    assert any("not an exhaustive one" in note for note in r.trace.notes)
    assert "ranked list, not an exhaustive one" in agg.answer() and "No line matches" not in agg.answer()
    response = present_search(small_pipeline, "How many scenes mention the hoverboard?", k=3, route="aggregate")
    assert response.exhaustive is False and response.count is None and len(response.results) == 3
    assert response.items and all(item.score is not None for item in response.items)


def test_an_exhaustive_list_says_it_is_one(small_pipeline):
    response = present_search(small_pipeline, "In how many scenes does Monica say \"Rachel\"?", k=3, route="auto")
    assert response.route == "aggregate" and response.exhaustive is True and response.count == len(response.items) == 4
    assert all(item.score is None for item in response.items)


@pytest.mark.parametrize("route", ["auto", "aggregate", "lookup"])
def test_search_returns_k_results_whatever_the_router_says(small_pipeline, route):
    # the case, on the small index's episodes: a description, not a list; routed to aggregate it used to
    # return nothing at all
    r = small_pipeline.search("Ross is angry in season 1 episode 2", k=5, route=route)
    assert len(r.candidates) == 5
    assert all(c.doc_id.startswith("s01_e02") for c in r.candidates)


def write_folder(root):
    docs = root / "kitchen"
    (docs / "machines").mkdir(parents=True)
    (docs / "espresso.txt").write_text("Descale the espresso machine every month with Durgol.\n\nUse filtered water.\n")
    (docs / "machines" / "kettle.txt").write_text("The kettle scales up quickly.\n\nA spoon of Durgol fixes it.\n")
    (docs / "oven.txt").write_text("Preheat the oven to 200 degrees for bread.\n")
    (docs / "grinder.txt").write_text("Grind the beans just before brewing.\n\nThe descaler is not for grinders.\n")
    (docs / "notes.txt").write_text("Shopping: beans, Durgol, flour.\n")
    return docs


def test_list_questions_over_a_folder_return_every_matching_document(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    docs = write_folder(tmp_path)
    indexed = runner.invoke(app, ["index", str(docs), "--collection", "kitchen", "--json", "-q"])
    assert indexed.exit_code == 0, indexed.output

    def search(question):
        res = runner.invoke(app, ["search", question, "--collection", "kitchen", "--json", "--k", "2"])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    found = search("Which documents mention Durgol?")
    assert found["route"] == "aggregate" and found["exhaustive"] is True
    assert sorted(i["id"] for i in found["items"]) == ["espresso.txt", "machines/kettle.txt", "notes.txt"]  # not k=2
    assert all("durgol" in c["quote"].lower() and c["id"] == i["id"] for i in found["items"] for c in i["citations"])
    counted = search("How many files talk about the descaler?")
    assert counted["route"] == "aggregate" and counted["count"] == 1 and [i["id"] for i in counted["items"]] == ["grinder.txt"]
    ranked = search("Which documents mention the espresso tamper?")  # no line holds it: the ranked list instead
    assert ranked["exhaustive"] is False and ranked["items"] and ranked["results"]


def test_a_speaker_known_only_by_a_description_is_asked_of_the_scenes(small_pipeline):
    # nobody in the question is the one who speaks: Monica is named only to describe him
    r = small_pipeline.search("the guy monica dates who says he has not been able to perform since his divorce - "
                              "which scenes does he talk in", k=5, route="aggregate")
    agg = r.aggregate
    assert agg is not None and agg.query.speakers == ("Paul the Wine Guy",) and agg.exhaustive
    assert {i.key for i in agg.items} == {"s01_e01_c02", "s01_e01_c05", "s01_e01_c08", "s01_e01_c11"}
    assert any("describes its speaker" in note for note in r.trace.notes), r.trace.notes
    # a minor speaker named before the pronoun is the one who speaks, not whoever the scenes suggest
    r = small_pipeline.search("Franny, the friend who comes by the restaurant - which scenes does she talk in",
                              k=5, route="aggregate")
    assert r.aggregate is not None and r.aggregate.query.speakers == ("Franny",)


def test_a_broad_list_that_leaves_words_unread_is_the_ranked_list(small_pipeline):
    # read as every line naming Ross (most of the collection), "dinosaurs" left unread: the ranked list, saying why
    # ("ross: dinosaurs" is a transcript's line, Ross saying it; with a dash the two words are read apart)
    r = small_pipeline.search("ross - dinosaurs", k=5, route="aggregate")
    agg = r.aggregate
    assert agg is not None and agg.exhaustive is False and agg.count is None
    assert "'dinosaurs' unread" in agg.answer() and "Nothing matched" not in agg.answer()
    assert any("unread" in note and "not an exhaustive one" in note for note in r.trace.notes)
    # as broad, but every word read: the exhaustive list and its count
    r = small_pipeline.search("How many lines does Rachel have?", k=5, route="aggregate")
    assert r.aggregate.exhaustive is True and r.aggregate.count == r.aggregate.lines > 0
