"""Artifacts trained for one index (the answerability gate) kept as files in a store's own folder."""

from __future__ import annotations

import os
from pathlib import Path


def read_file_artifact(folder: Path, name: str) -> str | None:
    path = Path(folder) / name
    return path.read_text(encoding="utf-8") if path.is_file() else None


def write_file_artifact(folder: Path, name: str, text: str) -> str:
    """Write atomically (a reader sees the old artifact or the new one) and return the file's path."""
    path = Path(folder) / name
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    with partial.open("rb") as fh:
        os.fsync(fh.fileno())
    os.replace(partial, path)
    return str(path)
