"""Issue 38 item 6 ("polish found on the way") in a real Chromium, one studio for every check:

- the Flows page's import refusal says what to do in the studio, not which CLI command to type;
- the Knowledge page's ingest error names the user's file (no internal upload path) in one line,
  and the studio's log holds no traceback for it;
- the Editor's zoom buttons cover no node when a flow opens (the opening fit was made for a
  taller canvas than the page then left it, so the flow sat at the bottom, under them);
- "Pause before / after" and "Make a starter space" are not cut off; a variant column's name
  is whole on the Compare page;
- every flow is labelled on the Compare page's bar charts;
- the first click on "Open the replay" after editing the question opens the replay.

A run and an evaluation (three templates and a variant of one on two questions) are recorded
first, in this process, with a scripted FakeLLM and a hashing embedder; the studio's model is a
scripted OpenAI-compatible server, so no check waits for a model to load.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from e2ekit import ART, CHROMIUM, StudioServer, canvas, chromium, settle
from test_compare_e2e import fake_openai_server

from flowkit import templates
from flowkit.run_request import RunRequest
from flowkit.testing import FakeLLM, HashEmbedder

pytestmark = pytest.mark.e2e
QUESTION = "In what year was the Corren Lighthouse first lit?"
FLOWS = ("naive_rag", "rewrite_retrieve_read", "iter_retgen")
WIDTH, HEIGHT = 1366, 800


class Recorded(NamedTuple):
    url: str
    home: Path
    run_id: str
    eval_id: str
    variant: str        # the variant column's label
    parent: str         # the column it was made from


def _record(home: Path, base_url: str) -> tuple[str, str, str, str]:
    """A naive_rag run and the flow saved; an evaluation of FLOWS on two questions plus a variant of iter_retgen
    (its last node's params changed); settings that point the model at `base_url`."""
    from flowkit.eval.datasets import resolve
    from flowkit.eval.runner import FlowEntry, make_plan, resolve_flows, run_evaluation
    from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
    from flowkit.runtime.llm import LLMSettings
    from flowkit.runtime.resources import Settings, save_settings
    from service.evaluations import add_variant_columns
    from service.workspace import Workspace
    from storage.evals import EvalRepo
    from studio.compare.variant_panel import variant_ref, variant_spec

    ws = Workspace(home)
    ws.resources.set_llm(FakeLLM([(r"Corren", "It was first lit in 1884 [1]")],
                                 default="no idea"))
    ws.resources.set_embedder(HashEmbedder())
    ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    run_id = ws.run(templates.load_template("naive_rag"), RunRequest(QUESTION, kb="sample")).run_id
    ws.store.save_flow(templates.load_template("naive_rag"), None)     # for the Editor
    repo = EvalRepo(ws.store)
    ds = resolve(repo, "sample_questions")
    plan = make_plan(resolve_flows(ws, list(FLOWS)), ds.name, ds.questions, "sample", limit=2)
    run_evaluation(ws, repo, plan)
    base = next(f for f in plan.flows if f.ref == "iter_retgen")
    node = base.spec.nodes[-1]
    params = {**node.params, "top_n": 3}
    variant = FlowEntry(ref=variant_ref(base.label, node.id, params),
                        spec=variant_spec(base.spec, node.id, params), parent=base.label)
    plan = add_variant_columns(ws, plan.eval_id, [variant])
    run_evaluation(ws, repo, plan)
    save_settings(home, Settings(llm=LLMSettings(backend="openai", base_url=base_url,
                                                 model_name="scripted")))
    return run_id, plan.eval_id, plan.flows[-1].label, base.label


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    home = tmp_path_factory.mktemp("polish")
    base_url, fake = fake_openai_server()
    try:
        run_id, eval_id, variant, parent = _record(home, base_url)
        ART.mkdir(exist_ok=True)
        with StudioServer(home, log=ART / "e2e-polish-streamlit.log", timeout_s=120) as url:
            yield Recorded(url, home, run_id, eval_id, variant, parent)
    finally:
        fake.shutdown()


@pytest.fixture(scope="module")
def page(studio: Recorded) -> Iterator[Any]:
    with chromium() as browser:
        pg = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        pg.set_default_timeout(120_000)
        yield pg


#: The texts inside an element that are cut off (ellipsis or hidden overflow wider than the box).
CUT_TEXTS = """el => [el, ...el.querySelectorAll('*')].filter(e => {
    const s = getComputedStyle(e);
    const clips = s.textOverflow === 'ellipsis' || s.overflow === 'hidden' || s.overflowX === 'hidden';
    return clips && e.innerText && e.scrollWidth > e.clientWidth + 1;
}).map(e => e.innerText)"""
#: How many lines a text element's text is drawn on (a name broken inside a word: 2).
LINES = """el => { const r = document.createRange(); r.selectNodeContents(el);
    return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.top))).size; }"""


def _cut(locator: Any) -> list[str]:
    locator.wait_for()
    return list(locator.evaluate(CUT_TEXTS))


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def _upload(page: Any, name: str, data: bytes, nth: int = 0) -> None:
    page.locator("[data-testid='stFileUploaderDropzoneInput']").nth(nth).set_input_files(
        files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}])
    page.get_by_text(name).first.wait_for()


