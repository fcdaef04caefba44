"""The editor lays a flow out for the canvas's real size (issue 29 item 2): the canvas reports its
size in px as an event ({kind: "view", width, height}, see studio/canvas_ui); a flow opened before
the first report is laid out again for it (and fitted), one opened after uses it at once, and a
later resize never turns the open flow."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowkit import templates
from service import flows
from service.workspace import Workspace
from studio.common.jobs import get_jobs
from studio.common.layout import VIEW_H, VIEW_W, layout
from studio.common.state import EditorKeys
from studio.common.workspace import use_workspace
from studio.editor.editor import Editor

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

WIDE = (1300, 400)       # a wide window, a low canvas: ircot reads left to right (the default: down)


@pytest.fixture()
def ws(tmp_path: Path) -> Iterator[Workspace]:
    w = kit.workspace(tmp_path)
    use_workspace(w)
    flows.create_flow(w, "loop", "ircot")
    flows.create_flow(w, "loop2", "ircot")
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def _view(n: int, width: Any, height: Any, token: str = "t1") -> dict[str, Any]:
    """What the canvas sends when it measured itself (its last events)."""
    return {"token": token, "events": [{"n": n, "kind": "view", "width": width,
                                        "height": height}]}


def _sides(state: dict[str, Any]) -> tuple[str, str]:
    pic = EditorKeys.CANVAS.get(state=state)
    assert pic is not None
    return pic["sourceSide"], pic["targetSide"]


def test_a_flow_opened_before_the_canvas_reported_is_laid_out_again_for_its_size(ws: Workspace) -> None:
    assert layout(templates.load_template("ircot"), view=(VIEW_W, VIEW_H)).direction == "TB"
    state: dict[str, Any] = {}
    ed = Editor(state, ws, tab="tab1", is_open=lambda _: False)
    ed.open("loop")
    first = ed.canvas_picture()
    assert _sides(state) == ("bottom", "top")            # the 540 x 620 fallback: top to bottom
    fit = ed.fit_request
    assert ed.take_events(_view(1, *WIDE))
    again = ed.canvas_picture()
    assert ed.view == WIDE
    assert again["rev"] > first["rev"] and _sides(state) == ("right", "left")
    assert ed.fit_request == fit + 1                     # the new picture is fitted to the view
    assert ed.spec.layout == {}                          # nothing pinned: only the view changed


def test_a_flow_opened_after_the_report_uses_the_size_and_a_resize_never_turns_it(ws: Workspace) -> None:
    state: dict[str, Any] = {}
    ed = Editor(state, ws, tab="tab1", is_open=lambda _: False)
    ed.open("loop")
    ed.canvas_picture()
    ed.take_events(_view(1, *WIDE))
    ed.open("loop2")                                     # the next flow: laid out for it at once
    ed.canvas_picture()
    assert ed.view == WIDE and _sides(state) == ("right", "left")
    rev, fit = ed.canvas_picture()["rev"], ed.fit_request
    assert ed.take_events(_view(2, 540, 620))            # the window was made narrow
    assert ed.canvas_picture()["rev"] == rev and ed.fit_request == fit
    assert _sides(state) == ("right", "left")            # kept while the flow is open
    assert EditorKeys.CANVAS_VIEW.get(state=state) == (540, 620)   # for the next one
    ed.tidy()                                            # laid out afresh: for the size now
    ed.canvas_picture()
    assert ed.view == (540, 620) and _sides(state) == ("bottom", "top")


def test_an_edit_keeps_the_direction_of_the_view_the_flow_is_laid_out_for(ws: Workspace) -> None:
    state: dict[str, Any] = {}
    ed = Editor(state, ws, tab="tab1", is_open=lambda _: False)
    ed.open("loop")
    ed.take_events(_view(1, *WIDE))
    before = layout(ed.spec, ed.spec.layout, view=WIDE).positions
    ed.add_node("generation.answer")
    after = layout(ed.spec, ed.spec.layout, view=WIDE)
    assert after.direction == "LR"
    assert {k: after.positions[k] for k in before} == before   # nothing the user saw moved


@pytest.mark.parametrize("width,height", [(0, 400), (-5, 400), ("wide", 400), (True, 400),
                                          (1e9, 400), (None, None)])
def test_a_size_the_browser_could_not_have_measured_is_ignored(ws: Workspace, width: Any, height: Any) -> None:
    state: dict[str, Any] = {}
    ed = Editor(state, ws, tab="tab1", is_open=lambda _: False)
    ed.open("loop")
    ed.take_events(_view(1, width, height))
    assert ed.view is None and EditorKeys.CANVAS_VIEW.get(state=state) is None
