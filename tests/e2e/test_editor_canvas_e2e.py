"""Issue 29, the editor's canvas in a real Chromium at 1366x800: a new node lands clear of every
node and edge and in view, a new edge moves no node; the canvas fits the window and the wheel
scrolls the page; self_rag opens legible; an empty click clears the selection (Delete then
deletes nothing); palette labels break only between words. Issue 38: a drag from the centre of
a node's output handle draws an edge. Issue 48: the 8-node templates, laid out afresh as the
studio creates them, open whole (self_rag as stored, a long row, still opens legible at its
start). Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import CANVAS_FRAME, CHROMIUM, StudioServer, canvas, chromium, eventually, path_points
from test_editor_e2e import (
    ARTIFACTS,
    WAIT_MS,
    add_from_palette,
    connect,
    draft_of,
    node,
    open_editor,
    retrying,
    settle,
    visible,
)

from flowkit import templates
from flowkit.testing import flow as make_flow
from storage.repo import Store

pytestmark = pytest.mark.e2e
W, H = 1366, 800


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Store]]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    data_dir = tmp_path_factory.mktemp("canvas-e2e")
    with StudioServer(data_dir) as url:
        yield url, data_dir, Store(f"sqlite:///{data_dir / 'flowkit.db'}")


@pytest.fixture(scope="module")
def browser(studio: Any) -> Iterator[Any]:
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as b:          # after the studio fixture: the server is up first
        yield b


def page_1366(browser: Any) -> Any:
    page = browser.new_context(viewport={"width": W, "height": H}).new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def saved(store: Store, template: str, name: str) -> str:
    store.save_flow(templates.load_template(template).model_copy(update={"name": name}), None)
    return name


def places(page: Any) -> dict[str, tuple[float, float]]:
    """Each node's place on the canvas (canvas units, from its transform): a pan or a zoom
    changes none of them, only a move does."""
    found = canvas(page).locator(".react-flow__node").evaluate_all(
        "ns => ns.map(n => [n.dataset.id, n.style.transform])")
    out = {}
    for nid, transform in found:
        m = re.search(r"translate\(([-\d.e]+)px,\s*([-\d.e]+)px\)", transform)
        assert m, transform
        out[nid] = (round(float(m.group(1)), 1), round(float(m.group(2)), 1))
    return out


def zoom(page: Any) -> float:
    t = canvas(page).locator(".react-flow__viewport").evaluate("e => e.style.transform")
    m = re.search(r"scale\(([-\d.e]+)\)", t)
    assert m, t
    return float(m.group(1))


def boxes(page: Any) -> dict[str, dict[str, float]]:
    loc = canvas(page).locator(".react-flow__node")
    return {loc.nth(i).get_attribute("data-id"): loc.nth(i).bounding_box()
            for i in range(loc.count())}


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def inside(b: dict[str, float], frame: dict[str, float]) -> bool:
    return (b["x"] >= frame["x"] - 1 and b["y"] >= frame["y"] - 1
            and b["x"] + b["width"] <= frame["x"] + frame["width"] + 1
            and b["y"] + b["height"] <= frame["y"] + frame["height"] + 1)


def edge_ids(page: Any) -> list[str]:
    return [i.removeprefix("rf__edge-") for i in canvas(page).locator(".react-flow__edge")
            .evaluate_all("es => es.map(e => e.dataset.testid)")]


def test_a_new_node_lands_clear_in_view_and_an_edge_moves_nothing(studio: Any,
                                                                  browser: Any) -> None:
    url, data_dir, store = studio
    flow = saved(store, "self_rag", "place")
    page = page_1366(browser)
    open_editor(page, url, flow, 8)
    settle(page)
    before = places(page)

    add_from_palette(page, "bm25")
    settle(page)
    page.locator(CANVAS_FRAME).scroll_into_view_if_needed()
    page.wait_for_timeout(400)
    frame = page.locator(CANVAS_FRAME).bounding_box()
    now = boxes(page)
    new = now.pop("bm25")
    assert inside(new, frame), (new, frame)                  # panned into view
    for nid, b in now.items():
        assert not overlaps(new, b), (nid, b, new)           # clear of every node
    for eid in edge_ids(page):                               # and of every edge's line
        hits = [p for p in path_points(page, eid) if overlaps(
            {"x": p[0], "y": p[1], "width": 0.1, "height": 0.1}, new)]
        assert not hits, (eid, hits[:3])
    labels = canvas(page).locator(".react-flow__edge-textwrapper")
    for i in range(labels.count()):
        assert not overlaps(labels.nth(i).bounding_box(), new), i
    after_add = places(page)
    assert {k: after_add[k] for k in before} == before       # nothing else moved
    page.screenshot(path=str(ARTIFACTS / "canvas_new_node_1366.png"))

    # a new edge from the new node (a start: it shifts the layers) moves no node at all
    retrying(lambda: connect(page, "bm25", "relevance"),
             lambda: any(e["source"] == "bm25" and e["target"] == "relevance"
                         for e in (draft_of(data_dir, flow) or {}).get("edges", [])),
             "the new edge in the draft")
    eventually(lambda: "bm25->relevance" in edge_ids(page), what="the new edge drawn")
    settle(page)
    assert places(page) == after_add
    page.screenshot(path=str(ARTIFACTS / "canvas_new_edge_1366.png"))
    page.context.close()


def test_the_canvas_fits_the_window_and_the_wheel_scrolls_the_page(studio: Any,
                                                                   browser: Any) -> None:
    url, _, store = studio
    flow = saved(store, "naive_rag", "wheel")
    page = page_1366(browser)
    open_editor(page, url, flow, 2)
    settle(page)
    frame = page.locator(CANVAS_FRAME).bounding_box()
    assert frame["y"] + frame["height"] <= H, frame          # all of it on the screen
    assert frame["height"] >= 360, frame
    page.screenshot(path=str(ARTIFACTS / "canvas_fits_1366x800.png"))

    main = page.locator("[data-testid='stMain']")
    scrolled = lambda: main.evaluate("e => e.scrollTop")   # noqa: E731
    start, z = scrolled(), zoom(page)
    page.mouse.move(frame["x"] + frame["width"] - 40, frame["y"] + 40)
    page.mouse.wheel(0, 240)
    eventually(lambda: scrolled() > start, what="the page scrolled by the wheel")
    assert zoom(page) == z                                   # the canvas did not zoom

    frame = page.locator(CANVAS_FRAME).bounding_box()
    page.mouse.move(frame["x"] + frame["width"] - 40, frame["y"] + 40)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -240)                                # Ctrl + wheel zooms
    page.keyboard.up("Control")
    eventually(lambda: zoom(page) != z, what="a zoom by Ctrl + wheel")

    z, top = zoom(page), scrolled()
    canvas(page).locator(".react-flow__pane").click(position={"x": frame["width"] - 40, "y": 40})
    page.mouse.wheel(0, 240)                                 # clicked into: the wheel zooms
    eventually(lambda: zoom(page) != z, what="a zoom by the wheel in the clicked canvas")
    assert scrolled() == top
    page.context.close()


def test_self_rag_opens_legible(studio: Any, browser: Any) -> None:
    url, _, store = studio
    flow = saved(store, "self_rag", "legible")
    page = page_1366(browser)
    open_editor(page, url, flow, 8)
    settle(page)
    assert zoom(page) >= 0.74, zoom(page)
    titles = canvas(page).locator(".react-flow__node strong")
    frame = page.locator(CANVAS_FRAME).bounding_box()
    shown = [b for b in (titles.nth(i).bounding_box() for i in range(titles.count()))
             if b and inside(b, frame)]
    assert len(shown) >= 2 and min(b["height"] for b in shown) >= 11, shown   # 6 px at the old 0.36
    assert node(page, "decide").bounding_box()["x"] >= frame["x"]   # it opens at its start
    page.screenshot(path=str(ARTIFACTS / "canvas_self_rag_1366.png"))
    page.context.close()


def test_the_largest_templates_open_whole(studio: Any, browser: Any) -> None:
    """Issue 48, item 9: a flow made from a template with the most nodes (8), laid out afresh as
    the studio creates it, opens with every node inside the canvas at 1366x800."""
    url, _, store = studio
    specs = templates.all_templates()
    most = max(len(spec.nodes) for spec in specs.values())
    page = page_1366(browser)
    for name in sorted(t for t, spec in specs.items() if len(spec.nodes) == most):
        flow = f"whole_{name}"
        store.save_flow(specs[name].model_copy(update={"name": flow, "layout": {}}), None)
        open_editor(page, url, flow, most)
        settle(page)
        frame = page.locator(CANVAS_FRAME).bounding_box()
        out = [n for n, b in boxes(page).items() if not inside(b, frame)]
        page.screenshot(path=str(ARTIFACTS / f"canvas_whole_{name}_1366.png"))
        assert not out, f"{name}: {out} outside the canvas {frame} at zoom {zoom(page)}"
    page.context.close()


def test_an_empty_click_clears_the_selection(studio: Any, browser: Any) -> None:
    url, data_dir, store = studio
    flow = saved(store, "naive_rag", "deselect")
    page = page_1366(browser)
    open_editor(page, url, flow, 2)
    retrying(node(page, "generate").click, lambda: visible(page.get_by_text("Node generate")),
             "generate's form")
    delete = page.locator(".st-key-editor_delete button").first
    assert delete.is_enabled()
    settle(page)
    frame = page.locator(CANVAS_FRAME).bounding_box()
    empty = {"x": frame["width"] - 30, "y": 30}
    hint = page.get_by_text("Click a node or an edge on the canvas to edit it.")
    retrying(lambda: canvas(page).locator(".react-flow__pane").click(position=empty),
             lambda: visible(hint), "the selection cleared")
    assert delete.is_disabled()
    assert canvas(page).locator(".react-flow__node.selected").count() == 0
    page.screenshot(path=str(ARTIFACTS / "canvas_deselected_1366.png"))
    page.keyboard.press("Delete")
    settle(page)
    assert canvas(page).locator(".react-flow__node").count() == 2
    assert draft_of(data_dir, flow) is None                  # nothing was deleted
    page.context.close()


_BREAKS = """el => {
  const out = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let prev = null;
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    for (let i = 0; i < t.length; i++) {
      const r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + 1);
      const rect = r.getClientRects()[0];
      if (!rect || rect.width === 0) { prev = prev && { ...prev, ch: t.data[i] }; continue; }
      if (prev && rect.top > prev.top + 2) out.push([prev.ch, t.data[i]]);
      prev = { top: rect.top, ch: t.data[i] };
    }
  }
  return { breaks: out, text: el.innerText, overflow: el.scrollWidth > el.clientWidth + 1 };
}"""


def test_palette_labels_break_only_between_words(studio: Any, browser: Any) -> None:
    url, _, store = studio
    flow = saved(store, "naive_rag", "palette")
    page = page_1366(browser)
    open_editor(page, url, flow, 2)
    settle(page)
    summaries = page.locator("[data-testid='stExpander'] summary")
    for i in range(summaries.count()):
        summaries.nth(i).click()
        page.wait_for_timeout(150)
    settle(page)
    labels = page.locator("[data-testid='stExpander'] summary p, "
                          "[class*='st-key-editor_palette_add_'] button p")
    assert labels.count() >= 40                              # every module and operator
    wrapped = 0
    for i in range(labels.count()):
        found = labels.nth(i).evaluate(_BREAKS)
        assert not found["overflow"], found["text"]
        for before, after in found["breaks"]:
            assert before in " _\u200b-" or after == " ", (found["text"], before, after)
        wrapped += bool(found["breaks"])
    assert wrapped, "no label wraps at all: the check saw nothing"
    page.get_by_placeholder("e.g. rerank, judge").fill("verification")
    page.get_by_placeholder("e.g. rerank, judge").press("Enter")
    settle(page)
    page.screenshot(path=str(ARTIFACTS / "palette_1366.png"))
    page.context.close()



def test_a_flow_is_laid_out_for_the_canvas_it_is_drawn_in(studio: Any, browser: Any) -> None:
    """The canvas reports its size; the flow opened is laid out for it (ircot, four nodes in a
    row and a loop back, runs left to right in the wide, low canvas of a 1920x800 window, where
    the 540 x 620 px fallback would turn it top to bottom)."""
    from studio.common.layout import VIEW_H, VIEW_W, layout
    url, _, store = studio
    spec = templates.load_template("ircot").model_copy(update={"name": "sized", "layout": {}})
    store.save_flow(spec, None)                  # as the studio creates it: laid out afresh
    flow = spec.name
    page = browser.new_context(viewport={"width": 1920, "height": 800}).new_page()
    page.set_default_timeout(WAIT_MS)
    open_editor(page, url, flow, len(spec.nodes))
    settle(page)
    frame = page.locator(CANVAS_FRAME).bounding_box()
    view = (round(frame["width"]), round(frame["height"]))
    fitted = layout(spec, view=view)
    assert fitted.direction != layout(spec, view=(VIEW_W, VIEW_H)).direction, view
    want = {k: (round(p.x, 1), round(p.y, 1)) for k, p in fitted.positions.items()}
    eventually(lambda: places(page) == want, what=f"the layout for a {view} canvas")
    page.screenshot(path=str(ARTIFACTS / "canvas_sized_1920x800.png"))
    page.context.close()


_HIT = """(h, d) => { const r = h.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;
  return [[0, 0], [-d, 0], [d, 0], [0, -d], [0, d]].map(([dx, dy]) =>
    document.elementFromPoint(x + dx, y + dy) === h); }"""


def test_a_drag_from_the_output_handles_centre_draws_an_edge(studio: Any, browser: Any) -> None:
    """Issue 38: the node no longer clips its handles: the output handle's visible centre (its
    box's centre, on the node's border) and 7 px around it start an edge, the dot grows on hover,
    and a drop anywhere on another node connects to it; no node moves."""
    url, data_dir, store = studio
    spec = make_flow("handles", [("retrieve", "retrieval.bm25"), ("dense", "retrieval.dense"),
                                 ("answer", "generation.answer")], ["retrieve>answer"])
    store.save_flow(spec, None)
    page = page_1366(browser)
    open_editor(page, url, "handles", 3)
    settle(page)
    page.locator(CANVAS_FRAME).scroll_into_view_if_needed()
    page.mouse.move(1, 1)
    handle = node(page, "dense").locator(".react-flow__handle.source")
    box = handle.bounding_box()
    assert box["width"] >= 16 and box["height"] >= 16, box           # the hit area
    assert handle.evaluate(_HIT, 7) == [True] * 5                     # whole: nothing clips it
    dot = "h => getComputedStyle(h, '::after').width"
    small = float(handle.evaluate(dot).removesuffix("px"))
    node(page, "dense").hover()
    eventually(lambda: float(handle.evaluate(dot).removesuffix("px")) > small,
               what="the handle's dot grown on hover")
    before = places(page)

    box = handle.bounding_box()                   # again: the hover may have scrolled the page
    target = node(page, "answer").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2,
                    steps=12)
    page.wait_for_timeout(300)     # a start near the canvas's edge pans it (React Flow's
    target = node(page, "answer").bounding_box()   # auto-pan): aim again, as a user does
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2,
                    steps=3)
    page.mouse.up()
    eventually(lambda: {"new:dense->answer", "dense->answer"} & set(edge_ids(page)),
               what="the edge drawn in the canvas")
    eventually(lambda: any((e["source"], e["target"]) == ("dense", "answer")
                           for e in (draft_of(data_dir, "handles") or {}).get("edges", [])),
               what="the new edge in the draft")
    eventually(lambda: "dense->answer" in edge_ids(page), what="the edge redrawn by the studio")
    settle(page)
    assert places(page) == before                                     # the node was not dragged
    page.screenshot(path=str(ARTIFACTS / "canvas_handle_drag_1366.png"))
    page.context.close()



def test_an_edge_is_removed_from_its_nodes_form(studio: Any, browser: Any) -> None:
    """Issue 48, item 2: an edge under another cannot be clicked on the canvas; the form of a
    node at either end lists it with a remove button, and the canvas and the draft lose it."""
    url, data_dir, store = studio
    store.save_flow(make_flow("under", [("retrieve", "retrieval.bm25"),
                                        ("rerank", "post_retrieval.embed_rerank"),
                                        ("generate", "generation.answer")],
                              ["retrieve>rerank", "rerank>generate", "retrieve>generate"]), None)
    page = page_1366(browser)
    open_editor(page, url, "under", 3)
    settle(page)
    before = places(page)
    retrying(node(page, "generate").click, lambda: visible(page.get_by_text("Node generate")),
             "generate's form")
    settle(page)
    assert visible(page.get_by_text("Edges (2)"))
    remove = page.locator("[class*='st-key-editor_edge_remove_'][class*='_retrieve--generate'] "
                          "button").first
    assert remove.is_visible()
    retrying(remove.click, lambda: "retrieve->generate" not in edge_ids(page),
             "the edge gone from the canvas")
    assert [(e["source"], e["target"]) for e in draft_of(data_dir, "under")["edges"]] == [
        ("retrieve", "rerank"), ("rerank", "generate")]
    settle(page)
    assert visible(page.get_by_text("Edges (1)")) and visible(page.get_by_text("Node generate"))
    assert places(page) == before                                     # no node moved
    page.screenshot(path=str(ARTIFACTS / "canvas_edge_removed_from_form_1366.png"))
    page.context.close()


def _add(page: Any, operator_name: str, new_id: str) -> None:
    """Add an operator from the palette and wait for its node (`new_id`) on the canvas."""
    box = page.get_by_placeholder("e.g. rerank, judge")
    box.fill(operator_name)
    box.press("Enter")
    name = re.compile("^" + "_\u200b?".join(map(re.escape, operator_name.split("_"))) + "$")
    retrying(page.get_by_role("button", name=name).click,
             lambda: node(page, new_id).count() == 1, f"node {new_id} on the canvas")
    settle(page)


def _drag_once(page: Any, source: str, target: str) -> float:
    """Press on the source's output dot, start the edge and pause as a person does, move onto
    the middle of the target node's part in view where it was at the press, let go (no aiming
    again); returns how far the dot was from the canvas's right edge (px)."""
    frame = page.locator(CANVAS_FRAME).bounding_box()
    dot = node(page, source).locator(".react-flow__handle.source").bounding_box()
    dst = node(page, target).bounding_box()
    x0, x1 = max(dst["x"], frame["x"]), min(dst["x"] + dst["width"], frame["x"] + frame["width"])
    y0, y1 = max(dst["y"], frame["y"]), min(dst["y"] + dst["height"], frame["y"] + frame["height"])
    assert x0 < x1 and y0 < y1, (target, dst, frame)          # some of it shows
    x, y = dot["x"] + dot["width"] / 2, dot["y"] + dot["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 4, y + 2, steps=2)        # the edge starts, the pointer still by the dot
    page.wait_for_timeout(300)
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=15)
    page.wait_for_timeout(100)
    page.mouse.up()
    return frame["x"] + frame["width"] - x


