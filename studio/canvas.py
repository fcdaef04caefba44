"""FlowSpec <-> streamlit-flow canvas state.

`build_state` draws a spec (labels, operator, validation marks, edge labels); `apply_state` reads
back what the user did on the canvas (moved nodes, new edges, deletions through the node/edge
menu) into a new FlowSpec. `signature` tells whether two canvas states differ in anything but
positions, so the page only pushes a new state to the browser when the picture really changes.
"""
from __future__ import annotations

import time
from typing import Any

from streamlit_flow.elements import StreamlitFlowEdge, StreamlitFlowNode
from streamlit_flow.state import StreamlitFlowState

from flowkit import registry
from flowkit.errors import FlowkitError, Problem
from flowkit.spec import EdgeSpec, FlowSpec, NodeSpec, Position

from . import layout as flow_layout
from .layout import X_STEP, Y_STEP  # noqa: F401  (re-exported: the editor places new nodes)

LANE = "~"            # ids of a routed edge's pieces and corner points carry it; spec ids cannot
LANE_STROKE = "#7c3aed"      # a loop's way back
SKIP_STROKE = "#64748b"      # a forward edge routed around the nodes in its way

MODULE_COLOURS: dict[str, str] = {
    "indexing": "#f3e8ff", "pre_retrieval": "#e0f2fe", "retrieval": "#dcfce7",
    "post_retrieval": "#fef9c3", "generation": "#ffe4e6", "orchestration": "#e5e7eb",
}
ERROR_BORDER = "2px solid #dc2626"
WARNING_BORDER = "2px dashed #d97706"
PLAIN_BORDER = "1px solid #4b5563"


def now_ms() -> int:
    return int(time.time() * 1000)


def route_labels(node: NodeSpec) -> tuple[str, ...]:
    """The edge labels a router/judge node can choose; () for any other node."""
    cls = registry.get(node.operator)
    if cls is None or cls.kind not in ("router", "judge"):
        return ()
    try:
        return tuple(cls(node.id, cls.Params.model_validate(node.params)).route_labels())
    except (ValueError, TypeError, FlowkitError):   # invalid params: the validation panel says why
        return tuple(cls.routes)


def edge_ids(spec: FlowSpec) -> list[str]:
    """Stable canvas ids for the spec's edges, in order: 'src->dst' (with '#n' for repeats)."""
    seen: dict[str, int] = {}
    out = []
    for e in spec.edges:
        base = f"{e.source}->{e.target}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else f"{base}#{n + 1}")
    return out


def auto_layout(spec: FlowSpec) -> dict[str, Position]:
    """Every node's position: the layout's (where the user put it), else studio/layout.py's."""
    return flow_layout.layout(spec, spec.layout).positions


def base_id(canvas_id: str) -> str:
    """The spec-level id behind a canvas id (a routed edge's pieces share their edge's id)."""
    return canvas_id.split(LANE, 1)[0]


def _node_content(node: NodeSpec, marks: list[Problem]) -> str:
    title = node.label or node.id
    flag = ""
    if any(p.severity == "error" for p in marks):   # plain text: no emoji font needed
        flag = "(error) "
    elif marks:
        flag = "(warning) "
    sub = f"{node.id}  \n" if node.label and node.label != node.id else ""
    return f"{flag}**{title}**  \n{sub}`{node.operator}`"   # one line each: no odd wrapping


def _node_style(node: NodeSpec, marks: list[Problem]) -> dict[str, Any]:
    module = node.operator.split(".")[0]
    border = PLAIN_BORDER
    if any(p.severity == "error" for p in marks):
        border = ERROR_BORDER
    elif marks:
        border = WARNING_BORDER
    return {"background": MODULE_COLOURS.get(module, "#ffffff"), "border": border,
            "borderRadius": "6px", "fontSize": "14px", "padding": "6px 8px",
            "width": f"{flow_layout.NODE_W:.0f}px"}


