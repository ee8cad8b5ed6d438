"""Reading list questions against what an index attests: the longest attested sub-phrase (of parts neither inside the
other, the most specific), appositions, possessive descriptions and qualifiers dropped, speakers resolved from the
collection, the relation classifier, spellings."""

from __future__ import annotations

import pytest

from ragfunnel.query.aggregate import Aggregator
from ragfunnel.query.list_question import RelationModel, count_unit, mask
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s01_e01_c01", ["[Scene: Central Perk, Ross enters.]", ("Ross Geller", "The Geller Cup is mine!"),
                             ("Doug", "Bing! Good work."), ("Monica Geller", "Let's go to Alessandro's, my restaurant."),
                             ("Peter Becker", "I'm fine."), ("Mr. Douglas", "Hello.")], "One", season=1, episode=1),
    make_doc("s01_e01_c02", ["[Scene: Monica's apartment, Ross talks about Central Perk.]", ("Mr. Treeger", "Hey."),
                             ("Rachel Green", "Is that the Geller Cup? And the cup by the door?"),
                             "(They walk into Allesandro's.)", ("Ross Geller", "I love dinosaurs and the Geller Cup trophy.")],
             "One", season=1, episode=1),
    make_doc("s01_e02_c01", ["[Scene: Central Perk. Chandler sits.]", ("Chandler Bing", "Doug is my boss. The chick and the duck!"),
                             ("Joey Tribbiani", "Pete Becker is rich. The duck."), ("Phoebe Buffay", "Smelly Cat is my song.")],
             "Two", season=1, episode=2),
    make_doc("s01_e03_c01", [("Monica Geller", "The duck ate my sandwich."), ("Ross Geller", "Dinosaurs rule."),
                             ("Phoebe Buffay", "Smelly Cat, Smelly Cat!")], "Three", season=1, episode=3),
    make_doc("s01_e04_c01", [("Joey Tribbiani", "Poker is a card game. So is blackjack."),
                             ("Rachel Green", "I hate that song. Every song."), ("Gunther", "Another card game? Sing a song. A muffin?")],
             "Four", season=1, episode=4),
    make_doc("s01_e05_c01", [("Leonard Green", "Happy Valentine's Day, sweetie."), ("Monica Geller", "Thanksgiving dinner."),
                             ("Joey Tribbiani", "Happy Thanksgiving."), ("Ross Geller", "Thanksgiving is the best."),
                             ("Chandler Bing", "I hate Thanksgiving."), ("Rachel Green", "I made a trifle.")],
             "Five", season=1, episode=5),
]



@pytest.mark.parametrize("question, phrase", [
    ("Which scenes mention the Geller Cup by name?", "Geller Cup"),  # "Geller Cup by" is in no line: the qualifier goes
    ("Which scenes mention the Geller Cup in the dialogue?", "Geller Cup"),
    ("Where is the Geller Cup, the Geller family football trophy, talked about?", "Geller Cup"),  # an apposition
    ("Which scenes mention Monica's restaurant Alessandro's (any spelling)?", "Alessandro"),  # a possessive description
    ("In which scenes does Phoebe's song Smelly Cat come up?", "Smelly Cat"),
    ("Which scenes bring up the Geller Cup trophy?", "Geller Cup"),  # a name before its description
    ("Which scenes mention the smelly cat song?", "smelly cat"),  # no line holds all three words in a row
    # neither part inside the other: the rarer one is the thing asked about, the other describes it
    ("Which scenes mention the card game blackjack?", "blackjack"),
])
def test_the_target_is_the_longest_attested_part_of_the_question(reader, question, phrase):
    q = reader.read(question)
    assert (q.relation, q.phrase, q.speakers) == ("mentions", phrase, ())


@pytest.mark.parametrize("question, phrase", [
    ("Which scenes mention Valentine's Day?", "Valentine"),  # a possessive that is no speaker's: the name, not its owner
    ("In which scenes is Rachel's Thanksgiving trifle discussed?", "trifle"),  # far rarer than the name before it
])
def test_names_that_only_qualify_the_target(reader, question, phrase):
    q = reader.read(question)
    assert (q.relation, q.phrase) == ("mentions", phrase)


@pytest.mark.parametrize("question", [
    "In which scenes do we hear from Rachel's father, Dr. Leonard Green?",  # the title is not in the speaker's name
    "When does Rachel's dad Leonard Green get any lines?",  # the possessor is not who speaks
    "Count the lines spoken by Rachel's father, Leonard Green.",
])
def test_the_speaker_is_the_person_described_not_the_possessor(reader, question):
    q = reader.read(question)
    assert (q.relation, q.speakers) == ("speaks", ("Leonard Green",))


def test_either_of_two_targets_joined_by_or(store, reader):
    q = reader.read("Which scenes mention the duck or the trifle?")
    assert (q.relation, q.phrase) == ("mentions", "duck or trifle")
    assert list_keys(store, reader, "Which scenes mention the duck or the trifle?") == ["s01_e02_c01", "s01_e03_c01", "s01_e05_c01"]


@pytest.mark.parametrize("question", [
    "Gunther, the man behind the counter: which scenes does he speak in?",  # a name first, then "he"
    "I want the scenes in which Gunther speaks.",  # "I want" is a request, not a target
])
def test_a_named_person_who_speaks_in_other_words(reader, question):
    q = reader.read(question)
    assert (q.relation, q.speakers) == ("speaks", ("Gunther",))


@pytest.mark.parametrize("question", [
    "Ross talking about dinosaurs - which scenes?",  # the name opens the question
    "Show me the scenes where Ross is going on about dinosaurs",  # a verb of speaking before "about"
])
def test_a_speaker_who_goes_on_about_something(reader, question):
    q = reader.read(question)
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "dinosaurs", ("Ross Geller",))


