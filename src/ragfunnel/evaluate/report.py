"""Write measured results as Markdown with the command, date, machine and commit that produced them.

Every table under docs/results/ starts with `header()`; the CLI's evaluation commands and the scripts under bench/
share it, so each file says how to make it again (see docs/results/registry.toml and `ragfunnel repro`).
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

# the checkout this module lives in (src/ragfunnel/evaluate/report.py -> repository root), when it is one
SOURCE_ROOT = Path(__file__).resolve().parents[3]
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def machine_info() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def _git(args: Sequence[str], cwd: Path) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


# Changes here do not change what a run measures: results written by earlier runs (of the same `ragfunnel repro`)
RESULTS_PATHSPEC = ":(exclude)docs/results"


def git_commit(root: str | Path | None = None) -> str:
    """The short hash of the checkout's HEAD, with `+dirty` when tracked files other than the committed results
    (docs/results/) differ from it; `unknown` outside a git checkout (an installed wheel) or without git."""
    cwd = Path(root) if root is not None else SOURCE_ROOT
    if not cwd.is_dir():
        return "unknown"
    inside = _git(["rev-parse", "--is-inside-work-tree"], cwd)
    head = _git(["rev-parse", "--short", "HEAD"], cwd) if inside == "true" else None
    if not head:
        return "unknown"
    status = _git(["status", "--porcelain", "--untracked-files=no", "--", ".", RESULTS_PATHSPEC], cwd)
    return head + ("+dirty" if status else "")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as someone would type it again: `python <script> ARGS` for a script (its path relative to the
    working directory when it lies below it), `ragfunnel ARGS` for the CLI."""
    argv = list(sys.argv if argv is None else argv)
    prog = Path(argv[0]) if argv else Path("ragfunnel")
    args = [shlex.quote(a) for a in argv[1:]]
    if prog.suffix == ".py" and not prog.resolve().is_relative_to(PACKAGE_DIR):
        try:
            shown = prog.resolve().relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            shown = prog.as_posix()
        return " ".join(["python", shown, *args])
    return " ".join(["ragfunnel", *args])


def header(title: str, command: str | None = None, *, commit: str | None = None) -> str:
    """The Markdown title and the lines every result starts with: command, date, machine, commit."""
    command = command or command_line()
    return (
        f"# {title}\n\n"
        f"- command: `{command}`\n"
        f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}\n"
        f"- machine: {machine_info()}\n"
        f"- commit: {commit or git_commit()}\n\n"
    )


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_report(path: str | Path | None, text: str, *, echo: bool = True) -> None:
    """Print a report and, when `path` is given, write it there (parents created)."""
    if echo:
        print(text)
    if path is not None:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
