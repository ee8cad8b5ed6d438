"""List questions read from the failures of the `fresh16` set (issue 34), each asked here in other words: a comma
list of alternatives ("a latte, a cappuccino or an espresso", whichever comes first); one thing with either of two
others ("a camera and pictures or photos"); "a list" as a thing; what a question leaves out after "not", "rather
than" or "excluding Mr. ..."; a short description closed by commas ("juice, the drink, comes up"); a question after a
comma that follows a memory; the speaker of a memory is not the speaker asked about; "thank god"; the place a
memory names; a described person's name ("the lawyer guy michael"); "his own full name"; a title's full stop; a name
said to someone as a name of its own ("Santa Claus"); what a speaker calls someone ("address Joey as Joe"); "joey's
got" (he has); a role after "that" ("that minister", but not "that guy"); a name given as a guess before "he talks";
a quote's owner called by a nickname ("pheebs going 'ooh cool!'"); a word ending in "in" ("coin"); "# of"; "roy's
scenes"; a speaker named in a memory and asked about is no target; "a set"; "have her saying"; someone who acts in
the memory is not the "he" who has lines; a guess ending "or something", misspelt; a sentence after a semicolon; "AND"
in capitals."""

from __future__ import annotations

from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s01_e01_c01", ["[Scene: Central Perk, they drink coffee.]", ("Rachel Green", "One latte for Ross."),
                             ("Ross Geller", "Thank god, coffee."), ("Joey Tribbiani", "Juice is better.")],
             "One", season=1, episode=1),
    make_doc("s01_e01_c02", ["[Scene: Monica's kitchen, cooking.]", ("Monica Geller", "A cappuccino, and the salmon is ready."),
                             ("Chandler Bing", "Thank god! I'm starving."), ("Chandler Bing", "Is there tea?")],
             "One", season=1, episode=1),
    make_doc("s01_e02_c01", ["[Scene: A hospital waiting room, everyone waits for news.]",
                             ("Phoebe Buffay", "An espresso would help."), ("Dr. Franzblau", "The baby is coming."),
                             ("Dr. Franzblau", "Push, Carol."), ("Carol Willick", "I am pushing!")],
             "Two", season=1, episode=2),
    make_doc("s01_e02_c02", ["[Scene: Ross's apartment, Ross holds a camera.]", ("Ross Geller", "Smile for the camera."),
                             ("Rachel Green", "Take some pictures of me."), ("Ross Geller", "I made a list. Pros and cons.")],
             "Two", season=1, episode=2),
    make_doc("s01_e03_c01", ["[Scene: Chandler and Joey's, they sit.]", ("Joey Tribbiani", "Hey, Joey Tribbiani!"),
                             ("Chandler Bing", "The camera is broken."), ("Joey Tribbiani", "I love peanuts."),
                             ("Monica Geller", "Mr. Peanut called."), ("Rachel Green", "Styrofoam peanuts everywhere.")],
             "Three", season=1, episode=3),
    make_doc("s01_e03_c02", ["[Scene: A bar, Rachel is on a date.]", ("Michael", "I'm Michael, I'm divorced."),
                             ("Rachel Green", "Hi Michael."), ("Michael", "More juice?"), ("Michael", "My ex loved salmon."),
                             ("Rachel Green", "Salmon is a colour too."), ("Joey Tribbiani", "My name is Joey Tribbiani.")],
             "Three", season=1, episode=3),
    make_doc("s01_e04_c01", ["[Scene: A waiting room, Monica paces.]", ("Monica Geller", "Get out of my juice! Drink your tea."),
                             ("Joey Tribbiani", "Is that a list of the photos?")], "Four", season=1, episode=4),
    make_doc("s01_e05_c01", ["[Scene: Monica's, a Christmas party.]", ("Ross Geller", "Santa! Hi."), ("Chandler Bing", "Ho ho."),
                             ("Joey Tribbiani", "Santa, over here!"), ("Chandler Bing", "Coming."),
                             ("Monica Geller", "Thanks, Santa."), ("Chandler Bing", "Sure, Mon."),
                             ("Rachel Green", "Santa Claus is not real, Joe."), ("Joey Tribbiani", "Rach!")],
             "Five", season=1, episode=5),
    make_doc("s01_e06_c01", ["[Scene: The wedding.]", ("Minister", "Dearly beloved."), ("Ross Geller", "I do."),
                             ("Minister", "You may kiss the bride."), ("Guy", "Hang up that phone!"),
                             ("Joey Tribbiani", "Nice helmet."), ("Ross Geller", "Helmets keep you safe.")], "Six",
             season=1, episode=6),
    make_doc("s01_e07_c01", ["[Scene: The set of Days of Our Lives, Joey acts.]", ("Joey Tribbiani", "Flip a coin? I miss the movie set."),
                             ("Chandler Bing", "Heads, like at the co op."), ("Monica Geller", "I win!")], "Seven", season=1, episode=7),
    make_doc("s01_e05_c02", ["[Scene: Central Perk.]", ("Rachel Green", "Joe, sit down."), ("Joey Tribbiani", "Okay."),
                             ("Monica Geller", "Joe is here?"), ("Chandler Bing", "Mon, relax.")], "Five", season=1, episode=5),
]



