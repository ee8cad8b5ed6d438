"""List questions put the ways the `fresh5` set put them (issue 34, read from its failures): "bits / moments / any
time where ...", "is X mentioned anywhere", a word said without quotes, two things "in the same scene", a speaker
called by a lower-case description ("the big bully"), a name no line writes after its first word ("erin"), a
description before the name or after a sentence's end, "her talking", "Joey's "check it out"", "Rachel going 'ugh'",
"Law & Order", "victoria's secret" and a singular "the monkey episode" that only describes."""

from __future__ import annotations

import pytest

from ragfunnel.query.list_question import group_of
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s01_e01_c01", ["[Scene: Central Perk, everyone is there.]", ("Big Bully", "Get off the couch."),
                             ("Joey Tribbiani", "Check it out! I watch Law & Order."), ("Erin", "Hi."),
                             ("Rachel Green", "Ugh. Shopping again."), ("Kristen Leigh", "I just moved here.")],
             "One", season=1, episode=1, episode_title="The One with the Big Bully"),
    make_doc("s01_e01_c02", ["[Scene: Monica's apartment, Monica is cooking.]", ("Erin", "Joey, hi."),
                             ("Monica Geller", "The law says no. Order the food. I need a hair cut."), ("Chandler Bing", "Check it out."),
                             ("Phoebe Buffay", "I am buying candles and champagne."), ("Answering Machine", "Leave a message."),
                             ("Rachel Green", "Victoria's Secret has a sale. Ugh!")],
             "One", season=1, episode=1, episode_title="The One with the Big Bully"),
    make_doc("s01_e02_c01", ["[Scene: A hallway, they wait.]", ("Big Bully", "Nice couch."), ("Joey Tribbiani", "Check it out."),
                             ("Ross Geller", "The answering machine is full. Shopping is fun. Is Macbeth on?"),
                             ("Monica Geller", "Champagne! Where are the candles?"), ("Kristen Leigh", "Bye.")],
             "Two", season=1, episode=2, episode_title="The One Where Joey Checks It Out"),
    make_doc("s01_e03_c01", [("Rachel Green", "I love shopping."), ("Mackenzie", "This is my room."), ("Erin", "Bye."),
                             ("Phoebe Buffay", "Secret! It's a secret."), ("Chandler Bing", "Candles only. Nice haircut."), ("Joey Tribbiani", "Whoa.")],
             "Three", season=1, episode=3),
]



@pytest.mark.parametrize("question", [
    "any time joey says 'ladies'",
    "moments when Precious is talking, the girlfriend Mike breaks up with",
    "bits where Ross says professor",
    "lines where phoebe says 'spirit'",
    "is Macbeth mentioned anywhere",
    "Where in the show do they talk about Greece or Athens?",
    "When does Rachel say shopping?",
    "Where does Monica use the word competitive?",
    "candles and champagne in the same scene",
])
def test_questions_that_ask_for_every_moment_are_routed_to_lists(question):
    assert Router().route(question).name == "aggregate"


@pytest.mark.parametrize("question", [
    "When did Jill say vestibule?",  # one past moment
    "When does Ross say he loves Rachel?",  # a clause, not a word
    "What is the moment when Ross says her name?",
])
def test_one_moment_stays_a_lookup(question):
    assert Router().route(question).name == "lookup"


def test_a_speaker_called_by_a_lower_case_description(store, reader):
    q = reader.read("bits where the big bully talks, from the two guys who take Ross and Chandler's couch")
    assert (q.relation, q.speakers) == ("speaks", ("Big Bully",))
    assert list_keys(store, reader, "bits where the big bully talks") == ["s01_e01_c01", "s01_e02_c01"]
    # a noun, not a speaker that speaks
    q = reader.read("answering machine mentions, which scenes")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "answering machine", ())


