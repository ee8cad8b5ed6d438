"""A mentioned word in its other forms, and list questions put the ways the `fresh8` set put them (issue 34, read
from its failures): golf ~ golfing and scarf ~ scarves but not kids ~ kidding, "I'm trying to track down ...",
"the word screw in any form", "sting the musician", "bicycle scenes? like anything mentioning bikes", "Concert +
tickets", a surname alone ("Tribbiani"), a title alone ("Mr. sarcasm himself") and "Need all the moments with
dialogue from Krista"; and the ways the `fresh9` set put them: a quote the question leaves out ("not 'in a
pickle'"), "A, B or C", quotes joined by "or", "ross geller goes 'sweetie' at somebody", "I'm curious", "e.g. ...",
a description with its own "when", "heston himself", "shes talking", "say stuff", a dash-separated aside, "could you
show me the moments", "pickle scenes - like ..."; and the `fresh10` set's: a name guessed with a question mark
("lizzie?"), "talks about X" over other things named, a person is no place, a clause that skips something, "etc"
lists, "- like when", a word ending in -in ("pumpkin", which the matcher reads as g-dropping); and the `fresh11`
set's: "perfume/cologne", "scenes with X in them" after a preamble, "any other eps with", "whether", "is worn or
talked about", "do elevators come up" (a mention, not a setting)."""

from __future__ import annotations

import pytest

from ragfunnel.embedding import shared_encoder
from ragfunnel.query.aggregate import Aggregator
from ragfunnel.query.list_question import described_speaker, is_main_speaker
from ragfunnel.query.router import Router
from ragfunnel.query.vocabulary import SameWord, contains, inflected, other_plurals
from tests.helpers import make_doc

DOCS = [
    make_doc("s02_e01_c01", ["[Scene: Central Perk, all are there.]", ("Chandler Bing", "I'm going golfing with Ross."),
                             ("Monica Geller", "The kids are asleep."), ("Krista", "Hi Danny."),
                             ("Joey Tribbiani", "Geller! The Gellers are here.")], "One", season=2, episode=1),
    make_doc("s02_e01_c02", ["[Scene: Monica's apartment, Rachel knits.]", ("Rachel Green", "Are you kidding me?"),
                             ("Phoebe Buffay", "I lost my scarves. Both scarves."), ("Grandma Tribbiani", "Geller who?"),
                             ("Ross Geller", "Sting is playing a concert. I have tickets.")], "One", season=2, episode=1),
    make_doc("s02_e02_c01", [("Joey Tribbiani", "A bee sting hurts."), ("Ross Geller", "My bicycle is broken."),
                             ("Chandler Bing", "Screw it, I screwed up."), ("Krista", "Bye Danny.")], "Two", season=2, episode=2),
    make_doc("s02_e03_c01", [("Monica Geller", "Golf is boring. A scarf!"), ("Phoebe Buffay", "Mountain bikes are fun."),
                             ("Rachel Green", "The musician is late.")], "Three", season=2, episode=3),
    make_doc("s03_e01_c01", ["[Scene: Central Perk, Ross and Hillary.]", ("Ross Geller", "Sweetie, pass the pickles."),
                             ("Hillary", "Your teeth are so white."), ("Hillary", "They glow."), ("Hillary", "Bye."), ("Rachel Green", "Sweetie, we're in a pickle."),
                             ("Chandler Bing", "What's the big deal? I love my recliner."), ("Tilly", "Here's your fish tank."),
                             ("Tilly", "Eddie, hi."), ("Tilly", "Bye.")],
             "Five", season=3, episode=1),
    make_doc("s03_e01_c02", ["[Scene: The guys' apartment.]", ("Joey Tribbiani", "The Barcaloungers are here!"),
                             ("Chandler Bing", "No big deal. La-Z-Boys rule."), ("Charlton Heston", "Get out of my shower."),
                             ("Charlton Heston", "Who are you?"), ("Charlton Heston", "Go home."),
                             ("Ross Geller", "Sweetie, I paid the rent with my money. Steak tonight?")], "Five", season=3, episode=1),
    make_doc("s03_e02_c01", ["[Scene: A street, Phoebe gives soup.]", ("Lizzy", "Thanks for the soup."), ("Lizzy", "Bye."),
                             ("Lizzy", "Hi."), ("Phoebe Buffay", "Look out, incoming pumpkin pie!"),
                             ("Ross Geller", "My spray tan was a disaster."), ("Monica Geller", "I love scotch. And Scotch tape."),
                             ("Chandler Bing", "I want a burger, Richard.")],
             "Six", season=3, episode=2),
    make_doc("s03_e03_c01", ["[Scene: An elevator, Chandler waits.]", ("Chandler Bing", "This elevator is slow. I smell perfume."),
                             ("Joey Tribbiani", "It's cologne! And snow is falling."), ("Ross Geller", "Wear a helmet, Joey.")],
             "Seven", season=3, episode=3),
    make_doc("s03_e04_c01", ["[Scene: Rachel's room, Rachel is dressing.]", ("Rachel Green", "Where is my bra?"),
                             ("Monica Geller", "Your makeup is on the sink."), ("Rachel Green", "And my underwear?")],
             "Eight", season=3, episode=4),
    make_doc("s03_e04_c02", [("Phoebe Buffay", "I bought a bra."), ("Ross Geller", "Makeup for Ben's play."),
                             ("Monica Geller", "Your bedroom is a mess.")],
             "Eight", season=3, episode=4),
    make_doc("s03_e05_c01", [("Joey's Doctor", "You have kidney stones."), ("Joey Tribbiani", "Dr. Geller, my resume!"),
                             ("Ross Geller", "Wear socks. Russia is cold."), ("Rachel Green", "Russian dressing, please.")],
             "Nine", season=3, episode=5),
    # Joey Tribbiani speaks far more than Grandma Tribbiani, as in the show
    make_doc("s02_e04_c01", [("Joey Tribbiani", f"How you doin' number {i}?") for i in range(120)], "Four", season=2, episode=4),
]