def _draw_from_new_nodes(page: Any, data_dir: Path, flow: str, first_target: str,
                         times: int, added: int = 0) -> tuple[int, list[float]]:
    """`times` times: add embed_rerank from the palette (it lands beside the selection, near the
    canvas's right edge) and drag its output onto the node added before it (first: `first_target`).
    `added`: how many of those nodes are there already. Returns how many of those edges the
    draft holds and the dots' distances to the edge."""
    ids = ["embed_rerank"] + [f"embed_rerank_{i}" for i in range(2, times + 1)]
    gaps = []
    for i, nid in enumerate(ids):
        if i >= added:
            _add(page, "embed_rerank", nid)
        target = ids[i - 1] if i else first_target
        gaps.append(_drag_once(page, nid, target))
        page.wait_for_timeout(1200)
        settle(page)
    edges = {(e["source"], e["target"]) for e in (draft_of(data_dir, flow) or {}).get("edges", [])}
    made = sum((nid, ids[i - 1] if i else first_target) in edges for i, nid in enumerate(ids))
    return made, gaps


def _nearest_in_view(page: Any, nid: str) -> str:
    """The node nearest `nid` on screen with its middle inside the canvas."""
    frame = page.locator(CANVAS_FRAME).bounding_box()
    found = canvas(page).locator(".react-flow__node").evaluate_all("""ns => ns.map(n => {
        const r = n.getBoundingClientRect(); return [n.dataset.id, r.x + r.width / 2, r.y + r.height / 2]; })""")
    mid = {i: (x + frame["x"], y + frame["y"]) for i, x, y in found}
    me = mid[nid]
    shown = [i for i, (x, y) in mid.items() if i != nid
             and frame["x"] + 20 < x < frame["x"] + frame["width"] - 20
             and frame["y"] + 20 < y < frame["y"] + frame["height"] - 20]
    return min(shown, key=lambda i: (mid[i][0] - me[0]) ** 2 + (mid[i][1] - me[1]) ** 2)


