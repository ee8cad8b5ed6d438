"""List questions read from the failures of the `fresh48` set (issue 34), each asked here in other words and other
targets: request openers name nothing ("round up every scene", "any idea which scenes", "pull up every scene");
"no. of" counts; a capitalised "Back" or "Roughly" that opens a question is no name, "individual lines" are lines;
"a bunch of scenes in ..." tells, it does not ask; "where else does X turn up" is X coming up (but someone who
"turns up as" someone arrives); "have her saying it" says what the memory quoted; "which ones are they" points to
the scenes, not to a person; a name someone is called in the memory ("the waiters call him Dragon") is no name said
when the asking part names its own target; "first-season" is season 1."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import parse_season_episode
from ragfunnel.query.list_question import _preamble_end, count_unit
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s01_e01_c01", ["[Scene: A cabin in the woods, everyone is there.]", ("Rachel Green", "It's kinda cold."),
                             ("Ross Geller", "Who has the envelope?")], "One", season=1, episode=1),
    make_doc("s01_e01_c02", [("Rachel Green", "I kinda like it."), ("Monica Geller", "The envelope is gone.")], "One",
             season=1, episode=1),
    make_doc("s02_e01_c01", [("Rachel Green", "Kinda."), ("Joey Tribbiani", "A dragon on the van!"),
                             ("Chandler Bing", "Genius. A genius!")], "Two", season=2, episode=1),
    make_doc("s02_e02_c01", [("Ross Geller", "No idea. Pull it round the back.")], "Three", season=2, episode=2),
    make_doc("s02_e01_c02", [("Monica Geller", "Hi, I'm the Dragon's boss."), ("Phoebe Buffay", "Hate it, love it."),
                             ("Chandler Bing", "What a jerk.")], "Two", season=2, episode=1),
]


def test_request_openers_name_nothing(store, reader):
    assert reader.read("Could you round up every scene where Monica says envelope?").phrase == "envelope"
    assert reader.read("Any idea which scenes bring up an envelope?").phrase == "envelope"
    assert reader.read("Monica loses it. Pull up every scene where the word envelope shows up.").phrase == "envelope"


def test_no_of_counts_and_first_words_and_individual_lines_are_no_targets(reader):
    assert count_unit("no. of scenes w/ jerk") == "scenes" and reader.read("no. of scenes w/ jerk").count == "scenes"
    query = reader.read("Chandler says it a lot. Roughly how many scenes in total have somebody called a jerk?")
    assert (query.phrase, query.count) == ("jerk", "scenes")
    query = reader.read("Joey insists Chandler is smart. How many individual lines call someone a genius?")
    assert (query.phrase, query.count) == ("genius", "lines")


def test_a_bunch_of_scenes_tells_and_turning_up_comes_up(store, reader):
    question = ("Everyone goes away for a weekend, and there are a bunch of scenes in the woods. Which scenes are "
                "actually set in a cabin?")
    assert question[_preamble_end(question):].startswith("Which scenes")
    question = "Ross opens a letter and Monica hides the card. Where else does an envelope turn up?"
    assert list_keys(store, reader, question) == ["s01_e01_c01", "s01_e01_c02"]


def test_have_her_saying_it_says_what_the_memory_quoted(store, reader):
    question = "Back in season one Rachel says 'kinda' all the time. Which first-season scenes have her saying it?"
    query = reader.read(question)
    assert query.phrase == "kinda" and query.speakers == ("Rachel Green",)
    assert parse_season_episode(question) == {"season": 1} and parse_season_episode("first-season scenes") == {"season": 1}


def test_which_ones_are_they_points_to_the_scenes(reader):
    question = ("Phoebe says she hates it while Ross insists she loves it. I'm looking for every scene where love and "
                "hate both come up - which ones are they?")
    query = reader.read(question)
    assert query.speakers == () and {query.phrase, *query.others} == {"love", "hate"}


def test_a_name_called_in_the_memory_is_no_name_said(store, reader):
    question = ("Monica's van has a dragon on it, and when Joey waits tables the waiters call him Dragon. Pull up every "
                "scene where the word dragon shows up.")
    query = reader.read(question)
    assert (query.phrase.lower(), query.speakers) == ("dragon", ())
    assert list_keys(store, reader, question) == ["s02_e01_c01", "s02_e01_c02"]


PRONOUN_DOCS = [make_doc(f"s03_e01_c{i:02d}", [f"(Chandler comes in, he is late again {i}.)", f"(Monica stands up and she waves {i}.)",
                                              ("Chandler Bing", "Huh." if i % 3 == 0 else "Could I BE any later?"),
                                              ("Monica Geller", "Huh, nice." if i % 4 == 0 else "Sit down.")],
                         "Three", season=3, episode=1) for i in range(1, 13)]


@pytest.fixture(scope="module")
def pronoun_reader(session_cache, tmp_path_factory):
    from ragfunnel.query.list_question import ListQuestionReader, RelationModel
    from ragfunnel.query.vocabulary import Vocabulary
    from ragfunnel.store import StoreSettings, build_index

    store = build_index(PRONOUN_DOCS, tmp_path_factory.mktemp("pronouns") / "index", StoreSettings(), session_cache)
    cache = tmp_path_factory.mktemp("pronoun-cache")
    yield store, ListQuestionReader(Vocabulary(store, "utt", cache=cache), RelationModel(cache_dir=cache))
    store.close()


def test_the_pronoun_of_the_asking_part_picks_who_of_the_people_named(pronoun_reader):
    store, reader = pronoun_reader
    assert (reader.vocabulary.pronoun("Chandler Bing"), reader.vocabulary.pronoun("Monica Geller")) == ("he", "she")
    question = "Half of Chandler's comebacks end in a 'huh?', like 'nice, huh, Mon?'. Which scenes have him saying huh?"
    assert reader.read(question).speakers == ("Chandler Bing",)
    assert list_keys(store, reader, question) == ["s03_e01_c03", "s03_e01_c06", "s03_e01_c09", "s03_e01_c12"]
    question = "Chandler's jokes get a 'huh' from Monica. Which scenes have her saying huh?"
    assert reader.read(question).speakers == ("Monica Geller",)
