"""Markdown: front matter as metadata, headings as section paths, one block per paragraph, list item, quote, code
block and table row, inline markup reduced to text, and hostile files refused with a reason, never a traceback."""

from __future__ import annotations

import codecs
import random
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import markdown
from ragfunnel.corpus.loaders.base import LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.registry import loader_for

OPTIONS = LoaderOptions()

DOC = """---
title: Brewing guide
tags: [coffee, tea]
date: 2024-05-01
draft: false
---
# Brewing

Good coffee needs [fresh beans](https://example.com/beans) and `hot` **water** &amp; patience,
and time.

## Tools

- a kettle
- a grinder
  - burr, not blade

  grind just before brewing

> Coffee is a language in itself.
> (Jackie Chan)

| Method | Minutes |
|--------|---------|
| *French* press | 4 |

```python
def brew(minutes):
    return minutes * 60
```

### Deeper

Deep text.

## Serving

Serve ![a warm cup](cup.png) hot.<br>Enjoy.

<div class="note">An <b>HTML</b> note &eacute;<script>var hidden = 1</script></div>

# Appendix

Last words.
"""


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def load(path: Path, options: LoaderOptions = OPTIONS) -> LoadedFile:
    return markdown.load(path, options)


def by_text(loaded: LoadedFile) -> dict:
    return {b.text: b for b in loaded.blocks}


def test_registered_for_markdown_extensions():
    for name in ("a.md", "B.MD", "c.markdown"):
        assert loader_for(Path(name)) is markdown.load


def test_blocks_sections_and_kinds(tmp_path):
    loaded = load(write(tmp_path, "guide.md", DOC))
    got = [(b.kind, b.section, b.text) for b in loaded.blocks]
    assert got == [
        ("heading", ("Brewing",), "Brewing"),
        ("text", ("Brewing",), "Good coffee needs fresh beans and hot water & patience, and time."),
        ("heading", ("Brewing", "Tools"), "Tools"),
        ("list", ("Brewing", "Tools"), "a kettle"),
        ("list", ("Brewing", "Tools"), "a grinder"),
        ("list", ("Brewing", "Tools"), "burr, not blade"),
        ("list", ("Brewing", "Tools"), "grind just before brewing"),
        ("text", ("Brewing", "Tools"), "Coffee is a language in itself. (Jackie Chan)"),
        ("table", ("Brewing", "Tools"), "Method | Minutes"),
        ("table", ("Brewing", "Tools"), "French press | 4"),
        ("code", ("Brewing", "Tools"), "def brew(minutes):\n    return minutes * 60"),
        ("heading", ("Brewing", "Tools", "Deeper"), "Deeper"),
        ("text", ("Brewing", "Tools", "Deeper"), "Deep text."),
        ("heading", ("Brewing", "Serving"), "Serving"),
        ("text", ("Brewing", "Serving"), "Serve a warm cup hot.\nEnjoy."),
        ("text", ("Brewing", "Serving"), "An HTML note é"),
        ("heading", ("Appendix",), "Appendix"),
        ("text", ("Appendix",), "Last words."),
    ]
    assert loaded.format == "markdown"


def test_offsets_point_into_the_text(tmp_path):
    loaded = load(write(tmp_path, "guide.md", DOC))
    assert all(loaded.text[b.start:b.end] == b.text for b in loaded.blocks)
    assert "https://example.com" not in loaded.text and "**" not in loaded.text and "hidden" not in loaded.text


def test_front_matter_is_metadata_and_gives_the_title(tmp_path):
    loaded = load(write(tmp_path, "guide.md", DOC))
    assert loaded.title == "Brewing guide"
    assert loaded.metadata == {"title": "Brewing guide", "tags": ["coffee", "tea"], "date": "2024-05-01",
                               "draft": False}
    assert "tags:" not in loaded.text


def test_title_falls_back_to_the_first_h1_then_the_stem(tmp_path):
    assert load(write(tmp_path, "a.md", "## Second level\n\ntext\n\n# First H1\n\n# Other")).title == "First H1"
    assert load(write(tmp_path, "my-notes.md", "## Only level two\n\ntext")).title == "my-notes"
    assert load(write(tmp_path, "b.md", "---\ntitle: ''\n---\n# The H1\n")).title == "The H1"
    assert load(write(tmp_path, "c.md", "Setext title\n============\n\nbody")).title == "Setext title"


def test_broken_front_matter_is_kept_as_text_and_noted(tmp_path):
    loaded = load(write(tmp_path, "broken.md", "---\ntitle: [unclosed\nkey: : :\n---\n# Real title\n\nBody.\n"))
    assert loaded.metadata == {"front_matter_error": "front matter is not valid YAML"}
    assert loaded.blocks[0].text == "title: [unclosed\nkey: : :"
    assert [b.text for b in loaded.blocks[1:]] == ["Real title", "Body."]
    assert loaded.title == "Real title"