def test_an_edge_drawn_from_a_new_node_on_a_150_node_flow_lands(studio: Any,
                                                              browser: Any) -> None:
    """Issue 48, item 1 on a big flow: 150 nodes placed by hand in a 15 x 10 grid, rows chained;
    a node the palette adds lands right of the grid (it was panned into view but could stay under
    the minimap, whose drag panned the canvas: 7 of 10); 10 drags from new nodes, 10 edges."""
    from flowkit.spec import EdgeSpec, FlowSpec, NodeSpec, Position
    url, data_dir, store = studio
    ids = [[f"n{c:02d}_{r}" for r in range(10)] for c in range(15)]
    spec = FlowSpec(name="big", nodes=[NodeSpec(id=i, operator="retrieval.bm25")
                                       for col in ids for i in col],
                    edges=[EdgeSpec(source=ids[c][r], target=ids[c + 1][r])
                           for r in range(10) for c in range(14)],
                    layout={ids[c][r]: Position(x=c * 270.0, y=r * 130.0)
                            for c in range(15) for r in range(10)})
    store.save_flow(spec, None)
    page = page_1366(browser)
    open_editor(page, url, "big", 150)
    settle(page)
    page.locator(CANVAS_FRAME).scroll_into_view_if_needed()
    _add(page, "embed_rerank", "embed_rerank")
    first = _nearest_in_view(page, "embed_rerank")
    made, gaps = _draw_from_new_nodes(page, data_dir, "big", first, 10, added=1)
    page.screenshot(path=str(ARTIFACTS / "canvas_150_nodes_drags_1366.png"))
    assert made == 10, (made, gaps, first)
    page.context.close()


