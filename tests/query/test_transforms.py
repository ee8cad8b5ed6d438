"""LLM query transforms (query/transforms.py) in the pipeline, over the small in-memory topic corpus and a scripted
LLM: the transformed queries are searched and fused, replies are cached, failures degrade, settings are checked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from ragfunnel.config import ModeSpec, Settings, TransformSpec
from ragfunnel.corpus.base import DocumentsCorpus
from ragfunnel.errors import ConfigError
from ragfunnel.pipeline import Pipeline
from ragfunnel.query.transforms import passage_text, query_lines
from ragfunnel.store import StoreSettings, build_index
from tests.helpers import topic_docs

STORE = StoreSettings(sparse_views=["scene", "w3s1", "utt"], dense_views=["w3s1", "utt"])
# words the documents never use: "paleontologist", "prehistoric", "reptile"
VAGUE = "What does the paleontologist say about the prehistoric reptile remains?"
REPLIES = {
    "keyword search": "What does Ross say about the velociraptor skeleton at the museum?",
    "short passage": "Ross: The velociraptor skeleton is incredible.\nRoss: The velociraptor skeleton is incredible.\n"
                     "Rachel: Nobody cares about the fossils.",
    "search queries": "1. Ross dinosaur exhibit museum\n2. \"velociraptor skeleton\"\n3. Ross dinosaur exhibit museum\n" + VAGUE,
    "split it": VAGUE,  # a one-part question comes back unchanged: nothing to add
}


class ScriptedLLM:
    """Replies by what the system prompt asks for; counts its calls; fails when told to."""

    name = "scripted"

    def __init__(self, fail: bool = False):
        self.calls = 0
        self.fail = fail

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        self.calls += 1
        if self.fail:
            raise TimeoutError("the LLM took too long")
        reply = next(text for cue, text in REPLIES.items() if cue in system)
        yield from reply.split(" ")[:1]
        for word in reply.split(" ")[1:]:
            yield " " + word


def settings_with(tmp_path, **transforms: list[TransformSpec]) -> Settings:
    settings = Settings(home=tmp_path)
    for name, specs in transforms.items():
        settings.modes[name] = settings.modes["hybrid"].model_copy(update={"transforms": specs})
    return settings


@pytest.fixture(scope="module")
def store(session_cache):
    store = build_index(topic_docs(), None, STORE, session_cache, backend_name="memory")
    yield store
    store.close()


def make_pipeline(store, settings, llm=None) -> Pipeline:
    return Pipeline(settings, store=store, corpus=DocumentsCorpus(topic_docs(), name="topics"),
                    llm=(lambda: llm) if llm is not None else None)


def test_a_rewrite_is_searched_by_every_retriever_and_fused(store, tmp_path):
    llm = ScriptedLLM()
    pipeline = make_pipeline(store, settings_with(tmp_path, rw=[TransformSpec(kind="rewrite")]), llm)
    result = pipeline.search(VAGUE, "rw", k=3)
    assert result.candidates[0].doc_id == "s09_e01_c02"
    rewritten = {name for name in result.lists if "~rewrite" in name}
    assert rewritten == {f"{r}~rewrite1" for r in ("bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt")}
    assert result.lists["bm25_scene~rewrite1"][0].doc_id == "s09_e01_c02"
    stage = next(s for s in result.trace.stages if s.name == "transform:rewrite")
    assert stage.detail["queries"] == [REPLIES["keyword search"]] and stage.detail["llm"] == "scripted"
    assert stage.detail["cached"] is False and stage.detail["approx_reply_tokens"] > 0
    assert any(s.name == "retrieve:bm25_scene~rewrite1" and s.detail["query"] == REPLIES["keyword search"]
               for s in result.trace.stages)


def test_replies_are_cached_across_searches_and_pipelines(store, tmp_path):
    llm = ScriptedLLM()
    settings = settings_with(tmp_path, rw=[TransformSpec(kind="rewrite")])
    first = make_pipeline(store, settings, llm).search(VAGUE, "rw", k=3)
    again = make_pipeline(store, settings, llm).search(VAGUE, "rw", k=3)
    assert llm.calls == 1
    stage = next(s for s in again.trace.stages if s.name == "transform:rewrite")
    assert stage.detail["cached"] is True and stage.detail["generation_ms"] > 0
    assert [c.doc_id for c in again.candidates] == [c.doc_id for c in first.candidates]
    assert (tmp_path / "cache" / "llm_replies.sqlite").is_file()


def test_hyde_goes_to_the_dense_retrievers_only_and_repeated_lines_are_dropped(store, tmp_path):
    pipeline = make_pipeline(store, settings_with(tmp_path, hy=[TransformSpec(kind="hyde")]), ScriptedLLM())
    result = pipeline.search(VAGUE, "hy", k=3)
    assert {n for n in result.lists if "~" in n} == {"dense_w3s1~hyde1", "dense_utt~hyde1"}
    query = next(s for s in result.trace.stages if s.name == "transform:hyde").detail["queries"][0]
    assert query.count("velociraptor skeleton is incredible") == 1
    assert result.candidates[0].doc_id == "s09_e01_c02"


def test_multi_query_lists_are_deduplicated_and_named_retrievers_only(store, tmp_path):
    spec = TransformSpec(kind="multi_query", n=3, retrievers=["bm25_scene"], weight=0.5)
    pipeline = make_pipeline(store, settings_with(tmp_path, mq=[spec]), ScriptedLLM())
    result = pipeline.search(VAGUE, "mq", k=3)
    queries = next(s for s in result.trace.stages if s.name == "transform:multi_query").detail["queries"]
    assert queries == ["Ross dinosaur exhibit museum", "velociraptor skeleton"]  # the repeat and the question dropped
    assert {n for n in result.lists if "~" in n} == {"bm25_scene~multi_query1", "bm25_scene~multi_query2"}
    assert result.candidates[0].doc_id == "s09_e01_c02"


def test_a_one_part_question_is_not_decomposed(store, tmp_path):
    pipeline = make_pipeline(store, settings_with(tmp_path, dq=[TransformSpec(kind="decompose")]), ScriptedLLM())
    result = pipeline.search(VAGUE, "dq", k=3)
    assert not [n for n in result.lists if "~" in n]
    assert next(s for s in result.trace.stages if s.name == "transform:decompose").detail["queries"] == []


def test_a_failing_llm_leaves_a_note_and_the_search_goes_on(store, tmp_path):
    settings = settings_with(tmp_path, rw=[TransformSpec(kind="rewrite")])
    result = make_pipeline(store, settings, ScriptedLLM(fail=True)).search(VAGUE, "rw", k=3)
    plain = make_pipeline(store, settings).search(VAGUE, "hybrid", k=3)
    assert [c.doc_id for c in result.candidates] == [c.doc_id for c in plain.candidates]
    assert any("query transform rewrite failed (TimeoutError" in n for n in result.trace.notes)
    working = ScriptedLLM()
    make_pipeline(store, settings, working).search(VAGUE, "rw", k=3)
    assert working.calls == 1  # a failure is not cached


def test_a_transform_mode_without_an_llm_is_a_one_line_config_error(store, tmp_path):
    pipeline = make_pipeline(store, settings_with(tmp_path, rw=[TransformSpec(kind="rewrite")]))
    with pytest.raises(ConfigError, match="transforms the question with an LLM.*--llm"):
        pipeline.search(VAGUE, "rw", k=3)
    assert pipeline.search(VAGUE, "hybrid", k=3).candidates  # other modes are unaffected


def test_transform_settings_are_checked():
    with pytest.raises(ValidationError, match="unknown transform 'paraphrase'"):
        TransformSpec(kind="paraphrase")
    with pytest.raises(ValidationError, match="fuses their lists"):
        ModeSpec(retrievers=["bm25_scene"], fusion={"method": "none"}, transforms=[{"kind": "rewrite"}])
    with pytest.raises(ValidationError, match="does not have: dense_scene"):
        ModeSpec(retrievers=["bm25_scene"], transforms=[{"kind": "hyde", "retrievers": ["dense_scene"]}])


def test_a_refusal_is_not_a_query(store, tmp_path):
    class Refusing(ScriptedLLM):
        def stream(self, system, user, max_tokens):
            yield "I'm sorry, I cannot help with that." if "keyword search" in system else "I don't know based on the provided scenes."

    spec = [TransformSpec(kind="rewrite"), TransformSpec(kind="hyde")]
    result = make_pipeline(store, settings_with(tmp_path, rh=spec), Refusing()).search(VAGUE, "rh", k=3)
    assert not [n for n in result.lists if "~" in n]
    assert all(s.detail["queries"] == [] for s in result.trace.stages if s.name.startswith("transform:"))


def test_reply_parsing():
    assert query_lines('1) "first query"\n- second\n\n* first query\nQuery 4: fourth', 5) == ["first query", "second", "fourth"]
    assert query_lines("a\nb\nc\nd", 2) == ["a", "b"]
    looped = "\n".join(["Phoebe: I'm so sad."] * 40 + ["Ross: Stop playing."])
    assert passage_text(looped) == "Phoebe: I'm so sad. Ross: Stop playing."
    assert len(passage_text("word " * 1000)) <= 800
