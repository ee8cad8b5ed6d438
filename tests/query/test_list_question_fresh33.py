"""List questions read from the failures of the `fresh33` set (issue 34), each asked here in other words: a word no
line writes in the spelling asked is read in the spelling the lines use ("doughnuts": donuts); the words said before
"- said by NAME"; a name in brackets after an ambiguous one says which speaker is meant ("mr geller (jack)"), as a
name right after it does; and "X mentioned which scene" is a list."""

from __future__ import annotations

from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s05_e01_c01", [("Jack Geller", "Hello kids."), ("Judy Geller", "Donuts!"), ("Ross Geller", "No way."),
                             ("Monica Geller", "Hi Jack."), ("Jack Geller", "Monica, Ross!")], "One", season=5, episode=1),
    make_doc("s05_e01_c02", [("Ross Geller", "Two donuts."), ("Monica Geller", "No way!"), ("Judy Geller", "Hi Monica."),
                             ("Monica Geller", "Mom.")], "One", season=5, episode=1),
    make_doc("s05_e02_c01", [("Jack Geller", "No way."), ("Chandler Bing", "A bagel."), ("Judy Geller", "Jack!"),
                             ("Monica Geller", "Dad."), ("Ross Geller", "Dad, Mom.")], "Two", season=5, episode=2),
]


def test_the_spelling_the_lines_use(store, reader):
    assert reader.read("Which scenes mention doughnuts?").phrase == "donuts"


def test_words_said_before_said_by(store, reader):
    question = "no way - said by monica geller, which scenes"
    q = reader.read(question)
    assert (q.phrase, q.speakers) == ("no way", ("Monica Geller",))
    assert list_keys(store, reader, question) == ["s05_e01_c02"]


def test_a_name_in_brackets_says_which_speaker(store, reader):
    for question in ("eps with mr geller (jack) having lines", "scenes where mr. geller, jack, talks"):
        assert reader.read(question).speakers == ("Jack Geller",)
    assert list_keys(store, reader, "scenes where mr. geller, jack, talks") == ["s05_e01_c01", "s05_e02_c01"]


def test_mentioned_which_scene_is_a_list():
    assert Router().route("bagel mentioned which scene").name == "aggregate"
