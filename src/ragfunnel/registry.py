"""Registries: a name -> a factory, with the optional extra (`pip install 'ragfunnel[EXTRA]'`) it needs.

Search needs only the core install; the server, learning-to-rank, training and the local LLM each come with an
extra. A missing one is a one-line error that says what to install, not an ImportError from deep inside: through
a registry entry (`create`) or, for code that imports an optional package itself, `require`.

An entry names the modules its factory imports; when one is not installed, `create` raises a `ConfigError` that
says which package is missing and which extra installs it, before the factory runs. A spec is "name" or
"name:argument"; the factory gets the argument ("" when none) and whatever else `create` is given. A registry
whose factories take other arguments (fusers, retrievers, stores...) is used through `get(name).factory(...)`.

Every plug-in point of the package is one of these (corpora, loaders, chunkers, encoders, stores, retrievers,
fusers, rerankers, readers, LLMs), each entry with a one-line `description`; `ragfunnel plugins` lists them.

    LLMS = Registry("LLM", choose_with="--llm")
    LLMS.register("local", make_local, extra="llm", modules=("llama_cpp",), needs="llama-cpp-python",
                  usage="local, local:<file.gguf>", description="llama.cpp in process")
    LLMS.create("local:/models/m.gguf", home)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ragfunnel.errors import ConfigError

__all__ = ["Entry", "Registry", "install_hint", "importable", "require", "require_modules"]


def install_hint(extra: str) -> str:
    return f"pip install 'ragfunnel[{extra}]'"


def importable(module: str) -> bool:
    """`module` can be imported (checked without importing it; an entry of None in sys.modules counts as absent)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_modules(modules: tuple[str, ...] | list[str], extra: str, purpose: str) -> None:
    """Raise a ConfigError naming the extra when any of `modules` is not installed."""
    absent = [m for m in modules if not importable(m)]
    if absent:
        raise ConfigError(f"{purpose} needs {', '.join(absent)}: {install_hint(extra)}")


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import an optional dependency, or fail with the extra to install."""
    require_modules([module], extra, purpose)
    return importlib.import_module(module)


@dataclass(frozen=True)
class Entry:
    name: str
    factory: Callable[..., Any]
    extra: str | None = None  # the pip extra that installs `modules`
    modules: tuple[str, ...] = ()  # import names the factory needs
    needs: str = ""  # how to name them to a person, e.g. "llama-cpp-python"
    note: str = ""  # said after the install command, e.g. how long the install takes
    usage: str = ""  # how to name it in a spec, e.g. "local, local:<file.gguf>"
    description: str = ""  # one line: what it is (`ragfunnel plugins` lists it)

    def missing(self) -> list[str]:
        return [m for m in self.modules if not importable(m)]

    def install_message(self, kind: str) -> str:
        """Why this entry cannot be used now and how to fix it; "" when nothing is missing."""
        missing = self.missing()
        if not missing:
            return ""
        what = self.needs or ", ".join(missing)
        fix = install_hint(self.extra) if self.extra else f"pip install {' '.join(missing)}"
        return f"the {self.name} {kind} needs {what}: {fix}" + (f" ({self.note})" if self.note else "")


class Registry:
    """Named factories of one kind ("LLM", "reranker", ...): every plug-in point of the package is one of these
    (`ragfunnel plugins` lists them all). `in`, iteration and `len` go over the names."""

    def __init__(self, kind: str, *, choose_with: str = ""):
        self.kind, self.choose_with = kind, choose_with
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, factory: Callable[..., Any], **details: Any) -> Entry:
        key = name.strip().lower()
        if not key or ":" in key:
            raise ValueError(f"bad {self.kind} name {name!r}")
        if "\n" in details.get("description", ""):
            raise ValueError(f"the description of {self.kind} {name!r} must be one line")
        entry = Entry(key, factory, **details)
        self._entries[key] = entry
        return entry

    def unregister(self, name: str) -> Entry | None:
        """Remove an entry (None when there was none)."""
        return self._entries.pop(name.strip().lower(), None)

    def copy(self) -> Registry:
        """A registry of the same kind with the same entries (to change without touching this one, as tests do)."""
        other = Registry(self.kind, choose_with=self.choose_with)
        other._entries = dict(self._entries)
        return other

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._entries

    def __iter__(self) -> Iterator[str]:
        """The names, in the order they were registered."""
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def get(self, name: str) -> Entry:
        try:
            return self._entries[name.strip().lower()]
        except KeyError:
            raise ConfigError(f"unknown {self.kind} {name!r}: choose one of {self.choices()}") from None

    def choices(self) -> str:
        return ", ".join(e.usage or e.name for e in self._entries.values())

    def create(self, spec: str, *args: Any, **kwargs: Any) -> Any:
        """The instance a spec names ("name" or "name:argument"): `factory(argument, *args, **kwargs)`."""
        name, _, arg = spec.strip().partition(":")
        if name.strip().lower() not in self._entries:
            raise ConfigError(f"unknown {self.kind} {spec.strip()!r}: choose one of {self.choices()}")
        entry = self.get(name)
        problem = entry.install_message(self.kind)
        if problem:
            other = f"; or pick another with {self.choose_with} ({self.choices()})" if self.choose_with else ""
            raise ConfigError(problem + other)
        return entry.factory(arg, *args, **kwargs)