@pytest.fixture(scope="module")
def aggregator(store):
    return Aggregator(store, same_word=SameWord(store, shared_encoder))


def scenes(aggregator, reader, question):
    return [i.key for i in aggregator.run(reader.read(question)).items]


@pytest.mark.parametrize("a, b, expected", [
    ("golf", "golfing", True), ("smoke", "smoking", True), ("nap", "napping", True), ("cleaning", "cleaned", True),
    ("paleontology", "paleontologist", False), ("competitive", "competition", False), ("frank", "frankly", False),
])
def test_an_inflection_is_the_same_word_another_word_from_the_root_is_not(a, b, expected):
    assert inflected(a, b) is expected


def test_plurals_with_ves():
    assert contains(["two", "scarves"], ["scarf"], plural=True) and contains(["a", "wife"], ["wives"], plural=True)
    assert other_plurals("scarf") == ["scarves"] and "wife" in other_plurals("wives") and other_plurals("golfing") == []


def test_a_mention_counts_the_word_in_its_other_forms_but_not_a_word_that_only_looks_like_one(aggregator, reader):
    assert scenes(aggregator, reader, "scenes where golf comes up") == ["s02_e01_c01", "s02_e03_c01"]
    assert scenes(aggregator, reader, "which scenes mention kids?") == ["s02_e01_c01"]  # not "kidding"
    assert scenes(aggregator, reader, "scarf scenes") == ["s02_e01_c02", "s02_e03_c01"]  # scarves: another index term


def test_without_an_encoder_only_plurals_count(store, reader):
    assert [i.key for i in Aggregator(store).run(reader.read("scenes where golf comes up")).items] == ["s02_e03_c01"]


def test_a_request_opening_and_how_widely_a_word_counts_are_no_targets(aggregator, reader):
    q = reader.read("I'm trying to track down the episodes in which Danny's sister Krista gets to say something")
    assert q.relation == "speaks" and q.speakers == ("Krista",) and q.phrase is None
    q = reader.read("Episodes where Mr. sarcasm himself, Chandler Bing, uses the word screw in any form")
    assert q.speakers == ("Chandler Bing",) and q.phrase == "screw"
    assert scenes(aggregator, reader, "Episodes where Chandler Bing uses the word screw in any form") == ["s02_e02"]


