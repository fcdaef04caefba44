"""The Run page in daily use, in Chromium at 1366x800 with the real default model: the answer
streams (its first words on the page before the run ends), the model-loading message on the
first run, the steps table kept after the end, the page not jumping to the top, a dataset
question marked right; debugging: pause naive_rag before its answer node, see the exact prompt,
refresh, continue, see the answer; Settings shows the engines in use; trace export saved to a
collector that does not answer says so on Settings and on the next run. Screenshots go to
test-artifacts/."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from e2ekit import (
    ART,
    RUN_TIMEOUT_MS,
    ask,
    eventually,
    free_port,
    page_fixture,
    settle,
    studio_fixture,
)

pytestmark = pytest.mark.e2e

CURSOR = "▌"                  # ends the answer while it is being written
#: an answer prompt that asks for a paragraph: it stops at a blank line, not at the first new line,
#: so the answer is long enough to be seen while it is written (a 1-2 token answer can end between
#: two redraws)
LONG_PROMPT = ("Using the passages, write a few sentences about the question.\n\n{passages}\n\n"
               "Question: {question}\nSentences:\n")
#: time to the first visible answer word on a warm run (reported, not asserted)
FIRST_TOKEN_FILE = ART / "run-page-first-token.txt"


def _save_long_answer(home: Path) -> None:
    """naive_rag with LONG_PROMPT, saved as `long_answer` (an answer long enough to watch)."""
    from flowkit.templates import load_template
    from storage.repo import Store
    naive = load_template("naive_rag")
    nodes = [n.model_copy(update={"params": {**n.params, "prompt": LONG_PROMPT, "max_tokens": 96}})
             if n.operator == "generation.answer" else n for n in naive.nodes]
    Store(f"sqlite:///{home / 'flowkit.db'}").save_flow(
        naive.model_copy(update={"name": "long_answer", "nodes": nodes}), None)


studio = studio_fixture("run-page", prepare=_save_long_answer)
page = page_fixture(1366, 800)


def _open_run_page(page, url: str) -> None:
    from playwright.sync_api import expect
    page.goto(f"{url}/run?flow=template:naive_rag")
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=180_000)
    settle(page)


def _pick_dataset_question(page, index: int) -> str:
    """Open the dataset picker and choose the sample set's question `index` (0-based)."""
    page.get_by_text("Pick a question from a dataset").click()
    picker = page.locator("[data-testid='stExpander']").filter(
        has_text="Pick a question from a dataset")
    box = picker.locator("[data-testid='stSelectbox']").nth(1)     # Dataset, then Question
    options = page.get_by_role("option")

    def opened() -> bool:                         # the list opens on a key (a click only focuses)
        box.locator("input").click()
        page.wait_for_timeout(500)
        if not options.count():
            page.keyboard.press("ArrowDown")
            page.wait_for_timeout(500)
        return options.count() > 0
    eventually(opened, timeout=60, what="the dataset's question list to open", every=1)
    option = page.get_by_role("option").nth(index)
    text = option.inner_text()
    option.click()
    settle(page)
    return text.split(": ", 1)[1]


def _answer_box(page):
    return page.locator(".st-key-run_answer_box")


