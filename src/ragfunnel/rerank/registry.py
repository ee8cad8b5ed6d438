"""Rerankers by name: `RERANKERS[method]` builds one from plain settings and names the pip extra its dependencies
come with, so a missing dependency says what to install before anything loads.

Adding a reranker: implement the `Reranker` protocol (rerank/base.py), add an entry here; a mode then uses it with
`rerank = { method = "<name>" }` in the config file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragfunnel.errors import ConfigError
from ragfunnel.extras import require_modules
from ragfunnel.rerank.base import Reranker
from ragfunnel.rerank.cohere import CohereReranker
from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder
from ragfunnel.rerank.llm_pointwise import PointwiseLLMReranker
from ragfunnel.rerank.ltr import LTRReranker
from ragfunnel.rerank.st_cross_encoder import SentenceTransformersCrossEncoder
from ragfunnel.store.base import Store


@dataclass(frozen=True)
class RerankerContext:
    """What a reranker factory may use: the index, the trained model's directory, the configured model name."""

    store: Store
    model_dir: Path  # the spec's model directory, else <home>/models/reranker
    model: str | None  # the spec's `model` as written (a directory, a hub id or an API model name)
    models_dir: Path  # <home>/models


@dataclass(frozen=True)
class RerankerEntry:
    factory: Callable[[RerankerContext], Reranker]
    extra: str | None = None  # the pip extra that brings `modules`
    modules: tuple[str, ...] = ()  # importable modules it needs beyond the core install
    description: str = ""


def _ltr(ctx: RerankerContext) -> Reranker:
    return LTRReranker(ctx.store, ctx.model_dir / "ltr", OnnxCrossEncoder(ctx.model_dir / "cross_encoder"))


def _cross_encoder(ctx: RerankerContext) -> Reranker:
    return OnnxCrossEncoder(ctx.model_dir if ctx.model else ctx.model_dir / "cross_encoder")


def _st_cross_encoder(ctx: RerankerContext) -> Reranker:
    if not ctx.model:
        raise ConfigError("the st_cross_encoder reranker needs `model` (a directory or hub id)")
    return SentenceTransformersCrossEncoder(ctx.model)


def _llm_listwise(ctx: RerankerContext) -> Reranker:
    raise ConfigError(
        "the llm_listwise reranker needs an LLM client; build it in Python: "
        "ListwiseLLMReranker(OpenAICompatibleChat(...)) or ListwiseLLMReranker(AnthropicChat())"
    )


RERANKERS: dict[str, RerankerEntry] = {
    "ltr": RerankerEntry(_ltr, "rerank", ("lightgbm",), "LambdaMART over first-stage evidence (`ragfunnel train reranker`)"),
    "cross_encoder": RerankerEntry(_cross_encoder, None, (), "our fine-tuned MiniLM cross-encoder (ONNX)"),
    "cohere": RerankerEntry(lambda ctx: CohereReranker(model=ctx.model or "rerank-v3.5"), None, (),
                            "Cohere's rerank API (COHERE_API_KEY)"),
    # sentence-transformers is checked when the model loads (warm_up), with its own install hint
    "st_cross_encoder": RerankerEntry(_st_cross_encoder, None, (), "any sentence-transformers cross-encoder"),
    "llm_pointwise": RerankerEntry(lambda ctx: PointwiseLLMReranker(ctx.model or str(ctx.models_dir / "llm.gguf")),
                                   "llm", ("llama_cpp",), "yes/no log-odds of the local LLM"),
    "llm_listwise": RerankerEntry(_llm_listwise, None, (), "an LLM orders the passages (Python API only)"),
}


def make_reranker(method: str, ctx: RerankerContext) -> Reranker:
    entry = RERANKERS.get(method)
    if entry is None:
        raise ConfigError(f"unknown reranker {method!r}: choose one of {', '.join(RERANKERS)}")
    if entry.extra:
        require_modules(entry.modules, entry.extra, f"the {method} reranker")
    return entry.factory(ctx)
