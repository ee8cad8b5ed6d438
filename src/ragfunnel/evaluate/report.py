"""Write measured results as Markdown tables with the command, date and machine that produced them."""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path


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


def header(title: str, command: str | None = None) -> str:
    command = command or "ragfunnel " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    return (
        f"# {title}\n\n"
        f"- command: `{command}`\n"
        f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}\n"
        f"- machine: {machine_info()}\n\n"
    )


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
