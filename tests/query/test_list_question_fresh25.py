"""List questions read from the failures of the `fresh25` set (issue 34), each asked here in other words: "say the word
X" is that word or its plural, not its other inflections (but "in any form", "including ..." keep them); words said
unquoted after "tells someone" or before a dash that asks ("... i love u - which scenes"), "u" for you; a role that
opens the question with its lines ("night nurse lines, which eps"); and two things "in the same scene" when the
classifier leans to speaking but nobody is named."""

from __future__ import annotations

from ragfunnel.embedding import shared_encoder
from ragfunnel.query.vocabulary import SameWord
from tests.helpers import list_keys, make_doc

DOCS = [
    make_doc("s04_e01_c01", ["[Scene: A hospital, Phoebe is there.]", ("Phoebe Buffay", "I could marry him."),
                             ("Ross Geller", "I love you, Emily."), ("The Night Nurse", "Visiting hours are over."),
                             ("Rachel Green", "Is the baby here?")], "One", season=4, episode=1),
    make_doc("s04_e01_c02", [("Phoebe Buffay", "They got married!"), ("Ross Geller", "Shut up, I love you."),
                             ("Monica Geller", "The hospital called.")], "One", season=4, episode=1),
    make_doc("s04_e02_c01", [("Phoebe Buffay", "Nobody marries a doctor."), ("Ross Geller", "I love your sweater."),
                             ("The Night Nurse", "Sign here."), ("Joey Tribbiani", "A baby!")], "Two", season=4, episode=2),
]


def test_the_word_as_written_or_its_plural(store, reader):
    q = reader.read("Where does Phoebe say the word marry?")
    assert (q.phrase, q.inflections) == ("marry", False)
    same = SameWord(store, shared_encoder)
    assert list_keys(store, reader, "Where does Phoebe say the word marry?", same) == ["s04_e01_c01", "s04_e02_c01"]
    assert list_keys(store, reader, "scenes where phoebe uses marry", same) == ["s04_e01_c01", "s04_e01_c02", "s04_e02_c01"]
    assert reader.read("scenes where Phoebe uses the word marry in any form").inflections
    assert reader.read("the word marry, including married and marrying: which scenes?").inflections


def test_words_said_after_tells_someone_or_before_a_dash(store, reader):
    for question in ("every scene where ross tells someone i love you", "ross saying i love u - list the scenes"):
        q = reader.read(question)
        assert (q.phrase, q.exact, q.speakers) == ("i love you", True, ("Ross Geller",))
        assert list_keys(store, reader, question) == ["s04_e01_c01", "s04_e01_c02"]
    assert reader.read("scenes where Ross tells someone to shut up").phrase != "to shut up"


def test_a_role_opening_the_question_with_its_lines(reader):
    q = reader.read("night nurse lines, which eps are those")
    assert (q.relation, q.speakers) == ("speaks", ("The Night Nurse",))


def test_two_things_in_the_same_scene(store, reader):
    q = reader.read("hospital + baby talk in the same scene, list all")
    assert (q.relation, q.phrase, q.others) == ("together", "hospital", ("baby",))
    assert list_keys(store, reader, "hospital + baby talk in the same scene, list all") == ["s04_e01_c01"]
