"""The source code loader: functions, classes and their methods as blocks with section paths in every language,
the code between them kept, long definitions split at line ends, and hostile files handled (binary, empty, syntax
errors, deep nesting); without tree-sitter the file falls back to paragraphs."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import code
from ragfunnel.corpus.loaders.base import LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.registry import loader_for

pytest.importorskip("tree_sitter")

OPTIONS = LoaderOptions()


def check(loaded: LoadedFile, source: str) -> None:
    """Offsets point at the blocks, every block is code, and no code is lost (all non-blank characters kept)."""
    for b in loaded.blocks:
        assert loaded.text[b.start:b.end] == b.text
        assert b.kind == "code"
    assert re.sub(r"\s", "", loaded.text) == re.sub(r"\s", "", source)


def load(tmp_path: Path, name: str, source: str) -> LoadedFile:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    loaded = loader_for(path)(path, OPTIONS)
    check(loaded, source)
    assert loaded.title == name and loaded.format == "code"
    return loaded


def sections(loaded: LoadedFile) -> list[tuple[str, ...]]:
    return [b.section for b in loaded.blocks]


def block(loaded: LoadedFile, section: tuple[str, ...]) -> str:
    return next(b.text for b in loaded.blocks if b.section == section)


PYTHON = '''"""Module docstring."""
import os

LIMIT = 3


# adds one
@cache
def add_one(x):
    return x + 1


class Greeter(Base):
    """Says hello."""

    greeting = "hello"

    def __init__(self, name):
        self.name = name

    @property
    def message(self):
        return f"{self.greeting} {self.name}"

    class Inner:
        def deep(self):
            return 1


if __name__ == "__main__":
    print(Greeter("x").message)
'''


def test_python(tmp_path):
    loaded = load(tmp_path, "greet.py", PYTHON)
    assert loaded.metadata == {"language": "python"}
    assert sections(loaded) == [(), ("add_one",), ("Greeter",), ("Greeter", "__init__"), ("Greeter", "message"),
                                ("Greeter", "Inner"), ("Greeter", "Inner", "deep"), ()]
    assert loaded.blocks[0].text == '"""Module docstring."""\nimport os\n\nLIMIT = 3'
    assert block(loaded, ("add_one",)) == "# adds one\n@cache\ndef add_one(x):\n    return x + 1"
    assert block(loaded, ("Greeter",)).startswith('class Greeter(Base):\n    """Says hello."""')
    assert block(loaded, ("Greeter", "message")) == (  # dedented, decorator kept
        '@property\ndef message(self):\n    return f"{self.greeting} {self.name}"')


SAMPLES = {
    "app.js": ('''import fs from "fs";

/** Reads a file. */
export function read(path) {
  return fs.readFileSync(path);
}

export const twice = (x) => x * 2;
const LIMIT = 10;

class Store extends Base {
  items = [];
  add(item) { this.items.push(item); }
  get size() { return this.items.length; }
}
''', "javascript", [(), ("read",), ("twice",), (), ("Store",), ("Store", "add"), ("Store", "size")]),
    "view.jsx": ('''export function App() {
  return <div className="app">Hello</div>;
}
''', "javascript", [("App",)]),
    "api.ts": ('''import { Thing } from "./thing";

export interface Options { depth: number }
type Id = string;

export function fetchAll(opts: Options): Thing[] {
  return [];
}

namespace Util {
  export function clamp(x: number): number { return x; }
}

export abstract class Repo<T> {
  protected items: T[] = [];
  constructor(private name: string) { super(); }
  abstract find(id: Id): T;
  count(): number { return this.items.length; }
}
''', "typescript", [(), ("Options",), ("Id",), ("fetchAll",), ("Util",), ("Util", "clamp"), ("Repo",),
                    ("Repo", "constructor"), ("Repo", "find"), ("Repo", "count")]),
    "card.tsx": ('''export const Card = (props: { title: string }) => <h1>{props.title}</h1>;

export class Panel extends React.Component<Props> {
  render() { return <div />; }
}
''', "typescript", [("Card",), ("Panel",), ("Panel", "render")]),
    "server.go": ('''package server

import "net/http"

// Server serves.
type Server struct {
	addr string
}

// Start starts it.
func (s *Server) Start() error {
	return http.ListenAndServe(s.addr, nil)
}

func New(addr string) *Server { return &Server{addr: addr} }
''', "go", [(), ("Server",), ("Server", "Start"), ("New",)]),
    "lib.rs": ('''use std::fmt;

/// A point.
#[derive(Debug, Clone)]
pub struct Point { x: i32, y: i32 }

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

pub trait Shape {
    fn area(&self) -> f64;
}

mod geometry {
    pub fn origin() -> super::Point { super::Point { x: 0, y: 0 } }
}

pub fn distance(a: &Point, b: &Point) -> f64 { 0.0 }
''', "rust", [(), ("Point",), ("Point",), ("Point", "fmt"), ("Shape",), ("Shape", "area"), ("geometry",),
              ("geometry", "origin"), ("distance",)]),
    "Account.java": ('''package bank;

import java.util.List;

/** An account. */
public class Account {
    private long balance;

    public Account(long start) { balance = start; }

    /** Deposits money. */
    public void deposit(long amount) {
        balance += amount;
    }

    enum Kind { SAVINGS, CHECKING; boolean interest() { return this == SAVINGS; } }
}
''', "java", [(), ("Account",), ("Account", "Account"), ("Account", "deposit"), ("Account", "Kind"),
              ("Account", "Kind", "interest")]),
    "util.c": ('''#include <stdio.h>

struct point { int x; int y; };

/* Squares a number. */
static int *square(int *x) {
    *x = *x * *x;
    return x;
}

int main(void) { return 0; }
''', "c", [(), ("point",), ("square",), ("main",)]),
    "util.h": ('''#ifndef UTIL_H
#define UTIL_H
int helper(int a) { return a; }
#endif
''', "c", [(), ("helper",), ()]),
    "shapes.cpp": ('''#include <vector>

namespace geo {

class Circle : public Shape {
 public:
  explicit Circle(double r) : r_(r) {}
  double area() const override { return 3.14 * r_ * r_; }
  double perimeter() const;
 private:
  double r_;
};

template <typename T>
T twice(T x) { return x * 2; }

}  // namespace geo

double geo::Circle::perimeter() const { return 2 * 3.14 * r_; }

extern "C" {
int c_api(void) { return 1; }
}
''', "cpp", [(), ("geo",), ("geo", "Circle"), ("geo", "Circle", "Circle"), ("geo", "Circle", "area"),
             ("geo", "Circle"), ("geo", "twice"), ("geo", "Circle", "perimeter"), (), ("c_api",)]),
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_languages(tmp_path, name):
    source, language, expected = SAMPLES[name]
    loaded = load(tmp_path, name, source)
    assert loaded.metadata == {"language": language}
    assert sections(loaded) == expected


def test_block_contents_in_other_languages(tmp_path):
    go = load(tmp_path, "server.go", SAMPLES["server.go"][0])
    assert block(go, ("Server", "Start")).startswith("// Start starts it.\nfunc (s *Server) Start() error {")
    rust = load(tmp_path, "lib.rs", SAMPLES["lib.rs"][0])
    assert block(rust, ("Point",)).startswith("/// A point.\n#[derive(Debug, Clone)]\npub struct Point")
    java = load(tmp_path, "Account.java", SAMPLES["Account.java"][0])
    assert block(java, ("Account", "deposit")) == (
        "/** Deposits money. */\npublic void deposit(long amount) {\n    balance += amount;\n}")
    ts = load(tmp_path, "api.ts", SAMPLES["api.ts"][0])
    assert block(ts, ("fetchAll",)).startswith("export function fetchAll(opts: Options)")


def test_every_extension_is_registered():
    for ext in (".py", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".c", ".h", ".cc",
                ".cpp", ".cxx", ".hpp", ".hh"):
        assert ext in code.EXTENSIONS and loader_for(Path("x" + ext.upper())) is code.load


def test_large_definitions_are_split_at_line_ends(tmp_path):
    body = "".join(f"    value_{i} = compute({i}, 'some argument text')\n" for i in range(400))
    source = f"import os\n\n\ndef huge():\n{body}    return 0\n\n\ndef small():\n    return 1\n"
    loaded = load(tmp_path, "huge.py", source)
    pieces = [b for b in loaded.blocks if b.section == ("huge",)]
    assert len(pieces) > 3 and all(len(b.text) <= code.MAX_CHARS for b in pieces)
    assert all(b.text.endswith(("'some argument text')", "return 0")) for b in pieces)
    assert sections(loaded)[-1] == ("small",)


def test_a_single_long_line_is_cut(tmp_path):
    source = "var data = [" + ",".join(str(i) for i in range(200_000)) + "];\n"  # 1.3 MB on one line
    loaded = load(tmp_path, "data.min.js", source)
    assert len(loaded.blocks) > 1 and all(len(b.text) <= code.MAX_CHARS for b in loaded.blocks)


def test_python_with_a_syntax_error_still_gives_blocks(tmp_path):
    source = "import os\n\ndef broken(:\n    return\n\ndef fine(a):\n    return a\n\nclass K:\n    def m(self): pass\n"
    loaded = load(tmp_path, "broken.py", source)
    assert ("fine",) in sections(loaded) and ("K", "m") in sections(loaded)


def test_deep_nesting_does_not_exhaust_the_stack(tmp_path):
    depth = 3000
    source = "".join(f"namespace n{i} {{\n" for i in range(depth)) + "int f() { return 1; }\n" + "}\n" * depth
    loaded = load(tmp_path, "deep.cpp", source)
    assert loaded.blocks
    python = "".join("    " * i + f"class C{i}:\n" for i in range(300)) + "    " * 300 + "pass\n"
    assert load(tmp_path, "deep.py", python).blocks


def test_hostile_files(tmp_path):
    noise = tmp_path / "noise.py"
    noise.write_bytes(random.Random(5).randbytes(4096))
    with pytest.raises(Unreadable, match=re.escape("not text (binary?)")):
        code.load(noise, OPTIONS)
    binary = tmp_path / "nul.c"
    binary.write_bytes(b"int main() { return 0; }\x00\x00")
    with pytest.raises(Unreadable, match=re.escape("not text (binary?)")):
        code.load(binary, OPTIONS)
    for content in (b"", b"\n  \n"):
        empty = tmp_path / "empty.go"
        empty.write_bytes(content)
        with pytest.raises(Unreadable, match="empty file"):
            code.load(empty, OPTIONS)
    big = tmp_path / "big.rs"
    big.write_bytes(b"fn main() {}\n" * 100)
    with pytest.raises(Unreadable, match="larger than 100 bytes"):
        code.load(big, LoaderOptions(max_bytes=100))


def test_encodings(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"def f():\n    return '\xff\xfe\xfa'  # \x81\n")  # not UTF-8, not Western text
    loaded = code.load(bad, OPTIONS)
    assert loaded.blocks[0].section == ("f",) and "\ufffd" in loaded.text
    latin = tmp_path / "latin.py"
    latin.write_bytes("# café\ndef f():\n    return 'Müller'\n".encode("latin-1"))
    assert "Müller" in code.load(latin, OPTIONS).text
    utf16 = tmp_path / "wide.py"
    utf16.write_bytes("def wide():\r\n    return 1\r\n".encode("utf-16"))
    loaded = code.load(utf16, OPTIONS)
    assert loaded.blocks[0].section == ("wide",) and loaded.text == "def wide():\n    return 1"


def test_without_tree_sitter_paragraphs(tmp_path, monkeypatch):
    monkeypatch.setattr(code, "_language", lambda module, factory: None)
    loaded = load(tmp_path, "greet.py", PYTHON)
    assert loaded.metadata == {"language": "python"}
    assert all(b.section == () for b in loaded.blocks)
    assert loaded.blocks[0].text == '"""Module docstring."""\nimport os' and len(loaded.blocks) > 5


def test_missing_grammar_falls_back(tmp_path, monkeypatch):
    code._language.cache_clear()
    monkeypatch.setattr(code, "importable", lambda module: module != "tree_sitter_go")
    try:
        loaded = load(tmp_path, "server.go", SAMPLES["server.go"][0])
    finally:
        code._language.cache_clear()
    assert all(b.section == () for b in loaded.blocks)
