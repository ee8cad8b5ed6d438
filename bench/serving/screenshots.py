"""Screenshots of the web page's main views, against the real index, into docs/screenshots/.

    .venv/bin/python bench/serving/screenshots.py [--index DIR] [--llm NAME] [--out docs/screenshots]

Starts the app on a free loopback port (in this process), drives Debian's Chromium (/usr/bin/chromium) with
Playwright, and writes ask.png (streamed answer + citations), scene.png (an expanded cited scene), trace.png,
compare.png, evaluation.png and mobile_*.png (390 px wide). The LLM is the local one if it is installed, else
`fake` (say which with --llm; the local one on 2 busy CPU cores can take over 5 minutes per answer, hence
--answer-timeout). Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.errors import ConfigError
from ragfunnel.generate.llm import FakeLLM, make_llm
from ragfunnel.serve.app import create_app
from ragfunnel.serve.background import serve_in_thread

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
QUESTION = "What is the name of Ross's pet monkey?"
COMPARE_QUESTION = "Who did Rachel dump at the altar?"


def pick_llm(name: str | None, home: Path):
    try:
        return make_llm(name, home)
    except ConfigError as exc:
        if name:
            raise
        print(f"local LLM not available ({str(exc)[:80]}…): using the fake LLM", file=sys.stderr)
        return FakeLLM()


class Replay:
    """Wraps an LLM: the first reply to a prompt is streamed and kept; the same prompt again replays it (the
    mobile shots ask the desktop's question again, and a local LLM on a laptop CPU takes minutes)."""

    def __init__(self, llm):
        self.llm, self.name, self.kept = llm, llm.name, {}

    def stream(self, system: str, user: str, max_tokens: int):
        key = (system, user, max_tokens)
        if key in self.kept:
            yield from self.kept[key]
            return
        parts = []
        for text in self.llm.stream(system, user, max_tokens):
            parts.append(text)
            yield text
        self.kept[key] = parts


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


ANSWER_TIMEOUT_MS = 600_000


def ask(page, url: str, question: str, mode: str = "fast") -> None:
    page.goto(f"{url}/#ask")
    page.click(f"#mode-toggle button[data-mode={mode}]")
    page.fill("#ask-q", question)
    page.click("#ask-btn")
    page.wait_for_selector("#answer-state.ok, #answer-state.warn, #answer-state.bad, #ask-error:not([hidden])", timeout=ANSWER_TIMEOUT_MS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=None, help="index directory (default: $RAGFUNNEL_HOME/index)")
    parser.add_argument("--llm", default=None, help="LLM name (default: local if installed, else fake)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--answer-timeout", type=float, default=600, help="seconds to wait for an answer")
    args = parser.parse_args()
    global ANSWER_TIMEOUT_MS
    ANSWER_TIMEOUT_MS = int(args.answer_timeout * 1000)

    from playwright.sync_api import sync_playwright  # optional (the test extra)

    settings = load_settings(index=args.index)
    llm = pick_llm(args.llm, settings.home)
    print(f"LLM: {llm.name}", file=sys.stderr)
    app = create_app(settings, llm=Replay(llm), token="", results_dir=REPO / "docs" / "results" / "first_stage")
    args.out.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []

    def shoot(target, name: str, **kw) -> None:
        path = args.out / name
        target.screenshot(path=str(path), **kw)
        shots.append(path)

    with serve_in_thread(app) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        desk = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        page = desk.new_page()

        ask(page, url, QUESTION)
        state = page.inner_text("#answer-state")
        print(f"answer ({llm.name}): {state}: {page.inner_text('#answer-text')[:200]!r}", file=sys.stderr)
        shoot(page, "ask.png", full_page=True)

        cards = "#citation-cards" if page.is_visible("#citations") else "#retrieved-cards"
        card = page.locator(f"{cards} .scene-card").first
        card.locator("summary").click()
        card.locator(".scene-lines li").first.wait_for()
        page.wait_for_timeout(200)
        shoot(card, "scene.png")

        page.click("#trace > summary")
        page.locator("#trace .stage-top summary").first.click()
        shoot(page.locator("#trace"), "trace.png")

        page.goto(f"{url}/#compare")
        page.fill("#compare-q", COMPARE_QUESTION)
        page.click("#compare-btn")
        page.wait_for_selector("#compare-grid[data-done='1']", timeout=300_000)
        page.locator("#compare-grid .hit.agree").first.hover()
        shoot(page, "compare.png", full_page=True)

        page.goto(f"{url}/#eval")
        page.wait_for_selector("#recall-chart svg")
        shoot(page, "evaluation.png", full_page=True)

        mobile = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)
        phone = mobile.new_page()
        ask(phone, url, QUESTION)
        cards = "#citation-cards" if phone.is_visible("#citations") else "#retrieved-cards"
        phone.locator(f"{cards} .scene-card summary").first.click()
        phone.locator(f"{cards} .scene-lines li").first.wait_for()
        wide = {"ask": overflow(phone)}
        shoot(phone, "mobile_ask.png", full_page=True)
        phone.goto(f"{url}/#compare")
        phone.fill("#compare-q", COMPARE_QUESTION)
        phone.click("#compare-btn")
        phone.wait_for_selector("#compare-grid[data-done='1']", timeout=300_000)
        wide["compare"] = overflow(phone)
        shoot(phone, "mobile_compare.png")
        phone.goto(f"{url}/#eval")
        phone.wait_for_selector("#recall-chart svg")
        wide["eval"] = overflow(phone)
        shoot(phone, "mobile_eval.png")
        browser.close()

    for path in shots:
        print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
    print(f"LLM: {llm.name}; horizontal overflow at 390 px (px, 0 = none): {wide}")


if __name__ == "__main__":
    main()
