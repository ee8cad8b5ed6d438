"""Stores own every index of a corpus (documents, chunks, sparse and dense) under the same chunk ids."""

from ragfunnel.store.base import Store, StoreSettings
from ragfunnel.store.embedded import EmbeddedStore, build_index, open_store

__all__ = ["EmbeddedStore", "Store", "StoreSettings", "build_index", "open_store"]