def test_a_name_no_line_writes_is_a_name_in_a_lower_case_question(reader):
    q = reader.read("joey's date erin, the one rachel and phoebe are supposed to dump - scenes where she talks")
    assert (q.relation, q.speakers) == ("speaks", ("Erin",))


@pytest.mark.parametrize("question, speaker", [
    ("the kid who lives in the house Monica and Chandler are buying, Mackenzie: scenes where she speaks", "Mackenzie"),
    ("Kristen, the woman who just moved here that Ross and Joey are both after. scenes with her talking?", "Kristen Leigh"),
    ("moments when Kristen is talking, the woman Ross and Joey both ask out", "Kristen Leigh"),
])
def test_descriptions_around_the_speaker_are_dropped(reader, question, speaker):
    q = reader.read(question)
    assert (q.relation, q.speakers) == ("speaks", (speaker,))


@pytest.mark.parametrize("question, speaker, quote", [
    ('Joey\'s "check it out" - every scene he says it', "Joey Tribbiani", "check it out"),
    ("how many episodes have Rachel going 'ugh'", "Rachel Green", "ugh"),
])
def test_who_says_a_quote_from_how_it_is_put(reader, question, speaker, quote):
    q = reader.read(question)
    assert (q.speakers, q.phrase) == ((speaker,), quote)


def test_someone_saying_a_name_is_not_its_owner(reader):
    q = reader.read("In which episodes does someone say Chandler's full name, \"Chandler Bing\"?")
    assert (q.speakers, q.phrase) == ((), "Chandler Bing")


def test_names_with_an_ampersand_or_a_lower_case_owner(store, reader):
    assert reader.read("Law & Order - what scenes mention the show").phrase == "Law & Order"
    assert list_keys(store, reader, "Law & Order - what scenes mention the show") == ["s01_e01_c01"]
    assert list_keys(store, reader, "victoria's secret mentions") == ["s01_e01_c02"]


def test_a_singular_episode_that_describes_keeps_scenes():
    assert group_of("show me where Max speaks - the one at Phoebe's gig in the monkey episode") == "scene"
    assert group_of("in which episode does Max speak") == "episode"
    assert group_of("every episode with Max") == "episode"


def test_a_thing_done_is_the_thing(reader):
    # "playing" only says what is done with it: every line about the thing counts
    q = reader.read("In which scenes does someone talk about buying candles?")
    assert (q.relation, q.phrase) == ("mentions", "candles")


# ---- read from the failures of `fresh6` (measured once unseen first: docs/results/archive/aggregate_fresh6_c0de027.md) --


@pytest.mark.parametrize("question", [
    "find moments mentioning a hair cut / haircuts",
    "when does france come up in conversation",
    "Count of Joey's 'whoa's over the whole series?",
    "birthday + cake in the same scene",
    "Show me the parts where Gene talks. He's the guy Joey gets paired with on the game show.",
])
def test_more_ways_to_ask_for_every_moment(question):
    assert Router().route(question).name == "aggregate"


def test_a_quote_in_a_description_or_an_aside_is_no_target(reader):
    q = reader.read('Kristen, the woman who says "hi" to everyone - every scene she speaks in')
    assert (q.relation, q.speakers, q.phrase) == ("speaks", ("Kristen Leigh",), None)
    q = reader.read("scenes where candles get mentioned (not 'candle light' type expressions)")
    assert (q.relation, q.phrase) == ("mentions", "candles")
    q = reader.read('Where does somebody scream "Check it out! Check it out!"?')  # the quote's own "!" splits nothing
    assert q.phrase == "Check it out! Check it out"


def test_a_speaker_typed_one_letter_off_and_w_slash(reader):
    assert reader.read("Which scenes does Kirsten Leigh speak in?").speakers == ("Kristen Leigh",)
    assert reader.read("scenes w/ Mackenzi speaking").speakers == ("Mackenzie",)


