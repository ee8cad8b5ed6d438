"""Chunkers: turn Documents into the Chunks that are indexed (each chunk knows its parent)."""

from ragfunnel.chunking.views import VIEW_ALIASES, ChunkView, canonical_view, chunk_documents, parse_view

__all__ = ["VIEW_ALIASES", "ChunkView", "canonical_view", "chunk_documents", "parse_view"]
