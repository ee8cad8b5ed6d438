"""List questions read from the failures of the `fresh41` set (issue 34), each asked here in other words: a word the
lines write capitalised only inside a longer name ("Van Damme") is no name when typed alone ("a van"); a role after
"talks about" is what is talked about, not who talks; "num" before a unit counts it; a search-box fragment's run of
four words or more that a line holds word for word is named as if quoted, though its own words ("you", "look") frame
questions; "altogether" is no target; a verb of mentioning and none of speaking asks for mentions; "her name, Molly,"
and "her name comes up" name the person the memory describes (a main character only frames it)."""

from __future__ import annotations

from ragfunnel.query.list_question import spelled_out
from tests.helpers import list_keys, make_doc

ROSS_LINES = [("Ross Geller", f"Line {i} of mine.") for i in range(40)]

DOCS = [
    make_doc("s04_e01_c01", [("Chandler Bing", "I saw Jean-Claude Van Damme today."),
                             ("Joey Tribbiani", "You met Van Damme?"), ("Chandler Bing", "Yes, Van Damme himself."),
                             ("Monica Geller", "We need the van for the catering.")], "One", season=4, episode=1),
    make_doc("s04_e01_c02", [("Jean-Claude Van Damme", "Hello."), ("Jean-Claude Van Damme", "Yes."),
                             ("Jean-Claude Van Damme", "Bye."), ("Phoebe Buffay", "So I borrowed a van."),
                             ("The Photographer", "Smile, everyone!")], "One", season=4, episode=1),
    make_doc("s04_e02_c01", [("Rachel Green", "The photographer at the wedding was so rude."),
                             ("Ross Geller", "Can you feel the love tonight is our song."),
                             ("Joey Tribbiani", "Can you feel it?")], "Two", season=4, episode=2),
    make_doc("s04_e02_c02", [("Molly", "I'm the new nanny."), ("Joey Tribbiani", "Molly is so hot."),
                             ("Ross Geller", "I had lunch with Julie."), *ROSS_LINES[:20]], "Two", season=4, episode=2),
    make_doc("s04_e03_c01", [("Julie", "Hi Ross."), ("Julie", "I'm back."), ("Julie", "Bye."),
                             ("Rachel Green", "Julie is here?"), *ROSS_LINES[20:]],
             "Three", season=4, episode=3),
]


def test_a_word_capitalised_only_inside_a_longer_name_is_no_name(store, reader):
    query = reader.read("the van mentioned in season 4")
    assert (query.phrase, query.speakers) == ("van", ())
    assert list_keys(store, reader, "the van mentioned in season 4") == ["s04_e01_c01", "s04_e01_c02"]


def test_a_role_talked_about_is_mentioned(store, reader):
    query = reader.read("all the bits where somebody talks about a photographer")
    assert (query.phrase, query.speakers, query.relation) == ("photographer", (), "mentions")
    assert reader.read("scenes where the photographer talks").speakers == ("The Photographer",)


def test_num_before_a_unit_counts_it():
    assert spelled_out("num scenes with pizza") == "number of scenes with pizza"
    assert spelled_out("num. of eps with pizza") == "number of episodes with pizza"
    assert spelled_out("num pad") == "num pad"


def test_a_run_of_words_a_line_holds_is_named_as_if_quoted(store, reader):
    query = reader.read("can you feel the love tonight scenes")
    assert query.phrase == "can you feel the love tonight"
    assert list_keys(store, reader, "can you feel the love tonight scenes") == ["s04_e02_c01"]
    # a run that ends in a preposition names nothing: "feel the love tonight can you" is not held, "can you" is short
    assert reader.read("Which scenes mention a van?").phrase == "van"


def test_altogether_is_no_target(reader):
    question = "monica and phoebe cater a party in season four... how many scenes altogether mention the van"
    query = reader.read(question)
    assert (query.phrase, query.relation, query.others, query.count) == ("van", "mentions", (), "scenes")


def test_a_name_given_after_her_name_is_mentioned(reader):
    question = "joey and ross both like the new nanny for emma... show me the scenes where her name, Molly, comes up"
    query = reader.read(question)
    assert (query.phrase, query.speakers, query.relation) == ("Molly", (), "mentions")


def test_her_name_names_the_person_the_memory_describes(store, reader):
    question = "ross went out with julie for a while — which scenes does her name come up in"
    query = reader.read(question)
    assert (query.phrase.lower(), query.speakers) == ("julie", ())
    assert list_keys(store, reader, question) == ["s04_e02_c02", "s04_e03_c01"]