def test_an_edge_drawn_from_a_new_node_at_the_right_edge_lands(studio: Any, browser: Any) -> None:
    """Issue 48, item 1: a drag from an output dot at the canvas's right edge used to auto-pan the
    canvas ~200 px while the pointer sat near that edge, and the drop fell on the empty canvas,
    silently. Now the canvas keeps still while an edge is drawn, a node the palette adds is
    panned in clear of the edges, and a drop on the empty canvas says so. 10 drags from new
    nodes, 10 edges."""
    url, data_dir, store = studio
    flow = saved(store, "naive_rag", "rightedge")
    page = page_1366(browser)
    open_editor(page, url, flow, 2)
    settle(page)
    page.locator(CANVAS_FRAME).scroll_into_view_if_needed()
    note = canvas(page).locator("[data-testid='fk-drop-note']")

    # a drop on the empty canvas says so, and draws nothing
    frame = page.locator(CANVAS_FRAME).bounding_box()
    dot = node(page, "retrieve").locator(".react-flow__handle.source").bounding_box()
    page.mouse.move(dot["x"] + dot["width"] / 2, dot["y"] + dot["height"] / 2)
    page.mouse.down()
    page.mouse.move(frame["x"] + frame["width"] / 2, frame["y"] + 30, steps=10)
    page.mouse.up()
    eventually(lambda: visible(note), what="the empty drop's note")
    assert "empty canvas" in note.inner_text()
    assert draft_of(data_dir, flow) is None

    # generate's output dot sits at the right edge when the flow opens: the drag lands
    gap = _drag_once(page, "generate", "retrieve")
    assert gap < 40, gap                          # inside React Flow's auto-pan band
    eventually(lambda: ("generate", "retrieve") in {
        (e["source"], e["target"]) for e in (draft_of(data_dir, flow) or {}).get("edges", [])},
        what="the edge from the dot at the edge")
    settle(page)

    made, gaps = _draw_from_new_nodes(page, data_dir, flow, "generate", 10)
    page.screenshot(path=str(ARTIFACTS / "canvas_right_edge_drags_1366.png"))
    assert made == 10, (made, gaps, draft_of(data_dir, flow)["edges"], places(page))
    page.context.close()