def test_the_answer_streams_is_marked_and_the_page_keeps_its_place(studio, page):
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)
    _open_run_page(page, studio.url)
    question = _pick_dataset_question(page, 0)               # q01: the Corren Lighthouse, 1884
    expect(page.locator("textarea[aria-label='Question']")).to_have_value(question)
    expect(page.get_by_text("Expected: 1884")).to_be_visible()
    page.get_by_role("button", name="Run ▶").click()
    page.wait_for_url(re.compile(r"[?&]run=\w+"))

    # the first run's wait is explained: the model loads in the background from the studio's
    # start (the sidebar says where it stands), or the run page says it is loading it
    loading = page.get_by_text("Loading the model (first run: about 15 s)")
    sidebar = page.get_by_text(re.compile(r"^Model: (loading|ready)"))
    expect(loading.or_(sidebar).first).to_be_visible()
    page.screenshot(path=str(ART / "run_page_loading_model.png"))

    # (that the answer is written as it comes is shown with a long answer: the next test)

    # scroll down to the steps table; the end of the run must not throw the page back up
    # the steps table shows once the run has a step: after the model's load and first call,
    # minutes on a loaded machine (issue 47, finding 11), so wait for it, not for 60 s
    steps = page.get_by_text(re.compile(r"^Steps \(\d+\)$"))
    expect(steps).to_be_visible(timeout=RUN_TIMEOUT_MS)
    steps.scroll_into_view_if_needed()
    main = page.locator("[data-testid='stMain']")
    top_before = main.evaluate("e => e.scrollTop")
    right = page.get_by_text(re.compile(r"^Right: the answer contains the expected answer"))
    wrong = page.get_by_text(re.compile(r"^Wrong: the expected answer"))
    expect(right.or_(wrong).first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)
    expect(_answer_box(page).get_by_text(CURSOR)).to_have_count(0)
    expect(page.get_by_text("Steps (2)")).to_be_visible()            # the table stays
    expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible()
    assert top_before > 0
    assert main.evaluate("e => e.scrollTop") > 0, "the page jumped back to the top"
    page.screenshot(path=str(ART / "run_page_answer_marked.png"), full_page=True)
    assert right.is_visible(), "the real model's answer to q01 does not contain 1884"

    # a warm run: time to the first visible word (reported in test-artifacts)
    first_run = re.search(r"[?&]run=(\w+)", page.url).group(1)
    box = page.locator("textarea[aria-label='Question']")
    box.fill("Who was the first keeper of the Corren Lighthouse?")
    box.press("Control+Enter")
    settle(page)
    started = time.monotonic()
    page.get_by_role("button", name="Run ▶").click()
    page.wait_for_url(re.compile(r"[?&]run=(?!" + first_run + r")\w+"))

    def answer_words() -> bool:       # streamed or already the stored answer: the first word
        text = _answer_box(page).first.inner_text() if _answer_box(page).count() else ""
        body = re.sub(r"Writing:.*?\)|Waiting for the model's first words\.\.\.|▌", "", text)
        return bool(re.search(r"\w", body))
    eventually(answer_words, timeout=RUN_TIMEOUT_MS / 1000, what="the first answer word",
               every=0.05)
    first_word = time.monotonic() - started
    expect(page.get_by_role("link", name="Open the replay")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    total = time.monotonic() - started
    FIRST_TOKEN_FILE.write_text(f"warm naive_rag: first answer word visible after {first_word:.2f} s;"
                                f" run shown ended after {total:.2f} s\n")


def test_debug_pause_before_the_answer_see_the_prompt_refresh_continue(studio, page):
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)
    _open_run_page(page, studio.url)
    box = page.locator("textarea[aria-label='Question']")
    box.fill("In what year was the Corren Lighthouse first lit?")
    box.press("Control+Enter")
    settle(page)
    page.get_by_text("Breakpoints (debug this run)").click()
    bps = page.locator("textarea[aria-label='One a line']")
    bps.fill("nosuch")
    bps.press("Control+Enter")
    expect(page.get_by_text(re.compile(r"line 1: breakpoint 'nosuch'.*has no node"))).to_be_visible()
    bps.fill("generate")
    bps.press("Control+Enter")
    settle(page)
    page.get_by_role("button", name="Run with 1 breakpoint(s) ▶").click()
    page.wait_for_url(re.compile(r"[?&]run=\w+"))
    expect(page.get_by_text(re.compile(r"Paused before generate \(visit 1\)"))
           ).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_text("paused", exact=True).first).to_be_visible()
    prompt = page.locator("[data-testid='stCode']").filter(has_text="Corren Lighthouse").first
    expect(prompt).to_be_visible()                  # the next node's exact prompt
    expect(page.get_by_text("Working memory", exact=True)).to_be_visible()
    page.screenshot(path=str(ART / "run_page_paused.png"), full_page=True)

    page.reload()                                   # a refresh finds the pause again
    expect(page.get_by_text(re.compile(r"Paused before generate"))).to_be_visible()
    settle(page)
    page.get_by_role("button", name="Continue", exact=True).click()
    expect(page.get_by_role("link", name="Open the replay")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_text(re.compile(r"Paused before"))).to_have_count(0)
    expect(page.get_by_text("ok", exact=True).first).to_be_visible()
    # the live box (its cursor) goes, one answer box stays: a live box of the continued run can
    # still show for a moment beside the page's own while the stream's last rerun ends
    expect(_answer_box(page).get_by_text(CURSOR)).to_have_count(0)
    expect(_answer_box(page)).to_have_count(1)
    expect(_answer_box(page)).to_contain_text(re.compile(r"\w"))
    settle(page)
    page.screenshot(path=str(ART / "run_page_continued.png"), full_page=True)


