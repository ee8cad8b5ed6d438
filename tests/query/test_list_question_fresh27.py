"""List questions read from the failures of the `fresh27` set (issue 34), each asked here in other words: a memory,
then "every scene with ..." (one scene, every one of them, asks); "a talk show" (a kind of show, not "show me");
"dropping off a casserole" (the particle is no part of the thing); "vibes" is talk about the question; and a quote
"or similar" asks for its rarest word, not the words in a row."""

from __future__ import annotations

import pytest

from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s05_e01_c01", ["[Scene: Central Perk.]", ("Joey Tribbiani", "I'm hosting a talk show!"),
                             ("Chandler Bing", "Well, this is awkward."), ("Monica Geller", "I made a lasagna.")],
             "One", season=5, episode=1),
    make_doc("s05_e01_c02", [("Chandler Bing", "Awkward!"), ("Ross Geller", "Show me the lasagna."),
                             ("Rachel Green", "Pizza and beer tonight?"), ("Joey Tribbiani", "Beer!")], "One", season=5, episode=1),
    make_doc("s05_e02_c01", [("Chandler Bing", "Is this awkward for you?"), ("Phoebe Buffay", "Talk shows are fake."),
                             ("Joey Tribbiani", "Pizza!")], "Two", season=5, episode=2),
]


def test_every_scene_asks_after_a_memory(reader):
    assert reader.read("ok so who was hungry... every scene w/ lasagna pls").phrase == "lasagna"


@pytest.mark.parametrize("question, phrase", [
    ("which scenes mention a talk show?", "talk show"),
    ("joey hosting that thing?? scenes that talk about talk shows", "talk shows"),
    ("i remember someone dropping off a lasagna - find every scene it's mentioned", "lasagna"),
])
def test_a_kind_of_show_and_a_particle(reader, question, phrase):
    assert reader.read(question).phrase == phrase


def test_vibes_name_nothing(reader):
    q = reader.read("pizza AND beer in the same scene, guys night vibes — which ones")
    assert q.relation == "together" and {q.phrase, *q.others} == {"pizza", "beer"}


def test_a_quote_or_similar(store, reader):
    question = "every scene where chandler goes 'this is awkward' or similar"
    q = reader.read(question)
    assert (q.phrase, q.exact, q.speakers) == ("awkward", False, ("Chandler Bing",))
    assert list_keys(store, reader, question) == ["s05_e01_c01", "s05_e01_c02", "s05_e02_c01"]
    assert reader.read("every scene where chandler goes 'this is awkward'").exact  # word for word without it
