"""The aggregation path: reading the question, and the exhaustive, cited list over a real (embedded) store."""

from __future__ import annotations

import pytest

from ragfunnel.query.aggregate import Aggregator, list_items, normalise_words
from ragfunnel.store.filters import Filter
from tests.helpers import make_doc


def test_normalise_words_undoes_g_dropping_and_apostrophes():
    assert normalise_words("How you doin'?") == normalise_words("how you DOING") == ["how", "you", "doing"]
    assert normalise_words("Joey doesn't share food!") == ["joey", "doesnt", "share", "food"]
    assert normalise_words("again") == normalise_words("againg")  # both sides alike: harmless


DOCS = [
    make_doc("s01_e01_c01", [("Ross Geller", "We were on a break!"), ("Rachel Green", "We were on a break? No."),
                             ("Ross Geller", "Hi."), "Ross enters with a dinosaur."], "The One", season=1, episode=1, label="S01E01 c1"),
    make_doc("s01_e01_c02", [("Ross Geller", "I mean, we were ON A BREAK, Rachel."), ("Joey Tribbiani", "How you doin'?")],
             "The One", season=1, episode=1, label="S01E01 c2"),
    make_doc("s02_e03_c01", [("Joey Tribbiani", "How you doing?"), ("Ross Geller", "Dinosaurs are great."),
                             ("Monica Geller", "The Ugly Naked Guy is back.")], "Another", season=2, episode=3, label="S02E03 c1"),
    make_doc("s02_e04_c01", [("Joey Tribbiani", "How are you doing?"), ("Phoebe Buffay", "Ugly naked guy!")],
             "Third", season=2, episode=4, label="S02E04 c1"),
]


@pytest.fixture
def run(store, reader):
    return lambda question, where=None: Aggregator(store).run(reader.read(question), where)


@pytest.mark.parametrize("question, phrase, exact, speakers, group, count", [
    ('In which scenes does Ross say "we were on a break"?', "we were on a break", True, ("Ross Geller",), "scene", None),
    ("How many times does Joey say 'How you doin''?", "How you doin", True, ("Joey Tribbiani",), "scene", "lines"),
    ("Name every episode where Ugly Naked Guy is mentioned.", "Ugly Naked Guy", False, (), "episode", None),
    ("In how many scenes does Joey appear?", None, False, ("Joey Tribbiani",), "scene", "scenes"),
    ("Which scenes of season 2 mention the Ugly Naked Guy?", "Ugly Naked Guy", False, (), "scene", None),
    ("List all the scenes where Ross talks about dinosaurs.", "dinosaurs", False, ("Ross Geller",), "scene", None),
    ("Every mention of Ugly Naked Guy", "Ugly Naked Guy", False, (), "scene", None),
])
def test_read(reader, question, phrase, exact, speakers, group, count):
    q = reader.read(question)
    assert (q.phrase, q.exact, q.speakers, q.group, q.count) == (phrase, exact, speakers, group, count)


def test_a_quoted_phrase_by_a_speaker_is_every_such_line(run):
    r = run('In which scenes does Ross say "we were on a break"?')
    assert [i.key for i in r.items] == ["s01_e01_c01", "s01_e01_c02"]  # Rachel's line does not count
    assert [m.unit_id for i in r.items for m in i.matches] == ["s01_e01_c01_u001", "s01_e01_c02_u001"]
    assert (r.lines, r.scenes, r.episodes, r.count) == (2, 2, 1, None)
    items = list_items(r)
    assert items[0].citations[0].id == "s01_e01_c01" and items[0].citations[0].quote == "Ross Geller: We were on a break!"


def test_g_dropping_counts_and_a_count_is_given(run):
    r = run("How many times does Joey say 'How you doin''?")
    assert r.count == 2 and [i.key for i in r.items] == ["s01_e01_c02", "s02_e03_c01"]  # not "How are you doing?"
    assert "2: 2 lines in 2 scenes" in r.answer()


def test_mentions_match_stems_in_any_line_grouped_by_episode(run):
    r = run("Name every episode where Ugly Naked Guy is mentioned.")
    assert [(i.key, i.label, len(i.matches)) for i in r.items] == [("s02_e03", "S02E03", 1), ("s02_e04", "S02E04", 1)]
    r = run("In which scenes does Ross talk about dinosaurs?")  # dinosaur(s): plurals; the direction has no speaker
    assert [m.unit_id for i in r.items for m in i.matches] == ["s02_e03_c01_u002"]


def test_a_speaker_alone_and_a_filter(run):
    r = run("In how many scenes does Joey appear?")
    assert r.count == 3
    r = run("In how many scenes does Joey appear?", Filter.equal({"season": 2}))
    assert r.count == 2 and {i.key for i in r.items} == {"s02_e03_c01", "s02_e04_c01"}


def test_nothing_to_look_for_is_said(run):
    r = run("List every scene where it rains.")
    assert r.items == [] and r.notes and "could not read" in r.notes[0]
