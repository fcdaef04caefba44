"""Breakpoints on the editor's canvas (issue 24 item 1): the canvas's dot event (or the side
panel's boxes) sets them on the draft, the canvas picture shows a red dot, the draft keeps them
(also when its spec is clean, never in the saved flow), and the Editor's Run hands them to the
Run page, whose breakpoints box starts with them and whose run pauses there."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from flowkit import templates
from flowkit.breakpoints import BreakpointError
from service.drafts import (
    Draft,
    DraftStore,
    node_marks,
    node_visit_condition,
    set_node_breakpoints,
    set_node_visit_condition,
)
from service.workspace import Workspace
from studio.common.jobs import get_jobs
from studio.common.state import EditorKeys
from studio.common.workspace import use_workspace
from studio.editor.editor import Editor

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

ROOT = Path(__file__).resolve().parents[2]
LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"


@pytest.fixture()
def ws(tmp_path):
    w = kit.workspace(tmp_path)
    use_workspace(w)
    w.store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "lh"}), None)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def _dot(n: int, node: str, before: bool, after: bool) -> dict[str, Any]:
    """What the canvas sends when a node's breakpoint dot is clicked (its last events)."""
    return {"token": "t1", "events": [{"n": n, "kind": "breakpoint", "id": node,
                                       "before": before, "after": after}]}


def _bp(state: dict[str, Any], node: str) -> str:
    return next(n["bp"] for n in EditorKeys.CANVAS.get(state=state)["nodes"] if n["id"] == node)


def test_toggling_keeps_visits_and_conditions_of_a_side_left_on():
    bps = ["generate@2?len(documents) < 3", "retrieve:after", "not a breakpoint ?"]
    assert set_node_breakpoints(bps, "generate", True, True) == [*bps, "generate:after"]
    assert set_node_breakpoints(bps, "generate", False, False) == bps[1:]
    assert set_node_breakpoints(bps, "retrieve", True, False) == [bps[0], bps[2], "retrieve"]
    assert node_marks(bps) == {"generate": {"before": [bps[0]]}, "retrieve": {"after": [bps[1]]}}
    again = Draft.from_dict(Draft("f", "d1", 1, {}, breakpoints=bps).to_dict())
    assert again.breakpoints == bps


def test_a_dot_event_sets_the_drafts_breakpoint_and_the_red_dot(ws: Workspace):
    state: dict[str, Any] = {}
    ed = Editor(state, ws, tab="tab1", is_open=lambda _: False)
    draft = ed.open("lh")
    ed.canvas_picture()
    assert _bp(state, "generate") == ""
    assert ed.take_events(_dot(1, "generate", True, False))
    assert ed.breakpoints == ["generate"]
    rev = EditorKeys.CANVAS.get(state=state)["rev"]
    ed.canvas_picture()                                                # the next draw: a new revision
    assert _bp(state, "generate") == "before" and _bp(state, "retrieve") == ""
    assert EditorKeys.CANVAS.get(state=state)["rev"] > rev
    assert not ed.take_events(_dot(1, "generate", False, False))       # taken once
    ed.take_events(_dot(2, "retrieve", False, True))
    ed.take_events(_dot(3, "nosuch", True, True))                      # unknown node: nothing
    assert ed.breakpoints == ["generate", "retrieve:after"]
    assert not ed.dirty()                                              # not a change of the flow
    kept = DraftStore(ws.data_dir).load("lh", draft.draft_id)
    assert kept is not None and kept.breakpoints == ["generate", "retrieve:after"]

    ed.set_param("generate", "max_tokens", 64)
    assert ed.save("tuned") == 2
    spec, _ = ws.store.get_flow("lh")
    assert "breakpoint" not in spec.model_dump_json()                  # never in the saved flow
    assert DraftStore(ws.data_dir).load("lh", draft.draft_id).breakpoints == ed.breakpoints

    other = Editor({}, ws, tab="tab2", is_open=lambda _: False)        # a refresh finds them
    assert other.open("lh").breakpoints == ["generate", "retrieve:after"]

    ed.select("retrieve")
    ed.delete_selected()
    assert ed.breakpoints == ["generate"]                              # gone with its node
    ed.take_events(_dot(4, "generate", False, False))
    assert ed.breakpoints == [] and DraftStore(ws.data_dir).load("lh", draft.draft_id) is not None