def test_a_comma_list_of_alternatives_is_any_of_them_whichever_is_read_first(store, reader):
    for question in ("any scenes where an espresso, a cappuccino or a latte comes up",
                     "scenes w/ cappuccinos, lattes or espressos in them?"):
        assert list_keys(store, reader, question) == ["s01_e01_c01", "s01_e01_c02", "s01_e02_c01"], question


def test_one_thing_and_either_of_two_others_in_one_scene(store, reader):
    q = reader.read("the scenes where a camera and either photos or pictures both come up")
    assert (q.relation, q.phrase, q.others) == ("together", "camera", ("photos or pictures",))
    assert list_keys(store, reader, "the scenes where a camera and either photos or pictures both come up") == ["s01_e02_c02"]


def test_a_list_is_a_thing_but_a_list_of_scenes_is_asked_for(store, reader):
    assert reader.read("find every scene where somebody mentions a list").phrase == "list"
    assert reader.read("joey's list of photos.. which scenes mention the list").phrase == "list"
    assert reader.read("I'd like a list of the scenes that bring up juice").phrase == "juice"


def test_what_the_question_leaves_out(store, reader):
    q = reader.read("peanuts - which scenes do they come up in? not the styrofoam kind")
    assert q.phrase == "peanuts"
    q = reader.read("Which scenes mention salmon, to eat, rather than salmon as a colour?")
    assert q.phrase == "salmon"
    q = reader.read("Identify every scene with peanuts, excluding Mr. Peanut and packing peanuts.")
    assert q.phrase == "peanuts"


def test_a_short_description_closed_by_commas_describes_the_word_before_it(reader):
    q = reader.read("In which scenes does juice, the drink, come up?")
    assert q.phrase == "juice"


def test_a_question_after_a_memory_and_a_comma_asks_of_anyone(store, reader):
    question = "monica shouting 'get out of my juice!' made me think, which scenes mention tea"
    q = reader.read(question)
    assert (q.phrase, q.exact, q.speakers) == ("tea", False, ())
    assert list_keys(store, reader, question) == ["s01_e01_c02", "s01_e04_c01"]


def test_thank_god_is_said(store, reader):
    q = reader.read("how often does Chandler say thank god")
    assert (q.phrase, q.speakers) == ("thank god", ("Chandler Bing",))


def test_the_place_a_memory_names_is_where_scenes_are_set(store, reader):
    question = "monica paces in a waiting room for news - which scenes are set in one"
    assert reader.read(question).relation == "setting"
    assert list_keys(store, reader, question) == ["s01_e02_c01", "s01_e04_c01"]


def test_the_name_a_description_gives_is_who_speaks(store, reader):
    question = "rachel's date at the bar, the one who tells her 'more juice?'.. the divorced guy michael. scenes where he talks"
    q = reader.read(question)
    assert (q.relation, q.speakers) == ("speaks", ("Michael",))
    assert list_keys(store, reader, question) == ["s01_e03_c02"]


def test_his_own_full_name(store, reader):
    question = "when does joey say his own full name"
    q = reader.read(question)
    assert (q.phrase, q.speakers) == ("Joey Tribbiani", ("Joey Tribbiani",))
    assert list_keys(store, reader, question) == ["s01_e03_c01", "s01_e03_c02"]


def test_a_titles_full_stop_ends_no_sentence(store, reader):
    q = reader.read("Dr. Franzblau's lines when Carol is pushing - which scenes?")
    assert (q.relation, q.speakers) == ("speaks", ("Dr. Franzblau",))


def test_a_name_of_two_words_is_not_a_nickname_of_its_first(reader):
    q = reader.read("Where is Santa Claus mentioned?")
    assert (q.phrase, q.speakers) == ("Santa Claus", ())
    assert reader.read("scenes where Santa talks").speakers == ("Chandler Bing",)  # what the others call him


