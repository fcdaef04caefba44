"""Issue 13 in a real Chromium: drafts per tab, Delete on the first click and by key, the knowledge
base traps, fork hints, the small things (landing text, template descriptions, cited passages,
Compare marks, fork numbering, versions in sight, no emoji).

Runs, a fork and an evaluation are recorded first, in this process, with a scripted FakeLLM and a
hashing embedder on the studio's FLOWKIT_HOME (the pages only read them); then the studio starts.
Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import CANVAS_FRAME, CHROMIUM, StudioServer, choose, chromium, path_points
from test_editor_e2e import (
    ARTIFACTS,
    WAIT_MS,
    add_from_palette,
    canvas,
    eventually,
    href,
    node,
    open_editor,
    retrying,
    settle,
    shot,
    visible,
)

from flowkit import templates
from flowkit.eval.strategy import EvalRun
from flowkit.run_request import RunRequest
from flowkit.testing import FakeLLM, HashEmbedder
from service.drafts import DraftStore
from storage.repo import Store

pytestmark = pytest.mark.e2e
LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"
LAID_OUT = ("ircot", "agent_unirag", "self_rag")


def _answer(prompt: str) -> str:
    """A wordy answer without a citation mark to the lighthouse question (EM 0, Acc 1)."""
    m = re.search(r"Question: (.*?)\n", prompt)
    if m and "Corren" in m.group(1):
        return "The Corren Lighthouse was first lit in 1884"
    return "It is not known"


def _record(data_dir: Path) -> dict[str, str]:
    """Runs, a fork of ircot and an evaluation, stored under data_dir before the studio starts."""
    from flowkit.eval.datasets import resolve
    from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
    from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
    from service.workspace import Workspace
    from storage.evals import EvalRepo

    ws = Workspace(data_dir)
    ws.resources.set_llm(FakeLLM([(r"Question: ", _answer)], default="It is not known"))
    ws.resources.set_embedder(HashEmbedder())
    ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    plain = ws.run(templates.load_template("naive_rag"), RunRequest(LIGHTHOUSE, kb="sample")).run_id
    ircot = ws.run(templates.load_template("ircot"), RunRequest(LIGHTHOUSE, kb="sample")).run_id
    fork = ws.fork(ircot, 2, {"question": "Who designed the Corren Lighthouse?"}).run_id
    repo = EvalRepo(ws.store)
    ds = resolve(repo, "sample_questions")
    naive = templates.load_template("naive_rag")
    nodes = [n.model_copy(update={"params": {**n.params, "prompt": "Reply.\n{passages}\nQ: "
                                              "{question}\nA:"}})
             if n.operator == "generation.answer" else n for n in naive.nodes]
    vague = naive.model_copy(update={"name": "vague", "nodes": nodes})   # answers "not known"
    ws.store.save_flow(vague, None)
    plan = make_plan(resolve_flows(ws, ["naive_rag", "vague"]), ds.name, ds.questions, "sample",
                     limit=2)
    run_evaluation(ws, repo, plan, EvalRun(stop=threading.Event()))
    ws.store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "tabs"}),
                       None)
    ws.store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "del"}),
                       None)
    for t in LAID_OUT:
        ws.store.save_flow(templates.load_template(t).model_copy(
            update={"name": f"{t}_flow", "layout": {}}), None)
    return {"plain": plain, "ircot": ircot, "fork": fork, "eval": plan.eval_id}


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Store, dict]]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    data_dir = tmp_path_factory.mktemp("studio-ux")
    ids = _record(data_dir)
    server = StudioServer(data_dir, timeout_s=120)
    url = server.start()
    try:
        yield url, data_dir, Store(f"sqlite:///{data_dir / 'flowkit.db'}"), ids
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(studio: Any) -> Iterator[Any]:
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as b:          # after the studio fixture: the server is up first
        yield b


def new_page(browser: Any, width: int = 1600, height: int = 1300) -> Any:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def shown(box: Any) -> str:
    """A widget's visible text, the values of its input boxes included (a select box shows its
    choice in one)."""
    try:
        return str(box.first.evaluate(
            "e => e.innerText + ' ' + [...e.querySelectorAll('input')].map(i => i.value)"
            ".join(' ')"))
    except Exception:   # noqa: BLE001 - the page is re-rendering
        return ""


def draft_param(page: Any) -> str:
    m = re.search(r"[?&]draft=([A-Za-z0-9]+)", href(page))
    return m.group(1) if m else ""


def draft_nodes(data_dir: Path, flow: str, draft_id: str) -> set[str]:
    d = DraftStore(data_dir).load(flow, draft_id)
    return {n["id"] for n in d.spec["nodes"]} if d else set()


# ---- 1: a flow that can never answer is an error ------------------------------------------------
def _create(page: Any, url: str, name: str, template: str, n_nodes: int) -> None:
    """Create a flow from a template on the Flows page; the editor opens on it."""
    page.goto(url)
    page.get_by_text("New flow", exact=True).wait_for()
    page.get_by_label("Name").fill(name)
    choose(page, "Start from", f"{template} · ", starts=True)
    create = page.get_by_role("button", name="Create and open")
    retrying(create.click, lambda: f"/editor?flow={name}" in href(page), "the editor")
    eventually(lambda: canvas(page).locator(".react-flow__node").count() == n_nodes,
               what=f"the {template} nodes")


def _delete_node(page: Any, node_id: str) -> None:
    retrying(node(page, node_id).click, lambda: visible(page.get_by_text(f"Node {node_id}")),
             f"{node_id}'s form")
    delete = page.get_by_role("button", name="Delete selected")
    retrying(delete.click, lambda: node(page, node_id).count() == 0, f"{node_id} deleted")


def test_a_flow_that_never_writes_an_answer_is_an_error(studio: Any, browser: Any) -> None:
    url, _, store, _ = studio
    page = new_page(browser)
    _create(page, url, "no_answer", "naive_rag", 2)
    page.get_by_text("No problems: the flow can run.").wait_for()      # the template is fine
    _delete_node(page, "generate")
    no_path = page.get_by_text(re.compile(
        r"\[no_answer_path\].*no path from .retrieve. to an end .* writes .answer."))
    no_path.first.wait_for()
    page.get_by_text("(1 error(s), 0 warning(s))").first.wait_for()
    assert not visible(page.get_by_text("No problems: the flow can run."))
    shot(page, "ux_no_answer_editor.png")
    # Run saves the draft and opens the Run page, which will not run it
    retrying(page.get_by_role("button", name="Run ▶").click,
             lambda: "/run?flow=no_answer" in href(page), "the run page")
    page.get_by_text("The flow has 1 problem(s); fix them in the Editor first.").wait_for()
    page.get_by_text(re.compile(r"no path from .retrieve. to an end")).first.wait_for()
    assert page.get_by_role("button", name="Run ▶").is_disabled()
    assert [n.id for n in store.get_flow("no_answer")[0].nodes] == ["retrieve"]
    shot(page, "ux_no_answer_run.png")

    # an agent whose final answer node is gone: an error, not only the unwired route's warning
    _create(page, url, "no_final", "agent_unirag", 4)
    _delete_node(page, "final")
    page.get_by_text(re.compile(r"\[no_answer_path\].*no path from .plan. to an end")).first.wait_for()
    page.get_by_text(re.compile(r"\[unwired_route\].*route .done. has no edge")).first.wait_for()
    page.get_by_text("(1 error(s), 1 warning(s))").first.wait_for()
    shot(page, "ux_no_answer_agent.png")
    page.context.close()


# ---- 2: each tab its own draft ------------------------------------------------------------------
def test_two_tabs_never_share_a_draft(studio: Any, browser: Any) -> None:
    url, data_dir, store, _ = studio
    a = new_page(browser)
    b = a.context.new_page()               # a second tab of the same browser window (same cookies)
    b.set_default_timeout(WAIT_MS)
    open_editor(a, url, "tabs", 2)
    add_from_palette(a, "rule_judge")
    eventually(lambda: draft_param(a) and draft_nodes(data_dir, "tabs", draft_param(a)),
               what="tab A's draft on the server")
    open_editor(b, url, "tabs", 2)        # the saved flow, not A's draft
    eventually(lambda: draft_param(b), what="tab B's draft id")
    assert draft_param(b) != draft_param(a)
    add_from_palette(b, "bm25")
    add_from_palette(a, "mmr")
    b_id = draft_param(b)
    eventually(lambda: "bm25" in draft_nodes(data_dir, "tabs", b_id), what="B's node saved")
    b.reload()
    eventually(lambda: canvas(b).locator(".react-flow__node").count() == 3, what="B's 3 nodes")
    node(b, "bm25").wait_for()
    assert node(b, "rule_judge").count() == 0 and node(b, "mmr").count() == 0
    assert draft_param(b) == b_id
    assert {"rule_judge", "mmr"} <= draft_nodes(data_dir, "tabs", draft_param(a))
    shot(b, "ux_two_tabs.png")
    # the save-time conflict dialog still meets them
    retrying(a.get_by_role("button", name="Save", exact=True).click,
             lambda: store.get_flow("tabs")[1] == 2, "A's save")
    conflict = b.get_by_text("Conflict: version 2 of 'tabs' was saved")
    retrying(b.get_by_role("button", name="Save", exact=True).click, lambda: visible(conflict),
             "the conflict dialog in B")
    assert store.get_flow("tabs")[1] == 2             # B's stale save did not overwrite A's
    a.context.close()


# ---- 4: delete on the first click, and by key ----------------------------------------------------
def test_delete_enabled_on_first_click_and_by_key(studio: Any, browser: Any) -> None:
    url, data_dir, store, _ = studio
    page = new_page(browser)
    open_editor(page, url, "del", 2)
    delete = page.get_by_role("button", name="Delete selected")
    assert delete.is_disabled()                         # nothing selected yet
    node(page, "generate").click()                      # one click
    page.get_by_text("Node generate").wait_for()
    eventually(lambda: delete.is_enabled(), timeout=6, what="Delete selected enabled")
    add_from_palette(page, "rule_judge")
    add_from_palette(page, "bm25")
    node(page, "rule_judge").click()
    page.get_by_text("Node rule_judge").wait_for()
    settle(page)
    node(page, "rule_judge").click()          # focus in the canvas, the key goes there
    page.keyboard.press("Delete")
    eventually(lambda: node(page, "rule_judge").count() == 0, what="rule_judge deleted by key")
    d = DraftStore(data_dir).latest("del")
    assert d is not None and "rule_judge" not in {n["id"] for n in d.spec["nodes"]}
    node(page, "bm25").click()
    page.get_by_text("Node bm25").wait_for()
    settle(page)
    node(page, "bm25").click()
    page.keyboard.press("Backspace")
    eventually(lambda: node(page, "bm25").count() == 0, what="bm25 deleted by Backspace")
    # a key typed into a text box deletes nothing
    node(page, "generate").click()
    page.get_by_text("Node generate").wait_for()
    settle(page)             # while a rerun is drawn the panel may briefly show two Label boxes
    label = page.get_by_label("Label").last
    label.click()
    label.press("Backspace")
    settle(page)
    assert node(page, "generate").count() == 1
    shot(page, "ux_delete.png")
    page.context.close()


# ---- 7: knowledge-base traps -------------------------------------------------------------------
def test_new_kb_is_the_ingest_target_and_counts_add_up(studio: Any, browser: Any,
                                                         tmp_path: Path) -> None:
    url, data_dir, _, _ = studio
    page = new_page(browser)
    page.goto(f"{url}/knowledge")
    page.get_by_text("New knowledge base", exact=True).wait_for()
    page.get_by_label("Name", exact=True).fill("pier_docs")   # not "Question set name"
    create = page.get_by_role("button", name="Create")
    retrying(create.click, lambda: visible(page.get_by_text("Created 'pier_docs'")), "created")
    into = page.locator("[data-testid='stSelectbox']").filter(has_text="Into")
    eventually(lambda: "pier_docs" in shown(into), what="'Into' names pier_docs")
    files = []
    for name, text in (("pier.md", "# Pier\n\nThe Dunmere pier is 212 metres long.\n"),
                       ("tide.md", "# Tide\n\nThe tide table is kept at the harbour office.\n")):
        p = tmp_path / name
        p.write_text(text)
        files.append(p)
    for i, f in enumerate(files, 1):
        page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(f))
        page.get_by_text(f.name).first.wait_for()
        page.get_by_role("button", name="Ingest ▶").click()
        page.get_by_text("Ingested").first.wait_for(timeout=240_000)
        metas = list(data_dir.rglob("pier_docs/meta.json"))
        assert metas, "pier_docs has no meta.json"
        eventually(lambda m=metas, n=i: json.loads(m[0].read_text()).get("documents") == n,
                   what=f"{i} document(s) counted")
        page.goto(f"{url}/knowledge?kb=pier_docs")
        page.get_by_text("New knowledge base", exact=True).wait_for()
    shot(page, "ux_kb.png")
    page.context.close()


# ---- 6: fork hints ------------------------------------------------------------------------------
def _fork_tab(page: Any) -> None:
    page.get_by_role("tab", name="Fork from this step").click()
    page.get_by_text("Memory key").wait_for()


def test_fork_panel_names_readers_and_warns(studio: Any, browser: Any) -> None:
    url, _, _, ids = studio
    page = new_page(browser)
    page.goto(f"{url}/replay?run={ids['ircot']}&step=2")
    page.get_by_text("Step 2 of").first.wait_for()
    _fork_tab(page)
    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Memory key")
    eventually(lambda: "question · read by" in shown(box), what="readers in the picker")
    retrying(box.click, lambda: visible(page.get_by_role("option")), "the picker's options")
    # the list is virtualised: keys read by the remaining steps come first, so they are drawn
    options = eventually(lambda: [o for o in page.get_by_role("option").all_inner_texts()
                                  if o.startswith("documents · read by")] and
                         page.get_by_role("option").all_inner_texts(), what="documents' readers")
    assert all(" · read by " in o or " · not read" in o for o in options), options
    page.keyboard.press("Escape")
    choose(page, "Memory key", "candidates", starts=True)
    page.get_by_text("No remaining step reads candidates").wait_for()
    shot(page, "ux_fork_hint.png")
    # what was typed survives a visit to another tab (lazy tabs forget widgets they do not draw)
    value = page.get_by_label("New value (JSON)")
    value.fill('[["a kept value"]]')
    value.press("Tab")                                  # leaves the box: the value is committed
    settle(page)
    memory = page.get_by_role("tab", name="Memory")
    retrying(memory.click, lambda: visible(page.get_by_text("Show unchanged keys too")),
             "the Memory tab")
    _fork_tab(page)
    eventually(lambda: page.get_by_label("New value (JSON)").input_value()
               == '[["a kept value"]]', what="the typed value after the tab switch")
    assert "candidates" in shown(page.locator("[data-testid='stSelectbox']").filter(
        has_text="Memory key"))
    page.context.close()


# ---- replay: only the open tab is drawn, and it stays open (issue 13: step navigation speed) ----
def test_replay_draws_only_the_open_tab_and_keeps_it(studio: Any, browser: Any) -> None:
    url, _, _, ids = studio
    page = new_page(browser)
    page.goto(f"{url}/replay?run={ids['ircot']}&step=1")
    page.get_by_text("Step 1 of").first.wait_for()
    page.get_by_text("Show unchanged keys too").wait_for()             # Memory: open first
    assert page.get_by_text("Memory key").count() == 0                  # the fork form: not drawn
    llm = page.get_by_role("tab", name="LLM calls")
    retrying(llm.click, lambda: visible(page.get_by_text("Call 1")), "the LLM calls tab")
    eventually(lambda: "tab=LLM" in href(page), what="the open tab in the address")
    assert page.get_by_text("Show unchanged keys too").count() == 0     # Memory: not drawn now
    next_step = page.get_by_role("button", name="Next")
    retrying(next_step.click, lambda: visible(page.get_by_text("Step 2 of").first), "step 2")
    settle(page)
    assert llm.get_attribute("aria-selected") == "true"                 # still open on step 2
    assert "tab=LLM" in href(page) and "step=2" in href(page)
    page.reload()
    page.get_by_text("Step 2 of").first.wait_for()
    settle(page)
    assert page.get_by_role("tab", name="LLM calls").get_attribute("aria-selected") == "true"
    assert page.get_by_text("Show unchanged keys too").count() == 0
    shot(page, "ux_replay_tab.png")
    page.context.close()


# ---- 8: the small things -------------------------------------------------------------------------
def test_small_things(studio: Any, browser: Any) -> None:
    url, _, store, ids = studio
    page = new_page(browser, 1366, 800)
    page.goto(url)
    page.get_by_text("flowkit builds retrieval-augmented generation").wait_for()
    page.get_by_text("naive_rag", exact=False).first.wait_for()
    start = page.locator("[data-testid='stSelectbox']").filter(has_text="Start from")
    retrying(start.click, lambda: visible(page.get_by_role("option")), "the template options")
    assert any(o.startswith("self_rag · Self-reflective RAG")
               for o in page.get_by_role("option").all_inner_texts())
    page.keyboard.press("Escape")
    # versions: in the clicked flow's row, in sight (tests/e2e/test_feedback_e2e.py: issue 38)
    for _ in range(6):
        store.save_flow(templates.load_template("naive_rag").model_copy(
            update={"name": f"more_{_}"}), None)
    page.goto(url)
    page.get_by_role("button", name="Versions").last.click()
    head = page.get_by_text(re.compile(r"^Versions of "))
    head.wait_for()
    assert 0 <= head.bounding_box()["y"] < 800, head.bounding_box()
    shot(page, "ux_versions.png")

    # cited passages: the model wrote no [n]
    page.goto(f"{url}/run?run={ids['plain']}")
    page.get_by_text("The answer cites no passage: the model wrote no [n]").wait_for()
    assert page.get_by_text("Cited passages").count() == 0

    # compare: ≈ for Acc without EM; every EM 0 said in words
    page.goto(f"{url}/compare?eval={ids['eval']}")
    page.get_by_text("every flow scored 0").first.wait_for(timeout=60_000)
    page.get_by_text("≈", exact=False).first.wait_for()
    shot(page, "ux_compare.png")

    # a fork numbers on from its parent and shows the parent's steps as visited
    page.goto(f"{url}/replay?run={ids['fork']}&step=0")
    page.get_by_text("Step 2 of").first.wait_for()
    page.get_by_text("Forked from run", exact=False).first.wait_for()

    # no emoji: the canvas flags problems in words
    page.goto(f"{url}/editor?flow=tabs")
    canvas(page).locator(".react-flow__node").first.wait_for()
    assert "❗" not in canvas(page).locator("body").inner_text()
    page.context.close()


# ---- 3: loops and wide flows on the canvas ------------------------------------------------------
def _boxes(page: Any, selector: str) -> dict[str, dict[str, float]]:
    """Bounding boxes (page coordinates) of canvas elements by their data-id / data-testid."""
    out = {}
    loc = canvas(page).locator(selector)
    for i in range(loc.count()):
        el = loc.nth(i)
        key = el.get_attribute("data-id") or el.get_attribute("data-testid") or str(i)
        box = el.bounding_box()
        if box:
            out[key] = box
    return out


def _label_box(page: Any, edge_id: str) -> dict[str, float]:
    edge = canvas(page).locator(f'[data-testid="rf__edge-{edge_id}"]')
    return edge.locator(".react-flow__edge-text").bounding_box()


def _inside(inner: dict[str, float], outer: dict[str, float], slack: float = 1.0) -> bool:
    return (inner["x"] >= outer["x"] - slack and inner["y"] >= outer["y"] - slack
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack)


def _centre(b: dict[str, float]) -> tuple[float, float]:
    return b["x"] + b["width"] / 2, b["y"] + b["height"] / 2


@pytest.mark.parametrize("template,loop,label,n_nodes", [
    ("ircot", "enough->retrieve", "continue", 4),
    ("agent_unirag", "reflect->plan", "", 4),
    ("self_rag", "rewrite->search", "", 8)])
def test_loops_are_routed_below_and_the_flow_fits_at_1366(studio: Any, browser: Any,
                                                          template: str, loop: str, label: str,
                                                          n_nodes: int) -> None:
    url = studio[0]
    page = new_page(browser, 1366, 768)
    flow = f"{template}_flow"
    page.goto(f"{url}/editor?flow={flow}")
    eventually(lambda: canvas(page).locator(".react-flow__node").count() >= n_nodes,
               what="the nodes")
    canvas(page).locator(".react-flow__controls-fitview").click()
    settle(page)
    page.locator(CANVAS_FRAME).evaluate("f => f.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"layout_{template}_1366.png"))
    frame = page.locator(CANVAS_FRAME).bounding_box()
    nodes = _boxes(page, ".react-flow__node")
    assert len(nodes) == n_nodes
    for nid, b in nodes.items():                          # the whole flow is in view
        assert _inside(b, frame), (nid, b, frame)
    bottom = max(b["y"] + b["height"] for b in nodes.values())
    right = max(b["x"] + b["width"] for b in nodes.values())

    def beyond(b: dict[str, float]) -> bool:      # below every node, or right of every node
        return b["y"] > bottom or b["x"] > right
    # the loop's way back, point by point along its drawn line: it leaves its source, runs in a
    # lane beyond every node, arrives at its target, and never passes behind a node
    source, target = (nodes[k] for k in loop.split("->"))
    points = path_points(page, loop)

    def near(p: tuple[float, float], b: dict[str, float], slack: float = 12.0) -> bool:
        return (b["x"] - slack <= p[0] <= b["x"] + b["width"] + slack
                and b["y"] - slack <= p[1] <= b["y"] + b["height"] + slack)
    assert near(points[0], source) and near(points[-1], target), (points[0], points[-1])
    lane = [p for p in points if beyond({"x": p[0], "y": p[1], "width": 0, "height": 0})]
    assert len(lane) >= len(points) // 4, points          # a good part of it runs in the lane
    assert all(_inside({"x": x, "y": y, "width": 0, "height": 0}, frame) for x, y in points)
    for nid, b in nodes.items():
        inner = {"x": b["x"] + 4, "y": b["y"] + 4, "width": b["width"] - 8,
                 "height": b["height"] - 8}
        hits = [p for p in points if _inside({"x": p[0], "y": p[1], "width": 0, "height": 0},
                                            inner, slack=0)]
        assert not hits, (nid, hits[:3])                  # never behind a node
    if label:
        text = _label_box(page, loop)
        assert beyond(text), text                         # on the lane, clear of the nodes
        assert text["height"] >= 8, text                  # legible at this zoom
    if template == "agent_unirag":      # 'done' sits on its own edge, nearer 'final' than 'search'
        done = _centre(_label_box(page, "plan->final"))
        fin, search = _centre(nodes["final"]), _centre(nodes["search"])
        assert (done[0] - fin[0]) ** 2 + (done[1] - fin[1]) ** 2 < \
            (done[0] - search[0]) ** 2 + (done[1] - search[1]) ** 2
        for nid, b in nodes.items():
            assert not _inside({"x": done[0], "y": done[1], "width": 0, "height": 0}, b), nid
    texts = canvas(page).locator(".react-flow__node strong")
    heights = [texts.nth(i).bounding_box()["height"] for i in range(texts.count())]
    assert heights and min(heights) >= 7, heights          # node titles legible
    page.context.close()