def test_the_side_panel_boxes_set_them_and_run_hands_them_to_the_run_page(ws: Workspace):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["flow"] = "lh"
    at.switch_page("pages/editor.py")
    at.run()
    at.session_state["editor_selected"] = "generate"
    at.run()
    gen = at.session_state["editor_form_gen"]
    at.checkbox(key=EditorKeys.BP_BEFORE.item(gen, "generate")).check().run()
    assert not at.exception
    assert at.session_state["editor_draft"].breakpoints == ["generate"]
    assert next(n for n in at.session_state["editor_canvas"]["nodes"]
                if n["id"] == "generate")["bp"] == "before"
    at.button(key="editor_run").click().run()
    assert at.title[0].value == "Run"
    assert at.text_area(key="run_breakpoints").value == "generate"


def test_the_handed_breakpoints_reach_the_run_request_and_pause_it(ws: Workspace):
    at = kit.page("pages/run.py", flow="lh")
    at.session_state[EditorKeys.RUN_BREAKPOINTS] = ["generate"]       # what hand_over_run keeps
    at.run()
    assert at.text_area(key="run_breakpoints").value == "generate"
    assert any("Set on the Editor's canvas" in c.value for c in at.caption)   # says where from
    assert at.button(key="run_go").label == "Run with 1 breakpoint(s) ▶"
    at.text_area(key="run_question").input(LIGHTHOUSE).run()
    at.button(key="run_go").click().run()
    at = kit.until(at, lambda a: "Paused before `generate` (visit 1)" in kit.texts(a))
    run_id = at.query_params["run"]
    assert ws.store.get_run(run_id).record.status == "paused"
    assert "editor_run_breakpoints" not in at.session_state            # taken once
    at.run()
    assert at.text_area(key="run_breakpoints").value == "generate"     # the user's box from now on
    at.text_area(key="run_breakpoints").input("generate\nretrieve").run()
    assert not any("Set on the Editor's canvas" in c.value for c in at.caption)   # edited here


def test_a_nodes_visit_and_condition_apply_to_each_side_it_pauses_on():
    bps = ["generate@2?len(documents) < 3", "retrieve:after", "x y", "generate:after", "generate@5"]
    assert node_visit_condition(bps, "generate") == (2, "len(documents) < 3")   # its first one's
    assert node_visit_condition(bps, "retrieve") == (None, None)
    assert node_visit_condition(bps, "judge") == (None, None)
    assert set_node_visit_condition(bps, "generate", 3, " answer == '' ") == [
        "generate@3?answer == ''", "generate@3:after?answer == ''", "retrieve:after", "x y"]
    assert set_node_visit_condition(bps, "retrieve", 0, "") == bps            # 0, blank: plain
    assert set_node_visit_condition(bps, "retrieve", None, "steps > 4") == [
        bps[0], "retrieve:after?steps > 4", *bps[2:]]
    assert set_node_visit_condition(bps, "judge", 2, "true") == bps           # no side: nothing


@pytest.mark.parametrize(("visit", "condition", "says"), [
    (1, "foo > 1", "condition 'foo > 1' not set: unknown key 'foo'"),
    (1, "len(documents <", "not set: expected a value, found the end of the condition (column 16)"),
    (1, "__import__('os')", "not set: unknown key '__import__'"),
    (-1, "", "visit not set: a whole number from 1"),
])
def test_a_bad_visit_or_condition_is_refused_naming_the_node_and_field(visit, condition, says):
    with pytest.raises(BreakpointError) as err:
        set_node_visit_condition(["generate"], "generate", visit, condition)
    assert str(err.value).startswith("Breakpoint on node 'generate', ") and says in str(err.value)


