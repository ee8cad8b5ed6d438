"""List questions read from the failures of the `fresh37` and `fresh38` sets (issue 34), each asked here in other
words: casual requests with no question word route as lists when they point at the ones asked for ("find me those",
"the ones set at", "when somebody brings up") or ask when someone goes 'X'; a name before "mentioned" is what is
mentioned, not who speaks; "is he mentioned" after a description names its person, not the one after a preposition;
a person's name is no place unless something says where scenes are set; "both 'X' and a Y" is two things in one scene;
the one who says a quote is the name or pronoun right before the saying; a main character's first name typed in lower
case is a name among capitalised ones; a word that elsewhere only frames a question (actually, please) is what is said
when it ends the question after "say"; a comma before "list the scenes ..." starts the asking part; a word two lines
write that is one letter off an English word ten times as common is the transcripts' typo for it."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import FriendsCorpus
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s06_e01_c01", [("Phoebe Buffay", "Mike! Actually, Mike is here."), ("Mike Hannigan", "Hi Phoebe."),
                             ("Rachel Green", "Actually, Gunther, a coffee please.")], "One", season=6, episode=1),
    make_doc("s06_e01_c02", [("Rachel Green", "Gunther is nice."), ("Monica Geller", "Gunther! Mike!"),
                             ("Joey Tribbiani", "Please, I'm naked by the window.")], "One", season=6, episode=1),
    make_doc("s06_e02_c01", [("Ross Geller", "Chloe, the copy girl."), ("Chloe", "Hi."),
                             ("Joey Tribbiani", "Naked again. Please!")], "Two", season=6, episode=2),
    make_doc("s06_e02_c02", [("Rachel Green", "Mr. Zelner called from Ralph Lauren."), ("Mr. Zelner", "Rachel!"),
                             ("Ralph Lauren", "Hello.")], "Two", season=6, episode=2),
    make_doc("s06_e03_c01", [("Monica Geller", "Estelle called for Joey."), ("Estelle Leonard", "Joey, baby!"),
                             ("Estelle Leonard", "An audition."), ("Estelle Leonard", "Bye, Estelle hangs up."),
                             "[Scene: Estelle's office, Joey is waiting.]"], "Three", season=6, episode=3),
    make_doc("s06_e03_c02", [("Chandler Bing", "That is so embarassing.")], "Three", season=6, episode=3),
    *(make_doc(f"s06_e04_c{n:02d}", [("Chandler Bing", "That is so embarrassing. A toy!")], "Four", season=6,
               episode=4) for n in range(1, 21)),
    make_doc("s06_e05_c01", [("Ross Geller", "My G.I. Joe is in the box with Joey.")], "Five", season=6, episode=5),
    make_doc("s06_e05_c02", [("Phoebe Buffay", "Oh, Mike."), ("Phoebe Buffay", "Hi."), ("Phoebe Buffay", "Bye."),
                             ("Mike Hannigan", "Phoebe.")], "Five", season=6, episode=5),
]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(FriendsCorpus.route_examples)


def test_casual_requests_for_the_ones_asked_for_route_as_lists(router):
    for question in ("ross calling something sexy lol, find me those",
                     "thanksgiving food talk, specifically when somebody brings up the stuffing",
                     "when does pheebs go 'obviously' in a conversation"):
        assert router.route(question).name == "aggregate", question
    # statements and questions with no list in them stay lookups
    for question in ("Ross is angry in season 5 episode 16", "Who are those people at the door?",
                     "Why does Ross go to the museum?"):
        assert router.route(question).name != "aggregate", question


def test_a_name_before_mentioned_is_what_is_mentioned(store, reader):
    query = reader.read("chloe mentioned")
    assert (query.relation, query.phrase, query.speakers) == ("mentions", "chloe", ())
    assert list_keys(store, reader, "chloe mentioned") == ["s06_e02_c01"]
    assert reader.read("chloe lines").speakers == ("Chloe",)  # her lines: she speaks


def test_the_person_a_description_is_about_is_mentioned(reader):
    query = reader.read("Rachel's boss at Ralph Lauren, Mr. Zelner (the one she works for) - what scenes is he "
                        "mentioned in?")
    assert query.phrase.lower().replace(".", "") == "mr zelner"


def test_a_persons_name_is_no_place_without_a_setting_cue(reader):
    assert reader.read("count episodes estelle").relation == "mentions"
    assert reader.read("scenes set at estelle's office").relation == "setting"


def test_both_a_quote_and_a_thing_in_one_scene(store, reader):
    query = reader.read("Which scenes mention both 'naked' and a window?")
    assert query.relation == "together" and (query.phrase, query.others) == ("naked", ("window",))
    assert list_keys(store, reader, "Which scenes mention both 'naked' and a window?") == ["s06_e01_c02"]


def test_who_says_the_quote_is_named_right_before_the_saying(store, reader):
    question = "Gunther, the Central Perk guy, loves her, so which scenes have rachel actually saying 'gunther'"
    assert reader.read(question).speakers == ("Rachel Green",)
    assert list_keys(store, reader, question) == ["s06_e01_c01", "s06_e01_c02"]
    question = "phoebe ends up marrying mike hannigan, so how many times does she actually say 'mike'"
    assert reader.read(question).speakers == ("Phoebe Buffay",)


def test_a_framing_word_said_at_the_end_is_what_is_said(store, reader):
    query = reader.read("how many times does rachel green say actually")
    assert (query.speakers, query.phrase) == (("Rachel Green",), "actually")
    assert reader.read("which scenes does joey say please").phrase == "please"
    assert reader.read("where does monica say it").phrase is None  # a pronoun is no word said


def test_a_comma_before_list_the_scenes_starts_the_asking_part(reader):
    question = "stuff like ben's g.i. joe or emma's wind-up toys, list the scenes where a toy is mentioned"
    assert reader.read(question).phrase == "toy"


def test_the_transcripts_typo_of_a_word_ten_times_as_common(reader):
    assert reader.read("embarassing scenes").phrase == "embarrassing"
