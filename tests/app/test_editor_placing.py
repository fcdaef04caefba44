"""Issue 29 item 1 without a browser: a new node lands clear of every node and edge (lanes and
all) and nothing else moves; a new edge, a deletion or a new entry moves no node either."""
from __future__ import annotations

import pytest

from flowkit import templates
from flowkit.spec import EdgeSpec
from service.workspace import Workspace
from studio.common import layout as flow_layout
from studio.editor import placing
from studio.editor.editor import Editor


def _places(ed: Editor) -> dict[str, tuple[float, float]]:
    return {n["id"]: (n["x"], n["y"]) for n in ed.canvas_picture()["nodes"]}


def _open(ws: Workspace, template: str) -> Editor:
    ws.store.save_flow(templates.load_template(template).model_copy(update={"name": template}),
                       None)
    ed = Editor({}, ws, tab="t", is_open=lambda _: False)
    ed.open(template)
    return ed


@pytest.mark.parametrize("template", ["naive_rag", "self_rag", "ircot", "agent_unirag"])
@pytest.mark.parametrize("select", [None, "first", "last"])
def test_a_new_node_overlaps_nothing_and_moves_nothing(ws: Workspace, template: str,
                                                       select: str | None) -> None:
    ed = _open(ws, template)
    ids = [n.id for n in ed.spec.nodes]
    if select:
        ed.select(ids[0] if select == "first" else ids[-1])
    for _ in range(3):                       # a few in a row: each clear of the ones before
        before = _places(ed)
        nid = ed.add_node("retrieval.bm25")
        after = _places(ed)
        assert {k: after[k] for k in before} == before          # nothing else moved
        spec = ed.spec
        plan = flow_layout.layout(spec, spec.layout)
        boxes = placing.occupied(plan, spec)
        at = plan.positions[nid]
        own = (at.x, at.y, at.x + flow_layout.NODE_W, at.y + flow_layout.NODE_H)
        others = [b for b in boxes if b != own]
        assert len(others) == len(boxes) - 1
        assert placing._clear(at, others), (nid, at)


@pytest.mark.parametrize("template", ["naive_rag", "self_rag", "ircot"])
def test_an_edge_a_deletion_or_an_entry_moves_no_other_node(ws: Workspace, template: str) -> None:
    ed = _open(ws, template)
    extra = ed.add_node("retrieval.bm25")
    first = ed.spec.nodes[0].id
    before = _places(ed)
    ed._take({"kind": "connect", "source": extra, "target": first})   # a new start: layers shift
    assert ed.spec.edges[-1] == EdgeSpec(source=extra, target=first)
    assert _places(ed) == before
    ed.set_flow_fields(entry=extra)
    assert _places(ed) == before
    ed.select(first)
    ed.delete_selected()
    assert _places(ed) == {k: v for k, v in before.items() if k != first}


def test_keep_places_pins_nothing_when_nothing_moves(ws: Workspace) -> None:
    ed = _open(ws, "naive_rag")
    spec = ed.spec
    same = spec.model_copy(update={"description": "other"})
    assert placing.keep_places(spec, same) is same


def test_canvas_paints_each_node_in_its_modules_colour_from_assets(ws: Workspace) -> None:
    from studio.common import assets
    ed = _open(ws, "self_rag")
    fills = {n["id"]: n["bg"] for n in ed.canvas_picture()["nodes"]}
    for node in ed.spec.nodes:
        assert fills[node.id] == assets.module_look(node.operator).colour
    assert len(set(fills.values())) >= 3          # several modules, several colours