def _handle_sides(page: Any) -> dict[str, tuple[str, str]]:
    """Each node's (input, output) handle side, from React Flow's classes."""
    found = canvas(page).locator(".react-flow__node").evaluate_all("""ns => ns.map(n => [n.dataset.id,
        ['target', 'source'].map(k => [...n.querySelector('.react-flow__handle.' + k).classList]
          .find(c => /^react-flow__handle-(left|right|top|bottom)$/.test(c)))])""")
    return {nid: (t.rsplit("-", 1)[1], s.rsplit("-", 1)[1]) for nid, (t, s) in found}


def test_moving_a_node_moves_only_that_node(studio: Any, browser: Any) -> None:
    """Issue 48, item 3: a flow placed by hand, a little wider than tall; two moves make it taller
    than wide, which used to turn it top to bottom (handles flipped, lanes re-routed). Each move
    moves its node: the others stay put and every handle keeps its side."""
    from flowkit.spec import Position
    url, data_dir, store = studio
    spec = make_flow("still", [("retrieve", "retrieval.bm25"), ("rerank", "post_retrieval.embed_rerank"),
                               ("generate", "generation.answer")],
                     ["retrieve>rerank", "rerank>generate", "retrieve>generate"])
    spec = spec.model_copy(update={"layout": {"retrieve": Position(x=0, y=0),
                                              "rerank": Position(x=270, y=100),
                                              "generate": Position(x=270, y=200)}})
    store.save_flow(spec, None)
    page = page_1366(browser)
    open_editor(page, url, "still", 3)
    settle(page)
    page.locator(CANVAS_FRAME).scroll_into_view_if_needed()
    sides = _handle_sides(page)
    assert set(sides.values()) == {("left", "right")}, sides
    def moved_in_draft(nid: str, was: float) -> bool:
        layout = (draft_of(data_dir, "still") or {}).get("layout") or {}
        return nid in layout and layout[nid]["y"] != was

    for nid, dy in (("retrieve", -105), ("generate", 105)):   # canvas units: 300 tall -> 510
        before = places(page)
        box = node(page, nid).bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x, y + dy * zoom(page), steps=10)
        page.mouse.up()
        eventually(lambda n=nid, was=before[nid][1]: moved_in_draft(n, was),   # type: ignore[misc]
                   what=f"{nid}'s move in the draft")
        page.wait_for_timeout(800)
        settle(page)
        now = places(page)
        assert now[nid][1] != before[nid][1]
        assert {k: v for k, v in now.items() if k != nid} == {
            k: v for k, v in before.items() if k != nid}, nid
        assert _handle_sides(page) == sides, nid
    page.screenshot(path=str(ARTIFACTS / "canvas_move_keeps_still_1366.png"))
    page.context.close()