def _corner(cid: str, at: Position, target: str, source: str) -> StreamlitFlowNode:
    """An invisible point a routed edge bends around (not selectable, not connectable)."""
    return StreamlitFlowNode(
        id=cid, pos=(at.x, at.y), data={"content": ""}, node_type="default",
        source_position=source, target_position=target, draggable=False, selectable=False,
        connectable=False, deletable=True,
        style={"width": "2px", "height": "2px", "minHeight": "2px", "padding": 0, "border": "none",
               "background": "transparent", "opacity": 0, "pointerEvents": "none"})


def _edge_problem_index(problems: list[Problem]) -> set[int]:
    out = set()
    for p in problems:
        if p.field and p.field.startswith("edges[") and p.severity == "error":
            try:
                out.add(int(p.field[6:p.field.index("]")]))
            except ValueError:
                continue
    return out


def build_state(spec: FlowSpec, problems: list[Problem], selected: str | None = None,
                timestamp: int | None = None) -> StreamlitFlowState:
    """The canvas picture of a spec. Every node and edge is deletable (GUIDE rule 3)."""
    by_node: dict[str, list[Problem]] = {}
    for p in problems:
        if p.node:
            by_node.setdefault(p.node, []).append(p)
    plan = flow_layout.layout(spec, spec.layout)
    pos = plan.positions
    ids = {n.id for n in spec.nodes}
    nodes = [StreamlitFlowNode(
        id=n.id, pos=(pos[n.id].x, pos[n.id].y),
        data={"content": _node_content(n, by_node.get(n.id, []))}, node_type="default",
        source_position=plan.source_side, target_position=plan.target_side,
        selected=(n.id == selected),
        draggable=True, selectable=True, connectable=True, deletable=True,
        style=_node_style(n, by_node.get(n.id, []))) for n in spec.nodes]
    bad_edges = _edge_problem_index(problems)
    edges = []
    for i, (e, eid) in enumerate(zip(spec.edges, edge_ids(spec))):
        if e.source not in ids or e.target not in ids:
            continue   # GUIDE rule 3: never hand the canvas an edge whose node is gone
        red = i in bad_edges
        look = dict(selected=(eid == selected), deletable=True, focusable=True,
                    label_style={"fontSize": "14px", "fontWeight": 600},
                    label_bg_style={"fill": "#fff7ed" if not red else "#fee2e2"})
        lane = plan.lanes.get(i)
        if lane is None:
            edges.append(StreamlitFlowEdge(
                id=eid, source=e.source, target=e.target, edge_type="default",
                marker_end={"type": "arrowclosed"}, label=e.label or "",
                label_show_bg=bool(e.label),
                style={"stroke": "#dc2626", "strokeWidth": 2} if red else {}, **look))
            continue
        # routed around the nodes: source -> corner a -> along the lane -> corner b -> target
        a, b = f"{eid}{LANE}a", f"{eid}{LANE}b"
        nodes.append(_corner(a, lane.first, target=lane.first_in, source=lane.first_out))
        nodes.append(_corner(b, lane.second, target=lane.second_in, source=lane.second_out))
        colour = LANE_STROKE if i in plan.back_edges else SKIP_STROKE
        stroke = {"stroke": "#dc2626" if red else colour, "strokeWidth": 2}
        edges.append(StreamlitFlowEdge(id=eid, source=e.source, target=a, edge_type="smoothstep",
                                       style=stroke, **look))
        edges.append(StreamlitFlowEdge(id=f"{eid}{LANE}lane", source=a, target=b,
                                       edge_type="straight", label=e.label or "",
                                       label_show_bg=bool(e.label), style=stroke, **look))
        edges.append(StreamlitFlowEdge(id=f"{eid}{LANE}in", source=b, target=e.target,
                                       edge_type="smoothstep", marker_end={"type": "arrowclosed",
                                                                           "color": stroke["stroke"]},
                                       style=stroke, **look))
    return StreamlitFlowState(nodes=nodes, edges=edges, selected_id=selected,
                              timestamp=timestamp if timestamp is not None else now_ms())


