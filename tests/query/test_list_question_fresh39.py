"""List questions read from the failures of the `fresh39` set (issue 34), each asked here in other words: of several
parts that ask, the one that asks which scenes is the question ("when X happens everybody brings up Y — which scenes
mention Z"); "both of their names" are the two people named; "goes" / "lets out" before a quote says it, an aside in brackets between; "goes
after Ross" is going somewhere, not a quote; a fragment of a speaker and two words joined by "or" is the speaker saying
either; a name that lines say to one speaker only now and then (Santa) is no nickname of his; "I" and "you" after the
first word of a fragment are words said."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import FriendsCorpus
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s05_e01_c01", [("Chandler Bing", "Tulsa, Oklahoma."), ("Ross Geller", "I swear, Oklahoma!"),
                             ("Rachel Green", "Oops."), ("Rachel Green", "Whoops!"), ("Rachel Green", "Jill, hi.")],
             "One", season=5, episode=1),
    make_doc("s05_e01_c02", [("Jill Green", "Hi Ross."), ("Jill Green", "Rachel!"), ("Jill Green", "Bye."),
                             ("Ross Geller", "Jill? Frank and Alice are here."), ("Joey Tribbiani", "Uh-oh.")],
             "One", season=5, episode=1),
    make_doc("s05_e02_c01", [("Frank Buffay Jr.", "Alice!"), ("Frank Buffay Jr.", "Hi."), ("Frank Buffay Jr.", "Yes."),
                             ("Alice Knight", "Frank."), ("Alice Knight", "Hi."), ("Alice Knight", "Yes."),
                             ("Phoebe Buffay", "Frank, santa is coming for christmas."), ("Phoebe Buffay", "Hi."),
                             ("Phoebe Buffay", "Uh-oh.")], "Two", season=5, episode=2),
    make_doc("s05_e02_c02", [("Monica Geller", "Santa, come here."), ("Chandler Bing", "Ho ho."),
                             ("Monica Geller", "Santa, sit."), ("Chandler Bing", "Ho."), ("Joey Tribbiani", "Uh-oh."),
                             ("Joey Tribbiani", "Christmas!"), ("Monica Geller", "Santa, stand up."),
                             ("Chandler Bing", "Ho ho ho.")], "Two", season=5, episode=2),
    # said to Chandler three times, but "Santa" is mostly the one of Christmas
    *(make_doc(f"s05_e03_c{n:02d}", [("Ross Geller", "Secret Santa again.")], "Three", season=5, episode=3)
      for n in range(1, 31)),
]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(FriendsCorpus.route_examples)


def test_the_part_that_asks_which_scenes_is_the_question(reader):
    question = "when chandler moves to tulsa everybody brings up the state — which scenes mention oklahoma"
    assert reader.read(question).phrase == "oklahoma"


def test_going_after_someone_is_no_quote(reader):
    question = "Rachel's younger sister Jill turns up and goes after Ross - how many scenes mention her by name"
    assert not reader.read(question).exact  # "after Ross" is not read as words said


def test_both_of_their_names_are_the_two_people_named(store, reader):
    question = "Phoebe's brother Frank married his teacher Alice — the scenes where both of their names come up"
    query = reader.read(question)
    assert query.relation == "together" and (query.phrase, query.others) == ("Frank", ("Alice",))
    assert list_keys(store, reader, question) == ["s05_e01_c02", "s05_e02_c01"]


def test_goes_before_a_quote_says_it_an_aside_between(store, reader):
    question = 'find me the scenes where joey (chandler\'s roommate, the actor) goes "uh-oh"'
    assert reader.read(question).speakers == ("Joey Tribbiani",)
    assert list_keys(store, reader, question) == ["s05_e01_c02", "s05_e02_c02"]
    assert reader.read('scenes where rachel lets out an "oops"').speakers == ("Rachel Green",)


def test_a_speaker_and_either_of_two_words(store, reader):
    query = reader.read("rachel oops / whoops")
    assert query.speakers == ("Rachel Green",) and query.phrase == "oops or whoops"
    assert list_keys(store, reader, "rachel oops / whoops") == ["s05_e01_c01"]


def test_a_name_said_to_someone_now_and_then_is_no_nickname(reader):
    query = reader.read("santa + christmas in one scene")
    assert query.relation == "together" and {query.phrase.lower(), *(o.lower() for o in query.others)} == {
        "santa", "christmas"}


def test_i_and_you_after_a_speaker_are_words_said(router):
    assert router.route("ross i swear").name == "aggregate"
    assert router.route("who are you").name != "aggregate"
