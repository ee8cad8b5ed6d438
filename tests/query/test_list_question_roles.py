"""List questions read from the failures of the `fresh20` set (issue 34), each asked here in other words: a role
that speaks ("a janitor talks", "give the salesman character any dialogue", "the maitre d" for the speaker "Maitre
D'"); what a speaker calls people ("calls somebody sweetie", "uses the nickname Rach", "describing someone as cute");
"her going 'sweetie'"; one thing or "someone being" another; "rather than 'a quote'"; an inflection no line writes whose stem is indexed
("puking"); "scenes that talk about" (a relative "that"); a nickname in the asking part is the name
the memory's speaker is found by; of two people named, the one who is no possessor says the quote ("pheebs
shortening rachel's name... her saying 'rach'"); "mention one" after "a magazine"."""

from __future__ import annotations

from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s02_e01_c01", ["[Scene: A restaurant.]", ("Maitre D'", "Your table is ready."), ("Monica Geller", "Thanks, sweetie."),
                             ("Janitor", "Your monkey is alive."), ("Rachel Green", "That is so cute.")], "One", season=2,
             episode=1),
    make_doc("s02_e01_c02", ["[Scene: A store.]", ("The Salesman", "Can I help you?"), ("Phoebe Buffay", "Hi Rach!"),
                             ("Rachel Green", "I feel like I'm going to puke."), ("Monica Geller", "Sweetie, sit.")], "One",
             season=2, episode=1),
    make_doc("s02_e02_c01", ["[Scene: Central Perk.]", ("Ross Geller", "My mother is Jewish."), ("Joey Tribbiani", "I vomited."),
                             ("Chandler Bing", "Take a chill pill."), ("Monica Geller", "Chandler, the janitor is here."),
                             ("Phoebe Buffay", "Rachel, the pills are for the headache.")], "Two", season=2, episode=2),
    make_doc("s02_e02_c02", ["[Scene: Monica's.]", ("Rachel Green", "He puked on my shoes!"), ("Joey Tribbiani", "The Jews."),
                             ("Maitre D'", "Right this way."), ("Janitor", "Mop time."), ("Janitor", "Bye."),
                             ("The Salesman", "Sold!"), ("The Salesman", "Next.")], "Two", season=2, episode=2),
    make_doc("s02_e03_c01", ["[Scene: Central Perk.]", ("Chandler Bing", "Mon, relax."), ("Monica Geller", "Okay."),
                             ("Joey Tribbiani", "He vomits, she pukes, we're all throwing up."),
                             ("Rachel Green", "My hair! I have a job interview."), ("Chandler Bing", "Rach, your hair is fine."),
                             ("Rachel Green", "Thanks.")], "Three", season=2, episode=3),
    make_doc("s02_e03_c02", ["[Scene: Monica's.]", ("Ross Geller", "Mon, hi."), ("Monica Geller", "Hi."),
                             ("Phoebe Buffay", "Rach, hi."), ("Rachel Green", "Hey."), ("Phoebe Buffay", "Pheebs!"),
                             ("Ross Geller", "Hi, Pheebs."), ("Phoebe Buffay", "Hi."), ("Joey Tribbiani", "Pheebs, hey."),
                             ("Phoebe Buffay", "Yo."), ("Joey Tribbiani", "Mon!"),
                             ("Monica Geller", "What?"), ("Ross Geller", "Hey, Rach."), ("Rachel Green", "Hi."),
                             ("Ross Geller", "I'm babysitting Ben."), ("Joey Tribbiani", "A magazine on the couch.")], "Three",
             season=2, episode=3),
]



def test_a_role_that_speaks(store, reader):
    q = reader.read("that shady janitor who whispers to ross (or any other janitor) - scenes where a janitor talks")
    assert (q.relation, q.speakers) == ("speaks", ("Janitor",))
    assert reader.read("which scenes mention a janitor").relation == "mentions"
    q = reader.read("Which scenes give the salesman character any dialogue?")
    assert (q.relation, q.speakers) == ("speaks", ("The Salesman",))
    for question in ("In which episodes does the Maitre D' speak?", "the host guy who seats people - which eps does the maitre d talk in"):
        q = reader.read(question)
        assert (q.relation, q.speakers) == ("speaks", ("Maitre D'",)), question
    assert list_keys(store, reader, "In which episodes does the Maitre D' speak?") == ["s02_e01", "s02_e02"]


def test_what_a_speaker_calls_people(store, reader):
    q = reader.read("List the scenes where Monica calls somebody sweetie.")
    assert (q.phrase, q.speakers) == ("sweetie", ("Monica Geller",))
    assert list_keys(store, reader, "List the scenes where Monica calls somebody sweetie.") == ["s02_e01_c01", "s02_e01_c02"]
    q = reader.read("Find the scenes where Phoebe uses the nickname Rach.")
    assert (q.phrase, q.speakers) == ("Rach", ("Phoebe Buffay",))
    q = reader.read("Which episodes have Rachel describing something or someone as cute?")
    assert (q.phrase, q.speakers) == ("cute", ("Rachel Green",))
    q = reader.read("mon being all motherly with everyone - what scenes have her going 'sweetie'?")
    assert (q.phrase, q.speakers) == ("sweetie", ("Monica Geller",))


def test_one_thing_or_someone_being_another(store, reader):
    q = reader.read("Which scenes mention Jews or someone being Jewish?")
    assert {" ".join(f) for f in q.forms[0]} >= {"jews", "jewish"}
    assert list_keys(store, reader, "Which scenes mention Jews or someone being Jewish?") == ["s02_e02_c01", "s02_e02_c02"]


def test_rather_than_a_quote_is_left_out(store, reader):
    question = "Find the scenes where someone talks about a pill or pills, as in medication rather than 'chill pill'."
    q = reader.read(question)
    assert q.exact is False and "pill" in q.phrase
    assert list_keys(store, reader, question) == ["s02_e02_c01"]  # the pills for the headache, not the chill pill


def test_an_inflection_no_line_writes(store, reader):
    q = reader.read("in how many scenes does puking come up?")
    assert (q.phrase, q.count) == ("puking", "scenes")
    q = reader.read("rachel's morning sickness, the vomit tux - in how many scenes does puking come up?")
    assert q.phrase == "puking"
    assert reader.read("in how many scenes do they talk about babysiting?").phrase == "babysitting"


def test_scenes_that_talk_about_two_things_after_a_memory(reader):
    q = reader.read("rachel's ralph lauren interview, chandler prepping to interview somewhere better... scenes that talk "
                    "about a job AND an interview")
    assert (q.relation, q.phrase, q.others) == ("together", "job", ("interview",))


def test_a_nickname_in_the_asking_part_keeps_its_speaker(reader):
    q = reader.read("the haircut woman herself... which scenes have rach saying something about hair?")
    assert (q.phrase, q.speakers) == ("hair", ("Rachel Green",))


def test_of_two_named_the_one_who_is_no_possessor_says_it(reader):
    q = reader.read("pheebs shortening rachel's name... which bits have her saying 'rach'")
    assert (q.phrase, q.exact, q.speakers) == ("rach", True, ("Phoebe Buffay",))


def test_mention_one_is_the_thing_named_with_a(reader):
    q = reader.read("someone always reading a magazine on the couch... how many lines in total mention one?")
    assert (q.phrase, q.count) == ("magazine", "lines")
