"""List questions read from the failures of the `fresh49` set (issue 34), each asked here in other words and other
targets: "different" episodes are episodes; "that season" points to a season, not back to a target; "I remember he
brings up ..." is a memory when a later part asks; "somebody say 'X'" in the asking part is anyone's lines, whoever
the memory names; and the router: "where else ... does Ross say X", "which scene has a unicorn in it", "the scene
where karaoke comes up" ask for every place (the classifier already says list for the last two)."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import FriendsCorpus
from ragfunnel.query.list_question import _preamble_end
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s05_e01_c01", [("Ross Geller", "I don't understand."), ("Monica Geller", "Twenty bucks, please.")], "One",
             season=5, episode=1),
    make_doc("s05_e02_c01", [("Joey Tribbiani", "Five bucks on red!"), ("Ross Geller", "A uniform?")], "Two", season=5, episode=2),
    make_doc("s05_e03_c01", [("Rachel Green", "I understand the different uniform."), ("Ross Geller", "Bucks.")], "Three", season=5, episode=3),
]


def test_different_episodes_are_episodes(reader):
    query = reader.read("Ross wears his old band uniform. In how many different episodes does a uniform come up?")
    assert (query.phrase, query.relation, query.count) == ("uniform", "mentions", "episodes")


def test_that_season_points_to_a_season_not_a_target(reader):
    assert reader.read("Monica wants her twenty bucks. Where else that season does Ross say understand?").phrase == "understand"


def test_i_remember_tells_a_memory(reader):
    question = "Ross loses the bet. I remember he brings up the money - can you find the scene where a uniform comes up?"
    assert question[_preamble_end(question):].startswith("can you find")
    assert reader.read(question).phrase == "uniform"


def test_somebody_says_is_anyone_whoever_the_memory_names(store, reader):
    question = ("Monica wants her twenty bucks and Ross asks the others to put five bucks on red. In how many different "
                "episodes does somebody say 'bucks'?")
    query = reader.read(question)
    assert (query.phrase, query.speakers, query.count) == ("bucks", (), "episodes")
    assert list_keys(store, reader, question) == ["s05_e01", "s05_e02", "s05_e03"]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(FriendsCorpus.route_examples)


@pytest.mark.parametrize("question", [
    "Season 4 ends with Ross at the airport. Where else that season does Ross say understand?",
    "Phoebe teases Rachel about make-believe things. Which scene has a unicorn in it?",
    "Chandler gets promoted. I remember he brings up a night out - can you find the scene where karaoke comes up?",
])
def test_other_places_and_mentions_asked_for_go_to_the_list(router, question):
    assert router.route(question).name == "aggregate"
