"""The package's architecture, checked: layers in one direction (import-linter contracts in pyproject.toml, which
the diagram of docs/architecture.md names), no import cycle among modules (imports inside functions count), and no
concrete store named outside store/."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

SRC = Path(__file__).resolve().parents[1] / "src" / "ragfunnel"


def test_import_linter_contracts_are_kept(capsys, monkeypatch):
    monkeypatch.chdir(SRC.parents[1])  # the contracts live in pyproject.toml
    assert lint_imports(no_cache=True, no_logo=True) == 0, capsys.readouterr().out[-3000:]
    assert "2 kept, 0 broken" in capsys.readouterr().out


def test_the_architecture_page_names_the_contracts_layers():
    """docs/architecture.md's layer diagram lists the layers of the contract, top to bottom (it once left some out)."""
    root = SRC.parents[1]
    contract = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contract if c["type"] == "layers")
    page = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    diagram = page.split("## Layers\n", 1)[1].split("```\n", 2)[1]
    assert [re.split(r"\s{2,}", line.strip())[0] for line in diagram.splitlines() if line.strip()] == layers


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module (iterative: the package is deep enough to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycle_among_modules():
    graph = grimp.build_graph("ragfunnel", cache_dir=None)
    # a package's __init__ re-exporting its own modules is not a cycle of the design: leave those edges out
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m)
                 if not (m.startswith(i + ".") or i.startswith(m + "."))} for m in graph.modules}
    assert strongly_connected(edges) == []


def test_cycle_finder_finds_a_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_concrete_store_named_outside_store():
    pattern = re.compile(r"\b(EmbeddedStore|MemoryStore|PostgresStore)\b")
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                 if "store" not in p.relative_to(SRC).parts[:1] and pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
