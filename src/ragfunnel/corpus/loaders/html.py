"""HTML: the page's main content as blocks, not its navigation, banners, sidebars or cookie notices.

Parsed with selectolax's Lexbor parser (an HTML5 parser: unclosed tags and entities handled as browsers do). The
bytes are decoded first: a BOM, else the page's <meta charset>, else UTF-8, else detection (decode.py).

Main content: the first <main> (or role=main) with text, else the page's only <article>, else <body>. Inside it
these are dropped with everything they hold: script, style, noscript, template, nav, header, footer, aside, form,
dialog and embedded objects; elements with role navigation, banner, contentinfo, complementary, search or dialog;
hidden elements (`hidden`, aria-hidden="true"); elements whose class or id names a boilerplate part (cookie,
consent, sidebar, navbar, breadcrumb, share, social, newsletter, advert...). Two exceptions keep content that
would otherwise be lost: a <header> inside an <article> or <main> that holds a heading (the article's own title),
and a <form> or a class/id match that wraps most of the page's text or its <main>/<article>/<h1> (pages built
inside one big form or wrapper).

Blocks, in reading order: headings h1-h6 (`kind="heading"`, and they build the section path of what follows),
paragraphs, list items and dd/dt (`kind="list"`), block quotes, pre (`kind="code"`, whitespace kept), table rows
(`kind="table"`, cells joined by " | "; a row whose cells hold paragraphs, lists, headings or tables is layout and
read block by block) and loose text in divs and sections. Title: <title>, else the first h1,
else the file name. Metadata: <meta name="description|keywords|author"> and <html lang>.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ragfunnel.corpus.loaders.base import Block, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import EMPTY, decode_text, html_declared_charset, needs, read_bytes
from ragfunnel.registry import importable

EXTENSIONS = (".html", ".htm")

DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "dialog", "iframe",
    "object", "embed", "svg", "canvas", "button", "select", "textarea", "input", "head", "title",
})
DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search", "dialog", "alertdialog"})
BOILERPLATE_NAME = re.compile(
    r"(?:^|[-_])(?:cookies?|consent|gdpr|sidebar|side-bar|navbar|nav|navigation|menu|breadcrumbs?|share|sharing|"
    r"social|newsletter|subscribe|advert|advertisement|ads|sponsored|popup|modal|skip-link|related)(?:$|[-_])",
    re.IGNORECASE)
HEADINGS = {f"h{n}": n for n in range(1, 7)}
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog", "dir", "div", "dl",
    "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr", "html", "legend", "li",
    "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead",
    "tr", "ul", "caption", "option", "video", "audio", "picture",
})
LIST_TAGS = frozenset({"li", "dd", "dt"})
# a row whose cells hold these is page layout (old sites set whole pages in tables): read as blocks, not a row
LAYOUT_CELL_CONTENT = "p, div, table, ul, ol, dl, pre, blockquote, h1, h2, h3, h4, h5, h6"
META_FIELDS = ("description", "keywords", "author")
SPACES = re.compile(r"\s+")


def load(path: Path, options: LoaderOptions) -> LoadedFile:
    if not importable("selectolax"):
        raise needs("selectolax")
    data = read_bytes(path, options)
    text, _ = decode_text(data, declared=html_declared_charset(data))
    if not text.strip():
        raise Unreadable(EMPTY)
    from selectolax.lexbor import LexborHTMLParser, SelectolaxError

    try:
        page = LexborHTMLParser(text)
        title, metadata = head(page)
        root = main_content(page)
        blocks = Extractor(root).blocks() if root is not None else []
        if not title:
            h1 = page.css_first("h1")
            title = inline_text(h1) if h1 is not None else ""
    except RecursionError:
        raise Unreadable("nested too deeply to parse") from None
    except (SelectolaxError, ValueError, RuntimeError) as e:  # the parser's own failures: never a traceback
        raise Unreadable(f"cannot parse HTML ({type(e).__name__})") from None
    return LoadedFile.of(title or path.stem, blocks, metadata, format="html")


def head(page: Any) -> tuple[str, dict[str, str]]:
    """The page's <title> and metadata (<meta name=description|keywords|author>, <html lang>)."""
    node = page.css_first("title")
    title = clean(node.text(deep=True)) if node is not None else ""
    metadata: dict[str, str] = {}
    for meta in page.css("meta[name]"):
        attributes = meta.attributes
        name = (attributes.get("name") or "").strip().lower()
        content = clean(attributes.get("content") or "")
        if name in META_FIELDS and content and name not in metadata:
            metadata[name] = content
    html_node = page.css_first("html")
    lang = (html_node.attributes.get("lang") or "").strip() if html_node is not None else ""
    if lang:
        metadata["lang"] = lang
    return title, metadata


