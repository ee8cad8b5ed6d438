"""List questions read from the failures of the `fresh30` and `fresh31` sets (issue 34), each asked here in other
words: a word no line writes read as the sibling the lines write ("optimism": optimistic) only when nothing else is
asked; "X + Y in one scene" when the classifier thinks of a place; a stock phrase said unquoted after "going",
"with a" or a comma that asks, and its owner the one doing it; words shouted one by one ("NO. WAY."); "he's
mentioned" is no speaking; "X, every scene" and "total line count" route as lists."""

from __future__ import annotations

from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

_HOLD_ON = [("Monica Geller", "Hold on a second!")] * 6 + [("Ross Geller", "Hold on a second.")] * 5

DOCS = [
    make_doc("s03_e01_c01", ["[Scene: Central Perk.]", ("Rachel Green", "You are so optimistic."),
                             ("Chandler Bing", "Pizza and beer tonight?"), ("Joey Tribbiani", "Beer!")],
             "One", season=3, episode=1),
    make_doc("s03_e01_c02", [("Joey Tribbiani", "Pizza!"), ("Phoebe Buffay", "No way."), ("Monica Geller", "No way!")],
             "One", season=3, episode=1),
    make_doc("s03_e02_c01", _HOLD_ON[:6] + [("Chandler Bing", "Whiskers is the cat.")], "Two", season=3, episode=2),
    make_doc("s03_e02_c02", _HOLD_ON[6:] + [("Monica Geller", "Whiskers again.")], "Two", season=3, episode=2),
    make_doc("s03_e03_c01", [("Joey Tribbiani", "How you doin'?")] * 6 + [("Ross Geller", "How you doin'?")],
             "Three", season=3, episode=3),
    make_doc("s03_e03_c02", [("Joey Tribbiani", "How you doin'?")] * 4 + [("Gunther", "Hi.")], "Three", season=3, episode=3),
]


def test_a_word_no_line_writes_reads_as_its_sibling(store, reader):
    question = "Which scenes bring up optimism?"
    assert reader.read(question).phrase == "optimistic"
    assert list_keys(store, reader, question) == ["s03_e01_c01"]


def test_the_sibling_waits_for_nothing_else_asked(reader):
    # "Mr. optimism himself" only describes; the word asked for is pizza
    assert reader.read("Scenes where Mr. optimism himself, Chandler Bing, mentions pizza").phrase == "pizza"


def test_plus_in_one_scene_is_together(store, reader):
    q = reader.read("pizza + beer in one scene, which ones")
    assert (q.relation, sorted([q.phrase, *q.others])) == ("together", ["beer", "pizza"])
    assert list_keys(store, reader, "pizza + beer in one scene, which ones") == ["s03_e01_c01"]


def test_stock_phrase_after_with_is_said_by_the_one_doing_it(store, reader):
    question = "scenes where monica stops everybody with a hold on a second"
    q = reader.read(question)
    assert (q.phrase, q.speakers) == ("hold on a second", ("Monica Geller",))
    assert list_keys(store, reader, question) == ["s03_e02_c01"]


def test_stock_phrase_before_a_comma_that_asks(store, reader):
    question = "joey going how u doin, all the scenes he says it"
    q = reader.read(question)
    assert (q.phrase.lower(), q.speakers) == ("how you doin", ("Joey Tribbiani",))
    assert list_keys(store, reader, question) == ["s03_e03_c01", "s03_e03_c02"]


def test_words_shouted_one_by_one_are_said(store, reader):
    question = "monica's NO. WAY. - which scenes"
    q = reader.read(question)
    assert (q.phrase, q.speakers) == ("no way", ("Monica Geller",))
    assert list_keys(store, reader, question) == ["s03_e01_c02"]


def test_hes_mentioned_is_no_speaking(reader):
    q = reader.read("chandler's cat whiskers - scenes where he's mentioned")
    assert q.speakers == ()


def test_a_thing_then_every_scene_and_a_line_count_route_as_lists():
    router = Router()
    assert router.route("hats, every scene").name == "aggregate"
    assert router.route("gunther total line count").name == "aggregate"
    assert router.route("Who is Gunther?").name != "aggregate"
