"""Query transforms with an LLM: more queries for the same question, searched by a mode's retrievers and fused.

A mode lists its transforms (`[modes.NAME] transforms = [{kind = "rewrite"}, {kind = "hyde"}]`); `Pipeline.search`
asks each for its queries, runs the mode's retrievers on them (the ones a transform names, or all of them) and
fuses every list, the question's own and the transformed ones, with the mode's fuser. Kinds (`TRANSFORMS`):

- `rewrite`: one rewrite of the question in the words of the documents: people named instead of described, plain
  words instead of formal ones (the remedy for questions whose words the documents never use).
- `multi_query`: `n` different search queries for the question (RAG-Fusion: their lists fused with RRF).
- `hyde`: a short passage as the documents would hold it, written to answer or show what is asked; its
  embedding searches the vectors (Gao et al. 2022, HyDE). By default only the dense retrievers read it.
- `decompose`: the sub-questions of a question that asks two things; a one-part question yields nothing extra.

Every LLM reply is cached on disk by (model, prompt, token limit), so a question asked again, or an evaluation
run again, costs nothing; the trace records per transform the queries, whether they came from the cache, the
time and the prompt and reply sizes. A transform that fails (the LLM errs or times out) leaves a note and the
search goes on with the other queries: an optional stage never breaks a search.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ragfunnel.corpus.base import GENERIC_DOMAIN, Domain

MAX_QUERY_CHARS = 400  # a transformed query longer than this is cut: a 1.5B model sometimes repeats itself to the limit


class TransformLLM(Protocol):
    name: str

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        """Text deltas of the reply, in order."""
        ...


REFUSAL = re.compile(r"^\W*(?:i (?:don'?t|do not|cannot|can'?t) (?:know|help|answer|provide)|i'?m (?:sorry|not sure|unable)|"
                     r"sorry\b|as an ai\b|unfortunately\b)", re.I)


@dataclass
class TransformOutput:
    kind: str
    queries: list[str]
    cached: bool = False
    ms: float = 0.0
    generation_ms: float = 0.0  # what the LLM took for this reply (when cached: when it was generated)
    prompt_chars: int = 0
    reply_chars: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "queries": self.queries, "cached": self.cached, "ms": round(self.ms, 1),
                "generation_ms": round(self.generation_ms, 1),
                "approx_prompt_tokens": -(-self.prompt_chars // 4), "approx_reply_tokens": -(-self.reply_chars // 4),
                **({"error": self.error} if self.error else {})}


class ReplyCache:
    """LLM replies by sha256 of (model, system, user, max_tokens), in one SQLite file; safe across threads and
    processes (each write is its own transaction)."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    @staticmethod
    def key(model: str, system: str, user: str, max_tokens: int) -> str:
        return hashlib.sha256(json.dumps([model, system, user, max_tokens]).encode("utf-8")).hexdigest()

    def _db(self) -> sqlite3.Connection | None:
        if self.path is None:
            return None
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._conn.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT, reply TEXT, ms REAL)")
        return self._conn

    def get(self, key: str) -> tuple[str, float] | None:
        """(reply, the milliseconds it took to generate) or None."""
        with self._lock:
            db = self._db()
            row = db.execute("SELECT reply, ms FROM replies WHERE key = ?", (key,)).fetchone() if db else None
        return (row[0], row[1]) if row else None

    def put(self, key: str, model: str, reply: str, ms: float) -> None:
        with self._lock:
            db = self._db()
            if db is not None:
                with db:
                    db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?)", (key, model, reply, ms))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _clean_line(line: str) -> str:
    line = re.sub(r"^\s*(?:[-*•]|\d+[.)]|Query\s*\d*:|Q\d*:)\s*", "", line, flags=re.I)
    return line.strip().strip('"“”').strip()


def query_lines(reply: str, limit: int) -> list[str]:
    """The reply's non-empty lines as queries (list markers and quotes dropped), without repeats, at most `limit`."""
    out: list[str] = []
    for line in reply.splitlines():
        q = _clean_line(line)[:MAX_QUERY_CHARS]
        if q and q.casefold() not in {o.casefold() for o in out}:
            out.append(q)
        if len(out) == limit:
            break
    return out


