"""More ways users phrase list questions (issue 34, read from the failures of the `fresh3` set): a new sentence after
a question mark, "get to say", a description set before the speaker, a person inside a relative clause, a name
that starts a longer attested phrase, kinship words, British / American spellings, a misspelt speaker, "a hospital
scene", a place with its owner, and the router's reading of where / when questions with descriptions."""

from __future__ import annotations

import pytest

from ragfunnel.query.aggregate import Aggregator
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s01_e01_c01", ["[Scene: Central Perk, everyone is there.]", ("Joey Tribbiani", "I built an entertainment center!"),
                             ("Chandler Bing", "Chinese food again? I love Chinese food."), ("Ginger", "Hi Joey."),
                             ("Phoebe Buffay", "My mom left me this."), ("Ross Geller", "The Chinese are coming.")],
             "One", season=1, episode=1),
    make_doc("s01_e01_c02", ["[Scene: Rachel's office, Rachel is working.]", ("Rachel Green", "Nice moustache, Gunther."),
                             ("Isabella Rosselini", "Hello."), ("Phoebe Buffay", "Your mom called, Ross."),
                             ("Frank Buffay Sr.", "Phoebe? I'm your father."), ("Joey Tribbiani", "The entertainment center fell.")],
             "One", season=1, episode=1),
    make_doc("s01_e02_c01", ["[Scene: A hospital waiting room, they wait.]", ("Chandler Bing", "My mother is on TV."),
                             ("Phoebe Buffay", "My mother would hate this hospital."), ("Ross Geller", "The turtles! My students."),
                             ("Monica Geller", "That mustache is new. Joey likes turtles.")], "Two", season=1, episode=2),
    make_doc("s01_e03_c01", ["[Scene: Monica's apartment, Chandler reads.]", ("Chandler Bing", "Joey, your mom called."),
                             ("Ginger", "Bye Joey."), ("Ross Geller", "The hospital called about a turtle.")],
             "Three", season=1, episode=3),
    make_doc("s02_e01_c01", [("Joey Tribbiani", "I miss Ginger. Ginger was great."), ("Ginger", "I watch football."),
                             ("Chandler Bing", "We play cards and eat turtles? No. Who is Ginger? Watch it."),
                             ("Monica Geller", "Watch the game! Play it again.")],
             "Four", season=2, episode=1),
]



def test_a_new_sentence_opens_with_a_verb_not_a_name(reader):
    q = reader.read("Are turtles ever brought up? Give me the scenes")
    assert (q.relation, q.phrase, q.others) == ("mentions", "turtles", ())


@pytest.mark.parametrize("question", [
    "Where does Ginger, Joey's ex with the wooden leg, get to say anything?",
    "Which scenes does Ginger get to speak in?",
])
def test_get_to_say_is_speaking(reader, question):
    q = reader.read(question)
    assert (q.relation, q.phrase, q.speakers) == ("speaks", None, ("Ginger",))


def test_a_description_set_before_the_speaker_is_no_target(reader):
    q = reader.read("How many lines does Phoebe's real father, Frank Buffay Sr., speak?")
    assert (q.relation, q.phrase, q.speakers, q.count) == ("speaks", None, ("Frank Buffay Sr.",), "lines")


def test_a_person_in_a_relative_clause_is_not_the_target(store, reader):
    q = reader.read("Show me the scenes that mention the entertainment center Joey builds")
    assert (q.relation, q.phrase) == ("mentions", "entertainment center")
    assert list_keys(store, reader, "Show me the scenes that mention the entertainment center Joey builds") == [
        "s01_e01_c01", "s01_e01_c02"]


def test_a_name_that_starts_a_longer_attested_phrase_keeps_it(store, reader):
    q = reader.read("When does somebody mention Chinese food?")
    assert (q.relation, q.phrase) == ("mentions", "Chinese food")
    assert list_keys(store, reader, "When does somebody mention Chinese food?") == ["s01_e01_c01"]


