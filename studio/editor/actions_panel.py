"""The editor page's callbacks (pages/editor.py): each builds the session's Editor and applies one
change. Streamlit runs them before the page script, so every change to the graph, the canvas's
own events included, happens before the canvas is drawn and shows in that same run."""
from __future__ import annotations

from typing import Any

from flowkit.errors import Problem
from service.debug import BreakpointError
from studio.common import inert
from studio.common.state import EditorKeys as K
from studio.common.state import Key
from studio.common.workspace import get_workspace
from studio.editor.editor import Editor


def _ed() -> Editor:
    return Editor(None, get_workspace())


def canvas_event(key: str) -> None:
    """The canvas reported a click, a move or a new edge: apply it before the page draws."""
    _ed().take_events(Key[Any](key).get())


def undo() -> None:
    _ed().undo()


def redo() -> None:
    _ed().redo()


def add(op: str) -> None:
    _ed().add_node(op)


def delete() -> None:
    _ed().delete_selected()


def remove_edge(edge_id: str) -> None:
    _ed().remove_edge(edge_id)


def deselect() -> None:
    _ed().select(None)


def toggle_breakpoint(node_id: str, side: str) -> None:
    _ed().toggle_breakpoint(node_id, side)


def set_breakpoint_field(node_id: str, field: str, key: str) -> None:
    """The side panel's breakpoint "visit" or "condition" field of `node_id` changed: store it with
    the node's other one; a bad value is not stored and its error shows under the fields."""
    ed = _ed()
    visit, condition = ed.breakpoint_visit_condition(node_id)
    value = Key[Any](key).get()
    if field == "visit":
        visit = int(value) if value else None
    else:
        condition = str(value or "")
    try:
        ed.set_breakpoint_visit_condition(node_id, visit, condition)
    except BreakpointError as err:
        K.BP_ERROR.set((node_id, str(err)))
    else:
        K.BP_ERROR.set(None)


def set_param(node_id: str, name: str, value: Any) -> None:
    _ed().set_param(node_id, name, value)


def set_label(node_id: str, key: str) -> None:
    _ed().set_label(node_id, Key[str](key).get() or "")


def set_edge_label(edge_id: str, key: str) -> None:
    value = Key[str](key).get()
    _ed().set_edge_label(edge_id, None if value in (None, "(none)") else value)


def clear_edge_label(edge_id: str) -> None:
    _ed().set_edge_label(edge_id, None)


def connect(source: str, target_key: str, label_key: str) -> None:
    """The side panel's "Connect to" form: the edge source -> the picked node, as a drawn one."""
    target = Key[str](target_key).get()
    if target:
        _ed().connect(source, target, Key[str](label_key).get())


def set_limit(name: str, value: Any) -> None:
    if value is not None:
        _ed().set_limits(**{name: value})


def set_description(key: str) -> None:
    _ed().set_flow_fields(description=Key[str](key).get() or "")


def set_entry(key: str) -> None:
    value = Key[str](key).get()
    _ed().set_flow_fields(entry=None if value in (None, "(automatic)") else value)


def save() -> None:
    _ed().save(K.SAVE_MSG.get() or "")
    K.SAVE_MSG.set("")


def overwrite() -> None:
    _ed().overwrite()


def discard() -> None:
    _ed().discard()


def tidy() -> None:
    _ed().tidy()


PROBLEMS_SHOWN = 12   # the problems listed one alert each; the rest behind a toggle


def problem_text(p: Problem, with_severity: bool = False) -> str:
    """One problem as a line: '[code] node message — hint' (the code is one of ours)."""
    where = f"{inert.code(p.node)} " if p.node else ""
    lead = f"{p.severity}: " if with_severity else ""
    return (f"{lead}[{p.code}] {where}{inert.escape(p.message)}"
            + (f" — _{inert.escape(p.hint)}_" if p.hint else ""))
