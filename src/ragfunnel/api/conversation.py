"""A follow-up question read with the conversation before it: `rewrite(question, history)` /
`standalone_question(question, history)`.

By rules, without an LLM (`rule_rewrite`), in this order:
1. an elliptical follow-up ("And Monica?", "What about Ross?", "How about in season 2?") takes the previous
   question (itself read with the conversation before it) with its first name replaced by the follow-up's names
   ("Where did Rachel work?" + "And Monica?" -> "Where did Monica work?"), or with the follow-up's words added
   when the previous question names no one;
2. pronouns are resolved against the names of the previous exchange, the previous question's first: he / him /
   his -> the last male name, she / her / hers -> the last female name (Friends' characters and common first
   names; a name of unknown gender stands in for either), they / them / their -> the previous question's names
   ("Why did she leave him?" after "Who did Rachel dump at the altar?" / "Barry" -> "Why did Rachel leave
   Barry?");
3. a question that still refers back (there, then, that, ...) and names no one gets the previous exchange's names
   appended in brackets, as before.
With an LLM (`llm_rewrite`): the LLM is asked for the standalone question; a reply that is empty, long, or drops
the follow-up's own names falls back to the rules. Every answer built on a rewrite says so in its notes and in
`rewrite` (the question asked, the question searched, and by what).
On QReCC, carrying the names over from the history recovers most of the gap between a raw follow-up and a human
rewrite (/work/shared/ANCHORS.md, "Follow-up questions"); docs/results/answers/follow_ups.md measures ours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragfunnel.errors import QueryError
from ragfunnel.generate.citations import is_refusal

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


FEMALE = frozenset(
    "rachel monica phoebe janice carol susan emily julie kathy janine mona amy jill ursula judy sandra elizabeth "
    "erica estelle joanna kate charlie frannie leslie bonnie precious nora aurora paula sarah heather hannah mary "
    "anna jane lisa linda laura karen nancy helen alice emma olivia sophie grace claire julia ann anne lucy ella "
    "mother mom mum aunt grandma grandmother sister wife girlfriend woman girl lady".split()
)
MALE = frozenset(
    "ross chandler joey mike richard barry paolo pete gunther jack ben frank tag gavin eddie david kip gary paul "
    "mark joshua vince jason jonathan ethan russ danny dr drake treeger mr bob john james peter tom michael "
    "robert william george henry charles steve kevin brian father dad uncle grandpa grandfather brother husband "
    "boyfriend man boy guy".split()
)
_HE, _SHE = frozenset({"he", "him", "himself"}), frozenset({"she", "herself"})
_THEY = frozenset({"they", "them", "themselves"})
_MARKER = re.compile(r"\[\d+\]")
_ELLIPSIS = re.compile(r"^\s*(?:and|but|what about|how about|and what about)\s+(.+?)\s*[?.!]*\s*$", re.IGNORECASE)
_NOT_AFTER_HER = frozenset(
    "to from with for at in on about by of and or but . , ? ! ; the a an that this up out off back again go went "
    "say said tell told ask asked is was when where while as if because she he they it i you we".split()
)


def gender(name: str) -> str | None:
    """"f", "m" or None (unknown) for a name, by its first word."""
    first = name.split()[0].lower() if name.split() else ""
    return "f" if first in FEMALE else "m" if first in MALE else None


class Rewrite(BaseModel):
    """A follow-up read with the conversation: what was asked, what is searched, and by what ("rules", "llm";
    "none" when the question stands alone)."""

    question: str
    standalone: str
    method: Literal["none", "rules", "llm"] = "none"

    @property
    def changed(self) -> bool:
        return self.standalone != self.question


def _exchanges(history: Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None) -> list[tuple[str, str]]:
    """(user question, the assistant replies after it) for each user turn, in order."""
    out: list[tuple[str, str]] = []
    for t in turns(history):
        if t.role == "user":
            out.append((t.content, ""))
        elif t.role == "assistant" and out:
            out[-1] = (out[-1][0], (out[-1][1] + "\n" + t.content).strip())
    return out


def _answer_names(reply: str) -> list[str]:
    """Names an answer mentions, without citation markers and the lines it quotes (`Speaker: ...` prefixes kept)."""
    return names_in(_MARKER.sub(" ", reply))


def _resolved(exchanges: list[tuple[str, str]]) -> list[str]:
    """Each user question of the conversation read with the turns before it (rule rewrites, chained)."""
    done: list[str] = []
    for i, (q, _) in enumerate(exchanges):
        done.append(_rule_rewrite(q, exchanges[:i], done) if i else q)
    return done


def _rule_rewrite(question: str, earlier: list[tuple[str, str]], resolved: list[str]) -> str:
    if not earlier or not refers_back(question):
        return question
    prev_q, prev_a = resolved[-1], earlier[-1][1]
    q_names, a_names = names_in(prev_q), _answer_names(prev_a)
    ellipsis = _ELLIPSIS.match(question)
    own = names_in(question)
    if ellipsis and not (set(w.lower() for w in _WORD.findall(ellipsis.group(1))) & (REFERRING - {"also", "too"})):
        rest = ellipsis.group(1)
        if q_names and own:
            return _replace_name(prev_q, q_names[0], " and ".join(own))
        return f"{prev_q.rstrip(' ?')} {rest}?"
    candidates = q_names + [n for n in a_names if n not in q_names]
    for text, _ in reversed(earlier[:-1]):  # older exchanges, when the last one names no one of a gender
        candidates += [n for n in names_in(text) if n not in candidates]

    def pick(want: str) -> str | None:
        known = [n for n in candidates if gender(n) == want and n not in own]
        unknown = [n for n in candidates if gender(n) is None and n not in own]
        return (known or unknown or [None])[0]

    words = re.findall(r"[A-Za-z][A-Za-z'’-]*|[^A-Za-z\s]+|\s+", question)
    gendered = sum(w.lower() in _HE | _SHE | {"her", "his", "hers"} for w in words)
    out, changed, resolved = [], False, set()
    for j, w in enumerate(words):
        low = w.lower()
        following = next((x.lower() for x in words[j + 1:] if not x.isspace()), ".")
        kind = ("m" if low in _HE or low == "his" else "f" if low in _SHE or low in ("her", "hers")
                else "t" if low in _THEY or low in ("their", "theirs") else None)
        name = None
        if kind in resolved:  # a later pronoun of the same person stays: "How does he separate his socks?"
            kind = None
        if kind in ("m", "f"):
            who = pick(kind)
            possessive = low in ("his", "hers") or (low == "her" and following not in _NOT_AFTER_HER and following.isalpha())
            name = (who + "'s") if who and possessive else who
        elif kind == "t" and len(q_names) > 1 and not gendered and not own:
            name = " and ".join(q_names[:3]) + ("'s" if low in ("their", "theirs") else "")
        if name:
            out.append(name)
            resolved.add(kind)
            changed = True
        else:
            out.append(w)
    rewritten = "".join(out)
    if changed:
        return rewritten
    held = {w.lower() for w in _WORD.findall(question)}
    for text, reply in [(prev_q, prev_a), *reversed(earlier[:-1])]:
        missing = [n for n in names_in(text + "\n" + reply) if not all(w.lower() in held for w in n.split())]
        if missing:
            return f"{question.rstrip()} ({', '.join(missing[:MAX_NAMES])})"
    return question


def _replace_name(text: str, old: str, new: str) -> str:
    """`text` with the name `old` (and its possessive) replaced by `new`, once."""
    return re.sub(rf"\b{re.escape(old)}\b", new, text, count=1)


def rule_rewrite(question: str, history: Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None) -> str:
    """The follow-up as a standalone question, by the rules of this module's docstring; unchanged without history
    or when it does not refer back."""
    exchanges = _exchanges(history)
    return _rule_rewrite(question, exchanges, _resolved(exchanges)) if exchanges else question


def standalone_question(question: str, history: Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None) -> str:
    """`rule_rewrite` (kept under its old name: the OpenAI-compatible endpoint and the Python API call it)."""
    return rule_rewrite(question, history)


REWRITE_SYSTEM = (
    "You rewrite the last question of a conversation into one standalone question that can be understood "
    "without the conversation: replace pronouns and references with the names or things they refer to. Keep "
    "every name the question already has. Reply with the rewritten question only, on one line."
)


def llm_rewrite(llm: Any, question: str, history: Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None,
                max_tokens: int = 48) -> Rewrite:
    """The follow-up rewritten by `llm` (anything with `stream(system, user, max_tokens)`), checked: a reply that is
    empty, over three times the question's length, a refusal, not a question (when the follow-up is one), or drops
    a name the question has falls back to `rule_rewrite`;
    so does an LLM error. A question that does not refer back is not sent to the LLM."""
    exchanges = _exchanges(history)
    if not exchanges or not refers_back(question):
        return Rewrite(question=question, standalone=question)
    lines = []
    for q, a in exchanges[-3:]:
        lines.append(f"User: {q}")
        if a:
            lines.append("Assistant: " + _MARKER.sub("", a)[:300])
    user = "\n".join(lines) + f"\nUser: {question}\n\nStandalone question:"
    try:
        reply = "".join(llm.stream(REWRITE_SYSTEM, user, max_tokens)).strip().splitlines()
    except Exception:  # noqa: BLE001 - a failed LLM call degrades to the rules, never the request
        reply = []
    text = reply[0].strip().strip('"').strip() if reply else ""
    text = re.sub(r"^(standalone question|question)\s*:\s*", "", text, flags=re.IGNORECASE)
    keeps = all(n.lower() in text.lower() for n in names_in(question))
    asks = text.endswith("?") or not question.rstrip().endswith("?")  # a question stays a question (not a refusal)
    if text and len(text) <= 3 * len(question) + 80 and keeps and asks and not is_refusal(text):
        return Rewrite(question=question, standalone=text, method="llm")
    rules = rule_rewrite(question, history)
    return Rewrite(question=question, standalone=rules, method="rules" if rules != question else "none")


def rewrite(question: str, history: Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None,
            llm: Any = None) -> Rewrite:
    """The follow-up as a standalone question: by `llm` when one is given, else by the rules."""
    if llm is not None:
        return llm_rewrite(llm, question, history)
    standalone = rule_rewrite(question, history)
    return Rewrite(question=question, standalone=standalone, method="rules" if standalone != question else "none")
