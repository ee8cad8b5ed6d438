"""Answer metrics: the out-of-scope list, the seeded sample, span containment, faithfulness, the summary."""

from __future__ import annotations

import pytest

from ragfunnel.generate import evaluate as ev
from ragfunnel.generate.answer import AnswerResult, Answerer, RetrievedScene
from ragfunnel.generate.citations import REFUSAL, CheckedCitation
from ragfunnel.generate.llm import FakeLLM


def result(answer="", refused=False, citations=(), scenes=(), timings=None) -> AnswerResult:
    return AnswerResult("q", "hybrid", "fake", answer, list(citations), refused, list(scenes),
                        timings if timings is not None else {"llm_first_token": 10.0, "total": 20.0})


def cite(doc_id="s01_e01_c01", quote="I left Barry at the altar."):
    return CheckedCitation(1, doc_id, "S01E01, Scene 1", "t", quote, (f"{doc_id}_u001",), (quote,))


def test_out_of_scope_questions():
    qs = ev.out_of_scope_questions()
    assert len(qs) >= 30 and len(set(qs)) == len(qs)
    assert "What is the capital of France?" in qs and not any(q.startswith("#") for q in qs)


def test_load_cases_is_a_seeded_sample_of_dev_plus_out_of_scope(tiny):
    friends = tiny.data / "friends"
    a = ev.load_cases(friends, limit=2, seed=1, oos_limit=3)
    assert a == ev.load_cases(friends, limit=2, seed=1, oos_limit=3)
    dev = [c for c in a if c.kind == "dev"]
    assert len(dev) == 2 and all(c.answers and c.gold_scenes for c in dev)
    assert not any(c.qid == "s04_e08_c04_x" for c in a)  # train split
    assert [c.qid for c in a if c.kind == "oos"] == ["oos_01", "oos_02", "oos_03"]
    every = ev.load_cases(friends, limit=100, seed=1)
    assert sum(c.kind == "dev" for c in every) == 4 and sum(c.kind == "oos" for c in every) >= 30


def test_contains_span_is_normalised_and_word_bounded():
    assert ev.contains_span("Ross wants to name him JORDIE!", ["Jamie", "Jordie ."])
    assert not ev.contains_span("Jordiene", ["Jordie"])
    assert not ev.contains_span("anything", [" . "])


def test_token_f1_gives_partial_credit_against_the_best_gold_answer():
    assert ev.token_f1("Six-hour trip to London.", ["Six - hour trip to London", "x"]) == 1.0
    assert ev.token_f1("A 6-hour trip to London.", ["Six - hour trip"]) == pytest.approx(2 * 0.4 * (2 / 3) / (0.4 + 2 / 3))
    assert ev.token_f1("Monica's bedroom", ["the bedroom"]) == pytest.approx(2 / 3)  # "monica", "bedroom" vs "bedroom"
    assert ev.token_f1("Rome.", ["the same school"]) == 0.0 and ev.token_f1("", ["Ross"]) == 0.0


def test_faithfulness_counts_sentences_sharing_content_words_with_quotes():
    r = result("Rachel left Barry [1]. She ran to Central Perk [1]! Okay.", citations=[cite()])
    assert ev.faithfulness(r) == (1, 2)  # "Okay." has no content word; "ran/central/perk" are not in the quote
    assert ev.faithfulness(result(REFUSAL, refused=True)) == (0, 0)
    assert ev.faithfulness(result("Rachel left Barry.")) == (0, 1)  # no valid citation supports nothing


def test_score_and_summarize():
    dev = ev.AnswerCase("d1", "Who did Rachel leave?", "dev", ("s01_e01_c01",), ("Barry",))
    dev2 = ev.AnswerCase("d2", "Who?", "dev", ("s09_e09_c09",), ("Gunther",))
    oos = ev.AnswerCase("o1", "Capital of France?", "oos")
    scene = RetrievedScene("s01_e01_c01", "S01E01, Scene 1", "t", 1, 1.0, 1)
    texts = {"s01_e01_c01": "Rachel: I left Barry.", "s02_e02_c02": "Gunther: hi"}
    scored = [
        ev.score(dev, result("Rachel left Barry [1].", citations=[cite(), cite("s02_e02_c02", "Gunther: hi")], scenes=[scene]), texts.get),
        ev.score(dev2, result(REFUSAL, refused=True, timings={"total": 40.0}), texts.get),
        ev.score(oos, result(REFUSAL, refused=True), texts.get),
        ev.score(oos, result("", timings={"total": 5.0}), texts.get),  # an LLM failure
    ]
    assert scored[0].gold_span and scored[0].citations_correct == 1 and scored[0].gold_in_sources
    s = ev.summarize(scored)
    assert (s["dev_questions"], s["oos_questions"], s["llm_failures"]) == (2, 2, 1)
    assert s["gold_span_rate"] == 0.5 and s["citation_precision"] == 0.5 and s["citations"] == 2
    assert scored[0].f1 == pytest.approx(0.5) and s["answer_f1"] == pytest.approx(0.25)  # "rachel left barry" vs "barry"; a refusal 0
    assert s["oos_refusal_rate"] == 1.0 and s["false_refusal_rate"] == 0.5 and s["gold_in_sources"] == 0.5
    assert s["faithfulness"] == 1.0 and s["ttft_p50_ms"] == 10.0 and s["total_p50_ms"] == 20.0
    rows = ev.report_rows(s)
    assert rows[0] == ["gold-span answer rate (dev)", 0.5, 2] and len(rows) == len(ev.METRIC_ROWS)
    assert ev.summarize([])["gold_span_rate"] is None


