"""FlowSpec <-> the editor canvas (studio/canvas_ui).

`picture` draws a spec as plain data for the canvas: each node's title, id, operator, colours (its
module's fill from assets/modules.json, as the replay graph paints it) and
validation mark and breakpoints (a red dot before and/or after it: the draft's, service.drafts),
each edge's label and colour, and the lane of an edge routed around the nodes.
`apply_moves` and `apply_connect` turn what the user did on the canvas (events, see
studio/canvas_ui) into a new FlowSpec. Everything else (deletion, labels, params) happens in
Python, through the page's widgets.
"""
from __future__ import annotations

from typing import Any, TypedDict

from flowkit import registry
from flowkit.errors import FlowkitError, Problem
from flowkit.spec import EdgeSpec, FlowSpec, NodeSpec, Position
from service.drafts import node_marks
from studio.common import assets
from studio.common import layout as flow_layout
from studio.common.layout import X_STEP, Y_STEP  # noqa: F401  (re-exported: the editor places new nodes)

LANE_STROKE = "#7c3aed"      # a loop's way back
SKIP_STROKE = "#64748b"      # a forward edge routed around the nodes in its way
PLAIN_STROKE = "#94a3b8"     # any other edge
ERROR_STROKE = "#dc2626"     # an edge with an error

ERROR_BORDER = "2px solid #dc2626"
WARNING_BORDER = "2px dashed #d97706"
PLAIN_BORDER = "1px solid #4b5563"


class NodePicture(TypedDict):
    """One node as the canvas draws it (x, y: its top-left corner, canvas units)."""

    id: str
    x: float
    y: float
    title: str
    sub: str
    op: str
    flag: str        # "error", "warning" or ""
    bg: str
    border: str
    bp: str          # breakpoints: "before", "after", "both" or ""
    bpNote: str      # the breakpoints' texts, for the dots' tooltips


class EdgePicture(TypedDict):
    """One edge; `lane` is the two corner points of its route around the nodes, or None."""

    id: str
    source: str
    target: str
    label: str
    colour: str
    red: bool
    lane: list[list[float]] | None


class Picture(TypedDict):
    """What the canvas shows. `rev` changes whenever anything but `selected` does."""

    rev: int
    nodes: list[NodePicture]
    edges: list[EdgePicture]
    selected: str | None
    sourceSide: str
    targetSide: str
    nodeWidth: float


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


View = tuple[float, float] | None   # the canvas's (width, height) in px; None: not known yet


def auto_layout(spec: FlowSpec, view: View = None) -> dict[str, Position]:
    """Every node's position: the layout's (where the user put it), else studio/layout.py's
    for a canvas of `view` px."""
    return flow_layout.layout(spec, spec.layout, view=view).positions


def direction_of(spec: FlowSpec, view: View = None) -> str:
    """The way the layout runs `spec`'s layers (LR or TB) in a canvas of `view` px."""
    return flow_layout.layout(spec, spec.layout, view=view).direction


def _bp(sides: dict[str, list[str]]) -> str:
    before, after = bool(sides.get("before")), bool(sides.get("after"))
    return "both" if before and after else "before" if before else "after" if after else ""


def _node_picture(node: NodeSpec, at: Position, marks: list[Problem],
                  bps: dict[str, list[str]] | None = None) -> NodePicture:
    flag, border = "", PLAIN_BORDER
    if any(p.severity == "error" for p in marks):     # plain text: no emoji font needed
        flag, border = "error", ERROR_BORDER
    elif marks:
        flag, border = "warning", WARNING_BORDER
    return NodePicture(id=node.id, x=at.x, y=at.y, title=node.label or node.id,
                       sub=node.id if node.label and node.label != node.id else "",
                       op=node.operator, flag=flag, bg=assets.module_look(node.operator).colour,
                       border=border, bp=_bp(bps or {}),
                       bpNote=", ".join(t for side in (bps or {}).values() for t in side))


def _edge_problem_index(problems: list[Problem]) -> set[int]:
    out = set()
    for p in problems:
        if p.field and p.field.startswith("edges[") and p.severity == "error":
            try:
                out.add(int(p.field[6:p.field.index("]")]))
            except ValueError:
                continue
    return out


