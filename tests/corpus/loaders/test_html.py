"""HTML: the main content as blocks (no navigation, cookie notice or sidebar words), headings as section paths,
title and meta fields, entities and declared charsets decoded, and hostile pages loaded or refused with a reason,
never a traceback."""

from __future__ import annotations

import codecs
import random
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import html
from ragfunnel.corpus.loaders.base import LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.registry import loader_for

OPTIONS = LoaderOptions()

PAGE = """<!DOCTYPE html>
<html lang="fr">
<head>
  <meta charset="utf-8">
  <title>Caf&eacute; guide &ndash; Example site</title>
  <meta name="description" content="Where to drink coffee &amp; eat cake">
  <meta name="Author" content="Ann Example">
  <meta name="keywords" content="coffee, cake">
  <meta name="viewport" content="width=device-width">
  <style>body { font-family: serif }</style>
  <script>var tracking = "trackerword";</script>
</head>
<body>
  <header class="site-header"><a href="/">Logoword</a>
    <nav><ul><li><a href="/">Navhome</a></li><li><a href="/blog">Navblog</a></li></ul></nav>
  </header>
  <div class="breadcrumbs">Crumbword &gt; Crumbpath</div>
  <div class="layout">
    <aside class="sidebar"><h3>Sidebarheading</h3><p>Sidebarword and more sidebarword.</p></aside>
    <main>
      <article>
        <header><h1>The caf&eacute; guide</h1><p class="byline">By Ann</p></header>
        <p>Coffee &amp; cake at <a href="/m">M&uuml;ller&#8217;s</a> place.<br>Open &lt;daily&gt;.</p>
        <h2>Prices</h2>
        <table>
          <thead><tr><th>Item</th><th>Price</th></tr></thead>
          <tbody><tr><td>Espresso</td><td>2&nbsp;&euro;</td></tr><tr><td><b>Cake</b> slice</td><td>4 &euro;</td></tr></tbody>
        </table>
        <h3>Extras</h3>
        <ul><li>Whipped <em>cream</em><ul><li>with vanilla</li></ul></li><li>Syrup</li></ul>
        <h2>Recipe</h2>
        <pre><code>beans = 18  # grams
  water = 300</code></pre>
        <blockquote><p>Life is too short for bad coffee.</p></blockquote>
        <div>Loose text in a div<p>A paragraph inside it</p>and its tail</div>
        <dl><dt>Ristretto</dt><dd>A short espresso</dd></dl>
        <div class="share-buttons">Shareword on Socialnet</div>
        <form><input type="email" placeholder="Newsletterword"><button>Subscribeword</button></form>
        <script>document.write("scriptword")</script>
        <noscript>Noscriptword</noscript>
        <footer>Articlefooterword</footer>
      </article>
    </main>
  </div>
  <div role="navigation">Rolenavword</div>
  <footer class="site-footer">
    <div id="cookie-banner">We use cookieword to improve consentword <button>Accept</button></div>
    <p>Footerword &copy; 2024</p>
  </footer>
</body>
</html>
"""
BOILERPLATE_WORDS = ["trackerword", "Logoword", "Navhome", "Navblog", "Crumbword", "Sidebarheading", "Sidebarword",
                     "Shareword", "Newsletterword", "Subscribeword", "scriptword", "Noscriptword", "Articlefooterword",
                     "Rolenavword", "cookieword", "consentword", "Accept", "Footerword", "font-family"]


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def load(path: Path, options: LoaderOptions = OPTIONS) -> LoadedFile:
    return html.load(path, options)


def test_registered_for_html_extensions():
    for name in ("a.html", "b.HTM"):
        assert loader_for(Path(name)) is html.load


def test_no_word_of_the_navigation_cookie_footer_or_sidebar(tmp_path):
    loaded = load(write(tmp_path, "page.html", PAGE))
    everything = loaded.text + " " + " ".join(" ".join(b.section) for b in loaded.blocks)
    for word in BOILERPLATE_WORDS:
        assert word.lower() not in everything.lower(), word