def test_a_name_talked_about_is_the_target(reader):
    q = reader.read("In how many scenes is Ross's son Doug talked about?")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "Doug", ())


def test_either_is_not_together(reader):
    q = reader.read("Scenes with a mention of the chick or the duck")
    assert (q.relation, q.phrase, q.others) == ("mentions", "chick or duck", ())


def test_a_place_keeps_its_owner(reader):
    q = reader.read("Which scenes are set in Monica's apartment?")
    assert (q.relation, q.phrase) == ("setting", "Monica's apartment")


def test_a_word_ending_in_in_is_found(store, reader):  # "muffin" is not a dropped g ("doin'")
    assert list_keys(store, reader, "Which scenes mention a muffin?") == ["s01_e04_c01"]


def test_spellings_the_index_holds_count_as_the_target(store, reader):
    q = reader.read("Which scenes mention Alessandro's?")
    assert ("allesandro",) in q.forms[0] and ("alessandro",) in q.forms[0]
    assert list_keys(store, reader, "Which scenes mention Alessandro's?") == ["s01_e01_c01", "s01_e01_c02"]


@pytest.mark.parametrize("question, speakers", [
    ("In what scenes does Doug actually say something?", ("Doug",)),  # not Mr. Douglas: "Doug" is a speaker's own word
    ("Which scenes does Chandler's boss Doug have lines in?", ("Doug",)),  # the possessor is not the speaker
    ("Which episodes does Pete Becker, Monica's millionaire boyfriend, have lines in?", ("Peter Becker",)),  # Pete ~ Peter
    ("Count the scenes where Treeger, the superintendent, says anything.", ("Mr. Treeger",)),  # the title may be left out
    ("Which scenes have lines from Mr. Treeger?", ("Mr. Treeger",)),
])
def test_speaker_questions_in_other_words_resolve_to_the_collections_speakers(reader, question, speakers):
    q = reader.read(question)
    assert (q.relation, q.phrase, q.speakers) == ("speaks", None, speakers)


def test_a_speaker_talking_about_something_and_a_person_mentioned(store, reader):
    q = reader.read("In which scenes does Ross talk about dinosaurs?")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "dinosaurs", ("Ross Geller",))
    assert list_keys(store, reader, "In which scenes does Ross talk about dinosaurs?") == ["s01_e01_c02", "s01_e03_c01"]
    q = reader.read("Which scenes mention Doug?")  # a speaker's name, mentioned: anyone's line naming him
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "Doug", ())
    q = reader.read("Which scenes have Chandler saying Doug's name?")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "Doug", ("Chandler Bing",))


def test_a_quoted_target_in_a_lookup_shaped_question(reader):
    q = reader.read('Where does someone say "I\'m fine"?')
    assert (q.phrase, q.exact, q.speakers) == ("I'm fine", True, ())
    q = reader.read('When does Phoebe sing "Smelly Cat" out loud?')
    assert (q.phrase, q.exact, q.speakers) == ("Smelly Cat", True, ("Phoebe Buffay",))


def test_a_place_is_read_from_scene_headings_only(store, reader):
    q = reader.read("How many scenes are set at the coffee house Central Perk?")
    assert (q.relation, q.phrase, q.count) == ("setting", "Central Perk", "scenes")
    result = Aggregator(store).run(q)
    # s01_e01_c02 mentions Central Perk in its heading's description, not as its place
    assert [i.key for i in result.items] == ["s01_e01_c01", "s01_e02_c01"] and result.count == 2
    assert {m.how for i in result.items for m in i.matches} == {"heading"}


def test_two_targets_in_one_scene(store, reader):
    q = reader.read("Which scenes mention both the chick and the duck?")
    assert (q.relation, q.phrase, q.others) == ("together", "chick", ("duck",))
    assert list_keys(store, reader, "Which scenes mention both the chick and the duck?") == ["s01_e02_c01"]


@pytest.mark.parametrize("question, unit", [
    ("How many times does Ross say hi?", "lines"), ("Count the scenes where Doug talks.", "scenes"),
    ("Count the episodes in which Doug speaks.", "episodes"), ("How often is the duck mentioned?", "lines"),
    ("Number of lines spoken by Doug?", "lines"), ("How many files mention the warranty?", "scenes"),
    ("Which scenes mention the duck?", None),
])
def test_what_a_count_counts(question, unit):
    assert count_unit(question) == unit


def test_the_relation_classifier_reads_the_verb_not_the_names(tmp_path):
    model = RelationModel(cache_dir=tmp_path)
    cases = {"Which scenes does Gandalf have lines in?": "speaks", "Where is the hoverboard brought up?": "mentions",
             "Which scenes take place at the bowling alley?": "setting",
             "Which scenes mention both the hoverboard and the bowling alley?": "together",
             "In which scenes does Gandalf talk?": "speaks", "In which scenes does Gandalf talk about rings?": "mentions"}
    for question, relation in cases.items():
        scores = model.scores(question)
        assert max(scores, key=scores.__getitem__) == relation, (question, scores)
    assert list(tmp_path.glob("list-relations-*.npz"))  # fitted once, then loaded from the cache
    assert mask('Does Ross Geller say "hi" in season 2?') == "Does NAME say QUOTE ?"


def test_a_question_naming_nothing_the_index_holds_reads_no_target(store, reader):
    q = reader.read("Which scenes mention the hoverboard?")
    assert q.phrase is None and not q.speakers
    assert Aggregator(store).run(q).items == []
