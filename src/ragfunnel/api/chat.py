"""`ragfunnel chat`: an interactive conversation over a collection, one question per line.

Each question is asked with the conversation so far (`Client.ask(..., history=...)`): a follow-up that refers back
("Where did she go after that?", "And Monica?") is rewritten into a standalone question (api/conversation.py; by
the LLM for the llm reader, else by rules) and the rewrite is printed before the answer. Commands:

- `/mode NAME`: the retrieval mode from now on (fast, hybrid, accurate, bm25, ...);
- `/reader evidence|llm`: who answers (the selected evidence lines, or the LLM's checked answer);
- `/sources`: the last answer's cited lines with the lines around them, and the retrieved scenes;
- `/history`: the conversation so far; `/reset`: forget it; `/help`; `/quit` (or end of input).

A question or command a user got wrong prints one line on stderr and the session goes on. It reads any text
stream, so it is testable by piping lines into stdin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ragfunnel.api.conversation import Turn
from ragfunnel.errors import RagfunnelError
from ragfunnel.generate.answer import READERS
from ragfunnel.schema import AnswerResponse

HELP = ("commands: /mode NAME (retrieval mode), /reader evidence|llm, /sources (the last answer's cited lines and "
        "retrieved scenes), /history, /reset (forget the conversation), /help, /quit")


@dataclass
class ChatSession:
    client: Any  # api.Client
    mode: str = "fast"
    reader: str = "evidence"
    k: int = 5
    history: list[Turn] = field(default_factory=list)
    last: AnswerResponse | None = None

    def ask(self, question: str) -> AnswerResponse:
        result = self.client.ask(question, history=self.history or None, mode=self.mode, k=self.k, reader=self.reader)
        self.history += [Turn(role="user", content=question), Turn(role="assistant", content=result.answer)]
        self.last = result
        return result

    def command(self, line: str, out: Callable[[str], None]) -> bool:
        """Run a `/command`; False when the session should end. Raises RagfunnelError for a wrong one."""
        name, _, arg = line[1:].strip().partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in ("quit", "exit", "q"):
            return False
        if name == "help":
            out(HELP)
        elif name == "mode":
            if not arg:
                out(f"mode: {self.mode} (modes: {', '.join(self.client.modes)})")
            else:
                self.client.settings.resolve_mode(arg)  # an unknown mode raises, with the modes there are
                self.mode = arg
                out(f"mode: {self.mode}")
        elif name == "reader":
            if arg not in READERS.names():
                raise RagfunnelError(f"unknown reader {arg!r}: choose one of {', '.join(READERS)}")
            if arg == "llm":
                self.client.answerer("llm")  # fails now, with its reason, when no LLM can be loaded
            self.reader = arg
            out(f"reader: {self.reader}")
        elif name == "sources":
            out(sources_text(self.last))
        elif name == "history":
            out("\n".join(f"{t.role}: {t.content}" for t in self.history) or "(no conversation yet)")
        elif name == "reset":
            self.history, self.last = [], None
            out("(conversation forgotten)")
        else:
            raise RagfunnelError(f"unknown command /{name}: {HELP}")
        return True


def answer_text(result: AnswerResponse) -> str:
    """What the session prints for one answer: the rewrite when there was one, the answer, its citations."""
    lines = []
    if result.rewrite is not None and result.rewrite.searched != result.rewrite.asked:
        lines.append(f"(read as: {result.rewrite.searched} — rewritten by {result.rewrite.by})")
    lines.append(result.answer)
    for c in result.citations:
        lines.append(f"  [{c.source_id}] {c.label} — {c.title}: {c.quote}")
    return "\n".join(lines)


def sources_text(result: AnswerResponse | None) -> str:
    if result is None:
        return "(no answer yet)"
    lines = []
    for c in result.citations:
        lines.append(f"[{c.source_id}] {c.label} — {c.title}")
        lines += [f"    {text}" for text in c.lines]
        lines += [f"      · {text}" for text in c.context]
    lines.append("retrieved:")
    lines += [f"  {s.rank}. {s.label} — {s.title} ({s.score:.4f})" for s in result.scenes]
    return "\n".join(lines)


def run_chat(session: ChatSession, lines: Iterable[str], out: Callable[[str], None], err: Callable[[str], None],
             prompt: Callable[[], None] | None = None) -> int:
    """Answer each line (a question or a /command) until /quit or the end of `lines`; returns the questions asked."""
    asked = 0
    if prompt:
        prompt()
    for raw in lines:
        line = raw.strip()
        try:
            if not line:
                pass
            elif line.startswith("/"):
                if not session.command(line, out):
                    break
            else:
                out(answer_text(session.ask(line)))
                asked += 1
        except RagfunnelError as exc:
            err(f"error: {exc}")
        if prompt:
            prompt()
    return asked