def test_a_refused_flow_files_hint_names_the_studio_not_a_cli_command(studio: Recorded,
                                                                      page: Any) -> None:
    page.goto(studio.url)
    settle(page)
    _upload(page, "broken_flow.json", b'{"name": "x", "nodes": 3}')
    refusal = page.get_by_text(re.compile(r"^\[spec_invalid\]"))
    refusal.wait_for()
    text = refusal.inner_text()
    page.screenshot(path=str(ART / "polish_import_hint.png"))
    assert "flowkit templates" not in text and "New flow" in text and "Export" in text, text


def test_a_bad_upload_is_named_as_uploaded_and_leaves_no_traceback(studio: Recorded,
                                                                    page: Any) -> None:
    log = ART / "e2e-polish-streamlit.log"
    before = log.read_text(errors="replace")
    page.goto(f"{studio.url}/knowledge?kb=sample")
    settle(page)
    _upload(page, "harbour notes.txt", b"\xff\xfe not UTF-8 at all")
    page.get_by_role("button", name="Ingest ▶").click()
    failed = page.get_by_text(re.compile(r"failed: harbour notes\.txt: not UTF-8 text"))
    failed.wait_for()
    text = failed.inner_text()
    page.screenshot(path=str(ART / "polish_ingest_error.png"))
    assert "uploads" not in text and str(studio.home) not in text, text
    new = log.read_text(errors="replace")[len(before):]
    assert "Traceback" not in new and "harbour notes.txt" in new, new[-2000:]


def test_labels_are_whole_pause_before_after_and_make_a_starter_space(studio: Recorded,
                                                                       page: Any) -> None:
    page.goto(f"{studio.url}/editor?flow=naive_rag")
    settle(page)
    nodes = canvas(page).locator(".react-flow__node")
    nodes.first.wait_for()
    zoom = canvas(page).locator(".react-flow__controls").bounding_box()
    for i in range(nodes.count()):           # the zoom buttons cover no node as the flow opens
        assert not _overlap(nodes.nth(i).bounding_box(), zoom), (i, zoom)
    nodes.first.click()
    settle(page)
    for name in ("Pause before", "Pause after"):
        box = page.locator("[data-testid='stCheckbox']").filter(has_text=name).first
        assert _cut(box) == [], name
    page.screenshot(path=str(ART / "polish_pause_labels.png"))
    page.goto(f"{studio.url}/search")
    settle(page)
    button = page.get_by_role("button", name="Make a starter space")
    assert _cut(button) == [], "Make a starter space"
    page.screenshot(path=str(ART / "polish_starter_button.png"))


def test_issue_48_small_things(studio: Recorded, page: Any) -> None:
    """Issue 48, item 9: template titles whole past "et al."; a new knowledge base is "empty",
    not "complete", and its search box does not suggest the sample's lighthouse; the Editor's
    "Connect" button is not cut to "C."."""
    page.goto(studio.url)
    settle(page)
    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Start from")
    box.click()
    option = page.get_by_role("option", name=re.compile(r"^rewrite_retrieve_read · "))
    option.wait_for()
    assert "(Ma et al. 2023): the" in option.inner_text(), option.inner_text()
    page.keyboard.press("Escape")

    page.goto(f"{studio.url}/knowledge?kb=sample")
    settle(page)
    page.get_by_label("Name", exact=True).fill("notes48")
    page.get_by_role("button", name="Create", exact=True).click()
    page.get_by_text("Created 'notes48'").wait_for()
    settle(page)
    table = page.locator("[data-testid='stMain'] [data-testid='stDataFrameResizable']").first
    row = [t.strip() for t in table.locator("table tr").filter(has_text="notes48").first
           .locator("td").all_inner_texts()]
    assert "empty: add files" in row and "complete" not in row, row
    search = page.get_by_role("textbox", name="Search", exact=True)
    search.wait_for()
    assert "Lighthouse" not in (search.get_attribute("placeholder") or "")
    page.screenshot(path=str(ART / "polish_empty_kb.png"))

    page.goto(f"{studio.url}/editor?flow=naive_rag")
    settle(page)
    nodes = canvas(page).locator(".react-flow__node")
    nodes.first.wait_for()
    connect = page.get_by_role("button", name="Connect", exact=True)
    for i in range(nodes.count()):     # a node with a node left to connect to shows the form
        nodes.nth(i).click()
        settle(page)
        if connect.count():
            break
    assert connect.count() == 1, "no node offers Connect to"
    assert _cut(connect) == [], "Connect"
    width = connect.bounding_box()["width"]
    assert width > 100, width          # it was cut to "C." beside the box
    page.screenshot(path=str(ART / "polish_connect_button.png"))


