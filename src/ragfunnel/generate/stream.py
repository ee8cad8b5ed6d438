"""Showing a streamed answer as it comes: `CitationLineFilter` passes the LLM's text through and holds back the
`CITATION [n]: "..."` lines (and a bare "Citations:" header), which are checked and shown as cited scenes instead.
`ragfunnel ask` prints through it, and the HTTP API's `POST /ask` sends its `token` events through it, so both show
the same text."""

from __future__ import annotations

import re

_HIDDEN_LINE = re.compile(r"^[\s>*_•-]*(citation\b|(citations?|sources?)\s*[*_]*\s*:?\s*[*_]*\s*$)", re.IGNORECASE)
_PREFIX_OK = re.compile(r"^[\s>*_•-]*[A-Za-z]*$")


class CitationLineFilter:
    """Passes streamed text through, holding back the citation lines (and a bare "Citations:" header)."""

    def __init__(self) -> None:
        self.line = ""  # the current line while it might still turn into a citation line
        self.passing = False  # the current line is known to be ordinary text (already shown in part)

    def _maybe_hidden(self, partial: str) -> bool:
        if not _PREFIX_OK.match(partial):
            return bool(_HIDDEN_LINE.match(partial))
        word = partial.lstrip(" \t>*_•-").lower()
        return any(w.startswith(word) for w in ("citation", "citations", "sources"))

    def feed(self, text: str) -> str:
        """The part of `text` that can be shown now (a line that may still become a citation line waits)."""
        out = []
        for piece in re.split(r"(\n)", text):
            if piece == "\n":
                if self.passing or not _HIDDEN_LINE.match(self.line):
                    out.append(self.line + "\n")
                self.line, self.passing = "", False
            elif piece:
                if self.passing:
                    out.append(piece)
                    continue
                self.line += piece
                if not self._maybe_hidden(self.line):
                    out.append(self.line)
                    self.line, self.passing = "", True
        return "".join(out)

    def flush(self) -> str:
        """What is held back at the end of a reply, unless it is a citation line."""
        line, self.line, self.passing = self.line, "", False
        return "" if _HIDDEN_LINE.match(line) else line