def test_front_matter_that_is_not_a_mapping(tmp_path):
    loaded = load(write(tmp_path, "list.md", "---\n- just\n- a list\n---\nBody."))
    assert loaded.metadata == {"front_matter_error": "front matter is not a mapping"}
    assert [b.text for b in loaded.blocks] == ["- just\n- a list", "Body."]


def test_empty_front_matter_and_crlf(tmp_path):
    assert load(write(tmp_path, "e.md", "---\n---\nBody.")).metadata == {}
    loaded = load(write(tmp_path, "crlf.md", "---\r\ntitle: Windows\r\n---\r\n# H\r\n\r\nBody.\r\n"))
    assert loaded.title == "Windows" and [b.text for b in loaded.blocks] == ["H", "Body."]


def test_a_thematic_break_is_not_front_matter(tmp_path):
    loaded = load(write(tmp_path, "hr.md", "Intro.\n\n---\n\nAfter the break."))
    assert loaded.metadata == {} and [b.text for b in loaded.blocks] == ["Intro.", "After the break."]


def test_yaml_alias_bomb_is_not_expanded(tmp_path):
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdefghij"):
        previous = "abcdefghij"[i]
        lines.append(f"{name}: &{name} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, "
                     f"*{previous}, *{previous}, *{previous}, *{previous}, *{previous}]")
    loaded = load(write(tmp_path, "bomb.md", "---\n" + "\n".join(lines) + "\n---\nBody."))
    assert loaded.metadata == {"front_matter_error": "front matter too large"}
    assert loaded.blocks[-1].text == "Body."


def test_latin1_markdown_keeps_its_accents(tmp_path):
    source = "# Café\n\nHerr Müller trinkt Kaffee.\n"
    for data in (source.encode("latin-1"), codecs.BOM_UTF16_LE + source.encode("utf-16-le")):
        loaded = load(write(tmp_path, "latin.md", data))
        assert [b.text for b in loaded.blocks] == ["Café", "Herr Müller trinkt Kaffee."]


def test_without_markdown_it_the_file_is_unreadable_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(markdown, "importable", lambda module: module != "markdown_it")
    with pytest.raises(Unreadable, match=r"^needs markdown-it-py: pip install 'ragfunnel\[files\]'$"):
        load(write(tmp_path, "a.md", "# Hi"))


def test_without_pyyaml_front_matter_is_kept_as_text(tmp_path, monkeypatch):
    monkeypatch.setattr(markdown, "importable", lambda module: module != "yaml")
    loaded = load(write(tmp_path, "a.md", "---\ntitle: T\n---\nBody."))
    assert loaded.metadata == {"front_matter_error": "needs pyyaml"}
    assert [b.text for b in loaded.blocks] == ["title: T", "Body."]


@pytest.mark.parametrize("data, reason", [
    (b"", "empty file"),
    (b"   \n\n\t  \n", "empty file"),
    (b"\x00\x01\x02 some NUL bytes", "not text (binary?)"),
    (random.Random(7).randbytes(3000), "not text (binary?)"),
    (b"<!-- only a comment -->\n", "no text"),
    (b"---\ntitle: Only front matter\n---\n", "no text"),
])
def test_unreadable_with_a_reason(tmp_path, data, reason):
    with pytest.raises(Unreadable) as raised:
        load(write(tmp_path, "bad.md", data))
    assert str(raised.value) == reason


def test_a_file_over_the_limit_is_not_read(tmp_path):
    with pytest.raises(Unreadable, match="^larger than 10 bytes$"):
        load(write(tmp_path, "big.md", "# A heading longer than ten bytes"), LoaderOptions(max_bytes=10))


@pytest.mark.parametrize("data", [
    b"lorem ipsum dolor " * 170_000,  # a 3 MB single line
    b">" * 5000 + b" deeply quoted",
    b"- " * 3000 + b"deep list",
    b"[" * 5000 + b"x" + b"]" * 5000,
    b"*a" * 20_000,
    b"`" * 50_000 + b"x",
    b"<div>" * 5000 + b"unclosed html",
    b"---\n" + b"[" * 5000 + b"\n---\nBody.",  # front matter nested too deep for the YAML parser
    b"| a |\n|---|\n" + b"| x |\n" * 2000,
])
def test_hostile_markdown_loads_or_is_unreadable(tmp_path, data):
    try:
        loaded = load(write(tmp_path, "hostile.md", data))
    except Unreadable:
        return
    assert all(loaded.text[b.start:b.end] == b.text for b in loaded.blocks)
