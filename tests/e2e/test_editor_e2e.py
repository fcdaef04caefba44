"""The studio's flows page, editor and settings in a real Chromium (Debian's, via Playwright).

One streamlit server for the module, on a temp FLOWKIT_HOME; screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import CHROMIUM, ROOT, StudioServer, canvas, chromium, eventually, path_points

from flowkit import templates
from service.drafts import DraftStore
from storage.repo import Store

pytestmark = pytest.mark.e2e
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 30_000




@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Store]]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    data_dir = tmp_path_factory.mktemp("studio-e2e")
    server = StudioServer(data_dir)
    url = server.start()
    try:
        yield url, data_dir, Store(f"sqlite:///{data_dir / 'flowkit.db'}")
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(studio: tuple[str, Path, Store]) -> Iterator[Any]:
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as b:          # after the studio fixture: the server is up first
        yield b


def retrying(action: Callable[[], Any], check: Callable[[], Any], what: str, tries: int = 3,
             wait: float = 15.0) -> None:
    """Do `action` until `check` holds. On a loaded machine a browser event now and then does not
    reach the server (it raced a rerun); a user would click again, and so does the test."""
    for attempt in range(tries):
        if attempt and check():
            return
        action()
        try:
            eventually(check, timeout=wait, what=what)
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


def href(page: Any) -> str:
    """The address bar now (page.url is only refreshed while Playwright handles events)."""
    return str(page.evaluate("location.href"))


def visible(locator: Any) -> bool:
    try:
        return locator.first.is_visible()
    except Exception:   # noqa: BLE001 - the page is re-rendering
        return False


def settle(page: Any) -> None:
    """Wait until no script runs (Streamlit shows its status widget while one does)."""
    page.wait_for_timeout(500)
    page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')")
    page.wait_for_timeout(300)


def shot(page: Any, name: str) -> None:
    settle(page)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def new_page(browser: Any) -> Any:
    ctx = browser.new_context(viewport={"width": 1600, "height": 1300})
    page = ctx.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def node(page: Any, node_id: str) -> Any:
    return canvas(page).locator(f'.react-flow__node[data-id="{node_id}"]')


def open_editor(page: Any, url: str, flow: str, n_nodes: int) -> None:
    page.goto(f"{url}/editor?flow={flow}")
    eventually(lambda: canvas(page).locator(".react-flow__node").count() == n_nodes,
               what=f"{n_nodes} nodes on the canvas")
    page.get_by_text(f"Editor · {flow}").wait_for()


def add_from_palette(page: Any, operator_name: str) -> None:
    box = page.get_by_placeholder("e.g. rerank, judge")
    box.fill(operator_name)
    box.press("Enter")
    # the label may wrap after each '_' (a zero-width space follows it: studio/editor/palette_panel.py)
    name = re.compile("^" + "_\u200b?".join(map(re.escape, operator_name.split("_"))) + "$")
    button = page.get_by_role("button", name=name)
    retrying(button.click, lambda: node(page, operator_name).count() == 1,
             f"node {operator_name} on the canvas")


def connect(page: Any, source: str, target: str) -> None:
    """Drag from the source node's handle to the target node's handle, as a user does."""
    canvas(page).locator(".react-flow__controls-fitview").click()
    time.sleep(0.4)
    src = node(page, source).locator(".react-flow__handle.source").bounding_box()
    dst = node(page, target).locator(".react-flow__handle.target").bounding_box()
    page.mouse.move(src["x"] + src["width"] / 2, src["y"] + src["height"] / 2)
    page.mouse.down()
    page.mouse.move(dst["x"] + dst["width"] / 2, dst["y"] + dst["height"] / 2, steps=12)
    page.mouse.up()


def draft_of(data_dir: Path, flow: str) -> dict[str, Any] | None:
    d = DraftStore(data_dir).latest(flow)
    return d.spec if d else None


def test_create_from_template_edit_and_save(studio: tuple[str, Path, Store], browser: Any) -> None:
    url, data_dir, store = studio
    page = new_page(browser)
    page.goto(url)
    page.get_by_text("Saved flows", exact=True).wait_for()
    page.get_by_label("Name").fill("e2e_flow")
    create = page.get_by_role("button", name="Create and open")
    retrying(create.click, lambda: "/editor?flow=e2e_flow" in href(page), "the editor")
    eventually(lambda: canvas(page).locator(".react-flow__node").count() == 2,
               what="the naive_rag nodes")

    add_from_palette(page, "rule_judge")
    retrying(lambda: connect(page, "generate", "rule_judge"),
             lambda: any(e["source"] == "generate" and e["target"] == "rule_judge"
                         for e in (draft_of(data_dir, "e2e_flow") or {}).get("edges", [])),
             "the dragged edge in the server-side draft")
    eventually(lambda: canvas(page).locator(".react-flow__edge").count() == 2, what="2 edges")

    retrying(node(page, "rule_judge").click, lambda: visible(page.get_by_text("Node rule_judge")),
             "the node's form")
    rounds = page.get_by_role("spinbutton", name="Max Rounds")

    def set_rounds() -> None:
        rounds.fill("2")
        rounds.press("Enter")
    retrying(set_rounds, lambda: any(n["params"].get("max_rounds") == 2 for n in
                                     (draft_of(data_dir, "e2e_flow") or {}).get("nodes", [])),
             "max_rounds=2 in the draft")
    page.get_by_text("unsaved changes", exact=True).wait_for()
    shot(page, "editor.png")

    save = page.get_by_role("button", name="Save", exact=True)
    retrying(save.click, lambda: store.get_flow("e2e_flow")[1] == 2, "version 2 saved")
    page.get_by_text("Started from version 2").wait_for()
    spec, version = store.get_flow("e2e_flow")
    assert version == 2
    assert [n.id for n in spec.nodes] == ["retrieve", "generate", "rule_judge"]
    assert spec.node("rule_judge").params == {"max_rounds": 2}
    assert {(e.source, e.target) for e in spec.edges} == {("retrieve", "generate"),
                                                          ("generate", "rule_judge")}
    assert draft_of(data_dir, "e2e_flow") is None     # saved: no draft left behind
    shot(page, "editor_saved.png")

    if (ROOT / "pages" / "run.py").is_file():
        run = page.get_by_role("button", name="Run ▶")
        retrying(run.click, lambda: "/run?flow=e2e_flow" in href(page), "the run page")

    page.goto(url)
    page.get_by_text("e2e_flow").first.wait_for()
    page.get_by_text("version 2").first.wait_for()
    shot(page, "flows.png")

    page.goto(f"{url}/settings")
    page.get_by_text("Loaded now").wait_for()
    page.get_by_text("GPU offload supported").wait_for()
    shot(page, "settings.png")
    page.context.close()


def test_draft_survives_a_refresh(studio: tuple[str, Path, Store], browser: Any) -> None:
    url, data_dir, store = studio
    store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "refresh"}),
                    None)
    page = new_page(browser)
    open_editor(page, url, "refresh", 2)
    add_from_palette(page, "bm25")
    eventually(lambda: draft_of(data_dir, "refresh") is not None, what="the draft file")
    page.get_by_text("unsaved changes", exact=True).wait_for()

    page.reload()
    eventually(lambda: canvas(page).locator(".react-flow__node").count() == 3,
               what="3 nodes after the reload")
    node(page, "bm25").wait_for()
    page.get_by_text("unsaved changes", exact=True).wait_for()
    assert "draft=" in href(page)
    assert store.get_flow("refresh")[1] == 1           # nothing was saved, nothing was lost
    shot(page, "editor_after_refresh.png")
    page.context.close()


def test_two_editors_conflict(studio: tuple[str, Path, Store], browser: Any) -> None:
    url, data_dir, store = studio
    store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "shared"}),
                    None)
    first, second = new_page(browser), new_page(browser)
    open_editor(first, url, "shared", 2)
    open_editor(second, url, "shared", 2)

    add_from_palette(first, "rule_judge")
    retrying(first.get_by_role("button", name="Save", exact=True).click,
             lambda: store.get_flow("shared")[1] == 2, "the first save")

    add_from_palette(second, "bm25")
    conflict = second.get_by_text("Conflict: version 2 of 'shared' was saved")
    retrying(second.get_by_role("button", name="Save", exact=True).click,
             lambda: visible(conflict), "the conflict message")
    shot(second, "editor_conflict.png")
    assert store.get_flow("shared")[1] == 2            # the second save did not overwrite

    retrying(second.get_by_role("button", name="Keep mine: save as a new flow").click,
             lambda: store.flow_exists("shared_mine"), "the copy 'shared_mine'")
    second.wait_for_url("**/editor?flow=shared_mine*")
    mine, _ = store.get_flow("shared_mine")
    theirs, _ = store.get_flow("shared")
    assert "bm25" in {n.id for n in mine.nodes} and "rule_judge" not in {n.id for n in mine.nodes}
    assert "rule_judge" in {n.id for n in theirs.nodes}
    first.context.close()
    second.context.close()


def test_dragging_a_node_moves_it_in_the_draft(studio: tuple[str, Path, Store], browser: Any) -> None:
    """A drag on the canvas reaches the server-side draft as the node's new place, and the edge
    into it is redrawn to its new place; a click right after it is not lost either."""
    url, data_dir, store = studio
    store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "drag"}), None)
    page = new_page(browser)
    open_editor(page, url, "drag", 2)
    settle(page)
    before = node(page, "generate").bounding_box()
    x, y = before["x"] + before["width"] / 2, before["y"] + 10
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y + 140, steps=10)
    page.mouse.up()
    node(page, "retrieve").click()         # at once: two events faster than a rerun both arrive
    eventually(lambda: "generate" in ((draft_of(data_dir, "drag") or {}).get("layout") or {}),
               what="the moved node's place in the draft")
    page.get_by_text("Node retrieve").wait_for()
    placed = draft_of(data_dir, "drag")["layout"]["generate"]
    assert placed["y"] > 40, placed                     # moved down, in canvas units
    after = node(page, "generate").bounding_box()
    assert after["y"] - before["y"] > 100, (before, after)
    settle(page)
    end = path_points(page, "retrieve->generate")[-1]   # the edge follows the node
    assert abs(end[1] - (after["y"] + after["height"] / 2)) < 12, (end, after)
    page.get_by_text("unsaved changes", exact=True).wait_for()
    page.context.close()


def test_undo_and_redo_by_button_and_key(studio: tuple[str, Path, Store], browser: Any) -> None:
    """Ctrl+Z on the canvas undoes a deletion, Ctrl+Shift+Z redoes it, the Undo button too."""
    url, data_dir, store = studio
    store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "undo"}), None)
    page = new_page(browser)
    open_editor(page, url, "undo", 2)
    undo = page.locator(".st-key-editor_undo button").first
    assert undo.is_disabled()                           # nothing to undo yet
    add_from_palette(page, "bm25")
    retrying(node(page, "bm25").click, lambda: visible(page.get_by_text("Node bm25")),
             "bm25's form")
    settle(page)

    def click_then_delete() -> None:                    # the key goes to the canvas
        if node(page, "bm25").count():
            node(page, "bm25").click()
            page.keyboard.press("Delete")

    retrying(click_then_delete, lambda: node(page, "bm25").count() == 0, "bm25 deleted")
    settle(page)
    canvas(page).locator(".react-flow__pane").click(position={"x": 30, "y": 30})
    page.keyboard.press("Control+z")
    eventually(lambda: node(page, "bm25").count() == 1, what="the deletion undone by Ctrl+Z")
    settle(page)
    canvas(page).locator(".react-flow__pane").click(position={"x": 30, "y": 30})
    page.keyboard.press("Control+Shift+z")
    eventually(lambda: node(page, "bm25").count() == 0, what="redone by Ctrl+Shift+Z")
    settle(page)
    retrying(undo.click, lambda: node(page, "bm25").count() == 1, "the Undo button")
    eventually(lambda: "bm25" in {n["id"] for n in (draft_of(data_dir, "undo") or {}).get(
        "nodes", [])}, what="the undone deletion in the server-side draft")
    page.context.close()
