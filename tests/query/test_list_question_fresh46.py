"""List questions read from the failures of the `fresh46` set (issue 34), each asked here in other words and other
targets: a clause after ", or" that points back ("..., or is that the only one?") leaves the target to the clause
before it; a "not" after an auxiliary in a memory ("she does not have chubby ankles") negates its verb and leaves
nothing out; a "when" after ", and" asks only with its auxiliary ("..., and when Rachel yells 'check the dryer' ...");
a place that only names the scenes ("attic scenes") where one scene only is set and more mention it asks for the
mentions (the scene set there among them); "set there" is the place named last before it, a sentence that says what a place is called ("The
place is Alessandro's") names it; "ep count" counts episodes; "his lines" are the lines of the one person named; and
the router: "bits" ask for a list, a lone possessive name ("alessandro's") is a search-box fragment."""

from __future__ import annotations

from ragfunnel.query.list_question import count_unit, group_of
from ragfunnel.query.router import _LIST_CUE, _fragment
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s03_e01_c01", ["[Scene: The storage room in the attic of Monica's building, Ross and Rachel are folding.]",
                             ("Ross Geller", "I lost a sock."), ("Rachel Green", "Check the dryer!")], "One", season=3, episode=1),
    make_doc("s03_e01_c02", [("Joey Tribbiani", "Who keeps a piano in the attic?"), ("Chandler Bing", "Your ankle looks bad."),
                             ("Ross Geller", "Another sock gone.")], "One", season=3, episode=1),
    make_doc("s03_e02_c01", ["[Scene: Alessandro's, Monica is cooking.]", ("Monica Geller", "The critic hated my bouillabaisse."),
                             ("Phoebe Buffay", "My sore ankle hurts.")], "Two", season=3, episode=2),
    make_doc("s03_e02_c02", ["[Scene: A restaurant, Rachel and Ross are eating.]", ("Rachel Green", "Great attic, by the way."),
                             ("Ross Geller", "Great sock.")], "Two", season=3, episode=2),
    make_doc("s03_e03_c01", ["[Scene: Alessandro's kitchen, Monica is cleaning.]", ("Monica Geller", "A sock in the soup!"),
                             ("Joey Tribbiani", "Fireworks on the Fourth of July!")], "Three", season=3, episode=3),
]


def test_a_clause_that_points_back_leaves_the_target_to_the_clause_before_it(store, reader):
    question = ("Monica loves watching from the kitchen every Fourth of July. Is there any other scene where fireworks "
                "come up, or is that the only one?")
    assert reader.read(question).phrase == "fireworks"
    assert list_keys(store, reader, question) == ["s03_e03_c01"]


def test_a_not_after_an_auxiliary_in_a_memory_leaves_nothing_out(store, reader):
    question = "Phoebe insists she does not have a sore ankle. Show me all the times somebody's ankle comes up."
    query = reader.read(question)
    assert (query.phrase, query.excluded) == ("ankle", ())
    assert list_keys(store, reader, question) == ["s03_e01_c02", "s03_e02_c01"]
    assert reader.read("Which scenes mention a sock, not a great sock?").excluded == (("great", "sock"),)


def test_when_after_and_asks_only_with_its_auxiliary(reader):
    question = "Ross loses a sock, and when Rachel yells 'check the dryer' he laughs. Which scenes mention a sock?"
    query = reader.read(question)
    assert (query.phrase, query.exact) == ("sock", False)
    assert reader.read("Ross loses a sock, and when does Rachel say 'check the dryer'?").phrase == "check the dryer"


def test_a_place_that_only_names_the_scenes_of_one_setting_asks_for_its_mentions(store, reader):
    terse = reader.read("attic scenes")
    assert terse.relation == "setting" and terse.setting_implied
    # one scene only is set in the attic and more mention it: the scenes that mention it, the one set there among them
    assert list_keys(store, reader, "attic scenes") == ["s03_e01_c01", "s03_e01_c02", "s03_e02_c02"]
    asked = reader.read("Which scenes are set in the attic?")
    assert asked.relation == "setting" and not asked.setting_implied
    assert list_keys(store, reader, "Which scenes are set in the attic?") == ["s03_e01_c01"]
    assert list_keys(store, reader, "alessandro's scenes") == ["s03_e02_c01", "s03_e03_c01"]


def test_set_there_is_the_place_named_last_and_a_sentence_that_names_it_counts(store, reader):
    question = ("Monica cooks at a restaurant and the critic hates her bouillabaisse. The place is Alessandro's - "
                "which scenes are set there?")
    query = reader.read(question)
    assert (query.phrase, query.relation) == ("Alessandro", "setting")
    assert list_keys(store, reader, question) == ["s03_e02_c01", "s03_e03_c01"]


def test_an_ep_count_counts_episodes(reader):
    assert count_unit("sock ep count") == "episodes" and group_of("sock ep count") == "episode"
    assert count_unit("sock scene count") == "scenes" and count_unit("how many eps mention a sock") == "episodes"
    query = reader.read("sock ep count")
    assert (query.phrase, query.count, query.group) == ("sock", "episodes", "episode")


def test_his_lines_are_the_lines_of_the_one_person_named(store, reader):
    question = ("Ross answers the phone a lot and has that sarcastic 'Great sock!' thing when someone walks in. How many "
                "of his lines actually contain the word sock?")
    query = reader.read(question)
    assert (query.phrase, query.speakers, query.count) == ("sock", ("Ross Geller",), "lines")
    assert list_keys(store, reader, question) == ["s03_e01_c01", "s03_e01_c02", "s03_e02_c02"]


def test_the_router_reads_bits_as_a_list_and_a_lone_possessive_name_as_a_fragment():
    assert _LIST_CUE.search("Which bits of the show talk about a miracle?")
    assert _fragment("delmonico's") and _fragment("alessandro's")
    assert not _fragment("monica's new boyfriend") and not _fragment("the job interview")
