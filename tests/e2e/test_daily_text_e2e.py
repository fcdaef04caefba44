"""Issue 29 item 11 in a real Chromium at 1366x800: no raw backtick anywhere a user reads (each
page's text with its expanders open, the options of its select boxes, its help tooltips, the
editor's operator help), uploaders that state the real limits, and Compare's chart titles whole.

The studio's data (runs, a fork, an evaluation of two flows) is recorded first with a scripted
FakeLLM, as in test_studio_ux_e2e.py. Screenshots go to test-artifacts/daily_*.png.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import CHROMIUM, StudioServer, chromium, eventually
from test_editor_e2e import ARTIFACTS, WAIT_MS, node, settle
from test_studio_ux_e2e import _record

pytestmark = pytest.mark.e2e
VIEW = {"width": 1366, "height": 800}

#: The text of the page and of every frame in it (the canvas, the graphs), as a user sees it.
ALL_TEXT = """() => { const out = [];
  const walk = (doc) => { if (!doc || !doc.body) return; out.push(doc.body.innerText);
    for (const f of doc.querySelectorAll('iframe')) { try { walk(f.contentDocument); }
                                                     catch (e) { /* another origin */ } } };
  walk(document); return out.join('\\n'); }"""


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    data_dir = tmp_path_factory.mktemp("daily-text")
    ids = _record(data_dir)
    server = StudioServer(data_dir, timeout_s=120)
    url = server.start()
    try:
        yield url, ids
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(studio: Any) -> Iterator[Any]:
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as b:
        yield b


def new_page(browser: Any) -> Any:
    page = browser.new_context(viewport=VIEW).new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def open_page(page: Any, url: str, path: str, marker: str) -> None:
    page.goto(url + path)
    page.get_by_text(marker).first.wait_for(timeout=180_000)   # a fresh server imports a lot
    settle(page)


def open_expanders(page: Any) -> None:
    closed = page.locator("[data-testid='stExpander'] details:not([open]) > summary")
    for summary in closed.element_handles():   # handles: opening one changes what matches
        summary.scroll_into_view_if_needed()
        summary.click()
    settle(page)


def tooltips(page: Any, within: str) -> list[str]:
    """The text of every help tooltip in the container `within` (each shown by hovering)."""
    out = []
    targets = page.locator(f"{within} [data-testid='stTooltipHoverTarget']")
    for i in range(targets.count()):
        target = targets.nth(i)
        target.scroll_into_view_if_needed()
        target.hover()
        tip = page.locator("[data-testid='stTooltipContent']")
        tip.first.wait_for()
        out.append(tip.first.inner_text())
        page.mouse.move(0, 0)
        tip.first.wait_for(state="detached")
    return out


def options(page: Any) -> list[str]:
    """The options of every select box on the page (a select box shows them as plain text)."""
    from playwright.sync_api import Error
    out: list[str] = []
    boxes = page.locator("[data-testid='stSelectbox']")
    i = 0
    while i < boxes.count():           # a box may come or go (a picked dataset adds one)
        for attempt in range(3):         # a rerun may redraw the box under the mouse: again
            try:
                box = boxes.nth(i)
                box.scroll_into_view_if_needed(timeout=5000)
                box.click()
                listed = page.get_by_role("option")
                listed.first.wait_for()
                out += listed.all_inner_texts()
                page.keyboard.press("Escape")
                listed.first.wait_for(state="detached")
                break
            except Error:
                settle(page)
                if i >= boxes.count():     # it went (the page redrew without it)
                    break
                if attempt == 2:
                    raise
        i += 1
    return out


def backticks(texts: list[str]) -> list[str]:
    return [line for t in texts for line in t.splitlines() if "`" in line]


def test_no_raw_backtick_on_any_page(studio: tuple[str, dict[str, str]], browser: Any) -> None:
    url, ids = studio
    page = new_page(browser)
    pages = [("/flows", "Import"), ("/run?flow=ircot_flow", "Question"),
             (f"/replay?run={ids['ircot']}", "Step"), (f"/replay?run={ids['fork']}", "Step"),
             (f"/compare?eval={ids['eval']}", "Charts"), ("/knowledge?kb=sample", "Add files"),
             ("/settings", "Settings"), ("/editor?flow=ircot_flow", "Editor · ircot_flow")]
    found: dict[str, list[str]] = {}
    seen_options = 0
    for path, marker in pages:
        open_page(page, url, path, marker)
        open_expanders(page)       # the palette's modules, the steps, the help sections
        opts = options(page)
        seen_options += len(opts)
        found[path] = backticks([page.evaluate(ALL_TEXT), *opts])
    # the palette's tooltips: each operator's help (a widget's help= renders Markdown, so a code
    # span shows as code; a help text with an odd number of backticks would show one raw)
    tips = tooltips(page, ".st-key-editor_palette")
    assert len(tips) >= 20
    found["palette help"] = backticks(tips)
    page.screenshot(path=str(ARTIFACTS / "daily_editor_1366.png"), full_page=True)
    # the editor's help of each operator of the flow: select the node, open "About this operator"
    for node_id in ("retrieve", "reason", "enough", "read"):
        node(page, node_id).click()
        about = page.locator("[data-testid='stExpander']").filter(has_text="About this operator")
        about.first.wait_for()
        open_about(about.first)
        found[f"editor help of {node_id}"] = backticks([about.first.inner_text()])
    assert seen_options > 0     # the scan saw select boxes' options (the Knowledge page's chunkers)
    assert {k: v for k, v in found.items() if v} == {}


def open_about(about: Any) -> None:
    """Open the side panel's "About this operator" until its text shows: a rerun after the node
    click can redraw the expander closed after it was opened (seen in a whole-suite run: the
    text stayed hidden for 30 s), so it is clicked open again until it stays open."""
    misses = [0]

    def shown() -> bool:
        if about.get_by_text("reads:").first.is_visible():
            return True
        misses[0] += 1
        # closed: open it; marked open yet hidden for 3 s: click it shut and open again
        if about.locator("details[open]").count() == 0 or misses[0] % 3 == 0:
            about.locator("summary").click()
        return False
    eventually(shown, timeout=30, what="the operator's help to show", every=1.0)


def uploader_text(page: Any, label: str) -> str:
    box = page.locator("[data-testid='stFileUploader']").filter(has_text=label)
    box.first.wait_for()
    return str(box.first.inner_text())


def test_uploaders_state_the_real_limits(studio: tuple[str, dict[str, str]],
                                         browser: Any) -> None:
    url, _ = studio
    page = new_page(browser)
    open_page(page, url, "/flows", "A flow JSON file")
    flow = uploader_text(page, "A flow JSON file")
    assert re.search(r"(?<!\d)2 ?MB per file", flow), flow   # flowkit.spec: 2,000,000 bytes
    page.screenshot(path=str(ARTIFACTS / "daily_flows_uploader_1366.png"), full_page=True)
    open_page(page, url, "/knowledge?kb=sample", "Add files")
    files = uploader_text(page, "Files: .pdf")
    assert re.search(r"(?<!\d)200 ?MB per file", files), files   # server.maxUploadSize


#: Every chart's title lines: their text and boxes, and the box of the chart's drawing.
TITLES = """el => { const svg = el.querySelector('svg'); const s = svg.getBoundingClientRect();
  return {svg: [s.left, s.top, s.right, s.bottom],
          lines: [...el.querySelectorAll('.role-title text')].map(t => {
            const b = t.getBoundingClientRect();
            return {text: t.textContent, box: [b.left, b.top, b.right, b.bottom]}; })}; }"""


def test_compare_chart_titles_fit(studio: tuple[str, dict[str, str]], browser: Any) -> None:
    url, ids = studio
    page = new_page(browser)
    open_page(page, url, f"/compare?eval={ids['eval']}", "Charts")
    charts = page.locator("[data-testid='stVegaLiteChart']")
    eventually(lambda: charts.count() >= 5, what="the metric charts and the frontier")
    page.get_by_role("heading", name="Charts").scroll_into_view_if_needed()
    settle(page)
    page.screenshot(path=str(ARTIFACTS / "daily_compare_charts_1366.png"), full_page=True)
    clipped = []
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        got = eventually(lambda c=chart: (lambda r: r if r["lines"] else None)(c.evaluate(TITLES)),
                         what=f"chart {i}'s title")
        left, _, right, _ = got["svg"]
        for line in got["lines"]:
            x0, _, x1, _ = line["box"]
            # Vega cuts a title longer than the chart with an ellipsis
            if line["text"].endswith("…") or x0 < left - 1 or x1 > right + 1:
                clipped.append((i, line["text"], line["box"], got["svg"]))
    assert clipped == []