def main_content(page: Any) -> Any:
    """The element holding the page's main content: <main>, else a single <article>, else <body>."""
    for node in page.css("main, [role=main]"):
        if clean(node.text(deep=True)):
            return node
    articles = page.css("article")
    if len(articles) == 1 and clean(articles[0].text(deep=True)):
        return articles[0]
    return page.body if page.body is not None else page.root


def children(node: Any) -> list[Any]:
    out = []
    child = node.child
    while child is not None:
        out.append(child)
        child = child.next
    return out


def clean(text: str) -> str:
    return SPACES.sub(" ", text).strip()


def inline_text(node: Any) -> str:
    """An element's text as one line: inline markup joined as written, block elements and <br> as spaces,
    scripts and styles left out."""
    parts: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current is None:
            parts.append(" ")
        elif current.is_text_node:
            parts.append(current.text_content or "")
        elif current.is_element_node:
            tag = current.tag
            if tag in ("script", "style", "template", "noscript"):
                continue
            if tag == "br" or tag in BLOCK_TAGS:
                parts.append(" ")
                stack.append(None)
            stack.extend(reversed(children(current)))
    return clean("".join(parts))


class Extractor:
    """Walks the main content element (iteratively: pages nest thousands deep) and emits its blocks."""

    def __init__(self, root: Any):
        self.root = root
        self.root_chars = len(clean(root.text(deep=True)))
        self.out: list[Block] = []
        self.headings: list[tuple[int, str]] = []
        self.parts: list[str] = []
        self.kinds: list[str] = ["text"]
        self.in_article = root.tag in ("article", "main") or (root.attributes.get("role") == "main")

    def section(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.headings)

    def blocks(self) -> list[Block]:
        stack: list[tuple[Any, bool]] = [(self.root, False)]
        first = True
        while stack:
            node, leaving = stack.pop()
            is_root, first = first, False
            if leaving:
                self.flush()
                self.kinds.pop()
            elif node.is_text_node:
                self.parts.append(node.text_content or "")
            elif node.is_element_node:
                tag = node.tag
                if not is_root and self.boilerplate(node, tag):
                    continue
                if tag in HEADINGS:
                    self.heading(node, HEADINGS[tag])
                elif tag == "pre":
                    self.flush()
                    self.out.append(Block(node.text(deep=True).strip("\n"), self.section(), kind="code"))
                elif tag == "tr" and node.css_first(LAYOUT_CELL_CONTENT) is None:
                    self.flush()
                    cells = [inline_text(cell) for cell in children(node) if cell.tag in ("td", "th")]
                    if any(cells):
                        self.out.append(Block(" | ".join(cells), self.section(), kind="table"))
                elif tag == "br":
                    self.parts.append("\n")
                elif tag in BLOCK_TAGS:
                    self.flush()
                    self.kinds.append("list" if tag in LIST_TAGS else "text" if tag == "blockquote" else self.kinds[-1])
                    stack.append((node, True))
                    stack.extend((child, False) for child in reversed(children(node)))
                else:
                    stack.extend((child, False) for child in reversed(children(node)))
        self.flush()
        return self.out

    def heading(self, node: Any, level: int) -> None:
        self.flush()
        text = inline_text(node)
        if not text:
            return
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, text))
        self.out.append(Block(text, self.section(), kind="heading"))

    def flush(self) -> None:
        if self.parts:
            lines = (clean(line) for line in "".join(self.parts).split("\n"))
            text = "\n".join(line for line in lines if line)
            self.parts.clear()
            if text:
                self.out.append(Block(text, self.section(), kind=self.kinds[-1]))

    def boilerplate(self, node: Any, tag: str) -> bool:
        """Whether `node` and all it holds are navigation, banners, sidebars, notices... (see the module's doc)."""
        attributes = node.attributes
        if "hidden" in attributes or (attributes.get("aria-hidden") or "").strip().lower() == "true":
            return True
        if (attributes.get("role") or "").strip().lower() in DROP_ROLES:
            return True
        if tag == "header":
            return not (self.inside_article(node) and node.css_first("h1, h2, h3, h4, h5, h6") is not None)
        if tag == "form":
            return not self.wraps_content(node)
        if tag in DROP_TAGS:
            return True
        names = f"{attributes.get('class') or ''} {attributes.get('id') or ''}".split()
        return any(BOILERPLATE_NAME.search(name) for name in names) and not self.wraps_content(node)

    def inside_article(self, node: Any) -> bool:
        if self.in_article:
            return True
        parent = node.parent
        while parent is not None:
            if parent.tag in ("article", "main"):
                return True
            parent = parent.parent
        return False

    def wraps_content(self, node: Any) -> bool:
        """`node` holds the page's main/article/h1 or more than half of its text."""
        if node.css_first("main, article, h1, [role=main]") is not None:
            return True
        return len(clean(node.text(deep=True))) > self.root_chars / 2
