"""List questions read from the failures of the `fresh18` and `fresh19` sets (issue 34), each asked here in other
words: someone's home as the scene headings name it ("Chandler and Joey's", "Joey's apartment", "chandler n joey's
place", "monica & chandler's apt"), and only theirs; a season before the group word ("season 3 scenes"); an example
that ends at a dash; "bill's lines" typed in lower case; "a character called Tom"; a sentence that only leaves things
out ("? skip A, B and C", "don't count 'a quote'"); "bath tub" as the lines write it (bathtub); the sense of a word
("a fish, the animal or the food"); a clause that only says which kind ("pie you actually eat"); a verb with its
particle ("breaking up", "moving in or out"); two lists of alternatives in one scene; "and ... too"; what the question
leaves out of its target ("soda, not baking soda", "not 'under the bus'")."""

from __future__ import annotations

from ragfunnel.query.aggregate import Aggregator, home_heading
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s03_e01_c01", ["[Scene: Chandler and Joey's, they watch TV.]", ("Joey Tribbiani", "We're breaking up the band."),
                             ("Chandler Bing", "Breaking news: a pie."), ("Bill", "Hi guys."), ("Bill", "Bye."),
                             ("Bill", "Pay the bill.")], "One", season=3, episode=1),
    make_doc("s03_e01_c02", ["[Scene: Joey's apartment, Joey is alone.]", ("Joey Tribbiani", "I'm moving in with a box."),
                             ("Tom", "Nice boxes."), ("Joey Tribbiani", "The bill is due.")], "One", season=3, episode=1),
    make_doc("s03_e02_c01", ["[Scene: Chandler and Joey's apartment, the foosball table.]",
                             ("Chandler Bing", "You're moving out? Take the boxes."), ("Rachel Green", "I ate the pie.")],
             "Two", season=3, episode=2),
    make_doc("s04_e01_c01", ["[Scene: Joey's office, he auditions.]", ("Joey Tribbiani", "A fish in the bathtub."),
                             ("Receptionist", "Next!")], "Three", season=4, episode=1),
    make_doc("s04_e01_c02", ["[Scene: Monica and Chandler's, dinner.]", ("Monica Geller", "Cutie pie, eat the fish."),
                             ("Chandler Bing", "Get me a bathtub."), ("Monica Geller", "A hot tub!"),
                             ("Joey Tribbiani", "My character is an animal."), ("Monica Geller", "Take a bath.")], "Three",
             season=4, episode=1),
    make_doc("s04_e02_c01", ["[Scene: Monica and Chandler's apartment, Ross enters.]", ("Ross Geller", "We were moving."),
                             ("Monica Geller", "Hi."), ("Tom", "I'm Tom."),
                             ("Tom", "Bye, Tom out.")], "Four", season=4, episode=2),
    make_doc("s04_e02_c02", ["[Scene: Central Perk, Gunther serves.]", ("Rachel Green", "No picnic, this job."),
                             ("Joey Tribbiani", "A bus! The food!"), ("Ross Geller", "Threw it under the bus.")], "Four",
             season=4, episode=2),
    make_doc("s04_e03_c01", ["[Scene: Monica's, the kitchen.]", ("Monica Geller", "Baking soda cleans everything."),
                             ("Chandler Bing", "Is that baking soda in the cake?")], "Five", season=4, episode=3),
    make_doc("s04_e03_c02", ["[Scene: Central Perk.]", ("Joey Tribbiani", "A soda, please. And some baking soda."),
                             ("Ross Geller", "He threw me under the bus.")], "Five", season=4, episode=3),
]



def test_a_home_heading_names_its_owners_and_nothing_else():
    assert home_heading(["chandler", "and", "joey"], (("chandler", "joey"),))
    assert home_heading(["joey", "and", "chandler", "apartment"], (("chandler", "joey"),))
    assert home_heading(["joey", "apartment"], (("joey",),))
    assert home_heading(["the", "monica", "and", "chandler", "bedroom"], (("monica", "chandler"),))
    assert home_heading(["monica", "apartment"], (("monica", "chandler"), ("monica",)))
    assert not home_heading(["chandler", "and", "joey", "apartment"], (("joey",),))
    assert not home_heading(["joey", "office"], (("joey",),))
    assert not home_heading(["phoebe", "grandmother", "place"], (("phoebe",),))


