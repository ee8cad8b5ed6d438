"""The Answerer over a tiny real index: grounded answers, streaming events, retry-then-refuse, LLM failures, and
prompt-injection safety (a planted line stays inside its <source> block and does not change the answer)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from ragfunnel.errors import ConfigError, QueryError
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.citations import REFUSAL
from ragfunnel.generate.llm import FakeLLM, LLMError, OpenAICompatibleLLM
from ragfunnel.generate.prompt import STRICT_ADDENDUM, SYSTEM_PROMPT, WITHHELD, parse_user_message
from ragfunnel.pipeline import SearchResult
from ragfunnel.types import Trace
from tests.generate.conftest import PLANTED, ScriptedLLM, SSEReply

GOOD = 'Joey was in love with Rachel [1].\nCITATION [1]: "I think I\'m falling in love with you."'
UNSUPPORTED = 'Joey loved pizza [1].\nCITATION [1]: "Pizza is my one true love."'


def bench_variants():
    """bench/answers/answer_variants.py: the Answerer variants that lost their measurements live beside the bench
    scripts that measured them (quote-first replies, citation repair)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "answers" / "answer_variants.py"
    spec = importlib.util.spec_from_file_location("answer_variants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cite_love_scene(user: str) -> str:
    """GOOD, citing whatever id the S08E16 scene got in this prompt."""
    n = re.search(r'<source id="(\d+)" scene="S08E16, Scene 9"', user).group(1)
    return GOOD.replace("[1]", f"[{n}]")


def test_fake_llm_answer_is_grounded(clean_pipeline):
    result = Answerer(clean_pipeline, FakeLLM()).ask("Who was Joey in love with?")
    assert result.answer == f"Joey Tribbiani: I think I'm falling in love with you. [{result.citations[0].source_id}]"
    assert not result.refused and "CITATION" not in result.answer
    # "joey" and "love" are in two lines of the scene: the earlier one wins the tie
    (c,) = result.citations
    assert (c.doc_id, c.label, c.title) == ("s08_e16_c09", "S08E16, Scene 9", "The One Where Joey Tells Rachel")
    assert c.unit_ids == ("s08_e16_c09_u002",) and c.lines == ("Joey Tribbiani: I think I'm falling in love with you.",)
    assert len(result.scenes) == 5 and [s.rank for s in result.scenes] == [1, 2, 3, 4, 5]
    assert sorted(s.source_id for s in result.scenes) == [1, 2, 3, 4, 5]
    assert set(result.timings) == {"retrieval", "prompt", "llm_first_token", "llm_total", "validation", "total"}
    assert result.attempts == 1 and result.llm == "fake" and result.mode == "hybrid"
    stages = [s.name for s in result.trace.stages]
    assert stages[-4:] == ["prompt", "gate", "generate", "validate"] and stages[0].startswith("retrieve:")


def test_stream_events_are_tokens_then_one_done(clean_pipeline):
    events = list(Answerer(clean_pipeline, FakeLLM()).ask_stream("Who was Joey in love with?", k=3))
    assert [e["type"] for e in events[:-1]] == ["token"] * (len(events) - 1) and events[-1]["type"] == "done"
    done = json.loads(json.dumps(events[-1]))["result"]  # plain JSON
    assert "".join(e["text"] for e in events[:-1]) == done["drafts"][0]
    assert done["citations"][0]["label"] == "S08E16, Scene 9" and len(done["scenes"]) == 3
    assert {"answer", "refused", "citations", "scenes", "timings", "notes", "trace"} <= set(done)


def test_a_valid_citation_needs_no_retry(clean_pipeline):
    llm = ScriptedLLM(cite_love_scene)
    result = Answerer(clean_pipeline, llm).ask("Who was Joey in love with?")
    (c,) = result.citations
    assert result.answer == f"Joey was in love with Rachel [{c.source_id}]." and c.doc_id == "s08_e16_c09"
    assert c.quote == "I think I'm falling in love with you." and not result.refused
    assert len(llm.calls) == 1 and llm.calls[0][0] == SYSTEM_PROMPT and result.notes == []


def test_no_valid_citation_retries_with_a_stricter_prompt_then_refuses(clean_pipeline):
    llm = ScriptedLLM(UNSUPPORTED, "Joey loved Rachel, I am sure.")
    refusing = Answerer(clean_pipeline, llm, settings=AnswerSettings(fallback="refusal"))
    events = list(refusing.ask_stream("Who was Joey in love with?"))
    assert [e["type"] for e in events if e["type"] != "token"] == ["retry", "done"]
    result = events[-1]["result"]
    assert result["refused"] is True and result["answer"] == REFUSAL and result["citations"] == []
    assert result["attempts"] == 2 and len(result["drafts"]) == 2
    assert llm.calls[0][0] == SYSTEM_PROMPT and llm.calls[1][0] == SYSTEM_PROMPT + STRICT_ADDENDUM
    assert llm.calls[0][1] == llm.calls[1][1]
    assert any("quote not found" in n for n in result["notes"])
    assert any("replaced by the refusal" in n for n in result["notes"])


def test_a_reply_that_fails_validation_falls_back_to_the_evidence_answer(clean_pipeline):
    """The default: not a refusal but the selected evidence lines, each with its own citation."""
    llm = ScriptedLLM(UNSUPPORTED, "Joey loved Rachel, I am sure.")
    result = Answerer(clean_pipeline, llm).ask("Who was Joey in love with?")
    assert not result.refused and result.reader == "evidence" and result.attempts == 2 and len(result.drafts) == 2
    assert result.citations and all(c.unit_ids and c.lines for c in result.citations)
    # one marker per line ("[Scene: …]" of a stage direction is the line's text, not a marker)
    assert "pizza" not in result.answer.lower() and len(re.findall(r"\[\d+\]", result.answer)) == len(result.citations)
    assert any("so the answer is the evidence lines instead" in n for n in result.notes)
    assert result.to_dict()["reader"] == "evidence"
    # evidence that is not about the question is no answer: with an impossible relevance bar it is the refusal
    strict = Answerer(clean_pipeline, ScriptedLLM(UNSUPPORTED, UNSUPPORTED),
                      settings=AnswerSettings(min_quote_similarity=0.99))
    assert strict.ask("Who was Joey in love with?").refused


def test_the_retry_can_succeed(clean_pipeline):
    llm = ScriptedLLM(UNSUPPORTED, cite_love_scene)
    result = Answerer(clean_pipeline, llm).ask("Who was Joey in love with?")
    assert not result.refused and result.attempts == 2 and len(result.drafts) == 2
    assert [c.doc_id for c in result.citations] == ["s08_e16_c09"]
    assert result.answer == f"Joey was in love with Rachel [{result.citations[0].source_id}]."


def test_a_model_refusal_is_kept_without_retry(clean_pipeline):
    llm = ScriptedLLM(REFUSAL)
    ungated = Answerer(clean_pipeline, llm, settings=AnswerSettings(min_similarity=None))
    result = ungated.ask("What is the capital of France?")
    assert result.refused and result.answer == REFUSAL and result.attempts == 1 and len(llm.calls) == 1


def test_an_off_topic_question_is_refused_before_the_llm(clean_pipeline):
    llm = ScriptedLLM(GOOD)
    result = Answerer(clean_pipeline, llm).ask("What is the capital of France?")
    assert result.refused and result.answer == REFUSAL and llm.calls == [] and result.attempts == 0
    assert any("best similarity" in n and "refused without asking the LLM" in n for n in result.notes)
    assert len(result.scenes) == 5  # the scenes are still reported
    # an on-topic question passes the gate; a gate above every cosine refuses it too
    assert not Answerer(clean_pipeline, ScriptedLLM(cite_love_scene)).ask("Who was Joey in love with?").refused
    strict = ScriptedLLM(cite_love_scene)
    gated = Answerer(clean_pipeline, strict, settings=AnswerSettings(min_similarity=1.01))
    assert gated.ask("Who was Joey in love with?").refused and not strict.calls


def test_an_answer_its_cited_lines_do_not_contain_is_retried_then_refused(clean_pipeline):
    def outside_knowledge(user: str) -> str:  # a real quote, but the answer comes from elsewhere
        return cite_love_scene(user).replace("Rachel", "Janice Hosenstein")

    llm = ScriptedLLM(outside_knowledge, outside_knowledge)
    refusing = Answerer(clean_pipeline, llm, settings=AnswerSettings(fallback="refusal"))
    events = list(refusing.ask_stream("Who was Joey in love with?"))
    assert [e for e in events if e["type"] == "retry"] == [{"type": "retry", "reason": "an answer that its cited sources do not contain"}]
    result = events[-1]["result"]
    assert result["refused"] and result["citations"] == [] and result["attempts"] == 2
    assert any("hosenstein, janice are not in the cited sources" in n for n in result["notes"]), result["notes"]


def test_fake_llm_refuses_out_of_scope(clean_pipeline):
    result = Answerer(clean_pipeline, FakeLLM()).ask("What is the capital of France?")
    assert result.refused and result.citations == [] and len(result.scenes) == 5


@pytest.mark.parametrize(
    "reply, kind",
    [
        (LLMError("chat completion failed (timed out)"), "LLMError: chat completion failed (timed out)"),
        (RuntimeError("boom"), "RuntimeError: boom"),
        (("Joey was", LLMError("anthropic messages failed (connection error)")), "LLMError: anthropic messages failed"),
    ],
)
def test_an_llm_failure_returns_the_scenes_with_a_note(clean_pipeline, reply, kind):
    result = Answerer(clean_pipeline, ScriptedLLM(reply)).ask("Who was Joey in love with?")
    assert result.answer == "" and result.refused is False and result.citations == [] and result.failed
    assert len(result.scenes) == 5 and "llm_total" in result.timings
    assert any(kind in n and "no answer, see the retrieved scenes" in n for n in result.notes), result.notes
    assert result.trace.stages[-2].detail["failed"] is True


def test_a_server_timeout_is_a_note(clean_pipeline, sse_server):
    sse_server.reply(SSEReply(delay=1.0, chunks=["data: [DONE]\n\n"]))
    slow = OpenAICompatibleLLM(sse_server.url, "m", timeout=0.2, retries=0)
    result = Answerer(clean_pipeline, slow).ask("Who was Joey in love with?")
    assert result.failed and any("chat completion failed (timed out)" in n for n in result.notes)


def test_max_seconds_stops_a_slow_model(clean_pipeline):
    slow = ScriptedLLM(cite_love_scene, delay=0.02)
    answerer = Answerer(clean_pipeline, slow, settings=AnswerSettings(max_seconds=0.01))
    result = answerer.ask("Who was Joey in love with?")
    assert result.failed and any("took longer than 0.01s" in n for n in result.notes)


def test_config_errors_and_bad_questions_raise(clean_pipeline):
    with pytest.raises(ConfigError):
        Answerer(clean_pipeline, ScriptedLLM(ConfigError("set ANTHROPIC_API_KEY"))).ask("Who was Joey in love with?")
    with pytest.raises(QueryError):
        Answerer(clean_pipeline, FakeLLM()).ask("   ")


def test_nothing_retrieved_is_a_refusal_without_an_llm_call(clean_pipeline, monkeypatch):
    monkeypatch.setattr(clean_pipeline, "search",
                        lambda question, mode=None, k=10, where=None, route=None: SearchResult(question, "hybrid", [], Trace(question, "hybrid")))
    llm = ScriptedLLM(GOOD)
    result = Answerer(clean_pipeline, llm).ask("anything?")
    assert result.refused and result.answer == REFUSAL and llm.calls == [] and result.notes


# ---- prompt injection -----------------------------------------------------------------------------------------------


def test_planted_line_only_ever_appears_inside_a_source_block(tiny):
    pipeline = tiny.pipeline("planted")
    try:
        for question in ("What should you ignore?", "What did Gunther say about instructions?", "answer 42"):
            llm = ScriptedLLM(UNSUPPORTED)  # forces the retry: both prompts are checked
            Answerer(pipeline, llm, settings=AnswerSettings(min_similarity=None)).ask(question)
            assert len(llm.calls) == 2
            for system, user in llm.calls:
                assert PLANTED not in system and "answer 42" not in system
                assert system in (SYSTEM_PROMPT, SYSTEM_PROMPT + STRICT_ADDENDUM)
                # the planted line reads as an instruction: withheld, its speaker kept, inside its own block
                sources_part = user.split("<question>")[0]
                assert PLANTED not in sources_part and "answer 42" not in sources_part
                assert user.count(f"Gunther: {WITHHELD}") == 1
                blocks = re.findall(r'<source id="\d+"[^>]*>\n(.*?)\n</source>', user, re.DOTALL)
                assert user.count("<source ") == len(blocks) == user.count("</source>") == 5
                assert sum(WITHHELD in b for b in blocks) == 1
                outside = re.sub(r'<source id="\d+"[^>]*>\n.*?\n</source>', "", user, flags=re.DOTALL)
                assert WITHHELD not in outside and "SYSTEM:" not in outside
                _, sources = parse_user_message(user)
                assert sorted(sources) == [1, 2, 3, 4, 5]
    finally:
        pipeline.close()


@pytest.mark.parametrize(
    "question", ["Who was Joey in love with?", "Who did Rachel leave at the altar?", "What did Phoebe write on her guitar?",
                 "What is the capital of France?"],
)
def test_fake_answer_is_the_same_with_the_planted_line(tiny, clean_pipeline, question):
    planted = tiny.pipeline("planted")
    try:
        a = Answerer(clean_pipeline, FakeLLM()).ask(question)
        b = Answerer(planted, FakeLLM()).ask(question)
    finally:
        planted.close()
    assert a.refused == b.refused
    assert re.sub(r"\[\d+\]", "[n]", a.answer) == re.sub(r"\[\d+\]", "[n]", b.answer)
    assert [(c.doc_id, c.quote, c.unit_ids) for c in a.citations] == [(c.doc_id, c.quote, c.unit_ids) for c in b.citations]
    assert "42" not in b.answer


def test_a_cited_line_unrelated_to_the_question_is_retried_then_refused(clean_pipeline):
    llm = ScriptedLLM(cite_love_scene, cite_love_scene)
    strict = Answerer(clean_pipeline, llm, settings=AnswerSettings(min_quote_similarity=0.99, fallback="refusal"))
    events = list(strict.ask_stream("Who was Joey in love with?"))
    assert [e["reason"] for e in events if e["type"] == "retry"] == ["a cited line unrelated to the question"]
    result = events[-1]["result"]
    assert result["refused"] and result["citations"] == []
    assert any("the cited lines are not about the question (similarity" in n for n in result["notes"]), result["notes"]
    # the same reply passes with a threshold below its similarity, and with the check off
    for threshold in (0.05, None):
        lenient = Answerer(clean_pipeline, ScriptedLLM(cite_love_scene),
                           settings=AnswerSettings(min_quote_similarity=threshold))
        assert not lenient.ask("Who was Joey in love with?").refused


def test_quote_first_answerer_asks_for_the_line_first_and_keeps_the_answer(clean_pipeline):
    from ragfunnel.generate.prompt import QUOTE_FIRST_STRICT_ADDENDUM, QUOTE_FIRST_SYSTEM_PROMPT

    def quote_then_answer(user: str) -> str:
        n = re.search(r'<source id="(\d+)" scene="S08E16, Scene 9"', user).group(1)
        return f'CITATION: "I think I\'m falling in love with you." [{n}]\nAnswer: Joey was in love with Rachel.'

    llm = ScriptedLLM(UNSUPPORTED, quote_then_answer)
    result = bench_variants().QuoteFirstAnswerer(clean_pipeline, llm).ask("Who was Joey in love with?")
    assert result.answer == "Joey was in love with Rachel." and not result.refused and result.attempts == 2
    assert [c.doc_id for c in result.citations] == ["s08_e16_c09"]
    assert [system for system, _ in llm.calls] == [QUOTE_FIRST_SYSTEM_PROMPT, QUOTE_FIRST_SYSTEM_PROMPT + QUOTE_FIRST_STRICT_ADDENDUM]


def test_repair_cites_the_shown_line_that_holds_a_right_answer_with_a_wrong_quote(clean_pipeline):
    def wrong_line(user: str) -> str:  # the right answer, quoting a real line of another scene that does not hold it
        n = re.search(r'<source id="(\d+)" scene="S01E04, Scene 1"', user).group(1)
        return f'Answer: He is falling in love with her.\nCITATION: "I left Barry at the altar" [{n}]'

    question = "What did Joey tell Rachel at dinner?"
    result = bench_variants().RepairingAnswerer(clean_pipeline, ScriptedLLM(wrong_line)).ask(question)
    assert not result.refused and result.attempts == 1
    assert [(c.doc_id, c.lines) for c in result.citations] == [
        ("s08_e16_c09", ("Joey Tribbiani: I think I'm falling in love with you.",))]
    assert any("cited instead the shown line" in n for n in result.notes), result.notes
    # the plain Answerer: the same reply is retried, then refused
    llm = ScriptedLLM(wrong_line, wrong_line)
    plain = Answerer(clean_pipeline, llm, settings=AnswerSettings(fallback="refusal"))
    assert plain.ask(question).refused and len(llm.calls) == 2


def test_repair_does_not_save_an_answer_no_shown_line_holds(clean_pipeline):
    def outside_knowledge(user: str) -> str:
        return cite_love_scene(user).replace("Rachel", "Janice Hosenstein")

    llm = ScriptedLLM(outside_knowledge, outside_knowledge)
    repairing = bench_variants().RepairingAnswerer(clean_pipeline, llm, settings=AnswerSettings(fallback="refusal"))
    result = repairing.ask("Who was Joey in love with?")
    assert result.refused and result.attempts == 2 and not any("cited instead" in n for n in result.notes)



def test_the_gate_is_a_stage_of_the_trace(clean_pipeline):
    """The answerability gate's verdict has its own trace entry, on the LLM path and the readers' alike."""
    llm = ScriptedLLM(cite_love_scene)
    on_topic = Answerer(clean_pipeline, llm).ask("Who was Joey in love with?")
    gate = [s for s in on_topic.trace.stages if s.name == "gate"]
    assert len(gate) == 1 and gate[0].detail["answerable"] is True
    names = [s.name for s in on_topic.trace.stages]
    assert names.index("prompt") < names.index("gate")
    off = Answerer(clean_pipeline, None, settings=AnswerSettings(reader="evidence", min_similarity=1.01))
    refused = off.ask("Who was Joey in love with?")
    assert refused.refused and [s.detail["answerable"] for s in refused.trace.stages if s.name == "gate"] == [False]