def test_main_content_blocks_sections_and_kinds(tmp_path):
    loaded = load(write(tmp_path, "page.html", PAGE))
    guide = "The café guide"
    assert [(b.kind, b.section, b.text) for b in loaded.blocks] == [
        ("heading", (guide,), guide),
        ("text", (guide,), "By Ann"),
        ("text", (guide,), "Coffee & cake at Müller’s place.\nOpen <daily>."),
        ("heading", (guide, "Prices"), "Prices"),
        ("table", (guide, "Prices"), "Item | Price"),
        ("table", (guide, "Prices"), "Espresso | 2 €"),
        ("table", (guide, "Prices"), "Cake slice | 4 €"),
        ("heading", (guide, "Prices", "Extras"), "Extras"),
        ("list", (guide, "Prices", "Extras"), "Whipped cream"),
        ("list", (guide, "Prices", "Extras"), "with vanilla"),
        ("list", (guide, "Prices", "Extras"), "Syrup"),
        ("heading", (guide, "Recipe"), "Recipe"),
        ("code", (guide, "Recipe"), "beans = 18  # grams\n  water = 300"),
        ("text", (guide, "Recipe"), "Life is too short for bad coffee."),
        ("text", (guide, "Recipe"), "Loose text in a div"),
        ("text", (guide, "Recipe"), "A paragraph inside it"),
        ("text", (guide, "Recipe"), "and its tail"),
        ("list", (guide, "Recipe"), "Ristretto"),
        ("list", (guide, "Recipe"), "A short espresso"),
    ]
    assert all(loaded.text[b.start:b.end] == b.text for b in loaded.blocks)
    assert loaded.format == "html"


def test_title_and_metadata(tmp_path):
    loaded = load(write(tmp_path, "page.html", PAGE))
    assert loaded.title == "Café guide – Example site"
    assert loaded.metadata == {"description": "Where to drink coffee & eat cake", "author": "Ann Example",
                               "keywords": "coffee, cake", "lang": "fr"}


def test_title_falls_back_to_the_first_h1_then_the_stem(tmp_path):
    assert load(write(tmp_path, "a.html", "<p>intro</p><h1>Big <i>title</i></h1><p>x</p>")).title == "Big title"
    assert load(write(tmp_path, "no-title.html", "<h2>small</h2><p>x</p>")).title == "no-title"


def test_without_main_the_body_is_used_and_boilerplate_still_dropped(tmp_path):
    page = """<html><body><nav>Navword</nav><div class="sidebar-left">Sideword</div>
      <h1>Plain page</h1><p>First paragraph.</p><div id="cookie-consent">Cookieword</div>
      <aside>Asideword</aside><p hidden>Hiddenword</p><p aria-hidden="true">Ariaword</p>
      <p>Last paragraph.</p><footer>Footword</footer></body></html>"""
    loaded = load(write(tmp_path, "plain.html", page))
    assert [b.text for b in loaded.blocks] == ["Plain page", "First paragraph.", "Last paragraph."]


def test_a_page_inside_one_big_form_keeps_its_content(tmp_path):
    page = """<body><form id="aspnetForm"><nav>Navword</nav><h1>Report</h1>
      <p>The findings of the report are long enough to be most of the page.</p>
      <form><input value="Searchword"><button>Go</button></form></form></body>"""
    loaded = load(write(tmp_path, "form.html", page))
    assert [b.text for b in loaded.blocks] == [
        "Report", "The findings of the report are long enough to be most of the page."]


def test_a_wrapper_named_like_boilerplate_that_holds_the_content_is_kept(tmp_path):
    page = """<body><div class="page-with-sidebar"><div class="sidebar">Menuword</div>
      <h1>Title</h1><p>The article text, which is most of what this page says.</p></div></body>"""
    loaded = load(write(tmp_path, "wrap.html", page))
    assert [b.text for b in loaded.blocks] == ["Title", "The article text, which is most of what this page says."]


def test_several_articles_are_all_kept(tmp_path):
    page = "<body><nav>Navword</nav><article><h2>One</h2><p>first</p></article>" \
           "<article><h2>Two</h2><p>second</p></article></body>"
    loaded = load(write(tmp_path, "blog.html", page))
    assert [(b.section, b.text) for b in loaded.blocks] == [
        (("One",), "One"), (("One",), "first"), (("Two",), "Two"), (("Two",), "second")]


