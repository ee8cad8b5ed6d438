"""Chunkers: turn Documents into the Chunks that are indexed (each chunk knows its parent)."""

from ragfunnel.chunking.views import ChunkView, chunk_documents, parse_view

__all__ = ["ChunkView", "chunk_documents", "parse_view"]
