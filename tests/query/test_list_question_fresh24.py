"""List questions read from the failures of the `fresh24` set (issue 34), each asked here in other words: "the final
season" / "the last season" (the tenth); a word typed with a letter doubled in the wrong place ("hannukah",
"tomatto"); "his own job" (own is no target); "snores or complains about ..." (complaining is how it is said, not
what); and a word made from the same stem as the asked one, when the bundled
encoder agrees they mean the same (adoption ~ adopted, but apartment is no apart)."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import parse_season_episode
from ragfunnel.embedding import shared_encoder
from ragfunnel.query.vocabulary import SameWord, named_action
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s10_e01_c01", ["[Scene: Central Perk.]", ("Monica Geller", "We want to adopt a baby."),
                             ("Chandler Bing", "My boss called about Hanukkah."), ("Ross Geller", "Tomatoes again?")],
             "One", season=10, episode=1),
    make_doc("s10_e02_c01", ["[Scene: The adoption agency.]", ("Monica Geller", "The adoption people are late."),
                             ("Chandler Bing", "Tell them we're a couple, not apart.")], "Two", season=10, episode=2),
    make_doc("s09_e01_c01", [("Rachel Green", "Adopted? Emma is not adopted."), ("Joey Tribbiani", "Nice apartment."),
                             ("Chandler Bing", "I hate my job."), ("Ross Geller", "Happy Hanukkah!"), ("Joey Tribbiani", "He snores.")], "Three", season=9,
             episode=1),
]



@pytest.mark.parametrize("question", ["Which scenes of the final season mention adoption?",
                                      "in the last season, where does adopting come up"])
def test_the_final_season_is_the_tenth_and_no_target(reader, question):
    assert parse_season_episode(question) == {"season": 10}
    assert reader.read(question).phrase in ("adoption", "adopting")


def test_a_letter_doubled_in_the_wrong_place_is_a_typo(reader):
    assert reader.read("eps where hannukah comes up").phrase == "hanukkah"
    assert reader.read("which scenes talk about tomatto?").phrase == "tomato"


def test_own_is_no_target(reader):
    q = reader.read("List the scenes where Chandler mentions his own job or boss.")
    assert q.speakers == ("Chandler Bing",) and {" ".join(f) for f in q.target_forms(0)} >= {"job", "boss"}


def test_complaining_is_how_it_is_said(reader):
    assert reader.read("List every scene in which somebody snores or complains about someone else's snoring.").phrase == "snores"
    q = reader.read("scenes where Monica complains about the adoption")
    assert (q.phrase, q.speakers) == ("adoption", ("Monica Geller",))


def test_a_word_of_the_same_stem_counts_when_it_means_the_same(store, reader):
    assert list_keys(store, reader, "which scenes mention adoption?", SameWord(store, shared_encoder)) == ["s09_e01_c01", "s10_e01_c01", "s10_e02_c01"]
    assert list_keys(store, reader, "scenes where someone says apart", SameWord(store, shared_encoder)) == ["s10_e02_c01"]  # not "apartment"


@pytest.mark.parametrize("a, b, expected", [
    ("adoption", "adopted", True), ("adopting", "adoption", True), ("proposal", "proposing", True),
    ("annulment", "annulled", True), ("magic", "magical", True), ("magical", "magically", False),
    ("paleontology", "paleontologist", False), ("competition", "competitive", False), ("serious", "seriously", False),
    ("prison", "prisoner", False),
])
def test_the_name_of_an_action_and_the_action(a, b, expected):
    assert named_action(a, b) is expected
