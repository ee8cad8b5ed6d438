"""Chunkers: turn Documents into the Chunks that are indexed (each chunk knows its parent, its character span in
the document's text and its section path). A view name resolves through the registry (`chunking/registry.py`)."""

from ragfunnel.chunking.base import ChunkContext, Chunker, DocText, TextSpan, document_text
from ragfunnel.chunking.registry import CHUNKERS, chunk_documents, parse_view, passage_of, resolve_view
from ragfunnel.chunking.views import VIEW_ALIASES, ChunkView, canonical_view

__all__ = [
    "CHUNKERS", "VIEW_ALIASES", "ChunkContext", "ChunkView", "Chunker", "DocText", "TextSpan", "canonical_view",
    "chunk_documents", "document_text", "parse_view", "passage_of", "resolve_view",
]
