"""List questions read from the failures of the `fresh47` set (issue 34), each asked here in other words and other
targets: a part that opens with a clause of time ("When Erica comes to visit, Monica says ...") tells a memory when a
later part asks; "of the show" is the series, no pronoun that keeps the memory's speaker; "every scene that mentions
..." does not point back; an asking part that names one thing and joins it to nothing is no "together" question,
whatever the memory before it; a verb of making a sound joined to a thing ("both a voice and singing", "voice +
sing", "a voice and singing together") is the second thing; "set there" after "a house on the beach for the weekend" is the beach; and the router
reads the last sentence of a question that a long memory drowns (fresh46's "... Which bits of the show talk about a
miracle?")."""

from __future__ import annotations

from ragfunnel.query.list_question import _preamble_end
from ragfunnel.query.router import _last_sentence
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s04_e01_c01", ["[Scene: A beach house, everyone arrives for the weekend.]", ("Joey Tribbiani", "A kite on the beach!"),
                             ("Monica Geller", "Where is the statue?")], "One", season=4, episode=1),
    make_doc("s04_e01_c02", ["[Scene: The beach, Ross and Rachel walk.]", ("Ross Geller", "I found a shell."),
                             ("Rachel Green", "Great weekend.")], "One", season=4, episode=1),
    make_doc("s04_e02_c01", ["[Scene: Central Perk, Erica is visiting.]", ("Erica", "I love the Statue of Liberty."),
                             ("Phoebe Buffay", "The kite is stuck.")], "Two", season=4, episode=2),
    make_doc("s04_e02_c02", [("Erica", "Is that a kite?"), ("Monica Geller", "A statue of a kite, yes."),
                             ("Chandler Bing", "A weekend of kites.")], "Two", season=4, episode=2),
    make_doc("s04_e03_c01", [("Phoebe Buffay", "Stop singing, Ross!"), ("Ross Geller", "My voice is fine.")], "Three",
             season=4, episode=3),
    make_doc("s04_e03_c02", [("Phoebe Buffay", "What a voice."), ("Joey Tribbiani", "A sandwich!")], "Three", season=4, episode=3),
]


def test_a_clause_of_time_that_opens_a_memory_asks_nothing(store, reader):
    question = ("When Erica comes to visit, Monica says she loves the tourist spots and Phoebe suggests the Statue of "
                "Liberty. Which bits of the show mention a kite?")
    assert question[_preamble_end(question):].startswith("Which bits")
    query = reader.read(question)
    assert (query.phrase, query.speakers) == ("kite", ())
    assert list_keys(store, reader, question) == ["s04_e01_c01", "s04_e02_c01", "s04_e02_c02"]
    # alone, or with its auxiliary, "when" asks
    assert _preamble_end("When does Erica mention a kite?") is None
    assert reader.read("When Monica says kite").speakers == ("Monica Geller",)


def test_every_scene_that_mentions_does_not_point_back_and_one_thing_asked_is_no_together_question(store, reader):
    question = ("Erica only wanted to see the city, but Monica goes full tour guide and drags her up a statue, which "
                "somebody then climbs. I want every scene that mentions a statue.")
    query = reader.read(question)
    assert (query.phrase, query.relation, query.others) == ("statue", "mentions", ())
    assert list_keys(store, reader, question) == ["s04_e01_c01", "s04_e02_c01", "s04_e02_c02"]


def test_set_there_is_the_place_named_as_a_place(store, reader):
    question = "The gang goes to a house on the beach for the weekend - which scenes are set there?"
    query = reader.read(question)
    assert (query.phrase, query.relation) == ("beach", "setting")
    assert list_keys(store, reader, question) == ["s04_e01_c01", "s04_e01_c02"]


def test_the_last_sentence_is_the_one_that_asks():
    assert _last_sentence("Joey flies a kite on the beach for hours. Which bits mention a kite?") == "Which bits mention a kite?"
    assert _last_sentence("Which bits mention a kite?") is None


def test_a_long_memory_does_not_drown_the_sentence_that_asks_for_a_list():
    from ragfunnel.corpus.friends import FriendsCorpus
    from ragfunnel.query.router import Router

    router = Router(FriendsCorpus.route_examples)
    question = ("Joey and Chandler sit glued to the Miracle Wax infomercial, and Ross, dressed as the Holiday Armadillo, "
                "tells Ben about the Hanukkah miracle. Which bits of the show talk about a miracle?")
    route = router.route(question)
    assert route.name == "aggregate" and "last sentence" in route.reason
    # a last sentence that asks for no list leaves a lookup a lookup
    assert router.route("Ross and Rachel break up after the copy girl. Which episode is that?").name == "lookup"


def test_a_sound_made_joined_to_a_thing_is_the_second_thing(store, reader):
    for question in ("Which scenes mention both a voice and singing?", "voice + singing", "voice & singing",
                     "Ross thinks he can sing. Which scenes bring up a voice and singing together?"):
        query = reader.read(question)
        assert query.relation == "together" and {query.phrase, *query.others} == {"voice", "singing"}, question
        assert list_keys(store, reader, question) == ["s04_e03_c01"]
    # how it is said, not a thing: "Ross singing" is Ross's lines
    assert reader.read("scenes where Ross is singing").relation != "together"
