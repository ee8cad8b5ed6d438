"""Source code: one block per top-level function, class member and the code between them, parsed with tree-sitter.

Python, JavaScript (JSX), TypeScript (TSX), Go, Rust, Java, C and C++, each with its grammar wheel
(`tree_sitter_python` ...). The file is cut into contiguous regions, so nothing is lost:

* a function (with its decorators, attributes and the comments right above it) is one block, its section the
  function's name: `("parse",)`;
* a class, interface, trait, impl, struct, namespace or module is cut in turn: its header (up to the first member
  definition) and the code between members get the section `("Name",)`, each method `("Name", "method")`;
  a Go method's section is its receiver type and name, `("Server", "Start")`;
* the code between definitions (imports, constants, a module docstring, preprocessor lines) is a block of its own,
  with the section of the scope it sits in; `#ifdef` groups, `extern "C"` blocks and parse errors are looked into.

A region over `MAX_CHARS` is split at line ends (at a blank line where one is near). Every block is `kind="code"`,
dedented; a lone closing brace joins the block before it. Where tree-sitter or the language's grammar is not
installed the file is cut into blank-line paragraphs instead, which is not a failure. Text is UTF-8 (a file that is
not UTF-8 is read as cp1252 where it reads as Western text, else its bad bytes are replaced; a UTF-16 byte order
mark is honoured); a file with NUL bytes is `Unreadable` ("not text (binary?)").
"""

from __future__ import annotations

import functools
import importlib
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragfunnel.corpus.loaders.base import Block, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import EMPTY, NOT_TEXT, read_bytes, western
from ragfunnel.registry import importable

MAX_CHARS = 4000  # a longer region is split into pieces of at most this many characters, at line ends
MAX_DEPTH = 32  # scopes nested deeper than this are kept whole (a hostile file cannot exhaust the stack)
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_CLOSING = re.compile(r"[\s})\];,]*")  # a region of only closing brackets joins the block before it,
_CLOSING_COMMENTED = re.compile(r"[\s})\];,]*[})\];,][ \t]*//[^\n]*\s*")  # also with a comment after them
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\f\v]*\n")
_PREPROC = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"})


@dataclass(frozen=True)
class Grammar:
    name: str  # metadata["language"]
    module: str  # the grammar wheel's import name
    factory: str = "language"  # its function returning the language
    functions: frozenset[str] = frozenset()  # definitions kept whole
    scopes: frozenset[str] = frozenset()  # definitions cut into their members (a class, a namespace...)
    wrappers: dict[str, str | None] = field(default_factory=dict)  # node -> field of the definition it wraps
    containers: frozenset[str] = frozenset({"ERROR"})  # unnamed groups looked into (#ifdef, extern "C", errors)
    leading: frozenset[str] = _COMMENTS  # siblings right above a definition that belong to it


_JS_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "method_definition",
                           "lexical_declaration", "variable_declaration"})
_JS_WRAPPERS = {"export_statement": "declaration"}
_TS_FUNCTIONS = _JS_FUNCTIONS | {"function_signature", "method_signature", "abstract_method_signature",
                                 "interface_declaration", "type_alias_declaration", "enum_declaration"}
_TS_SCOPES = frozenset({"class_declaration", "abstract_class_declaration", "internal_module", "module"})
_TS_WRAPPERS = {**_JS_WRAPPERS, "expression_statement": None, "ambient_declaration": None}
_C_CONTAINERS = _PREPROC | {"ERROR"}
_C_SCOPES = frozenset({"struct_specifier", "union_specifier"})

GRAMMARS: dict[str, Grammar] = {
    "python": Grammar("python", "tree_sitter_python", functions=frozenset({"function_definition"}),
                      scopes=frozenset({"class_definition"}), wrappers={"decorated_definition": "definition"}),
    "javascript": Grammar("javascript", "tree_sitter_javascript", functions=_JS_FUNCTIONS,
                          scopes=frozenset({"class_declaration"}), wrappers=_JS_WRAPPERS),
    "typescript": Grammar("typescript", "tree_sitter_typescript", "language_typescript", functions=_TS_FUNCTIONS,
                          scopes=_TS_SCOPES, wrappers=_TS_WRAPPERS),
    "tsx": Grammar("typescript", "tree_sitter_typescript", "language_tsx", functions=_TS_FUNCTIONS,
                   scopes=_TS_SCOPES, wrappers=_TS_WRAPPERS),
    "go": Grammar("go", "tree_sitter_go",
                  functions=frozenset({"function_declaration", "method_declaration", "type_declaration"})),
    "rust": Grammar("rust", "tree_sitter_rust",
                    functions=frozenset({"function_item", "function_signature_item", "struct_item", "enum_item",
                                         "union_item", "type_item", "macro_definition"}),
                    scopes=frozenset({"impl_item", "trait_item", "mod_item"}),
                    leading=_COMMENTS | {"attribute_item"}),
    "java": Grammar("java", "tree_sitter_java",
                    functions=frozenset({"method_declaration", "constructor_declaration",
                                         "compact_constructor_declaration"}),
                    scopes=frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                                      "record_declaration", "annotation_type_declaration"}),
                    containers=frozenset({"enum_body_declarations", "ERROR"})),
    "c": Grammar("c", "tree_sitter_c", functions=frozenset({"function_definition", "enum_specifier"}),
                 scopes=_C_SCOPES, containers=_C_CONTAINERS),
    "cpp": Grammar("cpp", "tree_sitter_cpp", functions=frozenset({"function_definition", "enum_specifier"}),
                   scopes=_C_SCOPES | {"class_specifier", "namespace_definition"},
                   wrappers={"template_declaration": None},
                   containers=_C_CONTAINERS | {"linkage_specification"}),
}

