"""List questions read from the failures of the `fresh29` set (issue 34), each asked here in other words: "... find me
every scene that mentions it" after a memory that names a person and a thing ("it" is the thing); "what scenes does
he actually say richard" (the name said, by the one person named besides it); and "X comes up, where exactly?" is a
list."""

from __future__ import annotations

from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s07_e01_c01", ["[Scene: Central Perk.]", ("Phoebe Buffay", "Yoga is my thing."),
                             ("Chandler Bing", "Richard is here."), ("Monica Geller", "A cappuccino, please.")],
             "One", season=7, episode=1),
    make_doc("s07_e01_c02", [("Ross Geller", "Richard called."), ("Chandler Bing", "I do yoga now."),
                             ("Rachel Green", "Hi Chandler.")], "One", season=7, episode=1),
    make_doc("s07_e02_c01", [("Chandler Bing", "Hi."), ("Phoebe Buffay", "Chandler!"), ("Chandler Bing", "Bye.")],
             "Two", season=7, episode=2),
]


def test_it_is_the_thing_not_the_person(store, reader):
    question = "i feel like Phoebe would bring up yoga at some point, find me every scene that mentions it"
    assert reader.read(question).phrase == "yoga"
    assert list_keys(store, reader, question) == ["s07_e01_c01", "s07_e01_c02"]


def test_the_name_he_says(store, reader):
    question = "Chandler being jealous of Richard, what scenes does he actually say Richard"
    q = reader.read(question)
    assert (q.phrase, q.speakers) == ("Richard", ("Chandler Bing",))
    assert list_keys(store, reader, question) == ["s07_e01_c01"]


def test_comes_up_where_exactly_is_a_list():
    assert Router().route("they're always at a coffee house so surely cappuccino comes up, where exactly?").name == "aggregate"
