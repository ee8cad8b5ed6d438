"""A follow-up question read with the conversation before it: `standalone_question(question, history)`.

No LLM is asked: the names the latest earlier exchange mentions (capitalised words that are not function words,
and that the question does not already hold) are added to a question that refers back
("what did he say?", "and in season 2?"). On QReCC, carrying the names over from the history recovers most of
the gap between a raw follow-up and a human rewrite (/work/shared/ANCHORS.md, "Follow-up questions"); this is the
cheap end of that, and every answer built on a rewrite says so in its notes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragfunnel.errors import QueryError

MAX_TURNS = 50
MAX_NAMES = 6  # names carried into one question: more would drown its own words
REFERRING = frozenset(
    "he she him her his hers they them their theirs it its that this those these there then one ones "
    "same other else also too again".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*\b")
_COMMON_CAPITALS = frozenset(
    "I The A An And But Or So What Who Whom Whose Which Where When Why How Is Are Was Were Do Does Did Can Could "
    "Would Should Will Shall Has Have Had In On At Of For To From With About Tell Show Give List Find Please "
    "Yes No Ok Okay Thanks Thank Then Also And".split()
)


class Turn(BaseModel):
    """One message of a conversation (OpenAI's chat shape): who said it and what."""

    role: Literal["user", "assistant", "system"] = Field(..., description="user, assistant or system")
    content: str


def turns(history: Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None) -> list[Turn]:
    """The history as `Turn`s: `Turn`s, {"role", "content"} mappings or (role, content) pairs."""
    if not history:
        return []
    if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
        raise QueryError("history must be a list of {\"role\": \"user\" | \"assistant\", \"content\": \"...\"} turns")
    if len(history) > MAX_TURNS:
        raise QueryError(f"history has {len(history)} turns; the limit is {MAX_TURNS}")
    out = []
    for i, turn in enumerate(history):
        if isinstance(turn, Turn):
            out.append(turn)
            continue
        data = dict(role=turn[0], content=turn[1]) if isinstance(turn, tuple) and len(turn) == 2 else turn
        if not isinstance(data, Mapping):
            raise QueryError(f"history turn {i}: expected {{\"role\": ..., \"content\": ...}}, not {type(turn).__name__}")
        role, content = data.get("role"), data.get("content")
        if role not in ("user", "assistant", "system") or not isinstance(content, str):
            raise QueryError(f"history turn {i}: role must be user, assistant or system and content a string")
        out.append(Turn(role=role, content=content))
    return out


def names_in(text: str) -> list[str]:
    """Capitalised names in `text` (not a capitalised function word), in order of appearance, each once."""
    found: dict[str, None] = {}
    for m in _NAME.finditer(text):
        words = [w for w in re.split(r"[ -]", m.group()) if w not in _COMMON_CAPITALS]
        if words:
            found.setdefault(" ".join(words), None)
    return list(found)


def refers_back(question: str) -> bool:
    """Whether the question leans on what came before: a referring word, or it opens with "and"/"what about"."""
    words = [w.lower() for w in _WORD.findall(question)]
    if not words:
        return False
    return bool(REFERRING & set(words)) or words[0] in ("and", "but") or question.lower().startswith("what about")


def standalone_question(question: str, history: Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None) -> str:
    """`question`, with the names of the latest earlier exchange that has any (a user turn and the replies after
    it) appended when it refers back and does not already name them; unchanged without history."""
    exchanges: list[str] = []
    for t in turns(history):
        if t.role == "user":
            exchanges.append(t.content)
        elif t.role == "assistant" and exchanges:
            exchanges[-1] += "\n" + t.content
    if not exchanges or not refers_back(question):
        return question
    held = {w.lower() for w in _WORD.findall(question)}
    for text in reversed(exchanges):
        missing = [n for n in names_in(text) if not all(w.lower() in held for w in n.split())]
        if missing:
            return f"{question.rstrip()} ({', '.join(missing[:MAX_NAMES])})"
    return question
