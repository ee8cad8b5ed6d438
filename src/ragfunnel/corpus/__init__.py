"""Corpora: every format ends as the same `Document`/`Unit` model behind the `Corpus` protocol (corpus/base.py)."""

from ragfunnel.corpus.base import (
    GENERIC_DOMAIN, BaseCorpus, Corpus, DocumentsCorpus, Domain, PromptExample, passage_label, question_set,
)
from ragfunnel.corpus.friends import FRIENDS_DOMAIN, FriendsCorpus, load_friends
from ragfunnel.corpus.registry import CORPORA, make_corpus, register_corpus

__all__ = [
    "BaseCorpus", "CORPORA", "Corpus", "DocumentsCorpus", "Domain", "FRIENDS_DOMAIN", "FriendsCorpus",
    "GENERIC_DOMAIN", "PromptExample", "load_friends", "make_corpus", "passage_label", "question_set", "register_corpus",
]