def test_settings_shows_the_engines_in_use(studio, page):
    from playwright.sync_api import expect
    page.goto(f"{studio.url}/settings")
    expect(page.get_by_role("heading", name="Engines in use")).to_be_visible(timeout=120_000)
    expect(page.get_by_text(re.compile(r"^SQLite: .*flowkit\.db$"))).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Chroma \(embedded\): "))).to_be_visible()
    expect(page.get_by_text(re.compile(r"^[1-9]\d* \(default: half the cores\)$"))).to_be_visible()
    settle(page)
    page.get_by_role("heading", name="Engines in use").scroll_into_view_if_needed()
    page.screenshot(path=str(ART / "settings_engines.png"))


def test_a_long_answer_is_seen_while_it_is_written(studio, page):
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)
    page.goto(f"{studio.url}/run?flow=long_answer")
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=180_000)
    settle(page)
    box = page.locator("textarea[aria-label='Question']")
    box.fill("Who designed the Corren Lighthouse, and when was it first lit?")
    box.press("Control+Enter")
    settle(page)
    page.get_by_role("button", name="Run ▶").click()
    page.wait_for_url(re.compile(r"[?&]run=\w+"))
    # the cursor shows while the run is still going on, with words before it
    # (the draft's header and its last line may both carry it: any one of them)
    expect(_answer_box(page).get_by_text(CURSOR).first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    page.screenshot(path=str(ART / "run_page_streaming.png"))
    assert page.get_by_role("link", name="Open the replay").count() == 0   # not ended yet
    assert re.search(r"\w", _answer_box(page).first.inner_text().replace("Writing:", ""))
    # and the stream ends with the run: the cursor goes, the stored answer stays
    expect(_answer_box(page).get_by_text(CURSOR)).to_have_count(0, timeout=RUN_TIMEOUT_MS)


def test_an_answer_cut_at_its_token_limit_says_so(studio, page):
    """Issue 48, item 7: an answer stopped by its node's max_tokens ended mid-sentence with no
    notice. A paragraph answer given 4 tokens for this run is cut; the page says by what, and
    where to raise it."""
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)
    page.goto(f"{studio.url}/run?flow=long_answer")
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=180_000)
    settle(page)
    box = page.locator("textarea[aria-label='Question']")
    box.fill("Who designed the Corren Lighthouse, and when was it first lit?")
    box.press("Control+Enter")
    settle(page)
    page.get_by_text("Model settings for this run").click()
    limit = page.get_by_role("spinbutton", name="generate · max_tokens")
    limit.fill("4")
    limit.press("Enter")
    settle(page)
    expect(page.get_by_role("button", name="Run ▶")).to_be_enabled()
    page.get_by_role("button", name="Run ▶").click()
    page.wait_for_url(re.compile(r"[?&]run=\w+"))
    notice = page.get_by_text(re.compile(r"^Cut at the token limit: the model stopped after 4 "
                                         r"tokens, the max_tokens of node generate"))
    expect(notice).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(notice).to_contain_text("Model settings for this run (generate · max_tokens)")
    notice.scroll_into_view_if_needed()
    page.screenshot(path=str(ART / "run_page_cut_answer.png"))

    # issue 48, item 5: the same run again comes from the completion cache; its figures say
    # which seconds are the flow's cost and which the time it took here (no bare 'Seconds'
    # beside 'Wall seconds')
    first_run = re.search(r"[?&]run=(\w+)", page.url).group(1)
    page.get_by_role("button", name="Run ▶").click()
    page.wait_for_url(re.compile(r"[?&]run=(?!" + first_run + r")\w+"))
    metrics = page.locator("[data-testid='stMetric']")
    cost = metrics.filter(has_text="Cost (s)")
    expect(cost).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(metrics.filter(has_text="Wall time (s)")).to_be_visible()
    expect(metrics.filter(has_text="Calls from cache")).to_contain_text("1")
    expect(page.get_by_text("Wall seconds")).to_have_count(0)
    cost.get_by_role("button").first.hover()            # the figure's help: what it counts
    expect(page.get_by_text(re.compile(r"What the run costs with every model call computed"))
           ).to_be_visible()
    page.screenshot(path=str(ART / "run_page_cost_and_wall.png"))