def test_run_with_the_fake_llm(clean_pipeline, tiny):
    cases = ev.load_cases(tiny.data / "friends", limit=4, seed=3, oos_limit=2)
    seen = []
    scored = ev.run(Answerer(clean_pipeline, FakeLLM()), cases, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (6, 6) and len(scored) == 6
    by_id = {s.case.qid: s for s in scored}
    assert by_id["s01_e04_c01_Who"].gold_span and by_id["s01_e04_c01_Who"].citations_correct == 1
    assert by_id["oos_01"].result.refused
    assert ev.summarize(scored)["citation_precision"] == 1.0
    assert by_id["s01_e04_c01_Who"].to_dict()["citations"][0]["id"] == "s01_e04_c01"


class _StopAfter(FakeLLM):
    """The fake LLM, interrupted (as by Ctrl-C) on its n-th call."""

    def __init__(self, n: int | None):
        self.n, self.calls = n, 0

    def stream(self, system, user, max_tokens):
        self.calls += 1
        if self.n is not None and self.calls >= self.n:
            raise KeyboardInterrupt
        yield from super().stream(system, user, max_tokens)


def test_an_interrupted_run_resumes_from_its_journal(clean_pipeline, tiny, tmp_path):
    cases = [c for c in ev.load_cases(tiny.data / "friends", limit=4, seed=3, oos_limit=0)]
    journal, key = tmp_path / "run.partial.jsonl", {"llm": "fake", "mode": "fast"}
    with pytest.raises(KeyboardInterrupt):
        ev.run(Answerer(clean_pipeline, _StopAfter(3)), cases, journal=journal, run_key=key)
    assert len(ev.read_journal(journal, key, cases)) == 2
    with open(journal, "a") as f:
        f.write('{"id": "cut sh')  # a line the crash cut short is ignored
    llm = _StopAfter(None)
    resumed = ev.run(Answerer(clean_pipeline, llm), cases, journal=journal, run_key=key)
    fresh = ev.run(Answerer(clean_pipeline, FakeLLM()), cases)
    assert llm.calls == 2 and [s.to_dict() | {"timings": 0} for s in resumed] == [s.to_dict() | {"timings": 0} for s in fresh]
    assert ev.summarize(resumed) | {"ttft_p50_ms": 0, "total_p50_ms": 0} == ev.summarize(fresh) | {"ttft_p50_ms": 0, "total_p50_ms": 0}
    # another run's key, or other cases: the journal is not used
    assert ev.read_journal(journal, {"llm": "local"}, cases) == {} and ev.read_journal(journal, key, cases[:3]) == {}


def test_eval_answers_leaves_out_questions_a_trained_part_has_seen(tmp_path, data_dir):
    import json
    from types import SimpleNamespace

    from ragfunnel.config import Settings
    from ragfunnel.corpus.friends_questions import training_split

    settings = Settings(home=tmp_path, data=data_dir)
    split = training_split(settings.friends_dir, 13)
    embedder = tmp_path / "embedder"
    embedder.mkdir()
    (embedder / "meta.json").write_text(json.dumps({"kind": "bi_encoder", "seed": 13}))

    def pipeline(encoder):
        return SimpleNamespace(settings=settings, store=SimpleNamespace(settings=SimpleNamespace(encoder=encoder), read_artifact=lambda name: None))

    assert ev.seen_in_training(pipeline("minilm-l6-onnx"), "fast") == (set(), [])
    assert ev.seen_in_training(pipeline("minilm-l6-onnx"), "accurate") == (set(), [])  # no reranker trained yet
    seen, why = ev.seen_in_training(pipeline(f"onnx:{embedder}"), "fast")
    assert seen == {q.qid for q in split.train} and len(why) == 1 and "bi-encoder" in why[0]
    (settings.models_dir / "reranker").mkdir(parents=True)
    (settings.models_dir / "reranker" / "training_report.json").write_text(json.dumps({"seed": 13, "fit_on": "holdout"}))
    seen, why = ev.seen_in_training(pipeline("minilm-l6-onnx"), "accurate")
    assert seen == {q.qid for q in split.train + split.holdout} and "reranker" in why[0]
    cases = ev.load_cases(settings.friends_dir, limit=20, seed=13, oos_limit=0, exclude=seen)
    assert len(cases) == 20 and not {c.qid for c in cases} & seen

    gate = json.dumps({"answerable_from": {"friendsqa_dev": {"n": 40, "seed": 99}}})
    gated = SimpleNamespace(settings=settings, store=SimpleNamespace(settings=SimpleNamespace(encoder="minilm"),
                                                                     read_artifact={"gate.json": gate}.get))
    seen, why = ev.seen_in_training(gated, "fast")
    assert seen == {q.qid for q in ev.tuning_questions(settings.friends_dir, 40, seed=99)} and "gate" in why[0]
    # the gate's questions lie outside the default sample, which therefore stays what it was
    assert ev.load_cases(settings.friends_dir, 50, 13, 0, exclude=seen) == ev.load_cases(settings.friends_dir, 50, 13, 0)


def test_scene_texts_reads_each_scene_once_and_gives_empty_text_for_an_unknown_id():
    from types import SimpleNamespace

    reads = []

    class Store:
        def document(self, doc_id):
            reads.append(doc_id)
            return SimpleNamespace(render=lambda: f"text of {doc_id}") if doc_id == "s01_e01_c01" else None

    text = ev.scene_texts(Store())
    assert text("s01_e01_c01") == text("s01_e01_c01") == "text of s01_e01_c01"
    assert text("nope") == ""
    assert reads == ["s01_e01_c01", "nope"]