def picture(spec: FlowSpec, problems: list[Problem], selected: str | None = None,
            rev: int = 0, breakpoints: list[str] | None = None, view: View = None,
            direction: str | None = None) -> Picture:
    """The canvas picture of a spec: nodes where the layout puts them (or the user did) in a
    canvas of `view` px, its layers running `direction` (LR, TB; None: the layout's choice),
    edges whose node is gone left out (GUIDE rule 3), loops and skips routed along lanes; the
    nodes that hold one of `breakpoints` (the draft's) carry its red dot."""
    bps = node_marks(breakpoints or [])
    by_node: dict[str, list[Problem]] = {}
    for p in problems:
        if p.node:
            by_node.setdefault(p.node, []).append(p)
    plan = flow_layout.layout(spec, spec.layout, direction=direction, view=view)
    nodes = [_node_picture(n, plan.positions[n.id], by_node.get(n.id, []), {str(k): v for k, v in bps.get(n.id, {}).items()})
             for n in spec.nodes]
    ids = {n.id for n in spec.nodes}
    bad = _edge_problem_index(problems)
    edges: list[EdgePicture] = []
    for i, (e, eid) in enumerate(zip(spec.edges, edge_ids(spec))):
        if e.source not in ids or e.target not in ids:
            continue
        lane = plan.lanes.get(i)
        colour = PLAIN_STROKE if lane is None else (
            LANE_STROKE if i in plan.back_edges else SKIP_STROKE)
        edges.append(EdgePicture(
            id=eid, source=e.source, target=e.target, label=e.label or "", colour=colour,
            red=i in bad, lane=None if lane is None else [[lane.first.x, lane.first.y],
                                                          [lane.second.x, lane.second.y]]))
    return Picture(rev=rev, nodes=nodes, edges=edges, selected=selected,
                   sourceSide=plan.source_side, targetSide=plan.target_side,
                   nodeWidth=flow_layout.NODE_W)


def same_drawing(a: Picture | None, b: Picture | None) -> bool:
    """Whether two pictures draw the same thing (the revision and the selection aside)."""
    if a is None or b is None:
        return a is b
    keys = ("nodes", "edges", "sourceSide", "targetSide", "nodeWidth")
    return all(a[k] == b[k] for k in keys)   # type: ignore[literal-required]


def _unused_route(node: NodeSpec, edges: list[EdgeSpec]) -> str | None:
    labels = route_labels(node)
    used = {e.label for e in edges if e.source == node.id}
    return next((lb for lb in labels if lb not in used), labels[0] if labels else None)


def size_of(value: Any) -> float | None:
    """A size the browser reported, in px (between 1 and 10,000), else None."""
    n = _number(value)
    return n if n is not None and 1 <= n <= 10_000 else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if abs(value) < 1e7 else None


def apply_moves(spec: FlowSpec, moves: Any) -> FlowSpec:
    """The spec with the moved nodes where the user dropped them ({id: [x, y]}); ids the spec
    lacks and malformed entries are ignored (the event came from the browser)."""
    if not isinstance(moves, dict):
        return spec
    ids = {n.id for n in spec.nodes}
    layout = dict(spec.layout)
    for nid, xy in moves.items():
        if nid not in ids or not isinstance(xy, list | tuple) or len(xy) != 2:
            continue
        x, y = _number(xy[0]), _number(xy[1])
        if x is not None and y is not None:
            layout[nid] = Position(x=round(x, 1), y=round(y, 1))
    if layout == spec.layout:
        return spec
    return spec.model_copy(update={"layout": layout})


def apply_connect(spec: FlowSpec, source: Any, target: Any,
                  label: Any = None) -> tuple[FlowSpec, str | None]:
    """The spec with a new edge source -> target, and the new edge's canvas id. A router's or
    judge's new edge gets `label` when it is one of its route labels (the side panel's "Connect
    to" form picks one), else the first of them not yet wired (a drawn edge). Unknown nodes or an
    edge the spec already has change nothing (id None)."""
    by_id = {n.id: n for n in spec.nodes}
    if not isinstance(source, str) or not isinstance(target, str) or source not in by_id or (
            target not in by_id):
        return spec, None
    if any((e.source, e.target) == (source, target) for e in spec.edges):
        return spec, None
    routes = route_labels(by_id[source])
    chosen = label if isinstance(label, str) and label in routes else _unused_route(
        by_id[source], list(spec.edges))
    edges = [*spec.edges, EdgeSpec(source=source, target=target, label=chosen)]
    new = spec.model_copy(update={"edges": edges})
    return new, edge_ids(new)[-1]


def connect_targets(spec: FlowSpec, source: str) -> list[str]:
    """The nodes a new edge out of `source` can go to: every other node it has no edge to yet
    (what `apply_connect` would refuse is not offered)."""
    wired = {e.target for e in spec.edges if e.source == source}
    return [n.id for n in spec.nodes if n.id != source and n.id not in wired]


def find_edge(spec: FlowSpec, edge_id: str) -> tuple[int, EdgeSpec] | None:
    """The spec edge behind a canvas edge id ('src->dst', '#n' for repeats)."""
    for i, (eid, e) in enumerate(zip(edge_ids(spec), spec.edges)):
        if eid == edge_id:
            return i, e
    return None
