"""The pipeline over the small real index: question checks, ranked unique parents, the trace, fusion modes."""

from __future__ import annotations

import pytest

from ragfunnel.config import FusionSpec, ModeSpec
from ragfunnel.errors import ConfigError, QueryError
from ragfunnel.pipeline import MAX_QUESTION_CHARS, Pipeline, check_question
from ragfunnel.retrieve.fusion import QueryAwareRRFFuser, RRFFuser, ScoreFuser, make_fuser
from ragfunnel.retrieve.sparse import BM25Retriever
from ragfunnel.types import Candidate

pytestmark = pytest.mark.integration

QUESTION = "Why does Joey think there has to be something wrong with Monica's date?"


@pytest.fixture(scope="module")
def pipeline(small_settings, small_store):
    return Pipeline(small_settings, store=small_store)


def assert_ranked_parents(cands: list[Candidate], k: int, known: set[str]) -> None:
    assert 0 < len(cands) <= k
    assert [c.rank for c in cands] == list(range(1, len(cands) + 1))
    assert len({c.doc_id for c in cands}) == len(cands)
    assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)
    assert {c.doc_id for c in cands} <= known
    assert all("#" not in c.doc_id and all(ch.startswith(c.doc_id + "#") for ch in c.best_chunks) for c in cands)


@pytest.mark.parametrize("question", ["", "   ", "\n\t ", None])
def test_empty_question_is_a_query_error(pipeline, question):
    with pytest.raises(QueryError, match="empty"):
        pipeline.search(question)


def test_question_checks():
    assert check_question("  Who   broke\nher watch? ") == "Who broke her watch?"
    with pytest.raises(QueryError, match="limit"):
        check_question("why " * MAX_QUESTION_CHARS)


def test_k_must_be_positive(pipeline):
    with pytest.raises(QueryError):
        pipeline.search(QUESTION, k=0)


def test_unknown_mode_is_a_config_error(pipeline):
    with pytest.raises(ConfigError, match="unknown mode"):
        pipeline.search(QUESTION, mode="turbo")


def test_hybrid_returns_unique_ranked_parents(pipeline, small_store):
    result = pipeline.search(QUESTION, k=10)
    assert result.mode == "hybrid" and result.question == QUESTION
    assert_ranked_parents(result.candidates, 10, set(small_store.doc_ids()))
    assert len(result.candidates) == 10
    assert result.candidates[0].doc_id.startswith("s01_e01_")  # the question is about the pilot
    for name in pipeline.settings.modes["hybrid"].retrievers:
        assert_ranked_parents(result.lists[name], 10_000, set(small_store.doc_ids()))


def test_fused_scores_are_rrf_of_the_retriever_lists(pipeline):
    result = pipeline.search(QUESTION, "hybrid", k=20)
    k = pipeline.settings.modes["hybrid"].fusion.k
    for c in result.candidates:
        expected = sum(1 / (k + cand.rank) for lst in result.lists.values() for cand in lst if cand.doc_id == c.doc_id)
        assert c.score == pytest.approx(expected)
        assert set(c.sources) == {n for n, lst in result.lists.items() if any(x.doc_id == c.doc_id for x in lst)}


def test_trace_has_a_stage_per_retriever_and_fuse(pipeline):
    result = pipeline.search(QUESTION, "hybrid", k=5)
    retrievers = pipeline.settings.modes["hybrid"].retrievers
    stages = result.trace.stages
    assert [s.name for s in stages] == [f"retrieve:{r}" for r in retrievers] + ["fuse"]
    assert all(s.seconds > 0 for s in stages)
    assert result.trace.total_seconds == pytest.approx(sum(s.seconds for s in stages))
    for s in stages[:-1]:
        name = s.name.split(":", 1)[1]
        assert s.detail["parents"] == len(result.lists[name]) and s.detail["chunks"] >= s.detail["parents"]
        assert [t["id"] for t in s.detail["top"]] == [c.doc_id for c in result.lists[name][:10]]
    fuse = stages[-1].detail
    assert fuse["method"] == "rrf" and fuse["candidates"] >= len(result.candidates)
    assert [t["id"] for t in fuse["top"][:5]] == [c.doc_id for c in result.candidates]
    as_dict = result.trace.to_dict()
    assert as_dict["mode"] == "hybrid" and as_dict["question"] == QUESTION
    assert [s["name"] for s in as_dict["stages"]] == [s.name for s in stages]
    assert all(s["ms"] >= 0 for s in as_dict["stages"])


