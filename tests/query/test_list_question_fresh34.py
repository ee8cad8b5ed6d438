"""List questions read from the failures of the `fresh34` set (issue 34), each asked here in other words: terse
fragments route as lists ("X mentioned", "anywhere X is brought up", "X said by NAME", "NAME dialogue", "A + B
same scene") while wh-questions stay lookups; "monkies" is the plural of a word in -ey."""

from __future__ import annotations

from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s06_e01_c01", [("Ross Geller", "Two turkeys."), ("Monica Geller", "The turkeys are done."),
                             ("Joey Tribbiani", "Turkeys!")], "One", season=6, episode=1),
    make_doc("s06_e01_c02", [("Chandler Bing", "A bagel."), ("Monica Geller", "Hi.")], "One", season=6, episode=1),
]


def test_terse_fragments_route_as_lists():
    router = Router()
    for question in ("bagels mentioned", "the cooking stuff, basically anywhere turkey is brought up",
                     "turkey said by monica geller", "gunther dialogue", "cake + turkey same scene"):
        assert router.route(question).name == "aggregate", question
    for question in ("What was mentioned?", "Who said by the way?", "Who is Gunther?"):
        assert router.route(question).name != "aggregate", question


def test_a_plural_in_ies_of_a_word_in_ey(store, reader):
    assert reader.read("turkies mentioned").phrase == "turkeys"
    assert list_keys(store, reader, "turkies mentioned") == ["s06_e01_c01"]
