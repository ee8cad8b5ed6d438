"""List questions that tell a memory of the show before they ask (issue 34, read from the failures of the `fresh15`
set): a quote in the memory is no target when the asking part names its own; the asking part has a say in what is
asked; "says my brother" keeps its "my"; a name's possessive typed without its apostrophe; a misspelt word that is
also a word of a role's name; a quality named by its noun; "described as"; what the others call a speaker ("pheebs");
"what scenes is a closet in"; a speaker called by a role ("the minister"); a speaker described, not named ("the physician treating Joey")."""

from __future__ import annotations

import pytest

from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s01_e01_c01", ["[Scene: Joey's room, Joey is asleep.]", ("Joey Tribbiani", "You said she was bald!"),
                             ("Monica Geller", "He's my brother. Ross is my brother."), ("Ross Geller", "She is bald.")],
             "One", season=1, episode=1),
    make_doc("s01_e01_c02", ["[Scene: Joey's bedroom, Chandler rolls him over.]", ("Chandler Bing", "Baldness is fine. I described it."),
                             ("Phoebe Buffay", "That is pretty weird."), ("Monica Geller", "My brother is weird.")],
             "One", season=1, episode=1),
    make_doc("s01_e02_c01", ["[Scene: The bridal shop, they look.]", ("Wedding Planner", "The wedding dress is here."),
                             ("Wedding Planner", "Try the wedding dress."), ("Wedding Planner", "Lovely."),
                             ("Rachel Green", "I look weird in a wedding dress. My brother? No, my sister.")],
             "Two", season=1, episode=2),
    make_doc("s01_e03_c01", ["[Scene: Central Perk, they sit.]", ("Rachel Green", "He was drunk. Drunk!"),
                             ("Phoebe Buffay", "My grandmother is weird."), ("Ross Geller", "Our grandmother called."),
                             ("Joey Tribbiani", "Hey Monica."), ("Monica Geller", "Hi Joey."), ("Joey Tribbiani", "Bye.")],
             "Three", season=1, episode=3),
    make_doc("s01_e04_c01", [("Monica Geller", "Okay, Pheebs."), ("Phoebe Buffay", "That closet is weird."),
                             ("Joey Tribbiani", "Come on, Pheebs!"), ("Phoebe Buffay", "No."),
                             ("Rachel Green", "Pheebs, please."), ("Phoebe Buffay", "Fine. Weird."),
                             ("Joey Tribbiani", "Honey, Pheebs is right."), ("Chandler Bing", "Honey? Okay, honey.")],
             "Four", season=1, episode=4),
    make_doc("s01_e05_c01", [("Minister", "Dearly beloved."), ("Ross Geller", "I take thee Rachel."),
                             ("Minister", "You may kiss the bride.")], "Five", season=1, episode=5),
]



def test_a_quote_in_a_memory_is_no_target_when_the_question_names_its_own(store, reader):
    question = "ross dating a girl who shaved her head, joey telling him 'you said she was bald!'... scenes where baldness comes up"
    q = reader.read(question)
    assert (q.relation, q.phrase, q.exact) == ("mentions", "baldness", False)
    assert ("bald",) in q.forms[0]  # the quality by its adjective too
    assert list_keys(store, reader, question) == ["s01_e01_c01", "s01_e01_c02"]


def test_a_quote_in_a_memory_stays_when_the_question_points_back_at_it(reader):
    q = reader.read("joey telling ross 'you said she was bald!'... which scenes have that line")
    assert (q.phrase, q.exact) == ("you said she was bald", True)


def test_the_asking_part_says_what_is_asked(store, reader):
    question = "joey snoring so loud chandler has to roll him over, joey dreaming with monica... scenes set in joeys room"
    q = reader.read(question)
    assert q.relation == "setting"
    assert list_keys(store, reader, question) == ["s01_e01_c01", "s01_e01_c02"]  # his room and his bedroom


def test_says_my_keeps_the_my(store, reader):
    q = reader.read("monica introducing ross at the party... scenes where monica says my brother")
    assert (q.relation, q.speakers) == ("mentions", ("Monica Geller",))
    assert q.forms[0] == (("my", "brother"),)
    assert list_keys(store, reader, "In which scenes does Rachel say my brother?") == ["s01_e02_c01"]


def test_a_question_after_a_comma_is_the_asking_part(reader):
    q = reader.read("pheebs is pretty weird herself lol, so which scenes does somebody use the word weird")
    assert (q.relation, q.phrase) == ("mentions", "weird")


def test_a_misspelt_word_is_no_role_name_the_lines_write_in_lower_case(reader):
    q = reader.read("which scenes bring up a weding dress")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "wedding dress", ())


def test_described_as_frames_the_target(reader):
    q = reader.read("What is the number of scenes where somebody is described as drunk?")
    assert (q.relation, q.phrase, q.count) == ("mentions", "drunk", "scenes")


def test_a_possessive_typed_without_its_apostrophe(reader):
    q = reader.read("which scenes mention phoebes grandmother")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "grandmother", ())


def test_what_the_others_call_a_speaker_is_that_speaker(store, reader):
    q = reader.read("pheebs is pretty weird herself, so which scenes does she say weird in")
    assert (q.relation, q.phrase, q.speakers) == ("mentions", "weird", ("Phoebe Buffay",))
    assert list_keys(store, reader, "which scenes does pheebs say weird in") == ["s01_e01_c02", "s01_e03_c01", "s01_e04_c01"]
    said = reader.read("In which scenes does Joey say Pheebs?")  # the word itself is what is said
    assert (said.phrase, said.speakers) == ("Pheebs", ("Joey Tribbiani",))


def test_a_pet_name_said_to_everyone_names_nobody(reader):
    assert reader.vocabulary.addressee("honey") is None
    assert reader.vocabulary.addressee("pheebs") == "Phoebe Buffay"


def test_a_thing_in_the_scenes_is_no_setting(reader):
    q = reader.read("what scenes is a closet in")
    assert (q.relation, q.phrase) == ("mentions", "closet")


def test_a_where_inside_a_memory_does_not_ask(reader):
    q = reader.read("ross and rachel in the bridal shop where monica is weird, plus phoebe and joey... which scenes bring up "
                    "a wedding dress")
    assert (q.relation, q.phrase) == ("mentions", "wedding dress")


@pytest.mark.parametrize("question", ["How many lines does the minister have?",
                                      "What is the number of lines spoken by the Minister?"])
def test_a_speaker_called_by_a_role(reader, question):
    q = reader.read(question)
    assert (q.relation, q.speakers, q.count) == ("speaks", ("Minister",), "lines")


@pytest.mark.parametrize("question", ["Find the scenes where the physician treating Joey has dialogue.",
                                      "which scenes does the guy who sells hats talk in"])
def test_a_described_speaker_is_no_person_named_in_the_description(reader, question):
    q = reader.read(question)
    assert (q.relation, q.speakers, q.reading.speaker_from) == ("speaks", (), "described")


def test_a_description_after_a_name_leaves_the_name_speaking(reader):
    q = reader.read("Show the scenes where Monica, the chef who cooks for Joey, says something.")
    assert (q.relation, q.speakers) == ("speaks", ("Monica Geller",))
