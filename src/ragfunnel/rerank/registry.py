"""Rerankers by name: `RERANKERS` builds one from plain settings (`RerankerContext`); each entry names the pip extra
its dependencies come with, so a missing dependency says what to install before anything loads.

Adding a reranker: implement the `Reranker` protocol (rerank/base.py) and register it here; a mode then uses it with
`rerank = { method = "<name>" }` in the config file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.base import Reranker
from ragfunnel.rerank.cohere import CohereReranker
from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder
from ragfunnel.rerank.llm_pointwise import PointwiseLLMReranker
from ragfunnel.rerank.ltr import LTRReranker
from ragfunnel.rerank.st_cross_encoder import SentenceTransformersCrossEncoder
from ragfunnel.registry import Registry
from ragfunnel.store.base import Store


@dataclass(frozen=True)
class RerankerContext:
    """What a reranker factory may use: the index, the trained model's directory, the configured model name."""

    store: Store
    model_dir: Path  # the spec's model directory, else <home>/models/reranker
    model: str | None  # the spec's `model` as written (a directory, a hub id or an API model name)
    models_dir: Path  # <home>/models


def _ltr(arg: str, ctx: RerankerContext) -> Reranker:
    return LTRReranker(ctx.store, ctx.model_dir / "ltr", OnnxCrossEncoder(ctx.model_dir / "cross_encoder"))


def _cross_encoder(arg: str, ctx: RerankerContext) -> Reranker:
    return OnnxCrossEncoder(ctx.model_dir if ctx.model else ctx.model_dir / "cross_encoder")


def _st_cross_encoder(arg: str, ctx: RerankerContext) -> Reranker:
    if not ctx.model:
        raise ConfigError("the st_cross_encoder reranker needs `model` (a directory or hub id)")
    return SentenceTransformersCrossEncoder(ctx.model)


def _llm_listwise(arg: str, ctx: RerankerContext) -> Reranker:
    """`model`: `openai:<base_url>|<model>` (any OpenAI-compatible chat server; key from OPENAI_API_KEY) or
    `anthropic:<model>` (ANTHROPIC_API_KEY); nothing is sent until the first rerank."""
    from ragfunnel.clients import AnthropicClient, OpenAICompatibleClient
    from ragfunnel.rerank.llm_listwise import ListwiseLLMReranker

    spec = (ctx.model or "").strip()
    kind, _, rest = spec.partition(":")
    if kind == "openai" and "|" in rest:
        base_url, _, model = rest.rpartition("|")
        if base_url and model:
            return ListwiseLLMReranker(OpenAICompatibleClient(base_url, model))
    if kind == "anthropic" and rest:
        return ListwiseLLMReranker(AnthropicClient(rest))
    raise ConfigError(
        "the llm_listwise reranker needs `model` naming its LLM client: 'openai:<base_url>|<model>' (an "
        f"OpenAI-compatible chat server) or 'anthropic:<model>'{f', not {spec!r}' if spec else ''}"
    )


RERANKERS = Registry("reranker")
RERANKERS.register("ltr", _ltr, extra="rerank", modules=("lightgbm",),
                   usage="ltr (LambdaMART over first-stage evidence, `ragfunnel train reranker`)",
                   description="LambdaMART over first-stage evidence and the cross-encoder's score")
RERANKERS.register("cross_encoder", _cross_encoder, usage="cross_encoder (our fine-tuned MiniLM, ONNX)",
                   description="the fine-tuned MiniLM cross-encoder, run with ONNX")
RERANKERS.register("cohere", lambda arg, ctx: CohereReranker(model=ctx.model or "rerank-v3.5"),
                   usage="cohere (Cohere's rerank API, COHERE_API_KEY)",
                   description="Cohere's rerank API (COHERE_API_KEY)")
# sentence-transformers is checked when the model loads (warm_up), with its own install hint
RERANKERS.register("st_cross_encoder", _st_cross_encoder, usage="st_cross_encoder (any sentence-transformers model)",
                   description="any sentence-transformers cross-encoder (a directory or hub id)")
RERANKERS.register("llm_pointwise", lambda arg, ctx: PointwiseLLMReranker(ctx.model or str(ctx.models_dir / "llm.gguf")),
                   extra="llm", modules=("llama_cpp",), needs="llama-cpp-python",
                   usage="llm_pointwise (yes/no log-odds of the local LLM)",
                   description="yes/no log-odds of the local LLM, passage by passage")
RERANKERS.register("llm_listwise", _llm_listwise, usage="llm_listwise (an LLM orders the passages; model = 'openai:<base_url>|<model>' or 'anthropic:<model>')",
                   description="an LLM orders the passages in one reply (OpenAI-compatible or Anthropic)")


def make_reranker(method: str, ctx: RerankerContext) -> Reranker:
    """The reranker `method` names; a missing optional dependency is a ConfigError naming the extra to install."""
    return RERANKERS.create(method, ctx)