def _save_trace_export(page, url: str, on: bool, endpoint: str) -> None:
    """On the Settings page: trace export on or off, to `endpoint`, saved."""
    page.goto(f"{url}/settings")
    page.get_by_role("heading", name="Trace export (OpenTelemetry)").wait_for(timeout=120_000)
    settle(page)
    toggle = page.locator("[data-testid='stCheckbox']").filter(has_text="Export runs as they end")
    if toggle.locator("input").is_checked() != on:
        toggle.click()
        settle(page)
    page.get_by_role("textbox", name="Collector URL (OTLP/HTTP)").fill(endpoint)
    page.get_by_role("button", name="Save trace export").click()


def test_trace_export_to_a_collector_that_does_not_answer_says_so(studio, page):
    """Issue 48, item 9: trace export to an unreachable collector was saved with no check, and
    runs' failed exports showed only in the server log. Saving now checks the collector: the
    page says what was tried and the error, and saves it all the same; the next run says its
    trace was not exported. Export is switched off again after."""
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)
    down = f"http://127.0.0.1:{free_port()}"
    _save_trace_export(page, studio.url, True, down)
    warned = page.get_by_text(f"The collector at {down}/v1/traces did not answer")
    expect(warned).to_be_visible()
    expect(warned).to_contain_text("connection refused")
    expect(warned).to_contain_text("Saved all the same")
    expect(page.get_by_text(f"Each run is sent to {down}/v1/traces").last).to_be_visible()
    warned.scroll_into_view_if_needed()
    page.screenshot(path=str(ART / "settings_trace_export_unreachable.png"))
    try:
        ask(page, studio.url, "template:naive_rag",
            "In what year was the Corren Lighthouse first lit?").click()
        page.wait_for_url(re.compile(r"[?&]run=\w+"))
        failed = page.get_by_text(re.compile(r"^Trace not exported: the collector at "
                                             + re.escape(f"{down}/v1/traces")))
        expect(failed).to_be_visible(timeout=RUN_TIMEOUT_MS)
        expect(page.get_by_role("link", name="Open the replay")).to_be_visible()
        failed.scroll_into_view_if_needed()
        page.screenshot(path=str(ART / "run_page_trace_not_exported.png"))
    finally:
        _save_trace_export(page, studio.url, False, "")
        expect(page.get_by_text("Trace export saved. Runs are not exported")).to_be_visible()
