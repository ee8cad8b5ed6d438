"""List questions read from the failures of the `fresh32` set (issue 34), each asked here in other words: a phrase
typed in capitals in a question in lower case is shouted, as if quoted ("WE WERE ON A BREAK"); "refs" are
references; the router takes "X mentions anywhere in friends", "X refs" and "NAME eps w/ dialogue" (and not "Set in
Central Perk, who ...?")."""

from __future__ import annotations

from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s04_e01_c01", [("Monica Geller", "I know what you did!"), ("Ross Geller", "Chess again."),
                             ("Monica Geller", "I KNOW!")], "One", season=4, episode=1),
    make_doc("s04_e01_c02", [("Monica Geller", "I know."), ("Chandler Bing", "Chess is boring.")], "One", season=4,
             episode=1),
    make_doc("s04_e02_c01", [("Rachel Green", "You know nothing."), ("Monica Geller", "Sure.")], "Two", season=4,
             episode=2),
]


def test_a_phrase_in_capitals_is_shouted(store, reader):
    question = "I KNOW WHAT YOU DID - every scene monica yells it"
    q = reader.read(question)
    assert (q.phrase, q.speakers) == ("i know what you did", ("Monica Geller",))
    assert list_keys(store, reader, question) == ["s04_e01_c01"]


def test_refs_are_references(store, reader):
    assert reader.read("chess refs").phrase == "chess"
    assert list_keys(store, reader, "chess refs") == ["s04_e01_c01", "s04_e01_c02"]


def test_the_router_takes_refs_mentions_anywhere_and_eps_with_dialogue():
    router = Router()
    assert router.route("chess mentions anywhere in friends").name == "aggregate"
    assert router.route("ugly naked guy refs").name == "aggregate"
    assert router.route("emily waltham eps w/ dialogue").name == "aggregate"
    assert router.route("Set in Central Perk, who is the barista?").name != "aggregate"