def test_a_speaker_on_their_own_relative_says_my(store, reader):
    q = reader.read("Every scene where Phoebe mentions her mom")
    assert q.speakers == ("Phoebe Buffay",) and ("my", "mother") in q.forms[0] and ("mom",) not in q.forms[0]
    # "Your mom called, Ross." is someone else's mother
    assert list_keys(store, reader, "Every scene where Phoebe mentions her mom") == ["s01_e01_c01", "s01_e02_c01"]
    q = reader.read("Ross mentioning his students - which scenes?")  # not a relative: any students
    assert q.forms[0] == (("students",),)


def test_british_and_american_spellings_count(store, reader):
    q = reader.read("Every scene where somebody's mustache gets mentioned")
    assert ("moustache",) in q.forms[0]
    assert list_keys(store, reader, "Every scene where somebody's mustache gets mentioned") == ["s01_e01_c02", "s01_e02_c01"]


def test_a_speaker_spelt_with_letters_doubled(reader):
    q = reader.read("How many lines does Isabella Rossellini get?")
    assert (q.relation, q.speakers) == ("speaks", ("Isabella Rosselini",))


def test_a_hospital_scene_is_a_scene_set_there(store, reader):
    q = reader.read("Episodes with a hospital scene")
    assert (q.relation, q.phrase, q.group) == ("setting", "hospital", "episode")
    # s01_e03_c01 only mentions the hospital
    assert [i.key for i in Aggregator(store).run(q).items] == ["s01_e02"]


def test_a_place_with_its_owner(store, reader):
    q = reader.read("Which scenes take place in Rachel's office?")
    assert (q.relation, q.phrase) == ("setting", "Rachel's office")
    assert list_keys(store, reader, "Which scenes take place in Rachel's office?") == ["s01_e01_c02"]


@pytest.mark.parametrize("question", [
    "When does Chip Matthews, Rachel's old prom date who later takes Monica out, speak?",
    "When is Star Wars referenced?",
    'When does somebody exclaim "That\'s not even a word!"',
    "Where does Alessandro's come up, including the scene headings?",
])
def test_where_and_when_questions_that_ask_for_every_time(question):
    assert Router().route(question).name == "aggregate"


# ---- read from the failures of `fresh4` (typed in lower case, descriptions in sentences of their own, "eps") ----------


@pytest.mark.parametrize("question", [
    "ginger, joey's ex, which scenes does she speak in",  # lower case: a word the lines write as a name is one
    "When does Ginger talk? The woman with the wooden leg",  # a sentence that only describes her
    "Show me where Ginger speaks - the one with the wooden leg",
    "Any scene with Ginger the ex speaking?",  # a description between the name and its verb
    "Ginger's lines when Joey eats the turtles - which scenes?",  # a clause of time is no target
])
def test_speakers_described_in_other_ways(reader, question):
    q = reader.read(question)
    assert (q.relation, q.phrase, q.speakers) == ("speaks", None, ("Ginger",))


def test_eps_are_episodes(reader):
    q = reader.read("which eps does ginger speak in")
    assert (q.relation, q.speakers, q.group) == ("speaks", ("Ginger",), "episode")


def test_a_word_that_is_no_name_in_the_lines_stays_a_word(reader):
    # "turtle" is no speaker's word; "chandler" is, and the lines write it capitalised
    q = reader.read("which scenes does chandler mention turtles in")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "turtles", ("Chandler Bing",))


def test_the_most_specific_of_several_phrases_is_the_target(reader):
    q = reader.read("When do they watch, play or talk about football? scenes pls")
    assert (q.relation, q.phrase) == ("mentions", "football")


def test_a_slash_is_either(reader):
    q = reader.read("the moustache / Chinese food references")
    assert q.phrase == "moustache or Chinese food"


@pytest.mark.parametrize("question", [
    "I'm looking for the scenes where Ginger talks. The woman with the wooden leg",
    "which eps bring up turtles",
    "is the moustache ever brought up",
    "count Isabella Rosselini's lines",
    "the moustache references",
    "Any scene that features turtles?",
    "When does Ginger talk? The woman with the wooden leg",
])
def test_more_list_questions_are_routed_to_the_list(question):
    assert Router().route(question).name == "aggregate"