def _bar_charts(page: Any) -> list[Any]:
    """The Compare page's bar charts (the frontier's axes label numbers, not flows)."""
    page.locator("[data-testid='stVegaLiteChart'] svg").first.wait_for()
    return [c for c in page.locator("[data-testid='stVegaLiteChart'] svg").all()
            if c.locator("g.role-axis-label text", has_text="naive_rag").count()]


def test_compare_labels_every_flow_whole_and_parts_from_the_recorded_parent(
        studio: Recorded, page: Any) -> None:
    page.goto(f"{studio.url}/compare?eval={studio.eval_id}")
    page.get_by_role("heading", name="Charts").wait_for()
    settle(page)
    flows = [*FLOWS, studio.variant]
    charts = _bar_charts(page)
    assert len(charts) >= 3, "fewer bar charts than the page draws"
    for chart in charts:
        chart.scroll_into_view_if_needed()
        labels = chart.locator("g.role-axis-label text").all()
        shown = {t.text_content(): t for t in labels
                 if t.evaluate("e => getComputedStyle(e).opacity") != "0"}
        assert set(flows) <= set(shown), sorted(shown)     # every flow, its whole name
        # slanted labels stand apart: the gap between two neighbours across their slant
        # is at least a line of text
        xs = [float(shown[f].evaluate("e => e.getCTM().e")) for f in flows]
        angle = float(shown[flows[0]].evaluate(
            "e => Math.abs(Math.atan2(e.getCTM().b, e.getCTM().a))"))
        size = float(shown[flows[0]].evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))
        gaps = [abs(b - a) * math.sin(angle) for a, b in zip(xs, xs[1:])]
        assert min(gaps) >= size, (gaps, size)
    page.screenshot(path=str(ART / "polish_compare_charts.png"))
    # the side-by-side columns' names on one line each, the variant's too
    page.get_by_role("heading", name="Side by side").scroll_into_view_if_needed()
    settle(page)
    for name in flows:
        head = page.locator("[data-testid='stMarkdownContainer'] strong").filter(
            has_text=re.compile(rf"^{re.escape(name)}$")).first
        assert head.evaluate(LINES) == 1, f"{name} is broken over lines"
    page.screenshot(path=str(ART / "polish_compare_side_by_side.png"))
    # "Where two flows part" opens on the variant and the column it was made from
    part = page.get_by_role("heading", name="Where two flows part")
    part.scroll_into_view_if_needed()
    parent = page.locator("input[aria-label='Parent']").input_value()
    variant = page.locator("input[aria-label='Variant']").input_value()
    assert (parent, variant) == (studio.parent, studio.variant), (parent, variant)


def test_the_first_click_on_open_the_replay_after_an_edit_opens_it(studio: Recorded,
                                                                    page: Any) -> None:
    page.goto(f"{studio.url}/run?run={studio.run_id}")
    settle(page)
    link = page.get_by_role("link", name="Open the replay")
    link.wait_for()
    page.locator("textarea[aria-label='Question']").fill("How many arches does the viaduct have?")
    link.click()                                 # ends the edit too: the box sends its value
    page.wait_for_url(re.compile(rf"/replay\?run={studio.run_id}"), timeout=30_000)
    page.get_by_role("heading", name="Replay").wait_for()
    settle(page)
    assert "/replay?" in page.url, page.url
    # the sidebar names the model's state (loaded in the background when the studio starts)
    page.get_by_text(re.compile(r"^Model: ready \(scripted")).wait_for(timeout=60_000)


@pytest.mark.real
def test_the_sidebar_turns_from_loading_to_ready_by_itself(page: Any, tmp_path: Path) -> None:
    """The packaged model, loaded in the background from the studio's start: the sidebar says
    'Model: loading…' and then, with no click, 'Model: ready (...)' (it used to wait for the
    next rerun, so an idle page said 'loading…' long after the model was in). Its own studio on
    the default settings, in the module's browser (one Playwright per process)."""
    with StudioServer(tmp_path / "home", log=ART / "e2e-polish-model-streamlit.log",
                      timeout_s=120) as url:
        tab = page.context.browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        tab.set_default_timeout(120_000)
        try:
            tab.goto(url)
            tab.get_by_text("Model: loading…", exact=True).wait_for()
            settle(tab)                             # the page is idle from here on
            tab.get_by_text(re.compile(r"^Model: ready \(")).wait_for(timeout=180_000)
            tab.screenshot(path=str(ART / "polish_model_ready.png"))
        finally:
            tab.close()
