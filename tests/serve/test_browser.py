"""The web page in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) against a live server on
the small index with the fake LLM: streamed answer and citations, the mode toggle, an expanded scene, the compare
and evaluation views, auth, and a 390 px wide screen without horizontal overflow. Skipped without Chromium."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ragfunnel.generate.citations import REFUSAL

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")

QUESTION = "Who did Rachel dump at the altar?"
OUT_OF_SCOPE = "What is the GDP of Luxembourg?"
TIMEOUT_MS = 20_000


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, live_url):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, base_url=live_url)
    context.set_default_timeout(TIMEOUT_MS)
    outside: list[str] = []

    def only_loopback(route):
        if route.request.url.startswith(live_url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_loopback)
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    # the server's Content-Security-Policy forbids inline script and style: the page must not need any
    p.on("console", lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None)
    yield p
    context.close()
    assert outside == [], f"the page tried to reach {outside}"
    assert errors == [], f"JavaScript errors or CSP violations: {errors}"


def ask(page, question: str) -> None:
    page.fill("#ask-q", question)
    page.click("#ask-btn")


def finished(page) -> None:
    page.wait_for_selector("#answer-state.ok, #answer-state.warn, #answer-state.bad, #ask-error:not([hidden])")


def test_answer_streams_in_then_citations_appear(page):
    page.goto("/")
    assert page.is_visible("#view-ask") and not page.is_visible("#view-compare")
    assert page.get_attribute("#mode-toggle button[data-mode=fast]", "aria-checked") == "true"  # fast by default
    ask(page, QUESTION)
    # seen mid-stream: some text, still answering (the live server's fake LLM sends a word every 25 ms)
    # (polled from here: wait_for_function evaluates a string in the page, which its CSP forbids, as it should)
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not page.evaluate("document.querySelector('#answer-state').textContent === 'answering…'"
                            " && document.querySelector('#answer-text').textContent.trim().length > 0"):
        assert time.monotonic() < deadline, "no streamed text seen while answering"
        time.sleep(0.005)
    partial = page.inner_text("#answer-text")
    finished(page)
    final = page.inner_text("#answer-text")
    assert page.inner_text("#answer-state") == "1 CITATION"  # text-transform: uppercase
    assert len(final) > len(partial.strip()) and "CITATION" not in final
    ref = page.locator("#answer-text a.ref")
    assert ref.count() == 1 and final.endswith(ref.inner_text())
    cards = page.locator("#citation-cards .scene-card")
    assert cards.count() == 1
    quote = cards.first.locator(".preview q").inner_text()
    assert quote and quote in final
    assert page.locator("#retrieved-cards .scene-card").count() == 5
    assert "mode hybrid" in page.inner_text("#answer-meta") and "llm fake" in page.inner_text("#answer-meta")
    # the trace panel: collapsed, then every stage with its latency and top candidates
    assert not page.is_visible("#trace-body")
    page.click("#trace > summary")
    stages = page.locator("#trace .stage")
    names = [stages.nth(i).get_attribute("data-stage") for i in range(stages.count())]
    assert names[:2] == ["route", "retrieve:bm25_scene"] and names[-4:] == ["prompt", "gate", "generate", "validate"] and "fuse" in names
    assert all(t.endswith("ms") or t.endswith(" s") for t in page.locator("#trace .stage-ms").all_inner_texts())
    page.locator("#trace .stage[data-stage=fuse] .stage-top summary").click()
    assert page.locator("#trace .stage[data-stage=fuse] table tbody tr").count() == 10


def test_expand_cited_scene_highlights_the_supporting_line(page, serve_pipeline):
    page.goto("/#ask")
    ask(page, QUESTION)
    finished(page)
    card = page.locator("#citation-cards .scene-card").first
    scene_id = card.get_attribute("data-scene")
    quote = card.locator(".preview q").inner_text()
    card.locator("summary").click()
    card.locator(".scene-lines li").first.wait_for()
    doc = serve_pipeline.store.document(scene_id)
    lines = card.locator(".scene-lines li")
    assert lines.count() == len(doc.units)
    assert [lines.nth(i).get_attribute("data-unit") for i in range(lines.count())] == [u.unit_id for u in doc.units]
    cited = card.locator(".scene-lines li.cited")
    assert cited.count() == 1 and cited.inner_text() == quote
    assert card.locator(".scene-lines li mark").count() >= 1  # query terms marked
    assert card.locator(".scene-lines b.speaker").count() >= 1


def test_refused_example(page):
    page.goto("/")
    page.locator("#ask-examples .chip", has_text=OUT_OF_SCOPE).click()
    finished(page)
    assert page.input_value("#ask-q") == OUT_OF_SCOPE
    assert page.inner_text("#answer-state") == "REFUSED" and page.inner_text("#answer-text") == REFUSAL
    assert not page.is_visible("#citations") and page.is_visible("#retrieved")


def test_aggregation_answer_lists_items_with_expandable_citations(page, serve_pipeline):
    """An aggregation question: the route in the meta line, one item per scene, each expanding to its scene with
    the matching line highlighted."""
    page.goto("/#ask")
    ask(page, 'In which scenes does Joey say "Ross"?')
    finished(page)
    assert page.is_visible("#items") and not page.is_visible("#citations")
    assert "route aggregate (rule" in page.inner_text("#answer-meta")
    items = page.locator("#item-cards .item-card")
    assert items.count() >= 3
    item = items.first
    item.locator("summary").first.click()
    card = item.locator(".scene-card").first
    quote = card.locator(".preview q").first.inner_text()
    card.locator("summary").click()
    card.locator(".scene-lines li").first.wait_for()
    cited = card.locator(".scene-lines li.cited")
    assert cited.count() >= 1 and cited.first.inner_text() == quote and "Ross" in quote


def test_mode_toggle_sends_the_mode(page):
    page.goto("/")
    sent: list[dict] = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.url.endswith("/ask") else None)
    page.click("#mode-toggle button[data-mode=accurate]")
    assert page.get_attribute("#mode-toggle button[data-mode=accurate]", "aria-checked") == "true"
    assert page.get_attribute("#mode-toggle button[data-mode=fast]", "aria-checked") == "false"
    ask(page, QUESTION)
    page.wait_for_selector("#ask-error:not([hidden])")  # no trained reranker on the test index: 503, shown
    assert "no trained reranker" in page.inner_text("#ask-error") and not page.is_visible("#answer")
    page.click("#mode-toggle button[data-mode=fast]")
    ask(page, QUESTION)
    finished(page)
    assert page.is_hidden("#ask-error") and page.inner_text("#answer-state") == "1 CITATION"
    assert [b["mode"] for b in sent] == ["accurate", "fast"] and all(b["question"] == QUESTION for b in sent)


def test_compare_view_marks_agreement_and_shows_a_failing_mode(page, serve_pipeline):
    page.goto("/")
    page.click("#tab-compare")
    page.wait_for_selector("#view-compare", state="visible")  # the view switches on the hashchange event
    page.wait_for_selector("#view-ask", state="hidden")
    assert page.is_visible("#view-compare") and not page.is_visible("#view-ask")
    page.fill("#compare-q", QUESTION)
    page.click("#compare-btn")
    page.wait_for_selector("#compare-grid[data-done='1']")
    columns = page.locator("#compare-grid .col")
    assert [columns.nth(i).get_attribute("data-mode") for i in range(4)] == ["bm25", "vector", "hybrid", "accurate"]
    accurate = page.locator(".col[data-mode=accurate]")
    assert "failed" in accurate.get_attribute("class") and "no trained reranker" in accurate.inner_text()
    found = {}
    for mode in ("bm25", "vector", "hybrid"):
        ids = page.locator(f".col[data-mode={mode}] .hit").evaluate_all("els => els.map(e => e.dataset.scene)")
        assert ids == [c.doc_id for c in serve_pipeline.search(QUESTION, mode, k=10).candidates]
        found[mode] = ids
    badges = page.locator("#compare-grid .hit").evaluate_all(
        "els => els.map(e => [e.dataset.scene, (e.querySelector('.agree-badge') || {}).textContent || null])")
    assert any(b for _, b in badges)
    for scene, badge in badges:
        agree = sum(scene in ids for ids in found.values())
        assert badge == (str(agree) if agree >= 2 else None), scene
    # pointing at a scene highlights it in every column that has it
    shared, n = max(((s, int(b)) for s, b in badges if b), key=lambda x: x[1])
    page.locator(f"#compare-grid .hit[data-scene='{shared}']").first.hover()
    assert page.locator("#compare-grid .hit.hl").count() == n >= 2
    assert page.locator("#compare-grid .hit.hl").evaluate_all("els => els.map(e => e.dataset.scene)") == [shared] * n


def test_evaluation_view_plots_the_committed_results(page):
    from tests.serve.conftest import RESULTS

    if not (RESULTS / "first_stage.json").is_file():
        pytest.skip("no committed docs/results/first_stage/first_stage.json")
    page.goto("/#eval")
    page.wait_for_selector("#recall-chart svg")
    series = page.locator("#recall-chart svg g.series")
    names = [series.nth(i).get_attribute("data-name") for i in range(series.count())]
    assert names == ["bm25", "bm25_window", "vector", "rrf_naive", "hybrid", "ceiling (union of all retrievers)"]
    assert page.locator("#recall-chart svg g.series").first.locator("circle").count() == 5  # k = 1, 5, 10, 20, 50
    assert page.locator("#bars-chart svg rect.bar").count() == 4 * 5  # 4 question sets x 5 modes
    committed = json.loads((RESULTS / "first_stage.json").read_text())
    modes = [m for m in next(iter(committed.values())) if not m.startswith("_")]
    assert page.locator("table.results tbody tr").count() == len(modes)  # one row per mode of the committed table
    page.locator(".mode-check", has_text="score").locator("input").check()
    assert page.locator("#recall-chart svg g.series").count() == 7
    page.click(".eval-head button:has-text('heavy')")
    assert "heavy" in page.inner_text("#recall-chart figcaption")


def test_api_docs_render_offline(page):
    page.goto("/docs")
    page.wait_for_selector(".opblock-summary-path >> text=/search")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert {"/search", "/ask", "/scenes/{scene_id}", "/health"} <= {p.replace("\u200b", "") for p in paths}


def test_eval_view_degrades_without_results(browser, make_app, tmp_path):
    from ragfunnel.serve.background import serve_in_thread

    with serve_in_thread(make_app(results_dir=tmp_path)) as url:
        context = browser.new_context(base_url=url)
        p = context.new_page()
        p.goto("/#eval")
        p.wait_for_selector("#eval-body .notice")
        assert "No evaluation results" in p.inner_text("#eval-body")
        p.goto("/#ask")
        ask(p, QUESTION)
        finished(p)
        assert p.inner_text("#answer-state") == "1 CITATION"
        context.close()


def test_token_bar_when_the_server_needs_a_token(browser, make_app):
    from ragfunnel.serve.background import serve_in_thread

    with serve_in_thread(make_app(token="s3cret")) as url:
        context = browser.new_context(base_url=url)
        context.set_default_timeout(TIMEOUT_MS)
        p = context.new_page()
        p.goto("/")
        p.wait_for_selector("#token-bar:not([hidden])")
        ask(p, QUESTION)
        p.wait_for_selector("#ask-error:not([hidden])")
        assert "API token" in p.inner_text("#ask-error")
        p.fill("#token", "s3cret")
        p.click("#token-bar button")
        ask(p, QUESTION)
        finished(p)
        assert p.inner_text("#answer-state") == "1 CITATION"
        context.close()


def test_narrow_screen_has_no_horizontal_overflow(browser, live_url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2, base_url=live_url)
    context.set_default_timeout(TIMEOUT_MS)
    p = context.new_page()
    overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    p.goto("/")
    assert p.evaluate(overflow) == 0
    ask(p, QUESTION)
    finished(p)
    p.locator("#citation-cards .scene-card summary").first.click()
    p.locator("#citation-cards .scene-lines li").first.wait_for()
    p.click("#trace > summary")
    assert p.evaluate(overflow) == 0
    box = p.locator("#ask-q").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    p.click("#tab-compare")
    p.fill("#compare-q", QUESTION)
    p.click("#compare-btn")
    p.wait_for_selector("#compare-grid[data-done='1']")
    assert p.evaluate(overflow) == 0
    widths = p.locator("#compare-grid .col").evaluate_all("els => els.map(e => e.getBoundingClientRect().right)")
    assert len(widths) == 4 and max(widths) <= 390  # stacked, not side by side off screen
    p.click("#tab-eval")
    p.wait_for_selector("#recall-chart svg, #eval-body .notice")
    assert p.evaluate(overflow) == 0
    context.close()