def test_what_a_speaker_calls_someone(store, reader):
    for question in ("When does Rachel address Joey as Joe?", "rachel shortening joey's name to joe - which scenes"):
        q = reader.read(question)
        assert (q.phrase.lower(), q.speakers) == ("joe", ("Rachel Green",)), question
        assert list_keys(store, reader, question) == ["s01_e05_c01", "s01_e05_c02"]
    q = reader.read("Which scenes have Chandler calling Monica by the nickname Mon?")
    assert (q.phrase, q.speakers) == ("Mon", ("Chandler Bing",))


def test_a_name_with_has_is_no_target(reader):
    q = reader.read("eps where joey's got a helmet on or anybody brings up helmets")
    assert q.phrase.startswith("helmet") and q.speakers == ()


def test_a_role_pointed_back_at_speaks_but_that_guy_is_no_role(reader):
    q = reader.read("carol and susan getting married, ross at the altar... how many lines does that minister get")
    assert (q.relation, q.speakers, q.count) == ("speaks", ("Minister",), "lines")
    assert reader.read("joey's commercial, the one yelling at him... scenes where that guy has dialogue").speakers != ("Guy",)


def test_a_guessed_name_is_who_talks_whoever_acts_in_the_memory(reader):
    q = reader.read("the doctor from the ep where rachel uses monica's insurance... dr franzblau? what scenes is he talking in")
    assert (q.relation, q.speakers) == ("speaks", ("Dr. Franzblau",))


def test_a_quote_owner_called_by_a_nickname(store, reader):
    question = "santa going 'ho ho' - which scenes"
    q = reader.read(question)
    assert (q.phrase, q.exact, q.speakers) == ("ho ho", True, ("Chandler Bing",))
    assert list_keys(store, reader, question) == ["s01_e05_c01"]


def test_a_word_ending_in_in_is_found(store, reader):
    q = reader.read("Which scenes mention a coin?")
    assert q.phrase == "coin"
    assert list_keys(store, reader, "Which scenes mention a coin?") == ["s01_e07_c01"]


def test_number_sign_of_counts(reader):
    q = reader.read("# of scenes w/ tea")
    assert (q.phrase, q.count) == ("tea", "scenes")


def test_someones_scenes_are_where_they_speak(reader):
    q = reader.read("michael's scenes (where he actually talks)")
    assert (q.relation, q.speakers) == ("speaks", ("Michael",))


def test_a_speaker_named_in_a_memory_and_asked_about_is_no_target(reader):
    q = reader.read("a guy named michael talks in a couple eps - which scenes does michael speak in?")
    assert (q.relation, q.phrase, q.speakers, q.group) == ("speaks", None, ("Michael",), "scene")


def test_a_set_is_a_place(store, reader):
    question = "Which scenes take place on a set?"
    assert (reader.read(question).relation, reader.read(question).phrase) == ("setting", "set")
    assert list_keys(store, reader, question) == ["s01_e07_c01"]
    q = reader.read("joey acting - scenes that happen on a movie set?")
    assert q.relation == "setting" and "set" in q.phrase
    assert reader.read("Which episodes have scenes set at the waiting room?").phrase == "waiting room"


def test_have_her_saying_a_quote(store, reader):
    question = 'monica hates losing - which scenes have her saying the word "win"?'
    q = reader.read(question)
    assert (q.phrase, q.speakers) == ("win", ("Monica Geller",))
    assert list_keys(store, reader, question) == ["s01_e07_c01"]


def test_who_acts_in_the_memory_is_not_the_one_who_has_lines(reader):
    q = reader.read("the doctor at the hospital where carol has the baby, not carol - scenes he's got lines in")
    assert q.relation == "speaks" and q.speakers != ("Carol Willick",)
    assert q.reading.speaker_from in ("first named", "described")  # the pipeline asks the scenes who he is


def test_a_guess_ending_or_something(reader):
    q = reader.read("the doctor rachel sees at the hospital, franzblaw or something - scenes where he talks")
    assert (q.relation, q.speakers) == ("speaks", ("Dr. Franzblau",))


def test_a_description_after_a_semicolon_is_no_target(reader):
    q = reader.read("I need the scenes where Michael has lines; she's the one who asks Rachel about juice.")
    assert (q.relation, q.phrase, q.speakers) == ("speaks", None, ("Michael",))


def test_and_in_capitals_names_nobody(reader):
    q = reader.read("joey at the bar... scenes with a camera AND pictures")
    assert q.speakers == () and {q.phrase, *q.others} == {"camera", "pictures"}
