"""The README is the front door (issue 36.4): at most 8 KB, every figure it quotes is in the results registry, and
every relative link in it and in the guides resolves.

A figure is a decimal number in the prose or a table (0.547, 19.6, 97.5%); fenced code blocks (commands and the
real output of the tour), inline code and link targets are not read. A figure counts as in the registry when
- it is a metric's `expected` value of docs/results/registry.toml rounded to the figure's decimals (97.5% is 0.975),
- or the registry's own prose states it (the `[readme]` intro and outro, an entry's `notes`: what the generated
  docs/results/README.md carries, e.g. the published system's numbers),
- or it is in one of the registry's committed result files that the document itself links (the link is the citation).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragfunnel.evaluate.repro import RESULTS_DIR, ResultsRegistry, load_registry

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDES = sorted((ROOT / "docs").glob("guide-*.md"))
MAX_README_BYTES = 8 * 1024

# Numbers in the README that are not measurements, each with what it is.
NOT_FIGURES = {
    "Python ≥ 3.11": "the Python version the project needs",
    "Python is ≥ 3.11": "the same",
}

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FIGURE = re.compile(r"(?<![\w.])(\d+\.\d+)(%?)(?!\.?\d)(?![A-Za-z_])")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text a reader takes as claims: no code blocks, no inline code, no link targets."""
    text = FENCE.sub("", text)
    text = INLINE_CODE.sub("", text)
    text = LINK.sub("]()", text)
    for phrase in NOT_FIGURES:
        text = text.replace(phrase, "")
    return text


def figures(text: str) -> list[tuple[str, bool]]:
    """Every decimal figure of `text`'s prose, with whether it is a percentage, in order, once each."""
    seen, out = set(), []
    for m in FIGURE.finditer(prose(text)):
        key = (m.group(1), m.group(2) == "%")
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _stated(figure: str, text: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(figure) + r"(?!\.?\d)", text) is not None


def linked_results(text: str, base: Path, registry: ResultsRegistry) -> list[Path]:
    """The registry's committed files that `text` (a document in `base`) links."""
    registered = {(RESULTS_DIR / f).resolve() for e in registry.entries for f in e.files}
    out = []
    for target in LINK.findall(text):
        path = (base / target.split("#")[0]).resolve()
        if path in registered:
            out.append(path)
    return out


def unknown_figures(text: str, registry: ResultsRegistry, base: Path = ROOT) -> list[str]:
    """The figures of `text` the registry does not hold (see the module's docstring)."""
    expected = [m.expected for e in registry.entries for m in e.metrics]
    notes = "\n".join([registry.intro, registry.outro, *(e.notes or "" for e in registry.entries)])
    files = [p.read_text(encoding="utf-8", errors="replace") for p in linked_results(text, base, registry)]
    missing = []
    for figure, percent in figures(text):
        decimals = len(figure.split(".")[1])
        value = float(figure) / 100 if percent else float(figure)
        half = 0.5 * 10 ** -(decimals + (2 if percent else 0)) + 1e-12
        if any(abs(x - value) <= half for x in expected):
            continue
        if _stated(figure, notes) or any(_stated(figure, f) for f in files):
            continue
        missing.append(figure + ("%" if percent else ""))
    return missing


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def broken_links(text: str, base: Path) -> list[str]:
    """Relative links of `text` (a document in `base`) whose file, or whose heading anchor in a Markdown file, does
    not exist."""
    broken = []
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (base / file).resolve() if file else None
        if path is not None and not path.exists():
            broken.append(target)
        elif anchor:
            doc = path.read_text(encoding="utf-8") if path is not None else text
            if path is not None and path.suffix != ".md":
                continue
            if anchor not in {_slug(h) for h in HEADING.findall(FENCE.sub("", doc))}:
                broken.append(target)
    return broken


@pytest.fixture(scope="module")
def registry() -> ResultsRegistry:
    return load_registry()


def test_readme_is_a_front_door() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes; the front door is at most {MAX_README_BYTES}"


def test_every_figure_in_the_readme_is_in_the_registry(registry: ResultsRegistry) -> None:
    text = README.read_text(encoding="utf-8")
    assert len(figures(text)) >= 10  # the results table is read
    assert unknown_figures(text, registry) == []


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_every_figure_in_a_guide_is_in_the_registry(guide: Path, registry: ResultsRegistry) -> None:
    assert unknown_figures(guide.read_text(encoding="utf-8"), registry, guide.parent) == []


@pytest.mark.parametrize("doc", [README, *GUIDES], ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    assert broken_links(doc.read_text(encoding="utf-8"), doc.parent) == []


def test_the_checks_can_fail(registry: ResultsRegistry) -> None:
    # an invented number is caught; a registry number, rounded as quoted or as a percentage, is not
    text = "hybrid recall@5 0.547 / 0.565, out-of-scope refused 97.5%, and an invented 0.4242 and 12.34%."
    assert unknown_figures(text, registry) == ["0.4242", "12.34%"]
    # code blocks, inline code, link targets and named non-figures are not figures
    assert figures("```\nscore 0.4242\n```\n`k1 = 1.2`, [x](a/v0.4242.md), Python ≥ 3.11, rerank-v3.5") == []
    # a number found only in a result file counts when the document links that file, not otherwise
    table = "[first_stage.md](docs/results/first_stage/first_stage.md)"
    assert unknown_figures("bm25 recall@50 on Direct 0.713", registry) == ["0.713"]
    assert unknown_figures("bm25 recall@50 on Direct 0.713 " + table, registry) == []
    assert unknown_figures("bm25 recall@50 on Direct 0.713 [doc](docs/guide-search.md)", registry) == ["0.713"]
    # links: a missing file and a missing anchor are flagged, present ones are not
    assert broken_links("[a](docs/no_such_guide.md) [b](README.md#no-such-heading) [c](docs/guide-search.md#modes)",
                        ROOT) == ["docs/no_such_guide.md", "README.md#no-such-heading"]