def test_alias_fast_is_hybrid(pipeline):
    fast, hybrid = pipeline.search(QUESTION, "fast"), pipeline.search(QUESTION, "hybrid")
    assert fast.mode == "hybrid"
    assert [c.doc_id for c in fast.candidates] == [c.doc_id for c in hybrid.candidates]


def test_single_retriever_mode_is_its_collapsed_list(pipeline):
    result = pipeline.search(QUESTION, "bm25", k=7)
    (name,) = pipeline.settings.modes["bm25"].retrievers
    assert result.candidates == result.lists[name][:7]
    assert result.trace.stages[-1].detail["method"] == "none"
    assert_ranked_parents(result.candidates, 7, set(pipeline.store.doc_ids()))


def test_list_cache_is_filled_and_reused(pipeline):
    cache: dict = {}
    first = pipeline.search(QUESTION, "hybrid", list_cache=cache)
    assert set(cache) == set(pipeline.settings.modes["hybrid"].retrievers)
    assert all(cache[n] == first.lists[n] for n in cache)
    # a cached list is used as it is, without retrieving again
    name = pipeline.settings.modes["bm25"].retrievers[0]
    fake = [Candidate("s01_e02_c09", 1.0, 1, {name: (1, 1.0)}, ())]
    assert pipeline.search(QUESTION, "bm25", list_cache={name: fake}).candidates == fake


def test_other_fusions(pipeline):
    pair = ["bm25_scene", "dense_w3s1"]
    modes = {
        "qa": ModeSpec(retrievers=pair, fusion=FusionSpec(method="query_aware")),
        "score": ModeSpec(retrievers=pair, fusion=FusionSpec(method="score", both_bonus=0.1)),
    }
    settings = pipeline.settings.model_copy(update={"modes": {**pipeline.settings.modes, **modes}})
    custom = Pipeline(settings, store=pipeline.store)
    qa = custom.search(QUESTION, "qa", k=10)
    mean_idf = qa.trace.stages[-1].detail["mean_idf"]
    assert mean_idf == pytest.approx(BM25Retriever(pipeline.store, "scene").mean_idf(QUESTION))
    assert_ranked_parents(qa.candidates, 10, set(pipeline.store.doc_ids()))
    score = custom.search(QUESTION, "score", k=10)
    assert_ranked_parents(score.candidates, 10, set(pipeline.store.doc_ids()))
    assert score.candidates[0].score <= 2.0 + 0.1 + 1e-9  # two min-max lists plus the bonus


def fuser_of(spec: FusionSpec):
    return make_fuser(spec.method, spec.model_dump())


def test_make_fuser():
    assert fuser_of(FusionSpec(method="none")) is None
    assert type(fuser_of(FusionSpec(method="rrf"))) is RRFFuser
    assert isinstance(fuser_of(FusionSpec(method="query_aware")), QueryAwareRRFFuser)
    assert isinstance(fuser_of(FusionSpec(method="score")), ScoreFuser)
    with pytest.raises(ConfigError, match="unknown fusion method"):
        make_fuser("borda", {})


def test_pipeline_opens_the_index_from_settings(small_settings, small_store):
    pipe = Pipeline(small_settings)  # no store given: opens settings.index_dir lazily
    try:
        assert pipe.store.doc_ids() == small_store.doc_ids()
        assert pipe.document("s01_e04_c04").label == "S01E04, Scene 4"
        assert pipe.document("s09_e09_c09") is None
        result = pipe.search("Who did Rachel dump at the altar?", k=5)
        assert_ranked_parents(result.candidates, 5, set(small_store.doc_ids()))
    finally:
        pipe.close()


# ---- accurate mode: the reranker stage -----------------------------------------------------------------------------


def home_pipeline(small_settings, small_store, home):
    """A pipeline over the small index whose models live under `home` (a temporary Settings.home)."""
    return Pipeline(small_settings.model_copy(update={"home": home}), store=small_store)


def install_ltr(tiny_ltr_model, home):
    import shutil

    target = home / "models" / "reranker" / "ltr"
    shutil.copytree(tiny_ltr_model, target)
    return target


def test_accurate_without_a_model_is_a_config_error_and_fast_still_works(small_settings, small_store, tmp_path):
    pipe = home_pipeline(small_settings, small_store, tmp_path)
    with pytest.raises(ConfigError, match="ragfunnel train reranker") as err:
        pipe.search(QUESTION, "accurate")
    assert str(tmp_path / "models" / "reranker" / "ltr") in str(err.value)
    fast = pipe.search(QUESTION, "fast", k=10)
    assert fast.mode == "hybrid" and len(fast.candidates) == 10
    with pytest.raises(ConfigError, match="ragfunnel train reranker"):  # still missing, still said so
        pipe.search(QUESTION, "accurate")


