"""List questions read from the failures of the `fresh35` and `fresh36` sets (issue 34), each asked here in other
words: a search-box fragment of a few words with no question word, auxiliary or pronoun routes as a list where a
router was trained (a folder's keyword queries stay ranked searches); a fragment that starts with a speaker and then
gives only the words is that speaker saying them ("ross sorry", "chandler going hey"); a main speaker's name typed
with two letters swapped is that speaker ("rachle"); "any scene" asks for a list; "NAME lines with the word X" are
the speaker's lines, the apostrophe left out; a word one or two lines hold, one letter off a word many lines hold, is
the transcripts' typo for it ("roomate"), unless it is an English word of its own ("alter")."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import FriendsCorpus
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s03_e01_c01", [("Ross Geller", "I'm sorry."), ("Rachel Green", "Sorry about the couch."),
                             ("Chandler Bing", "Hey!")], "One", season=3, episode=1),
    make_doc("s03_e01_c02", [("Ross Geller", "The couch is fine."), ("Chandler Bing", "Hey, the couch."),
                             ("Rachel Green", "Fine.")], "One", season=3, episode=1),
    make_doc("s03_e02_c01", [("Rachel Green", "Hey."), ("Ross Geller", "Hey, sorry."), ("Chandler Bing", "Sorry.")],
             "Two", season=3, episode=2),
    # the transcripts' own typo once ("roomate"), the word meant in 30 lines; "alter" once, "altar" in 30 lines
    make_doc("s03_e03_c01", [("Joey Tribbiani", "My roomate.")], "Three", season=3, episode=3),
    *(make_doc(f"s03_e04_c{n:02d}", [("Joey Tribbiani", "My roommate is at the altar.")], "Four", season=3, episode=4)
      for n in range(1, 31)),
    make_doc("s03_e05_c01", [("Phoebe Buffay", "My alter ego.")], "Five", season=3, episode=5),
]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(FriendsCorpus.route_examples)


def test_search_box_fragments_route_as_lists(router):
    for question in ("couch", "rachel sorry", "season two couch", "couch + sorry", "chandler going hey"):
        assert router.route(question).name == "aggregate", question
    # a question, an auxiliary, a pronoun or a question mark: as before
    # ... or a phrase that describes one moment to find, with an article or a possessive: a ranked search
    for question in ("Who is sorry?", "Ross is angry in season 5 episode 16", "why sorry?", "they sorry",
                     "Where does Ross live?", "Monica's new boyfriend", "the job interview"):
        assert router.route(question).name != "aggregate", question


def test_a_fragment_stays_a_ranked_search_without_a_trained_router():
    assert Router(None).route("warranty descaling").name == "lookup"  # a folder collection's keyword query


def test_a_speaker_then_the_words_is_the_speaker_saying_them(store, reader):
    query = reader.read("ross sorry")
    assert query.speakers == ("Ross Geller",) and query.phrase == "sorry"
    assert list_keys(store, reader, "ross sorry") == ["s03_e01_c01", "s03_e02_c01"]
    assert list_keys(store, reader, "chandler going hey") == ["s03_e01_c01", "s03_e01_c02"]
    # two people run together, a possessive, or a verb: not a speaker saying the words
    assert reader.read("ross rachel sorry").speakers != ("Ross Geller",)
    assert reader.read("ross's couch").speakers == ()


def test_a_main_speaker_typed_with_two_letters_swapped(store, reader):
    assert reader.read("rachle sorry").speakers == ("Rachel Green",)
    assert list_keys(store, reader, "rachle sorry") == ["s03_e01_c01"]


def test_any_scene_asks_for_a_list(router):
    assert router.route("any scene someone talks about the couch").name == "aggregate"


def test_a_speakers_lines_without_the_apostrophe(store, reader):
    query = reader.read("count of ross geller lines with the word sorry")
    assert (query.speakers, query.phrase, query.count) == (("Ross Geller",), "sorry", "lines")


def test_the_transcripts_own_typo_is_read_as_the_word_meant(reader):
    assert reader.read("roomate scenes").phrase == "roommate"
    assert reader.read("which scenes mention an alter ego").phrase != "altar ego"


def test_two_things_in_one_scene_typed_side_by_side(reader):
    for question in ("couch sorry same scene", "scenes where the words couch and sorry both come up"):
        query = reader.read(question)
        assert query.relation == "together" and {query.phrase, *query.others} == {"couch", "sorry"}, question
