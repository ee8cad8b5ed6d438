"""No absolute filesystem path in anything the server sends: error bodies and /health name a file by its name
only (where the index or the home of a server is, is the operator's business, not a client's)."""

from __future__ import annotations

import re

# an absolute POSIX path of two parts or more (/home/u/.ragfunnel/index), or a Windows one (C:\x\y); the last
# part (the file's name) is kept. A route such as /search (one part) is not a path of the filesystem.
_POSIX = re.compile(r"(?<![\w.~:/])/(?:[^\s/'\"`()\[\]{},;]+/)+([^\s/'\"`()\[\]{},;]*)")
_WINDOWS = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\'\"`()\[\]{},;]+\\)+([^\s\\'\"`()\[\]{},;]*)")
_HOME = re.compile(r"~/(?:[^\s/'\"`()\[\]{},;]+/)+([^\s/'\"`()\[\]{},;]*)")


def public_text(text: str | None) -> str | None:
    """`text` with every absolute path cut to `…/<name>`."""
    if not text:
        return text
    for pattern in (_POSIX, _WINDOWS, _HOME):
        text = pattern.sub(lambda m: f"…/{m.group(1)}" if m.group(1) else "…/", text)
    return text
