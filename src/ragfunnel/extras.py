"""Optional dependencies, by the pip extra that brings them: search needs only the core install; the server,
learning-to-rank, training and the local LLM each come with an extra. A missing one is a one-line error that says
what to install, not an ImportError from deep inside."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from types import ModuleType

from ragfunnel.errors import ConfigError


def install_hint(extra: str) -> str:
    return f"pip install 'ragfunnel[{extra}]'"


def missing(modules: Sequence[str]) -> list[str]:
    """The modules of `modules` that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def require_modules(modules: Sequence[str], extra: str, purpose: str) -> None:
    """Raise a ConfigError naming the extra when any of `modules` is not installed."""
    absent = missing(modules)
    if absent:
        raise ConfigError(f"{purpose} needs {', '.join(absent)}: {install_hint(extra)}")


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import an optional dependency, or fail with the extra to install."""
    require_modules([module], extra, purpose)
    return importlib.import_module(module)
