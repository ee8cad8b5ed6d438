"""Small files a store or a collection keeps beside its data, written atomically; artifacts trained for one index
(the answerability gate) among them."""

from __future__ import annotations

import os
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a synced temporary file and a rename: a reader (or a crash) sees the old
    content or the new, never a part."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_file_artifact(folder: Path, name: str) -> str | None:
    path = Path(folder) / name
    return path.read_text(encoding="utf-8") if path.is_file() else None


def write_file_artifact(folder: Path, name: str, text: str) -> str:
    """Write atomically and return the file's path."""
    path = Path(folder) / name
    write_text_atomic(path, text)
    return str(path)
