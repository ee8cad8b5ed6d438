"""List questions read from the failures of the `fresh40` set (issue 34), each asked here in other words: a request
after ", but I'd like" starts the asking part, and "I" / "I'd" is no name; a memory told after the question ("... like
the one where Susie says ...", "- I think Rachel complains about 'the graduation from hell'") does not name the target
when the question names its own; an apposition between a speaker and "goes 'X'" does not hide who says it; a fragment
of a speaker and a drawn-out word is the speaker saying it ("phoebe shhh"); "NAME says WORDS" routes as a list."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import FriendsCorpus
from ragfunnel.query.router import Router
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s03_e01_c01", [("Phoebe Buffay", "Can you roll your tongue?"), ("Frank Buffay Jr.", "My tongue!"),
                             ("Phoebe Buffay", "Shhh."), ("Phoebe Buffay", "Hi.")], "One", season=3, episode=1),
    make_doc("s03_e01_c02", [("Susie Moss", "You pulled up my skirt."), ("Chandler Bing", "A skirt."),
                             ("Susie Moss", "Hi."), ("Susie Moss", "Bye.")], "One", season=3, episode=1),
    make_doc("s03_e02_c01", [("Rachel Green", "The graduation from hell."), ("Joey Tribbiani", "Oh man!"),
                             ("Ross Geller", "By the way, graduating is hard.")], "Two", season=3, episode=2),
    make_doc("s03_e02_c02", [("Joey Tribbiani", "Oh man."), ("Joey Tribbiani", "Hi."), ("Monica Geller", "Oh man."),
                             ("Phoebe Buffay", "Shhh!"), ("Ross Geller", "By the way, shhh.")], "Two", season=3, episode=2),
]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(FriendsCorpus.route_examples)


def test_a_request_after_but_id_like_asks(reader):
    question = ("i remember phoebe asking her brother frank if he can roll his tongue, but I'd like every scene "
                "where somebody's tongue comes up")
    query = reader.read(question)
    assert (query.phrase, query.speakers) == ("tongue", ())


def test_a_memory_told_after_the_question_names_no_target(store, reader):
    question = ("any scene where a skirt gets brought up... like the one where Susie says he pulled up her skirt in "
                "the school play")
    assert (reader.read(question).phrase, reader.read(question).speakers) == ("skirt", ())
    assert list_keys(store, reader, question) == ["s03_e01_c02"]
    question = ("every scene where someone talks about graduating - I think Rachel complains about her sister's "
                "graduation being 'the graduation from hell'")
    assert reader.read(question).phrase == "graduating"


def test_an_apposition_between_the_speaker_and_the_quote(store, reader):
    question = "every time Joey, the struggling actor from across the hall, goes 'oh man!' - show me those scenes"
    assert reader.read(question).speakers == ("Joey Tribbiani",)
    assert list_keys(store, reader, question) == ["s03_e02_c01", "s03_e02_c02"]


def test_a_speaker_and_a_drawn_out_word(store, reader):
    query = reader.read("phoebe shhh")
    assert query.speakers == ("Phoebe Buffay",) and query.phrase == "shhh"
    assert list_keys(store, reader, "phoebe shhh") == ["s03_e01_c01", "s03_e02_c02"]


def test_name_says_words_routes_as_a_list(router):
    assert router.route("ross says by the way").name == "aggregate"
    assert router.route("Ross says he is fine?").name != "aggregate"
    assert Router(None).route("manual says reset").name == "lookup"  # no trained router: a ranked search