def test_a_side_turned_on_takes_the_nodes_visit_and_condition(ws: Workspace):
    ed = Editor({}, ws, tab="tab1", is_open=lambda _: False)
    draft = ed.open("lh")
    ed.toggle_breakpoint("generate", "before")
    ed.set_breakpoint_visit_condition("generate", 2, "len(documents) < 3")
    ed.toggle_breakpoint("generate", "after")
    assert ed.breakpoints == ["generate@2?len(documents) < 3", "generate@2:after?len(documents) < 3"]
    assert ed.breakpoint_sides("generate") == {"before", "after"}             # both dots set
    with pytest.raises(BreakpointError):
        ed.set_breakpoint_visit_condition("generate", 2, "nosuch == 1")
    assert DraftStore(ws.data_dir).load("lh", draft.draft_id).breakpoints == ed.breakpoints
    ed.toggle_breakpoint("generate", "before")
    ed.toggle_breakpoint("generate", "after")
    assert ed.breakpoints == [] and ed.breakpoint_visit_condition("generate") == (None, None)


def _editor_on(node: str) -> tuple[AppTest, int]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["flow"] = "lh"
    at.switch_page("pages/editor.py")
    at.run()
    at.session_state["editor_selected"] = node
    at.run()
    return at, at.session_state["editor_form_gen"]


def test_the_side_panels_visit_and_condition_reach_the_run_pages_box(ws: Workspace):
    at, gen = _editor_on("generate")
    visit, cond = (at.number_input(key=EditorKeys.BP_VISIT.item(gen, "generate")),
                   at.text_input(key=EditorKeys.BP_CONDITION.item(gen, "generate")))
    assert visit.disabled and cond.disabled                                   # no side ticked yet
    at.checkbox(key=EditorKeys.BP_BEFORE.item(gen, "generate")).check().run()
    at.number_input(key=EditorKeys.BP_VISIT.item(gen, "generate")).set_value(3).run()
    at.text_input(key=EditorKeys.BP_CONDITION.item(gen, "generate")).input(
        "len(documents) < 3").run()
    assert not at.exception and not at.error
    assert at.session_state["editor_draft"].breakpoints == ["generate@3?len(documents) < 3"]
    assert next(n for n in at.session_state["editor_canvas"]["nodes"]
                if n["id"] == "generate")["bp"] == "before"                   # the dot as before
    at.button(key="editor_run").click().run()
    assert at.title[0].value == "Run"
    assert at.text_area(key="run_breakpoints").value == "generate@3?len(documents) < 3"
    assert not any("line 1" in e.value for e in at.error)                     # the Run page agrees
    assert at.button(key="run_go").label == "Run with 1 breakpoint(s) ▶"


def test_a_bad_condition_in_the_side_panel_shows_an_error_and_stores_nothing(ws: Workspace):
    at, gen = _editor_on("generate")
    at.checkbox(key=EditorKeys.BP_AFTER.item(gen, "generate")).check().run()
    at.text_input(key=EditorKeys.BP_CONDITION.item(gen, "generate")).input("answr == ''").run()
    assert not at.exception
    [shown] = [e.value for e in at.error if "answr" in e.value]               # one error, clear
    assert shown.startswith("Breakpoint on node 'generate', condition \"answr == ''\" not set: "
                            "unknown key 'answr'; known: question"), shown
    assert at.session_state["editor_draft"].breakpoints == ["generate:after"]
    assert DraftStore(ws.data_dir).load("lh", at.session_state["editor_draft"].draft_id
                                        ).breakpoints == ["generate:after"]
    at.text_input(key=EditorKeys.BP_CONDITION.item(gen, "generate")).input("answer == ''").run()
    assert not any("answr" in e.value for e in at.error)                      # fixed: gone
    assert at.session_state["editor_draft"].breakpoints == ["generate:after?answer == ''"]
