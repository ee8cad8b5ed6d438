"""List questions read from the failures of the `fresh21` set (issue 34), each asked here in other words: a quote
anywhere in what a question leaves out ("leaving out ... figures of speech like 'early bird'"); "brown bird cookie
stuff excluded"; "whether it's food, the animal or ..."; "the beach house included"; "comes up as a toy"; an interjection drawn out
("ew": "Eww!", "Ewww"); a quote with a placeholder ("Could X be any more..."); relatives by the surname of the one
named ("Joshua's parents": Mr. and Mrs. Burgin; "joey's nonna": Grandma Tribbiani); and a British / American
spelling is no other word (mouse is no muse); a common phrase quoted with "!" is the exclamation ("I know!"); and from `fresh22`: "the pilot" / "very first ep" (the
first episode); "point me to"; "the hockey team doesn't count", "'o'clock' shouldn't count"; "comes out with the
phrase"; a speaker in a memory when the asking part names a thing and no speaking; a typo keeps its first letter;
and from `fresh23`: "that's so sweet" is also "that is so sweet"; a stock phrase said unquoted at the end ("bits
where she says thats so sweet"); "that whole 'oh please' thing she does"; "of any kind"; ", including ..."."""

from __future__ import annotations

from ragfunnel.query import list_question
from ragfunnel.query.aggregate import Aggregator, drawn_spellings, matches_template
from ragfunnel.query.vocabulary import _us_uk
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s03_e05_c01", ["[Scene: Central Perk.]", ("Phoebe Buffay", "Eww! A bird!"), ("Chandler Bing", "Could I be any more tired?"),
                             ("Joey Tribbiani", "The early bird gets the worm."), ("Mr. Burgin", "Rachel?"),
                             ("Mrs. Burgin", "Who is this?"), ("Joshua Burgin", "Mom! Dad!"), ("Joshua Burgin", "Hi."),
                             ("Joshua Burgin", "Bye.")], "One", season=3, episode=5),
    make_doc("s03_e05_c02", ["[Scene: Monica's.]", ("Phoebe Buffay", "Ew."), ("Chandler Bing", "Could this be more awkward?"),
                             ("Rachel Green", "Brown Bird cookies!"), ("Grandma Tribbiani", "Joey!"), ("Monica Geller", "A mouse!"),
                             ("Ross Geller", "The muse of chicken soup."), ("Joey Tribbiani", "We went to the beach."),
                             ("Ross Geller", "My doll! A toy."), ("Monica Geller", "I KNOW!!"),
                             ("Monica Geller", "I know it is."),
                             ("Monica Geller", "That is so sweet."), ("Rachel Green", "Oh please."),
                             ("Monica Geller", "Aww, that's so sweet!")],
             "One", season=3, episode=5),
    make_doc("s03_e06_c01", ["[Scene: The beach house.]", ("Phoebe Buffay", "Ewww, sand."), ("Chandler Bing", "Could be."),
                             ("Joey Tribbiani", "Chicken pox!"), ("Joey Tribbiani", "Chicken, the food."),
                             ("Joey Tribbiani", "Nice beach house."), ("Ross Geller", "Pigeons are birds.")], "Two", season=3,
             episode=6),
]



def test_a_quote_anywhere_in_what_is_left_out(store, reader):
    question = ("Where do birds come up? I want the scenes, leaving out the Brown Bird scouts and figures of speech "
                "like 'early bird' or 'tough old bird'.")
    q = reader.read(question)
    assert (q.phrase, q.exact) == ("birds", False)
    assert ("early", "bird") in q.excluded
    assert list_keys(store, reader, question) == ["s03_e05_c01", "s03_e06_c01"]
    q = reader.read("chandler and the birds... scenes that talk about actual birds, brown bird cookie stuff excluded")
    assert q.phrase == "birds" and ("brown", "bird") in {e[:2] for e in q.excluded}


def test_the_senses_a_word_comes_in_and_what_it_includes(reader):
    assert reader.read("Find the scenes where a doll comes up as a toy").phrase == "doll"
    assert reader.read("the scenes where chicken is used, whether it's food, the animal or even chicken pox").phrase == "chicken"
    assert reader.read("List the episodes in which a beach gets talked about, the beach house included.").phrase == "beach"


def test_an_interjection_drawn_out(store, reader):
    assert "eww" in drawn_spellings("ew") and drawn_spellings("hello") == []
    assert list_keys(store, reader, 'In which scenes does Phoebe say "ew"?') == ["s03_e05_c01", "s03_e05_c02", "s03_e06_c01"]
    assert list_keys(store, reader, "which scenes have phoebe saying ew / ewww") == ["s03_e05_c01", "s03_e05_c02", "s03_e06_c01"]


def test_a_quote_with_a_placeholder(store, reader):
    assert matches_template(["could", "we", "be", "more", "white", "trash"], ["could", "*", "be", "more", "*"])
    assert not matches_template(["could", "be"], ["could", "*", "be"])
    q = reader.read("List the scenes where Chandler uses his trademark 'could ___ be more ___' sarcasm.")
    assert (q.exact, q.speakers) == (True, ("Chandler Bing",))
    assert list_keys(store, reader, "List the scenes where Chandler uses his trademark 'could ___ be more ___' sarcasm.") == [
        "s03_e05_c02"]
    assert list_keys(store, reader, 'In which scenes does Chandler say a line of the form "Could X be any more..."?') == [
        "s03_e05_c01"]


