"""Corpus loaders: every format ends as the same `Document`/`Unit` model."""

from ragfunnel.corpus.friends import load_friends

__all__ = ["load_friends"]