def test_the_thing_named_then_what_it_is(reader):
    assert reader.read("when do they talk about sting the musician? scenes pls").phrase == "sting"


def test_two_things_joined_or_one_said_again(aggregator, reader):
    q = reader.read("bicycle scenes? like anything mentioning bikes")
    assert q.relation == "mentions" and {" ".join(f) for f in q.target_forms(0)} >= {"bicycle", "bikes"}
    assert scenes(aggregator, reader, "bicycle scenes? like anything mentioning bikes") == ["s02_e02_c01", "s02_e03_c01"]
    q = reader.read("Concert + tickets: find me the scenes that talk about a concert and also about tickets.")
    assert q.relation == "together" and q.phrase.lower() == "concert" and q.others == ("tickets",)


def test_a_surname_means_its_main_bearer_and_a_title_alone_nobody(reader):
    assert reader.vocabulary.resolve_speakers("Tribbiani") == ("Joey Tribbiani",)
    assert reader.vocabulary.resolve_speakers("Mr.") == ()
    q = reader.read("find every scene where Tribbiani uses the word Geller")
    assert q.speakers == ("Joey Tribbiani",)


def test_moments_with_dialogue_from_someone_are_a_list():
    assert Router().route("Need all the moments with dialogue from Krista (Danny's sister).").name == "aggregate"


def test_a_quote_the_question_leaves_out_is_no_target(aggregator, reader):
    for question in ("Which scenes mention pickles? I mean the food, not being 'in a pickle'.",
                     "Show me the scenes that bring up pickles, leaving out the 'in a pickle' expression."):
        q = reader.read(question)
        assert q.phrase == "pickles" and not q.exact


def test_a_list_of_alternatives_and_quotes_joined_by_or(aggregator, reader):
    q = reader.read("Which scenes mention the recliners, the Barcaloungers or La-Z-Boys?")
    assert {" ".join(f) for f in q.target_forms(0)} >= {"recliners", "barcaloungers", "la z boys"}
    assert scenes(aggregator, reader, "Which scenes mention the recliners, the Barcaloungers or La-Z-Boys?") == [
        "s03_e01_c01", "s03_e01_c02"]
    q = reader.read("chandler going 'whats the big deal' or 'no big deal' - which scenes")
    assert q.exact and q.speakers == ("Chandler Bing",) and len(q.forms[0]) == 2
    assert "'whats the big deal' or 'no big deal'" in q.describe()
    assert scenes(aggregator, reader, "chandler going 'whats the big deal' or 'no big deal' - which scenes") == [
        "s03_e01_c01", "s03_e01_c02"]


def test_who_says_a_quote_at_somebody(reader):
    q = reader.read("all the times ross geller goes 'sweetie' at somebody (usually rachel) - which scenes")
    assert q.speakers == ("Ross Geller",) and q.phrase == "sweetie"


def test_asides_that_name_no_target(reader):
    assert reader.read("I'm curious how many episodes have the word steak in them somewhere.").phrase == "steak"
    q = reader.read("Scenes where the rent and money both come up together, e.g. Monica needing to borrow cash.")
    assert q.relation == "together" and {q.phrase, *q.others} == {"rent", "money"}
    q = reader.read("Which scenes does Hillary speak in, the woman Ross is dating when his teeth are way too white?")
    assert q.relation == "speaks" and q.speakers == ("Hillary",) and q.phrase is None
    q = reader.read("Scenes where Joey's co-star - Charlton Heston, who owns the shower - is speaking")
    assert q.speakers == ("Charlton Heston",)


def test_who_speaks_put_loosely(reader):
    q = reader.read("joey sneaks a shower in charlton hestons dressing room - which scenes does heston himself have lines in")
    assert q.relation == "speaks" and q.speakers == ("Charlton Heston",) and q.phrase is None
    q = reader.read("ross's date the night his teeth glow... hilary? scenes where shes talking")
    assert q.relation == "speaks" and q.speakers == ("Hillary",)
    q = reader.read("eddie's ex who turns up at the door holding a fish tank - tilly i think? when does she say stuff")
    assert q.relation == "speaks" and q.speakers == ("Tilly",)


