"""List questions read from the failures of the `fresh26` set (issue 34), each asked here in other words: "across the
show", "throughout", "which ones" and "they've got" frame the question, they name nothing; "gunther mentions?",
"season 2, mona mentions, which scenes" ask for the mentions of someone, not what they mention; a memory, then ",
plus any other scene where ..." asks after the comma; and the router's "where in the show does ... come up" and
", by scene"."""

from __future__ import annotations

import pytest

from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s02_e01_c01", ["[Scene: Central Perk.]", ("Mona", "I love snakes."), ("Gunther", "Coffee?"),
                             ("Ross Geller", "I quit smoking, my head hurts, headache city.")], "One", season=2, episode=1),
    make_doc("s02_e01_c02", [("Rachel Green", "Gunther is staring."), ("Monica Geller", "Is Mona coming?"),
                             ("Chandler Bing", "One cigarette, then I quit. Skating later?")], "One", season=2, episode=1),
    make_doc("s02_e02_c01", [("Joey Tribbiani", "A snake! Where's Mona?"), ("Phoebe Buffay", "I have a headache."),
                             ("Monica Geller", "Roller skates!")], "Two", season=2, episode=2),
]


@pytest.mark.parametrize("question, phrase", [
    ("snake mentions throughout the series - which scenes?", "snake"),
    ("somebody saying they've got a headache - which scenes", "headache"),
    ("smoking + quitting in the same scene - which ones", "smoking"),
])
def test_frame_words_name_nothing(reader, question, phrase):
    assert reader.read(question).phrase == phrase


def test_the_mentions_of_someone(store, reader):
    for question in ("gunther mentions?", "season 2, mona mentions, which scenes?"):
        q = reader.read(question)
        assert q.relation == "mentions" and q.speakers == () and q.phrase.lower() in ("gunther", "mona")
    assert list_keys(store, reader, "season 2, mona mentions, which scenes?") == ["s02_e01_c02", "s02_e02_c01"]
    q = reader.read("which scenes does Rachel say something Gunther mentions?")  # mentions, not the end of a clause
    assert q.speakers == ("Rachel Green",)


def test_a_memory_then_plus_any_other_scene(store, reader):
    question = "monica on roller skates at the diner, plus any other scene where skating comes up"
    assert reader.read(question).phrase == "skating"
    assert Router().route(question).name == "aggregate"


@pytest.mark.parametrize("question", ["where in the show does the word laser come up, by scene",
                                      "snakes get mentioned, listed by episode"])
def test_the_router_reads_where_in_the_show_and_by_scene(question):
    assert Router().route(question).name == "aggregate"


@pytest.mark.parametrize("question", ["Where in the show does Ross get divorced?", "Who is Rachel dating, by episode 5?"])
def test_lookups_stay_lookups(question):
    assert Router().route(question).name == "lookup"
