"""List questions read from the failures of the `fresh43` set (issue 34), each asked here in other words and other
targets: a compound in -man has its plural in -men (policeman ~ policemen); a question written as a transcript
writes a line ("chandler: lovely") is that speaker saying it; an aside that frames the asking ("out of curiosity",
"for the record") names nothing; "were there ..." / "has anyone ..." opens a question, so the memory before it is
no target, and a last sentence that points back ("show me those") leaves the target to the sentence before it;
"anyway" is no target; a quote in a memory whose words end its sentence ("... 'I lost my tiara!' Which scenes ...")
ends it there, so the asking sentence after it names the target, not the quote (fresh44's first sight); and from
fresh45: the search box's "# scenes ...", "# eps ..." count, and "else" ("where else") is no second target."""

from __future__ import annotations

from ragfunnel.query.list_question import count_unit
from ragfunnel.query.vocabulary import _plural_of, other_plurals
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s02_e01_c01", [("Monica Geller", "A policeman came by."), ("Chandler Bing", "How lovely."),
                             ("Ross Geller", "The mailman is late again, or someone else is.")], "One", season=2, episode=1),
    make_doc("s02_e01_c02", [("Joey Tribbiani", "Two policemen were at the door!"), ("Chandler Bing", "Lovely."),
                             ("Rachel Green", "Lovely day, isn't it?")], "One", season=2, episode=1),
    make_doc("s02_e02_c01", [("Phoebe Buffay", "I got a new tiara at the market."), ("Chandler Bing", "Oh no."),
                             ("Gunther", "Whatever.")], "Two", season=2, episode=2),
    make_doc("s02_e02_c02", [("Ross Geller", "Remember the Tony Danza haircut?"), ("Rachel Green", "My tiara!"),
                             ("Monica Geller", "Tony Danza was great.")], "Two", season=2, episode=2),
    make_doc("s02_e03_c01", [("Monica Geller", "The tiara is mine anyway."), ("Joey Tribbiani", "Curiosity killed the cat."),
                             ("Ross Geller", "Was that a haircut?")], "Three", season=2, episode=3),
]


def test_a_compound_in_man_has_its_plural_in_men(store, reader):
    assert _plural_of("policeman", "policemen") and _plural_of("women", "woman") and not _plural_of("man", "men")
    assert other_plurals("mailmen") == ["mailman"] and other_plurals("omen") == [] and other_plurals("human") == []
    assert list_keys(store, reader, "policemen mentions") == ["s02_e01_c01", "s02_e01_c02"]
    assert list_keys(store, reader, "Which scenes mention a policeman?") == ["s02_e01_c01", "s02_e01_c02"]


def test_a_line_written_as_a_transcript_is_that_speaker_saying_it(store, reader):
    query = reader.read("chandler: lovely")
    assert (query.phrase, query.speakers) == ("lovely", ("Chandler Bing",))
    assert list_keys(store, reader, "chandler: lovely") == ["s02_e01_c01", "s02_e01_c02"]
    assert reader.read("monica: 'the tiara is mine'").speakers == ("Monica Geller",)
    # what follows the colon asks, or the name is no speaker's: no line of a transcript
    assert reader.read("Note: which scenes mention a tiara?").phrase == "tiara"


def test_an_aside_that_frames_the_asking_names_nothing(store, reader):
    question = "Phoebe shows off at the market. Out of curiosity, in how many scenes does the word tiara come up?"
    assert reader.read(question).phrase == "tiara"
    assert reader.read("for the record, which scenes mention a tiara?").phrase == "tiara"
    assert reader.read("Phoebe shows off again. out of curiosity how many scenes mention a tiara").phrase == "tiara"
    # no aside when it is what is said
    assert reader.read("chandler says for the record").speakers == ("Chandler Bing",)


def test_were_there_opens_the_asking_and_those_points_to_it(store, reader):
    question = ("I still laugh at Ross remembering that Tony Danza haircut, lol. Were there other times anyone talked "
                "about a haircut? Show me those scenes")
    assert reader.read(question).phrase == "haircut"
    assert list_keys(store, reader, question) == ["s02_e02_c02", "s02_e03_c01"]
    assert reader.read("Tony Danza was on the show. Has anyone ever talked about a tiara? list them").phrase == "tiara"


def test_anyway_is_no_target(reader):
    assert reader.read("tiara anyway").phrase == "tiara"


def test_a_quote_that_ends_its_sentence_ends_the_memory(store, reader):
    question = ("Phoebe at the market, she keeps telling everyone 'I got a new tiara at the market.' Which scenes "
                "does anybody say the word tiara in?")
    query = reader.read(question)
    assert query.phrase == "tiara" and query.exact is False
    assert list_keys(store, reader, question) == ["s02_e02_c01", "s02_e02_c02", "s02_e03_c01"]


def test_a_number_sign_before_a_unit_counts_it(reader):
    assert (count_unit("# scenes w/ a tiara"), count_unit("# episodes tiara"), count_unit("# lines lovely")) == (
        "scenes", "episodes", "lines")
    assert reader.read("# eps tiara").count == "episodes"
    assert count_unit("ross's #1 fan") is None and count_unit("# of scenes with a tiara") == "scenes"
    assert reader.read("# scenes w/ tiara").count == "scenes"


def test_else_is_no_second_target(reader):
    query = reader.read("Phoebe loves her tiara and the market. Where else does a tiara come up?")
    assert (query.phrase, query.relation, query.others) == ("tiara", "mentions", ())