def test_someones_home_is_where_the_headings_put_it(store, reader):
    for question in ("Which season 3 scenes take place at Chandler and Joey's apartment?",
                     "s3 scenes set at chandler n joey's place", "scenes set in joey & chandler's apt"):
        q = reader.read(question)
        assert (q.relation, [set(o) for o in q.owners]) == ("setting", [{"chandler", "joey"}]), question
    assert list_keys(store, reader, "scenes set at chandler n joey's place") == ["s03_e01_c01", "s03_e02_c01"]
    assert list_keys(store, reader, "Which scenes take place at Joey's apartment?") == ["s03_e01_c02"]
    assert list_keys(store, reader, "scenes set at monica & chandler's apt") == ["s04_e01_c02", "s04_e02_c01"]
    assert list_keys(store, reader, "scenes set in Monica and Chandler's apartment (also called Monica's)") == [
        "s04_e01_c02", "s04_e02_c01", "s04_e03_c01"]
    q = reader.read("joey and chandler as roommates - which scenes are set in their apartment?")
    assert (q.relation, [set(o) for o in q.owners]) == ("setting", [{"chandler", "joey"}])


def test_a_season_before_the_group_word_keeps_the_question_whole(reader):
    q = reader.read("Which season 3 scenes take place at Joey's apartment?")
    assert (q.relation, q.owners) == ("setting", (("joey",),))


def test_an_example_ends_at_a_dash(reader):
    q = reader.read("joey's own place, like after chandler moved out - which scenes are set at joey's apartment?")
    assert (q.relation, q.owners) == ("setting", (("joey",),))


def test_a_lower_case_name_before_lines_is_a_speaker(reader):
    q = reader.read("bill's lines - which scenes")
    assert (q.relation, q.speakers) == ("speaks", ("Bill",))


def test_a_character_called_someone_speaks(reader):
    for question in ("any character called tom - which scenes does a tom actually talk in?",
                     "which scenes does a character listed as Receptionist speak in?"):
        q = reader.read(question)
        assert (q.relation, q.phrase) == ("speaks", None), question


def test_a_sentence_that_only_leaves_things_out(store, reader):
    q = reader.read("they left ben on the bus.. how many scenes bring up a bus? don't count 'threw it under the bus' or bus boys")
    assert (q.phrase, q.exact, q.count) == ("bus", False, "scenes")
    q = reader.read("which scenes mention pie? skip cutie pie, the american pie song and the pie restaurant")
    assert (q.relation, q.phrase) == ("mentions", "pie")
    q = reader.read("ross at work - which scenes mention a picnic? ignore the saying it's no picnic")
    assert (q.phrase, q.speakers) == ("picnic", ())


def test_two_words_the_lines_write_as_one(reader):
    q = reader.read("which scenes mention a bath tub or a hot tub?")
    assert {"bathtub"} <= {" ".join(f) for f in q.forms[0]} and "hot tub" in q.phrase


def test_the_sense_of_a_word_is_no_other_target(reader):
    q = reader.read("which scenes talk about a fish, the animal or the food?")
    assert (q.phrase, q.others) == ("fish", ())


def test_a_clause_that_only_says_which_kind(reader):
    q = reader.read("monica and her pies... which scenes mention pie you actually eat?")
    assert (q.relation, q.phrase, q.others) == ("mentions", "pie", ())


def test_a_verb_keeps_its_particle(store, reader):
    assert reader.read("which scenes mention breaking up").phrase == "breaking up"
    assert list_keys(store, reader, "which scenes mention breaking up") == ["s03_e01_c01"]
    q = reader.read("scenes where people talk about moving in/out")
    assert {" ".join(f) for f in q.forms[0]} >= {"moving in", "moving out"}


def test_two_lists_of_alternatives_in_one_scene(store, reader):
    for question in ("Which scenes mention both moving in or out and a box or boxes?",
                     "scenes where ppl talk about moving in/out and boxes get mentioned too"):
        q = reader.read(question)
        assert q.relation == "together", question
        assert list_keys(store, reader, question) == ["s03_e01_c02", "s03_e02_c01"], question


def test_what_is_left_out_of_the_target_does_not_count(store, reader):
    question = "How many lines mention soda (not baking soda)?"
    q = reader.read(question)
    assert (q.phrase, q.excluded) == ("soda", (("baking", "soda"),))
    result = Aggregator(store).run(q)
    assert ([i.key for i in result.items], result.count) == (["s04_e03_c02"], 1)
    q = reader.read("how many scenes mention a bus? (not 'under the bus', not busboys)")
    assert ("under", "the", "bus") in q.excluded
    assert Aggregator(store).run(q).count == 1  # "A bus!"; "threw it under the bus" twice does not count
    assert reader.read("which scenes mention a bus").excluded == ()
