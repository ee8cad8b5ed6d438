"""The examples of docs/architecture.md run: the retriever, reranker and LLM of "Adding a …" are executed as
written, registered, and used through the pipeline and the answerer on an in-memory store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragfunnel.config import ModeSpec, RerankSpec, RetrieverSpec, Settings
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.llm import LLM_BACKENDS, make_llm
from ragfunnel.generate.prompt import parse_user_message
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.base import Passage, RerankResult, reorder
from ragfunnel.rerank.registry import RERANKERS
from ragfunnel.retrieve.registry import RETRIEVERS
from ragfunnel.store import Filter, Store, StoreSettings, build_index
from ragfunnel.types import Hit
from tests.helpers import topic_docs

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def example(section: str) -> str:
    """The Python code blocks of one "## <section>" of the page, joined."""
    text = DOC.read_text(encoding="utf-8").split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", text, re.DOTALL))


@pytest.fixture
def registries():
    """Run the examples against the real registries, and leave them as they were."""
    saved = {registry: registry.names() for registry in (RETRIEVERS, RERANKERS, LLM_BACKENDS)}
    yield
    for registry, names in saved.items():
        for name in set(registry.names()) - set(names):
            registry.unregister(name)


def test_the_retriever_reranker_and_llm_examples_work(registries, session_cache):
    names = {"Store": Store, "Hit": Hit, "Passage": Passage, "RerankResult": RerankResult, "reorder": reorder,
             "Iterator": Iterator, "parse_user_message": parse_user_message, "RETRIEVERS": RETRIEVERS,
             "RERANKERS": RERANKERS, "LLM_BACKENDS": LLM_BACKENDS}
    for section in ("Adding a retriever", "Adding a reranker", "Adding an LLM"):
        exec(compile(example(section), f"architecture.md: {section}", "exec"), names)  # noqa: S102

    store = build_index(topic_docs(), None, StoreSettings(sparse_views=["scene"], dense_views=["w3s1"]),
                        session_cache, backend_name="memory")
    settings = Settings()
    settings.retrievers["title"] = RetrieverSpec(kind="title", view="scene", depth=5)
    settings.modes["with_titles"] = ModeSpec(retrievers=["bm25_scene", "title"],
                                             rerank=RerankSpec(method="shortest", candidates=5))
    pipeline = Pipeline(settings, store=store)
    result = pipeline.search("Episode s09_e02 Oklahoma", "with_titles", k=5)
    assert result.candidates[0].doc_id == "s09_e02_c01"
    assert any(s.name == "retrieve:title" and s.detail["chunks"] > 0 for s in result.trace.stages)
    assert any(s.name == "rerank:shortest" for s in result.trace.stages)
    filtered = pipeline.search("Episode s09_e02 Oklahoma", "with_titles", k=5, where=Filter.parse("id=s09_e01_*"))
    assert filtered.candidates and all(c.doc_id.startswith("s09_e01_") for c in filtered.candidates)
    assert filtered.lists["title"] and all(c.doc_id.startswith("s09_e01_") for c in filtered.lists["title"])

    checks_off = AnswerSettings(min_similarity=None, min_quote_similarity=None)
    answer = Answerer(pipeline, make_llm("echo"), settings=checks_off).ask(
        "Who moved to Tulsa?", mode="with_titles", k=3)
    assert answer.answer and answer.citations
