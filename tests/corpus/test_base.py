"""The Corpus protocol: Friends and a tiny in-memory corpus (defined here) answer the same questions — documents,
question sets, domain line, citation label, query filter — and the registry finds a corpus by name."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from ragfunnel.corpus import (
    CORPORA, FRIENDS_DOMAIN, GENERIC_DOMAIN, BaseCorpus, Corpus, DocumentsCorpus, FriendsCorpus, make_corpus,
    question_set, register_corpus,
)
from ragfunnel.corpus.base import QuestionLoader
from ragfunnel.errors import ConfigError, RagfunnelError
from ragfunnel.corpus.friends_questions import FRIENDS_SETS, load_friends_set
from ragfunnel.questions import Question
from tests.corpus.test_friends import SCENE_1, SCENE_2
from tests.helpers import make_doc


class Recipes(BaseCorpus):
    """A corpus of its own in a few lines: documents and one question set; the rest are the generic defaults."""

    name = "recipes"

    def documents(self) -> Iterator:
        yield make_doc("soup", ["Boil the water.", "Add the leeks."], title="Leek soup", label="Leek soup")
        yield make_doc("bread", ["Knead for ten minutes.", "Bake at 220 degrees."], title="Bread", cuisine="french")

    def question_sets(self) -> Mapping[str, QuestionLoader]:
        return {"tiny": lambda: [Question("q1", "How long do I knead?", ("bread",))]}


def write_friends(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "friends_corpus.jsonl").write_text("\n".join(json.dumps(s) for s in (SCENE_1, SCENE_2)) + "\n")
    return folder


def test_both_implement_the_protocol(tmp_path):
    for corpus in (FriendsCorpus(tmp_path), Recipes(), DocumentsCorpus([])):
        assert isinstance(corpus, Corpus)


def test_friends_documents_come_from_its_folder_or_file(tmp_path):
    folder = write_friends(tmp_path / "friends")
    docs = list(FriendsCorpus(folder).documents())
    assert [d.doc_id for d in docs] == ["s01_e01_c01", "s01_e02_c03"]
    assert docs[0].units[1].speakers == ("Monica Geller",) and docs[0].metadata["season"] == 1
    assert [d.doc_id for d in FriendsCorpus(folder / "friends_corpus.jsonl").documents()] == [d.doc_id for d in docs]
    assert FriendsCorpus(folder).citation_label(docs[0]) == "S01E01, Scene 1"


def test_friends_names_its_question_sets_and_loads_them_from_the_folder(tmp_path):
    folder = write_friends(tmp_path / "friends")
    (folder / "friends_questions.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"question_id": "d1", "question": "Who works with Monica?", "gold_scene_ids": ["s01_e01_c01"], "split": "dev"},
        {"question_id": "t1", "question": "Who is pregnant?", "gold_scene_ids": ["s01_e02_c03"], "split": "train"},
    ]) + "\n")
    corpus = FriendsCorpus(folder)
    assert tuple(corpus.question_sets()) == FRIENDS_SETS == ("direct", "reworded", "heavy", "dev", "holdout")
    assert [q.qid for q in question_set(corpus, "dev")] == ["d1"]
    assert question_set(FriendsCorpus(folder / "friends_corpus.jsonl"), "dev") == question_set(corpus, "dev")
    with pytest.raises(RagfunnelError, match="unknown question set 'hard'.*direct, reworded, heavy, dev, holdout"):
        question_set(corpus, "hard")


def test_friends_question_sets_match_load_friends_set(friends_dir):
    corpus = make_corpus("friends", friends_dir)
    for name in ("direct", "heavy"):
        assert question_set(corpus, name) == load_friends_set(name, friends_dir)


def test_friends_domain_and_query_filter():
    corpus = FriendsCorpus("unused")  # cheap: nothing is read until asked
    assert corpus.domain == FRIENDS_DOMAIN and corpus.domain.line == "about the TV show Friends"
    assert corpus.query_filter("What does Ross say in S08E16?") == {"season": 8, "episode": 16}
    assert corpus.query_filter("Who did Joey love in the eighth season?") == {"season": 8}
    assert corpus.query_filter("Who was Joey in love with?") is None


def test_a_corpus_of_its_own_gets_the_generic_defaults():
    corpus = Recipes()
    docs = list(corpus.documents())
    assert [d.doc_id for d in docs] == ["soup", "bread"] and docs[1].metadata == {"cuisine": "french"}
    assert corpus.domain == GENERIC_DOMAIN and corpus.domain.line == "from the user's documents"
    assert "Friends" not in " ".join(str(v) for v in vars(GENERIC_DOMAIN).values())
    assert corpus.query_filter("What is in season 8?") is None  # no parser: nothing is a filter
    assert [corpus.citation_label(d) for d in docs] == ["Leek soup", "bread"]  # the label, else the id
    assert [q.gold for q in question_set(corpus, "tiny")] == [("bread",)]
    with pytest.raises(RagfunnelError, match="unknown question set 'dev': choose one of tiny"):
        question_set(corpus, "dev")


def test_in_memory_corpus():
    docs = [make_doc("a", ["One."]), make_doc("b", ["Two."], year=2020)]
    questions = [Question("q", "Two?", ("b",))]
    corpus = DocumentsCorpus(docs, name="mine", question_sets={"all": questions},
                             query_filter=lambda q: {"year": 2020} if "2020" in q else None)
    assert list(corpus.documents()) == docs and list(corpus.documents()) == docs  # can be read again
    assert question_set(corpus, "all") == questions
    assert corpus.query_filter("What happened in 2020?") == {"year": 2020} and corpus.query_filter("Two?") is None
    with pytest.raises(RagfunnelError, match="the mine corpus names none"):
        question_set(DocumentsCorpus(docs, name="mine"), "all")


def test_registry(tmp_path):
    assert "friends" in CORPORA
    friends = make_corpus("friends", tmp_path)
    assert isinstance(friends, FriendsCorpus) and friends.path == tmp_path
    with pytest.raises(ConfigError, match="unknown corpus 'nope': choose one of .*friends"):
        make_corpus("nope", tmp_path)
    register_corpus("recipes", lambda path: Recipes(), "recipes, one JSON file each")
    try:
        assert "recipes" in CORPORA and CORPORA.get("recipes").description == "recipes, one JSON file each"
        assert make_corpus("recipes", tmp_path).name == "recipes"
        assert make_corpus("recipes", tmp_path).domain == GENERIC_DOMAIN
    finally:
        CORPORA.unregister("recipes")
    assert "recipes" not in CORPORA
