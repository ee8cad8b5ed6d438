"""Stores own every index of a corpus (documents, chunks, sparse and dense) under the same chunk ids.

Callers use the `Store` protocol and the registry's `build_index` / `open_store`; concrete stores stay in here."""

from ragfunnel.store.base import IndexInfo, Store, StoreSettings
from ragfunnel.store.filters import Filter, FilterError
from ragfunnel.store.registry import STORE_BACKENDS, build_index, copy_index, open_store, peek_index

__all__ = ["STORE_BACKENDS", "Filter", "FilterError", "IndexInfo", "Store", "StoreSettings", "build_index", "copy_index", "open_store",
           "peek_index"]