def test_the_sentence_that_asks_after_a_dash(reader):
    assert reader.read("the bits with pickles - ross and his sandwich, rachel being sick etc").phrase == "pickles"
    q = reader.read("pickle scenes - like ross making rachel a sandwich with pickles when they make her sick")
    assert q.phrase == "pickle" and q.speakers == ()


@pytest.mark.parametrize("question", [
    "Could you show me the moments where Hillary is speaking, including when Ross smiles?",
    "pickle scenes - like ross making pregnant rachel a sandwich with pickles",
])
def test_more_ways_to_ask_for_every_moment(question):
    assert Router().route(question).name == "aggregate"


def test_a_name_guessed_with_a_question_mark_speaks(reader):
    q = reader.read("that homeless lady phoebe gives the soup to... lizzie? scenes where she talks")
    assert q.relation == "speaks" and q.speakers == ("Lizzy",)


def test_what_is_talked_about_a_person_is_no_place_and_what_is_skipped(aggregator, reader):
    assert reader.read("ross's spray tan disaster obviously but any other eps where someone talks about a tan?").phrase == "tan"
    q = reader.read("pumpkin stuff - phoebe waving pumpkin pie at chandler, monicas pumpkins at thanksgiving... which scenes")
    assert q.relation == "mentions" and q.phrase.lower().startswith("pumpkin")
    assert reader.read("Where does scotch come up? List the scenes, but skip the Scotch tape joke.").phrase.lower() == "scotch"
    assert scenes(aggregator, reader, "which scenes mention pumpkins?") == ["s03_e02_c01"]  # "pumpkin" is no "pumpking"


def test_examples_after_like_when_and_etc_name_no_target(reader):
    q = reader.read("joey and his shower, like when heston yells at him. eps where joey says geller")
    assert q.speakers == ("Joey Tribbiani",) and q.phrase.lower() == "geller"
    q = reader.read("burgr scenes?? monicas burger with richard, phoebes tan when shes sick etc")
    assert q.phrase == "burger" and q.speakers == ()


def test_more_list_openings():
    assert Router().route("ross's spray tan obviously but any other eps where someone talks about getting tan?").name == "aggregate"


def test_a_description_after_a_name_and_an_aside(reader):
    q = reader.read("number of lines spoken by Hilary (sp?), the woman Ross dates")
    assert q.speakers == ("Hillary",) and q.count == "lines" and q.phrase is None


def test_the_asking_part_after_a_preamble(aggregator, reader):
    q = reader.read("monica showing off her new perfume... scenes with perfume/cologne in them")
    assert q.relation == "mentions" and {" ".join(f) for f in q.target_forms(0)} >= {"perfume", "cologne"}
    assert reader.read("chandler waiting for the elevator... any other eps with helmets?").phrase == "helmets"
    assert reader.read("I'm after every scene where snow comes up, whether it's falling or somebody talks about it.").phrase == "snow"
    assert reader.read("Find me every episode in which a helmet is worn or talked about.").phrase == "helmet"
    assert reader.read("Where is Joey brought up?").phrase == "Joey"  # the word after "is" is the target here


def test_something_that_comes_up_is_mentioned_not_a_setting(reader):
    q = reader.read("drake falling down the elevator shaft... in how many eps do elevators come up")
    assert q.relation == "mentions" and q.count == "episodes"
    assert reader.read("Which scenes are set in an elevator?").relation == "setting"


def test_any_other_episodes_with_something_is_a_list():
    assert Router().route("chandler handcuffed to the chair... any other eps with handcuffs?").name == "aggregate"


def test_the_speaker_a_description_means_is_the_rarest_of_the_scenes_it_retrieves():
    counts = {"Ross Geller": 9000, "Joey Tribbiani": 8000, "Sarah Tuttle": 10, "Troop Leader": 40, "Rachel Green": 9000,
              "#ALL#": 5}
    scenes = [["Ross Geller", "Sarah Tuttle", "#ALL#"], ["Ross Geller", "Joey Tribbiani", "Troop Leader"], ["Sarah Tuttle"]]
    assert described_speaker(scenes, counts, named={"Ross Geller"}) == "Sarah Tuttle"
    assert described_speaker(scenes, counts, named={"Sarah Tuttle"}) == "Troop Leader"  # the named one is not described
    assert described_speaker([["Ross Geller", "Joey Tribbiani"]], counts, named=set()) is None  # main people only
    assert is_main_speaker("Ross Geller", counts) and not is_main_speaker("Sarah Tuttle", counts)