LANGUAGES = {  # extension -> grammar
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
}
EXTENSIONS = tuple(LANGUAGES)

# A region of the file: [start, end) in the UTF-8 bytes, and its section path
Region = tuple[int, int, tuple[str, ...]]


def load(path: Path, options: LoaderOptions) -> LoadedFile:
    grammar = GRAMMARS.get(LANGUAGES.get(path.suffix.lower(), ""), GRAMMARS["python"])
    return parse(read_bytes(path, options), grammar, path.name)


def parse(data: bytes, grammar: Grammar, title: str) -> LoadedFile:
    """The blocks of source `data` in `grammar`'s language."""
    text = decode(data)
    metadata = {"language": grammar.name}
    language = _language(grammar.module, grammar.factory)
    blocks = None
    if language is not None:
        blocks = _tree_blocks(text.encode("utf-8"), grammar, language)
    if blocks is None:  # no tree-sitter, no grammar, or a tree too deep to walk
        blocks = [Block(piece, kind="code") for p in _PARAGRAPH_BREAK.split(text) for piece in split_lines(p)]
    return LoadedFile.of(title, blocks, metadata, format="code")


def decode(data: bytes) -> str:
    """Source text (see the module's docstring), line ends "\\n"."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    elif b"\x00" in data:
        raise Unreadable(NOT_TEXT)
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:  # Latin-1 / cp1252 comments where they read as such, else bad bytes replaced
            text = (western(data) or (data.decode("utf-8-sig", errors="replace"),))[0]
    if "\x00" in text:
        raise Unreadable(NOT_TEXT)
    if not text.strip():
        raise Unreadable(EMPTY)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str, limit: int = MAX_CHARS) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at line ends (at the last blank line when one is in the
    second half of the piece); a line longer than `limit` is cut inside."""
    pieces: list[str] = []
    at = 0
    while len(text) - at > limit:
        cut = text.rfind("\n\n", at + limit // 2, at + limit)
        if cut < 0:
            cut = text.rfind("\n", at, at + limit)
        cut = cut + 1 if cut > at else at + limit
        pieces.append(text[at:cut])
        at = cut
    pieces.append(text[at:])
    return pieces


@functools.cache
def _language(module: str, factory: str) -> Any:
    """The tree-sitter Language of a grammar wheel, or None where tree-sitter or the wheel is missing or unusable."""
    if not (importable("tree_sitter") and importable(module)):
        return None
    try:
        import tree_sitter

        return tree_sitter.Language(getattr(importlib.import_module(module), factory)())
    except (ImportError, AttributeError, ValueError, TypeError, OSError):  # e.g. a grammar of another ABI version
        return None


def _tree_blocks(data: bytes, grammar: Grammar, language: Any) -> list[Block] | None:
    import tree_sitter

    root = tree_sitter.Parser(language).parse(data).root_node
    regions: list[Region] = []
    try:
        _Cutter(data, grammar).cut(0, len(data), root.children, (), regions, 0)
    except RecursionError:
        return None
    blocks = []
    for start, end, section in _joined(data, regions):
        piece = data[start:end].decode("utf-8", errors="replace")
        blocks += [Block(p, section, kind="code") for p in split_lines(textwrap.dedent(piece))]
    return blocks


def _joined(data: bytes, regions: list[Region]) -> Iterator[Region]:
    """The regions, a region of only closing brackets and blanks joined to the one before it."""
    last: Region | None = None
    for region in regions:
        text = data[region[0]:region[1]].decode("utf-8", errors="replace")
        if last is not None and (_CLOSING.fullmatch(text) or _CLOSING_COMMENTED.fullmatch(text)):
            last = (last[0], region[1], last[2])
            continue
        if last is not None:
            yield last
        last = region
    if last is not None:
        yield last


class _Cutter:
    def __init__(self, data: bytes, grammar: Grammar) -> None:
        self.data = data
        self.grammar = grammar

    def cut(self, lo: int, hi: int, children: list, section: tuple[str, ...], out: list[Region], depth: int) -> None:
        """Cut [lo, hi) into regions at the definitions among `children` (nodes inside it, in order)."""
        cursor = lo
        for i, child in enumerate(children):
            if child.start_byte < cursor:
                continue
            found = self.definition(child, depth)
            if found is None:
                continue
            kind, names, inner = found
            start = max(cursor, self.line_start(self.leading_start(children, i)))
            if start > cursor:
                out.append((cursor, start, section))
            end = min(self.trailing_end(children, i), hi)
            if kind == "container":
                body = inner.child_by_field_name("body")  # extern "C" { ... }; #ifdef's lines are its children
                self.cut(start, end, (body if body is not None else inner).children, section, out, depth + 1)
            elif kind == "scope" and depth < MAX_DEPTH and (body := self.body(inner)) is not None:
                self.cut(start, end, body.children, section + names, out, depth + 1)
            else:
                out.append((start, end, section + names))
            cursor = end
        if hi > cursor:
            out.append((cursor, hi, section))

    def definition(self, node: Any, depth: int) -> tuple[str, tuple[str, ...], Any] | None:
        """("function" | "scope" | "container", its section names, the node holding its body), or None."""
        g = self.grammar
        kind = node.type
        if kind in g.wrappers:  # a definition inside: its kind and names, the region is the wrapper's
            if depth >= MAX_DEPTH:
                return None
            name = g.wrappers[kind]
            inner = node.child_by_field_name(name) if name else next(
                (c for c in node.named_children if self.definition(c, depth + 1) is not None), None)
            return None if inner is None else self.definition(inner, depth + 1)
        if kind in g.containers and depth < MAX_DEPTH:
            return "container", (), node
        if kind in g.scopes:
            return "scope", self.names(node), node
        if kind in g.functions:
            if kind in ("lexical_declaration", "variable_declaration"):  # const f = () => ...
                declarators = [c for c in node.named_children if c.type == "variable_declarator"]
                value = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
                if value is None or value.type not in ("arrow_function", "function_expression", "function",
                                                       "generator_function"):
                    return None
                return "function", self.names(declarators[0]), node
            return "function", self.names(node), node
        return None

    def names(self, node: Any) -> tuple[str, ...]:
        kind = node.type
        if kind == "method_declaration" and self.grammar.name == "go":
            receiver = node.child_by_field_name("receiver")
            param = next((c for c in receiver.named_children if c.type == "parameter_declaration"), None) \
                if receiver is not None else None
            owner = param.child_by_field_name("type") if param is not None else None
            return (*((_base(self.text(owner)),) if owner is not None else ()), *self.field_name(node))
        if kind == "impl_item":
            target = node.child_by_field_name("type")
            return (_base(self.text(target)),) if target is not None else ()
        if kind == "type_declaration":
            spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
            return self.field_name(spec) if spec is not None else ()
        if kind == "function_definition" and self.grammar.name in ("c", "cpp"):
            declarator = node.child_by_field_name("declarator")
            for _ in range(MAX_DEPTH):
                inner = declarator.child_by_field_name("declarator") if declarator is not None else None
                if inner is None:
                    break
                declarator = inner
            if declarator is None:
                return ()
            name = self.text(declarator)  # C++: `int Server::start()` is ("Server", "start"), as inside the class
            return tuple(p for p in re.split(r"\s*::\s*", name) if p) or (name,)
        return self.field_name(node)

    def field_name(self, node: Any) -> tuple[str, ...]:
        name = node.child_by_field_name("name")
        return (self.text(name),) if name is not None and self.text(name) else ()

    def body(self, node: Any) -> Any:
        body = node.child_by_field_name("body")
        return body if body is not None and body.type != "ERROR" else None

    def leading_start(self, children: list, i: int) -> int:
        """Where the definition `children[i]` starts with the comments (attributes) right above it."""
        start_row, start = children[i].start_point[0], children[i].start_byte
        for j in range(i - 1, -1, -1):
            prev = children[j]
            if prev.type not in self.grammar.leading or prev.end_point[0] < start_row - 1:
                break
            start_row, start = prev.start_point[0], prev.start_byte
        return start

    def trailing_end(self, children: list, i: int) -> int:
        """Where the definition `children[i]` ends with the comments and closing brackets after it on its last line
        (`}  // namespace geo`)."""
        row, end = children[i].end_point[0], children[i].end_byte
        for after in children[i + 1:]:
            if after.start_point[0] != row or not (after.type in _COMMENTS or _CLOSING.fullmatch(after.type)):
                break
            row, end = after.end_point[0], after.end_byte
        return end

    def line_start(self, at: int) -> int:
        """`at`, moved back to its line's start when only blanks precede it there (the block keeps its indent)."""
        line = self.data.rfind(b"\n", 0, at) + 1
        return line if not self.data[line:at].strip() else at

    def text(self, node: Any) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", errors="replace").strip()


def _base(type_text: str) -> str:
    """A type's name without pointer, reference and generic parts: `*Server` and `S<T>` are `Server` and `S`."""
    return re.split(r"[<\[(\s]", type_text.lstrip("*&(").strip(), maxsplit=1)[0] or type_text
