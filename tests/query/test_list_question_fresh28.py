"""List questions read from the failures of the `fresh28` set (issue 34), each asked here in other words: a word asked
drawn out ("noooo", quoted or not) is its drawn-out spellings, not the plain word; "she does the long noooo" says
who says it; a role that speaks "with a speaking line", "some waitress says something", "an announcer voice
talking", "announcer speaks in how many eps"; a compound written as one word that the lines write apart
("chickenpox"); and "when does X call someone Y" is a list."""

from __future__ import annotations

import pytest

from ragfunnel.query.aggregate import drawn_out, drawn_spellings
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s06_e01_c01", ["[Scene: Central Perk.]", ("Rachel Green", "Noooo!"), ("Waitress", "More coffee?"),
                             ("Announcer", "And now, the news."), ("Phoebe Buffay", "I had chicken pox.")], "One", season=6, episode=1),
    make_doc("s06_e01_c02", [("Rachel Green", "No."), ("Ross Geller", "Nooo."), ("Monica Geller", "The waitress is rude."),
                             ("Phoebe Buffay", "Thanks, sweetie.")], "One", season=6, episode=1),
    make_doc("s06_e02_c01", [("Rachel Green", "Nooooo, not the chicken pox!"), ("Waitress", "Here you go."),
                             ("Chandler Bing", "Chicken pox again?")], "Two", season=6, episode=2),
]


def test_a_drawn_out_word_is_its_drawn_out_spellings():
    assert drawn_out("noooo").fullmatch("nooooooo") and not drawn_out("noooo").fullmatch("no")
    assert drawn_spellings("nooo")[:2] == ["noo", "nooo"]
    assert drawn_out("no").fullmatch("no")  # a plain word asked is the plain word, drawn out or not


@pytest.mark.parametrize("question", ["In which scenes does Rachel say a long drawn-out \"noooo\"?",
                                      "rachel going nooo, find me those scenes",
                                      "scenes where rachel does the stretched out noooo"])
def test_rachel_drawn_out(store, reader, question):
    q = reader.read(question)
    assert q.exact and q.speakers == ("Rachel Green",)
    assert list_keys(store, reader, question) == ["s06_e01_c01", "s06_e02_c01"]


@pytest.mark.parametrize("question", ["How many episodes have a waitress with a speaking line?",
                                      "number of eps where some waitress (not rachel) says something",
                                      "count the episodes that have an announcer voice talking",
                                      "announcer speaks in how many eps?"])
def test_a_role_that_speaks(reader, question):
    q = reader.read(question)
    assert q.relation == "speaks" and q.speakers in (("Waitress",), ("Announcer",))


def test_a_compound_written_as_one_word(store, reader):
    q = reader.read("pheebs got sick with the pox once right, which scenes bring up chickenpox")
    assert q.phrase == "chicken pox"
    assert list_keys(store, reader, "which scenes mention chickenpox") == ["s06_e01_c01", "s06_e02_c01"]


def test_calling_someone_a_word_is_a_list(reader):
    assert Router().route("when does Phoebe call someone sweetie").name == "aggregate"
    q = reader.read("when does Phoebe call someone sweetie")
    assert (q.phrase, q.speakers) == ("sweetie", ("Phoebe Buffay",))
    assert Router().route("When did Joey call Chandler?").name == "lookup"