def test_accurate_reranks_the_head_and_keeps_the_fused_tail(small_settings, small_store, tiny_ltr_model, tmp_path):
    from ragfunnel.rerank.base import Passage
    from ragfunnel.rerank.ltr import LTRReranker
    from ragfunnel.rerank.passages import passage_text

    model_dir = install_ltr(tiny_ltr_model, tmp_path)
    pipe = home_pipeline(small_settings, small_store, tmp_path)
    n = pipe.settings.modes["accurate"].rerank.candidates
    assert n == 20
    result = pipe.search(QUESTION, "accurate", k=30)
    fused = pipe.search(QUESTION, "hybrid", k=30).candidates
    assert result.mode == "accurate"
    assert [s.name for s in result.trace.stages][-2:] == ["fuse", "rerank:ltr"]
    cands = result.candidates
    assert [c.rank for c in cands] == list(range(1, 31))
    head, tail = cands[:n], cands[n:]
    assert {c.doc_id for c in head} == {c.doc_id for c in fused[:n]}
    assert [c.doc_id for c in head] != [c.doc_id for c in fused[:n]]  # the tiny model does reorder
    assert [c.score for c in head] == sorted((c.score for c in head), reverse=True)
    # the head is what the reranker makes of the fused top 20 with context passages
    docs = [small_store.document(c.doc_id) for c in fused[:n]]
    direct = LTRReranker(small_store, model_dir).rerank(
        QUESTION, [Passage(c, passage_text(small_store, d, c, "context"), d) for c, d in zip(fused[:n], docs)]
    )
    assert [(c.doc_id, c.score) for c in head] == [(c.doc_id, pytest.approx(c.score)) for c in direct.candidates]
    # the tail: the fused order and scores, ranks continuing after the head
    assert [(c.doc_id, c.score) for c in tail] == [(c.doc_id, c.score) for c in fused[n:]]
    detail = result.trace.stages[-1].detail
    assert detail["candidates"] == n and detail["passage"] == "context" and detail["degraded"] is False
    assert [t["id"] for t in detail["top"]] == [c.doc_id for c in head[:10]]
    assert result.trace.notes == []
    top5 = pipe.search(QUESTION, "accurate", k=5).candidates
    assert [c.doc_id for c in top5] == [c.doc_id for c in head[:5]]


class FakeReranker:
    name = "fake"

    def __init__(self, result=None, error: Exception | None = None):
        self.result, self.error, self.calls = result, error, []

    def rerank(self, question, passages):
        self.calls.append((question, passages))
        if self.error is not None:
            raise self.error
        return self.result(passages)


def inject(pipe, reranker, mode="accurate"):
    spec = pipe.settings.modes[mode].rerank
    pipe._rerankers[spec.model_dump_json()] = reranker


def test_a_failing_reranker_degrades_to_the_fused_order(small_settings, small_store, tmp_path):
    pipe = home_pipeline(small_settings, small_store, tmp_path)  # no model: the fake stands in
    fake = FakeReranker(error=RuntimeError("boom"))
    inject(pipe, fake)
    result = pipe.search(QUESTION, "accurate", k=25)
    fused = pipe.search(QUESTION, "hybrid", k=25).candidates
    assert len(fake.calls) == 1
    assert [(c.doc_id, c.rank, c.score) for c in result.candidates] == [(c.doc_id, c.rank, c.score) for c in fused]
    assert any("fake" in n and "RuntimeError" in n and "fused order" in n for n in result.trace.notes)
    stage = result.trace.stages[-1]
    assert stage.name == "rerank:fake" and stage.detail["degraded"] is True


def test_a_config_error_of_the_reranker_is_raised(small_settings, small_store, tmp_path):
    pipe = home_pipeline(small_settings, small_store, tmp_path)
    inject(pipe, FakeReranker(error=ConfigError("model broken: run `ragfunnel train reranker`")))
    with pytest.raises(ConfigError, match="model broken"):
        pipe.search(QUESTION, "accurate")