def signature(state: StreamlitFlowState) -> tuple[Any, ...]:
    """What the canvas shows apart from the nodes' positions and the selection (the corner
    points of routed edges count: they follow the nodes)."""
    nodes = tuple((n.id, str(n.data.get("content")), tuple(sorted((n.style or {}).items())),
                   tuple(sorted(n.position.items())) if LANE in n.id else ())
                  for n in state.nodes)
    edges = tuple((e.id, e.source, e.target, e.label or "",
                   tuple(sorted((e.style or {}).items()))) for e in state.edges)
    return nodes, edges


def _unused_route(node: NodeSpec, edges: list[EdgeSpec]) -> str | None:
    labels = route_labels(node)
    used = {e.label for e in edges if e.source == node.id}
    return next((lb for lb in labels if lb not in used), labels[0] if labels else None)


NEW_EDGE_PREFIX = "st-flow-edge_"


def apply_state(spec: FlowSpec, state: StreamlitFlowState) -> FlowSpec:
    """The spec after the user's canvas edits: moved nodes and edges drawn by dragging.

    Deletions happen through the page's button only, so a node or edge missing from the canvas
    state is not taken as deleted (the state may predate the page's last change). A new edge out
    of a router or judge gets the first of its route labels not yet wired.
    """
    ids = {n.id for n in spec.nodes}
    current = auto_layout(spec)
    layout = dict(spec.layout)
    for cn in state.nodes:
        if cn.id not in ids:
            continue
        x, y = float(cn.position.get("x", 0.0)), float(cn.position.get("y", 0.0))
        old = current[cn.id]
        if abs(old.x - x) > 0.5 or abs(old.y - y) > 0.5:
            layout[cn.id] = Position(x=round(x, 1), y=round(y, 1))
    edges = list(spec.edges)
    pairs = {(e.source, e.target) for e in edges}
    by_id = {n.id: n for n in spec.nodes}
    for ce in state.edges:
        if not ce.id.startswith(NEW_EDGE_PREFIX) or ce.source not in ids or ce.target not in ids:
            continue
        if (ce.source, ce.target) in pairs:
            continue
        pairs.add((ce.source, ce.target))
        edges.append(EdgeSpec(source=ce.source, target=ce.target,
                              label=_unused_route(by_id[ce.source], edges)))
    return spec.model_copy(update={"edges": edges, "layout": layout})


def in_step(spec: FlowSpec, state: StreamlitFlowState) -> bool:
    """Whether the canvas shows exactly the spec's nodes and edges (ids)."""
    return ({n.id for n in state.nodes if LANE not in n.id} == {n.id for n in spec.nodes}
            and {base_id(e.id) for e in state.edges} == set(edge_ids(spec)))


def selection_id(spec: FlowSpec, state: StreamlitFlowState) -> str | None:
    """The canvas's selected id in the spec's terms (a new edge's id becomes 'src->dst')."""
    sel = state.selected_id
    if not sel or not sel.startswith(NEW_EDGE_PREFIX):
        return base_id(sel) if sel else sel
    for ce in state.edges:
        if ce.id == sel:
            for eid, e in zip(edge_ids(spec), spec.edges):
                if (e.source, e.target) == (ce.source, ce.target):
                    return eid
    return None


def find_edge(spec: FlowSpec, edge_id: str) -> tuple[int, EdgeSpec] | None:
    """The spec edge behind a canvas edge id (ours, or 'st-flow-edge_src-dst' for a new one)."""
    edge_id = base_id(edge_id)
    for i, (eid, e) in enumerate(zip(edge_ids(spec), spec.edges)):
        if eid == edge_id:
            return i, e
    return None