def test_relatives_by_the_surname_of_the_one_named(store, reader):
    q = reader.read("In which scenes do Joshua's parents speak?")
    assert (q.relation, set(q.speakers)) == ("speaks", {"Mr. Burgin", "Mrs. Burgin"})
    q = reader.read("joey's nonna who comes to watch his big tv episode... how many lines does she get")
    assert (q.relation, q.speakers, q.count) == ("speaks", ("Grandma Tribbiani",), "lines")


def test_a_british_or_american_spelling_is_no_other_word(store, reader):
    assert "color" in _us_uk("colour") and "muse" not in _us_uk("mouse") and "hose" not in _us_uk("house")
    assert list_keys(store, reader, "Which scenes mention a mouse?") == ["s03_e05_c02"]


def test_a_common_phrase_quoted_with_an_exclamation_mark(store, reader, monkeypatch):
    monkeypatch.setattr(list_question, "COMMON_LINES", 1)  # the tiny corpus: "I know" in two lines is common here
    q = reader.read("In which scenes does Monica say 'I know!'?")
    assert (q.phrase, q.punctuation, q.speakers) == ("I know", "!", ("Monica Geller",))
    result = Aggregator(store).run(q)
    assert [m.line for i in result.items for m in i.matches] == ["Monica Geller: I KNOW!!"]
    assert reader.read("In which scenes does Monica say 'I know it'?").punctuation == ""
    monkeypatch.setattr(list_question, "COMMON_LINES", 300)
    assert reader.read("In which scenes does Monica say 'I know!'?").punctuation == ""  # rare here: any "I know"


def test_the_pilot_is_the_first_episode(store, reader):
    q = reader.read("In the pilot, which scenes does Ross have lines in?")
    assert (q.relation, q.speakers, dict(q.named)) == ("speaks", ("Ross Geller",), {"season": 3, "episode": 5})
    assert list_keys(store, reader, "very first ep - which scenes does ross talk in") == ["s03_e05_c02"]
    assert reader.read("the doll in the pilot - how many scenes in the whole show mention a doll?").named == ()


def test_how_a_question_is_put_and_what_does_not_count(reader):
    assert reader.read("Point me to each scene in which a doll comes up, whatever the reason.").phrase == "doll"
    q = reader.read("every scene where somebody brings up birds - the brown bird cookies don't count.")
    assert q.phrase == "birds" and ("brown", "bird") in {e[:2] for e in q.excluded}
    q = reader.read('In what episodes is there talk of a mouse? Cartoon mice said as "mickey mouse" shouldn\'t count.')
    assert (q.phrase, q.exact) == ("mouse", False)


def test_comes_out_with_a_phrase(reader):
    q = reader.read("Show the scenes where Phoebe comes out with the word 'ew'.")
    assert (q.phrase, q.speakers) == ("ew", ("Phoebe Buffay",))


def test_the_asking_part_names_a_thing_and_nobody_speaks(reader):
    q = reader.read("ross at the beach house when he goes to hug rachel... what other scenes have a doll in them")
    assert q.relation != "speaks" and (q.phrase, q.speakers) == ("doll", ())


def test_a_typo_keeps_its_first_letter(reader):
    assert reader.read("which scenes mention chickn").phrase == "chicken"  # one letter left out
    assert reader.read("which scenes mention thicken").phrase != "chicken"  # not a typo of chicken: it starts otherwise


def test_a_contraction_is_also_written_out(store, reader):
    q = reader.read('In which scenes does Monica say "that\'s so sweet"?')
    assert {" ".join(f) for f in q.forms[0]} == {"thats so sweet", "that is so sweet"}
    assert len([m for i in Aggregator(store).run(q).items for m in i.matches]) == 2


def test_a_stock_phrase_said_unquoted(reader):
    q = reader.read("monica getting all touched - bits where she says thats so sweet")
    assert (q.exact, q.speakers) == (True, ("Monica Geller",)) and "so sweet" in q.phrase
    q = reader.read("which scenes does ross say something about chicken")
    assert (q.exact, q.phrase) == (False, "chicken")
    for question in ("How many times does Monica say Rachel's name?", "what eps does monica say chicken in",
                     "how many times does chicken pox get said in total"):
        assert reader.read(question).exact is False, question


def test_a_quote_as_the_thing_she_does(reader):
    q = reader.read("Rachel rolling her eyes at people, that whole 'oh please' thing she does - what scenes is that")
    assert (q.phrase, q.speakers) == ("oh please", ("Rachel Green",))


def test_of_any_kind_and_including(reader):
    assert reader.read("Find the scenes that mention a doll of any kind - toy or baby doll.").phrase.startswith("doll")
    q = reader.read("In what episodes does the word chicken come up, including chicken pox or a 'chicken' joke?")
    assert (q.phrase, q.exact) == ("chicken", False)


def test_any_other_bits_after_a_memory(reader):
    assert reader.read("ross and a doll, any other bits with chicken in them").phrase == "chicken"
    assert reader.read("monica and her doll lol, where else is chicken a thing").phrase == "chicken"