def test_a_compound_in_one_word_or_two(store, reader):
    q = reader.read("which scenes mention a haircut")
    assert ("hair", "cut") in q.forms[0]
    assert list_keys(store, reader, "which scenes mention a haircut") == ["s01_e01_c02", "s01_e03_c01"]
    assert ("haircut",) in reader.read("which scenes mention a hair cut").forms[0]


def test_an_episode_named_by_its_title_selects_it(store, reader):
    q = reader.read("Which scenes of The One Where Joey Checks It Out does Kristen have lines in?")
    assert (q.relation, q.speakers, dict(q.named)) == ("speaks", ("Kristen Leigh",), {"season": 1, "episode": 2})
    assert list_keys(store, reader, "Which scenes of The One Where Joey Checks It Out does Kristen have lines in?") == [
        "s01_e02_c01"]
    assert list_keys(store, reader, "which scenes does Kristen have lines in?") == ["s01_e01_c01", "s01_e02_c01"]
    # a title in lower case, "'" aside; a title of fewer than three words is not read as one
    assert dict(reader.read("kristen's lines in the one with the big bully").named) == {"season": 1, "episode": 1}


def test_one_thing_inside_the_other_is_one_thing(reader):
    q = reader.read("the answering machine and any other machine - which scenes mention a machine?")
    assert (q.relation, q.phrase, q.others) == ("mentions", "machine", ())


def test_the_possessor_says_it_when_nobody_else_is_named(reader):
    q = reader.read("joey's check it out - how many times does he say it?")
    assert q.speakers == ("Joey Tribbiani",)


def test_a_sentence_about_him_describes(reader):
    q = reader.read("Show me the parts where Kristen talks. She's the woman Joey meets on the game show.")
    assert (q.relation, q.speakers) == ("speaks", ("Kristen Leigh",))


# ---- read from the failures of `fresh7` (measured once unseen first: docs/results/archive/aggregate_fresh7_57d0b48.md) --


@pytest.mark.parametrize("question", [
    "mexico comes up where? (the country)",
    "where do candles come up in friends",
    "list the parts set inside a hallway",
    "candles + champagne in one scene, which ones?",
])
def test_yet_more_ways_to_ask_for_every_moment(question):
    assert Router().route(question).name == "aggregate"


def test_a_word_typed_one_letter_off(reader):
    assert reader.read("champagn mentions, which scenes").phrase == "champagne"
    assert reader.read("Which scenes mention Macbeth?").phrase == "Macbeth"  # a name is never corrected


def test_the_sentence_that_asks_names_the_target(reader):
    q = reader.read("rachel loves shopping right? find me all the scenes where candles come up")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "candles", ())
    q = reader.read("Monica buys candles - which scenes does she mention champagne in?")  # "she": the first part names her
    assert q.speakers == ("Monica Geller",)


def test_the_words_unquoted_and_speakers_in_quotes(reader):
    q = reader.read("When does Joey say the words check it out? Give me the scenes.")
    assert (q.speakers, q.phrase, q.exact) == (("Joey Tribbiani",), "check it out", True)
    assert reader.read("How often does the word champagne come up?").phrase == "champagne"
    q = reader.read("when does 'Big Bully' say something? scenes pls")
    assert (q.relation, q.speakers) == ("speaks", ("Big Bully",))


def test_a_full_name_or_a_first_name_means_who_is_called_so(reader):
    assert reader.read("which scenes does joey tribbiani talk in").speakers == ("Joey Tribbiani",)
    q = reader.read("joey tribbiani saying whoa - list the scenes")  # a speaker's words, not a place
    assert (q.relation, q.speakers) == ("mentions", ("Joey Tribbiani",))


def test_two_things_in_the_same_scene_and_a_count_in_an_aside(reader):
    q = reader.read("Find scenes that talk about candles AND champagne in the same scene.")
    assert (q.relation, {q.phrase, *q.others}) == ("together", {"candles", "champagne"})
    assert reader.read("scenes where phoebe talks about candles (the song doesn't count)").count is None