def passage_text(reply: str) -> str:
    """A written passage without its repeated lines (a small model loops), cut to a few hundred characters."""
    seen: set[str] = set()
    lines = []
    for line in reply.splitlines():
        key = line.strip().casefold()
        if key and key not in seen:
            seen.add(key)
            lines.append(line.strip())
    text = " ".join(lines)
    return text[: MAX_QUERY_CHARS * 2]


@dataclass(frozen=True)
class TransformKind:
    system: str  # format fields: {line}, {sources}, {n}
    max_tokens: int
    parse: Callable[[str, int], list[str]]
    dense_only: bool = False  # by default only dense retrievers read its queries


def _one(reply: str, n: int) -> list[str]:
    return query_lines(reply, 1)


def _passage(reply: str, n: int) -> list[str]:
    text = passage_text(reply)
    return [text] if text else []


TRANSFORMS: dict[str, TransformKind] = {
    "rewrite": TransformKind(
        "You rewrite a question {line} so that a keyword search over the {sources} finds the passage that answers "
        "it. Name people, places and things as the {sources} would: replace a description of a person with the "
        "person's name when you know it, and formal or unusual words with the plain, everyday words people would "
        "say. Keep every name the question already has. Reply with the rewritten question only, on one line.",
        60, _one),
    "multi_query": TransformKind(
        "Write {n} different short search queries, one a line, for finding the passage of the {sources} that "
        "answers the user's question ({line}). Use names rather than descriptions and plain words; make each "
        "query differ from the others. Reply with the queries only.",
        90, query_lines),
    "hyde": TransformKind(
        "Write a short passage, as it would appear in the {sources}, that answers or shows what the user asks "
        "about ({line}): three to five lines, with the people's names and the words they would really use. Reply "
        "with the passage only.",
        100, _passage, dense_only=True),
    "decompose": TransformKind(
        "If the user's question ({line}) asks two or more different things, split it into standalone questions, one "
        "a line, each with the names it needs. If it asks one thing, reply with the question unchanged. Reply with "
        "the question(s) only.",
        80, query_lines),
}


@dataclass
class QueryTransformer:
    """Runs transforms of a question through one LLM, with the reply cache."""

    llm: TransformLLM
    cache: ReplyCache
    domain: Domain = GENERIC_DOMAIN  # the corpus's: the prompts' `line` and `sources`; its `refusal` is no query

    def system_prompt(self, kind: str, n: int) -> str:
        return TRANSFORMS[kind].system.format(line=self.domain.line, sources=self.domain.sources, n=n)

    def run(self, kind: str, question: str, n: int = 3, max_tokens: int | None = None) -> TransformOutput:
        if kind not in TRANSFORMS:
            raise ValueError(f"unknown transform {kind!r}")
        spec = TRANSFORMS[kind]
        system, limit = self.system_prompt(kind, n), max_tokens or spec.max_tokens
        key = ReplyCache.key(self.llm.name, system, question, limit)
        started = time.perf_counter()
        hit = self.cache.get(key)
        if hit is not None:
            reply, generation_ms = hit
        else:
            try:
                reply = "".join(self.llm.stream(system, question, limit))
            except Exception as exc:  # noqa: BLE001 - the LLM's failure is one transform's, never the search's
                return TransformOutput(kind, [], ms=(time.perf_counter() - started) * 1000,
                                       prompt_chars=len(system) + len(question), error=f"{type(exc).__name__}: {exc}"[:200])
            generation_ms = (time.perf_counter() - started) * 1000
            self.cache.put(key, self.llm.name, reply, generation_ms)
        refused = {normalised(question), normalised(self.domain.refusal)}
        queries = [q for q in spec.parse(reply, n) if normalised(q) not in refused and not REFUSAL.match(q)]
        return TransformOutput(kind, queries, hit is not None, (time.perf_counter() - started) * 1000, generation_ms,
                               len(system) + len(question), len(reply))


def normalised(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def applicable(kind: str, retriever_kinds: dict[str, str], named: Sequence[str] | None) -> list[str]:
    """The retrievers (names) that search a transform's queries: those it names, else all (dense only for hyde)."""
    if named:
        return [n for n in named if n in retriever_kinds]
    if TRANSFORMS[kind].dense_only:
        return [n for n, k in retriever_kinds.items() if k == "dense"]
    return list(retriever_kinds)