def test_a_layout_table_is_read_block_by_block(tmp_path):
    page = """<body><table><tr><td class="menu"><a>Menuword</a></td><td><h1>Old site</h1><p>First.</p>
      <table><tr><td>a</td><td>b</td></tr></table><p>Second.</p></td></tr></table></body>"""
    loaded = load(write(tmp_path, "layout.html", page))
    assert [(b.kind, b.text) for b in loaded.blocks] == [
        ("heading", "Old site"), ("text", "First."), ("table", "a | b"), ("text", "Second.")]


@pytest.mark.parametrize("head, encoding, extra", [
    ('<meta charset="iso-8859-1">', "latin-1", "'"),
    ('<meta charset="windows-1252">', "cp1252", "’s 5 €"),
    ('<meta charset="iso-8859-1">', "cp1252", "’s 5 €"),  # browsers read a Latin-1 declaration as cp1252
    ('<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-15">', "iso8859-15", "'s 5 €"),
    ('<meta charset="latin-1">', "utf-8", "’s 5 €"),  # a wrong declaration: valid UTF-8 stays UTF-8
    ("", "latin-1", "'"),  # no declaration: detected
    ("", "utf-16", "’s 5 €"),  # a BOM
])
def test_declared_and_detected_charsets(tmp_path, head, encoding, extra):
    paragraph = f"Herr Müller{extra} crème brûlée"
    page = f"<html><head>{head}<title>Café</title></head><body><p>{paragraph}</p></body></html>"
    loaded = load(write(tmp_path, "enc.html", page.encode(encoding)))
    assert loaded.title == "Café"
    assert loaded.blocks[0].text == paragraph


def test_entities_are_decoded(tmp_path):
    loaded = load(write(tmp_path, "e.html", "<p>&lt;tag&gt; &amp; &quot;q&quot; &eacute;&#233;&#xE9; &hellip; &nbsp;x</p>"))
    assert loaded.blocks[0].text == '<tag> & "q" ééé … x'


def test_without_selectolax_the_file_is_unreadable_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(html, "importable", lambda module: module != "selectolax")
    with pytest.raises(Unreadable, match=r"^needs selectolax: pip install 'ragfunnel\[files\]'$"):
        load(write(tmp_path, "a.html", "<p>hi</p>"))


@pytest.mark.parametrize("data, reason", [
    (b"", "empty file"),
    (b" \n\t ", "empty file"),
    (codecs.BOM_UTF16_LE + "  ".encode("utf-16-le"), "empty file"),
    (b"<html><head><title>Only a title</title><script>var x = 1</script></head><body></body></html>", "no text"),
    (b"<html>\x00<body>NUL bytes</body></html>", "not text (binary?)"),
    (random.Random(5).randbytes(4096), "not text (binary?)"),
])
def test_unreadable_with_a_reason(tmp_path, data, reason):
    with pytest.raises(Unreadable) as raised:
        load(write(tmp_path, "bad.html", data))
    assert str(raised.value) == reason


def test_a_file_over_the_limit_is_not_read(tmp_path):
    with pytest.raises(Unreadable, match="^larger than 100 bytes$"):
        load(write(tmp_path, "big.html", "<p>" + "x" * 200 + "</p>"), LoaderOptions(max_bytes=100))


def test_deeply_nested_page_loads(tmp_path):
    loaded = load(write(tmp_path, "deep.html", "<div>" * 5000 + "deep text" + "</div>" * 5000))
    assert [b.text for b in loaded.blocks] == ["deep text"]


@pytest.mark.parametrize("data", [
    b"<html><body><p>open <b>bold <i>italic<div>div<table><tr><td>cell",  # unclosed tags
    b"<div><span>" * 5000 + b"unclosed and deep",
    b"<ul><li>" * 5000 + b"deep list",
    b"<table><tr><td>" * 2000 + b"deep table",
    b"<h2><div>" * 3000 + b"deep heading",
    b"<p>lorem ipsum " + b"dolor sit amet " * 200_000 + b"</p>",  # a 3 MB single line
    b"<div class='sidebar'>x</div><p>y</p>" * 5000,
    b"<<<<>>>></p></div></html><body><body><head>text after junk",
    b"<!-- unclosed comment <p>hidden",
    b"<script>never closed " * 100,
])
def test_hostile_html_loads_or_is_unreadable(tmp_path, data):
    try:
        loaded = load(write(tmp_path, "hostile.html", data))
    except Unreadable:
        return
    assert all(loaded.text[b.start:b.end] == b.text for b in loaded.blocks)