def test_how_the_speaker_of_a_pronoun_was_found(reader):
    q = reader.read("the girl whose scarf ross steals - what scenes does she talk in")
    assert q.relation == "speaks" and q.speakers == ("Ross Geller",) and q.reading.speaker_from == "first named"
    q = reader.read("that lady at the blackjack table whose hands look like mine - scenes where she talks")
    assert q.relation == "speaks" and q.speakers == () and q.reading.speaker_from == "described"
    q = reader.read("the lady with the fish tank... tilly? scenes where she talks")
    assert q.speakers == ("Tilly",) and q.reading.speaker_from == "guess"
    q = reader.read("how many lines does she get, the lady with the fish tank")
    assert q.relation == "speaks" and q.count == "lines"


def test_fresh12_readings(reader):
    # examples after ", like", "the subject of", a clause after the speaking verb, dialogue from someone described
    assert reader.read("perfume moments, like joey spraying cologne at monica. scenes?").phrase == "perfume"
    assert reader.read("Episodes where the subject of a helmet comes up, please.").phrase == "helmet"
    q = reader.read("that lady at the blackjack table, any scenes where she actually talks after she wins?")
    assert q.relation == "speaks" and q.reading.speaker_from == "described"
    q = reader.read("Scenes with dialogue from the woman that Ross and Joey meet in the elevator")
    assert q.relation == "speaks" and q.speakers == () and q.reading.speaker_from == "described"


def test_which_episode_someone_described_talks_in_is_a_list():
    assert Router().route("the london guy who grabs chandler's seat at the dinner. what ep is he talking in").name == "aggregate"


def test_fresh13_readings(aggregator, reader):
    # "X, i.e. Y": Y in other words, either counts
    q = reader.read("Give me all the scenes in which cosmetics, i.e. makeup, come up.")
    assert "makeup" in {" ".join(f) for f in q.target_forms(0)}
    assert scenes(aggregator, reader, "Give me all the scenes in which cosmetics, i.e. makeup, come up.") == [
        "s03_e04_c01", "s03_e04_c02"]
    # "X as well as Y": both in one scene
    q = reader.read("Find scenes that bring up a bra as well as underwear.")
    assert q.relation == "together" and q.phrase == "bra" and q.others == ("underwear",)
    assert scenes(aggregator, reader, "Find scenes that bring up a bra as well as underwear.") == ["s03_e04_c01"]
    # a person's bedroom is mostly "X's room" in the headings
    assert scenes(aggregator, reader, "Which scenes take place in Rachel's bedroom?") == ["s03_e04_c01"]
    # a count asked as an order, and an episode "with someone speaking", are lists
    assert Router().route("Count how often the word awesome is said across the show.").name == "aggregate"
    assert Router().route("Which episode has Dana Keystone speaking?").name == "aggregate"


def test_fresh14_readings(aggregator, reader):
    # a possessive and a role the transcripts use as a speaker's name
    q = reader.read("In which scenes does Joey's doctor speak?")
    assert q.relation == "speaks" and q.speakers == ("Joey's Doctor",)
    assert scenes(aggregator, reader, "In which scenes does Joey's doctor speak?") == ["s03_e05_c01"]
    # letters with accents are the transcripts' plain ones; "w" before a word is "with"
    assert scenes(aggregator, reader, "Which scenes mention a résumé?") == ["s03_e05_c01"]
    assert reader.read("ross's red sock, phoebe's sock bunny - scenes w socks").phrase == "socks"
    # "X or anything Y": either
    q = reader.read("eps where russia or anything russian comes up")
    assert {" ".join(f) for f in q.target_forms(0)} >= {"russia", "russian"}
    # a title before a family name is kept: "Dr. Geller" is not every Geller
    q = reader.read("How many lines mention Dr. Geller?")
    assert ("geller",) not in {tuple(f) for f in q.target_forms(0)}

