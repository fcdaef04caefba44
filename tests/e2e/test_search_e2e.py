"""The Search page in a real Chromium with the real model (SmolLM2 through llama.cpp, the real
embedder, the sample knowledge base): a tiny space typed in the box (naive_rag with top_k 2 or 4,
two candidates) on the sample questions, two to race on and two to confirm on; checked (the
estimate shows), started, followed to the end (the chart, the table, the front with both
figures), then a front candidate opened in the Editor, in Compare and in Replay (its best answer,
ready to step through and fork) from its links.
Screenshots: test-artifacts/search_*.png."""
from __future__ import annotations

import json
import re

import pytest
from e2ekit import ART, page_fixture, settle, studio_fixture

pytestmark = [pytest.mark.e2e, pytest.mark.real]
SEARCH_TIMEOUT_MS = 6 * 60_000
SPACE = {"kind": "flowkit-search-space", "version": 1, "name": "tiny", "flows": ["naive_rag"],
         "params": [{"node": "retrieve", "param": "top_k", "choices": [2, 4]}],
         "max_candidates": 2, "seed": 0}

studio = studio_fixture("search-page")
page = page_fixture(1366, 900)


def fill_input(page, label: str, value: str) -> None:
    box = page.locator(f"input[aria-label='{label}']")
    box.fill(value)
    box.press("Enter")
    settle(page)


def test_a_tiny_search_from_the_browser_to_its_front(studio, page):
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)   # a rerun under load takes longer than expect's 5 s
    page.goto(f"{studio.url}/search")
    expect(page.get_by_role("heading", name="Search", exact=True)).to_be_visible(timeout=180_000)
    settle(page)
    box = page.locator("textarea[aria-label='Search space (JSON)']")
    expect(box).to_be_visible()
    assert json.loads(box.input_value())["kind"] == "flowkit-search-space"    # the starter
    box.fill(json.dumps(SPACE, indent=1))
    box.press("Control+Enter")
    settle(page)
    fill_input(page, "Search questions", "3-4")
    fill_input(page, "Confirmation questions", "1-2")
    fill_input(page, "First batch (questions)", "2")
    expect(page.locator("input[aria-label='Budget (hours)']")).to_have_value("0.00")
    expect(page.locator("input[aria-label='Halving']")).to_have_value("0.00")
    page.get_by_role("button", name="Check and estimate").click()
    settle(page)
    expect(page.get_by_text(re.compile(r"Estimate.*2 candidates"))).to_be_visible()
    page.screenshot(path=str(ART / "search_estimate.png"), full_page=True)
    page.get_by_role("button", name="Start the search").click()
    page.wait_for_url(re.compile(r"[?&]search=[0-9a-f]{12}"))
    expect(page.get_by_text(re.compile(r"[12] of 2 candidates evaluated"))).to_be_visible(
        timeout=SEARCH_TIMEOUT_MS)
    main = page.locator("[data-testid='stMain']")
    # while it runs, the chart and the table follow it (the fragment polls every second)
    expect(main.locator("[data-testid='stVegaLiteChart']").first).to_be_visible()
    expect(main.locator("[data-testid='stDataFrame']").first).to_be_visible()
    running = page.get_by_role("button", name="Cancel").is_visible()
    page.screenshot(path=str(ART / "search_running.png"))
    expect(page.get_by_text(re.compile(r"phase done"))).to_be_visible(timeout=SEARCH_TIMEOUT_MS)
    settle(page)
    assert running, "the search had ended before the page showed it running"
    expect(page.get_by_role("heading", name="The front")).to_be_visible()
    expect(page.get_by_text("2 of 2 candidates evaluated")).to_be_visible()
    expect(main.locator("[data-testid='stVegaLiteChart']").first).to_be_visible()
    expect(main.locator("[data-testid='stDataFrame']").first).to_be_visible()
    front = main.locator("li").filter(has_text="confirm F1")
    expect(front.first).to_be_visible()
    assert re.search(r"search F1 [\d.]+ on 2, \d+ tokens/q; confirm F1 [\d.]+ on 2",
                     front.first.inner_text()), front.first.inner_text()
    front.first.scroll_into_view_if_needed()
    page.screenshot(path=str(ART / "search_front.png"))
    editor = front.first.get_by_role("link", name="open in the Editor")
    href = editor.get_attribute("href") or ""
    assert re.search(r"editor\?flow=tiny-c0\d$", href), href
    compare = front.first.get_by_role("link", name="open in Compare").get_attribute("href") or ""
    assert re.search(r"compare\?eval=[0-9a-f]{12}$", compare), compare
    replay = (front.first.get_by_role("link", name="replay its best answer")
              .get_attribute("href") or "")
    assert re.search(r"replay\?run=[0-9a-f]{12}-0-\d+$", replay), replay
    flow = href.rsplit("=", 1)[1]
    page.goto(f"{studio.url}/{href}")
    expect(page.get_by_text(flow).first).to_be_visible(timeout=60_000)
    settle(page)
    page.screenshot(path=str(ART / "search_open_editor.png"))
    page.goto(f"{studio.url}/{compare}")
    expect(page.get_by_role("heading", name="Compare", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Metrics")).to_be_visible(timeout=60_000)
    page.screenshot(path=str(ART / "search_open_compare.png"))
    page.goto(f"{studio.url}/{replay}")
    expect(page.get_by_role("heading", name="Replay", exact=True)).to_be_visible()
    expect(page.get_by_text(re.compile(r"Step 0 of \d+"))).to_be_visible(timeout=60_000)
    expect(page.get_by_role("tab", name="Fork from this step")).to_be_visible()
    assert replay.rsplit("=", 1)[1] in page.url
    page.screenshot(path=str(ART / "search_open_replay.png"))
