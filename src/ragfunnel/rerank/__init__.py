"""Precision stage: rerank the fused top-N parents and keep the top k."""

from ragfunnel.rerank.base import Passage, Reranker, RerankResult

__all__ = ["Passage", "RerankResult", "Reranker"]