def test_the_reranker_gets_the_head_as_passages_and_its_notes_reach_the_trace(small_settings, small_store, tmp_path):
    from ragfunnel.config import RerankSpec
    from ragfunnel.rerank.base import RerankResult, keep_order
    from ragfunnel.rerank.passages import passage_text

    modes = {**small_settings.modes, "rr": ModeSpec(
        retrievers=small_settings.modes["hybrid"].retrievers, fusion=small_settings.modes["hybrid"].fusion,
        rerank=RerankSpec(method="ltr", candidates=5, passage="window"),
    )}
    pipe = Pipeline(small_settings.model_copy(update={"home": tmp_path, "modes": modes}), store=small_store)
    reverse = FakeReranker(result=lambda ps: RerankResult(
        [Candidate(p.candidate.doc_id, float(i), i, p.candidate.sources, p.candidate.best_chunks)
         for i, p in enumerate(reversed(ps), 1)], notes=["reversed"]))
    inject(pipe, reverse, "rr")
    result = pipe.search(QUESTION, "rr", k=8)
    fused = pipe.search(QUESTION, "hybrid", k=8).candidates
    (question, passages), = reverse.calls
    assert question == QUESTION and [p.candidate for p in passages] == fused[:5]
    for p in passages:
        assert p.document == small_store.document(p.candidate.doc_id)
        assert p.text == passage_text(small_store, p.document, p.candidate, "window")
    assert [c.doc_id for c in result.candidates] == [c.doc_id for c in fused[:5][::-1] + fused[5:]]
    assert [c.rank for c in result.candidates] == list(range(1, 9))
    assert result.trace.notes == ["reversed"]
    # a reranker that degrades on its own: its note and flag are kept, the order is the fused one
    inject(pipe, FakeReranker(result=lambda ps: keep_order(ps, "api down")), "rr")
    result = pipe.search(QUESTION, "rr", k=8)
    assert [c.doc_id for c in result.candidates] == [c.doc_id for c in fused]
    assert result.trace.notes == ["api down"] and result.trace.stages[-1].detail["degraded"] is True


def test_make_reranker(small_settings, small_store, tmp_path):
    from ragfunnel.config import RerankSpec
    from ragfunnel.pipeline import make_reranker
    from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder
    from ragfunnel.rerank.ltr import LTRReranker

    settings = small_settings.model_copy(update={"home": tmp_path})
    ltr = make_reranker(RerankSpec(method="ltr"), small_store, settings)
    assert isinstance(ltr, LTRReranker) and ltr.model_dir == tmp_path / "models" / "reranker" / "ltr"
    assert ltr.cross_encoder.model_dir == tmp_path / "models" / "reranker" / "cross_encoder"
    own = make_reranker(RerankSpec(method="ltr", model=str(tmp_path / "mine")), small_store, settings)
    assert own.model_dir == tmp_path / "mine" / "ltr"
    ce = make_reranker(RerankSpec(method="cross_encoder"), small_store, settings)
    assert isinstance(ce, OnnxCrossEncoder) and ce.model_dir == tmp_path / "models" / "reranker" / "cross_encoder"
    ce = make_reranker(RerankSpec(method="cross_encoder", model=str(tmp_path / "ce")), small_store, settings)
    assert ce.model_dir == tmp_path / "ce"
    with pytest.raises(ConfigError, match="needs `model`"):
        make_reranker(RerankSpec(method="st_cross_encoder"), small_store, settings)
    with pytest.raises(ConfigError, match="LLM client"):
        make_reranker(RerankSpec(method="llm_listwise"), small_store, settings)
    with pytest.raises(ConfigError, match="not 'openai:nowhere'"):
        make_reranker(RerankSpec(method="llm_listwise", model="openai:nowhere"), small_store, settings)
    from ragfunnel.clients import AnthropicClient, OpenAICompatibleClient
    from ragfunnel.rerank.llm_listwise import ListwiseLLMReranker

    listwise = make_reranker(RerankSpec(method="llm_listwise", model="openai:http://127.0.0.1:9/v1|qwen"), small_store, settings)
    assert isinstance(listwise, ListwiseLLMReranker) and isinstance(listwise.chat, OpenAICompatibleClient)
    assert listwise.chat.base_url == "http://127.0.0.1:9/v1" and listwise.chat.model == "qwen"
    claude = make_reranker(RerankSpec(method="llm_listwise", model="anthropic:claude-x"), small_store, settings)
    assert isinstance(claude.chat, AnthropicClient) and claude.chat.model == "claude-x"


def test_rerankers_are_built_once_per_spec(small_settings, small_store, tmp_path):
    from ragfunnel.config import RerankSpec

    pipe = home_pipeline(small_settings, small_store, tmp_path)
    a = pipe.reranker(RerankSpec(method="ltr"))
    assert pipe.reranker(RerankSpec(method="ltr")) is a
    assert pipe.reranker(RerankSpec(method="ltr", candidates=5)) is not a
