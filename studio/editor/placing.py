"""Where the editor puts things so that what the user sees stays put.

`free_spot` finds a place for a new node that overlaps no node and no edge (nor an edge's lane or
label), near where the user is working. `keep_places` pins the nodes an edit would otherwise
move: the layout (studio/common/layout.py) places every node the user has not placed by hand, so
a new edge, node or entry could shift them all; after `keep_places` only what the edit added
moves in.
"""
from __future__ import annotations

from collections.abc import Iterable

from flowkit.spec import FlowSpec, Position
from studio.common import layout as flow_layout

Box = tuple[float, float, float, float]       # x0, y0, x1, y1 (canvas units)

MARGIN = 24.0          # clearance around a new node: an edge's label and a handle fit in it
ROWS = 40              # how far down (in half rows) and across (in layers) the search goes
COLUMNS = (0, 1, -1, 2, -2, 3)


def _segments(points: list[tuple[float, float]]) -> Iterable[Box]:
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        yield min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def occupied(plan: flow_layout.FlowLayout, spec: FlowSpec) -> list[Box]:
    """The boxes the drawing of `spec` covers: each node, and each edge as the bounding boxes
    of its pieces (a plain edge's curve stays in the box of its two ends; a routed edge runs
    along its lane through its two corners, see canvas_ui's geometry.js)."""
    w, h = flow_layout.NODE_W, flow_layout.NODE_H
    pos = plan.positions
    boxes: list[Box] = [(p.x, p.y, p.x + w, p.y + h) for p in pos.values()]
    lr = plan.direction != "TB"
    for i, e in enumerate(spec.edges):
        if e.source not in pos or e.target not in pos:
            continue
        s, t = pos[e.source], pos[e.target]
        out = (s.x + w, s.y + h / 2) if lr else (s.x + w / 2, s.y + h)
        into = (t.x, t.y + h / 2) if lr else (t.x + w / 2, t.y)
        lane = plan.lanes.get(i)
        if lane is None:
            boxes.extend(_segments([out, into]))
            continue
        a, b = (lane.first.x, lane.first.y), (lane.second.x, lane.second.y)
        along = abs(a[0] - b[0]) >= abs(a[1] - b[1])
        turn_in = (a[0], out[1]) if along else (out[0], a[1])
        turn_out = (b[0], into[1]) if along else (into[0], b[1])
        boxes.extend(_segments([out, turn_in, a, b, turn_out, into]))
    return boxes


def _clear(at: Position, boxes: list[Box]) -> bool:
    x0, y0 = at.x - MARGIN, at.y - MARGIN
    x1, y1 = at.x + flow_layout.NODE_W + MARGIN, at.y + flow_layout.NODE_H + MARGIN
    return not any(bx0 < x1 and x0 < bx1 and by0 < y1 and y0 < by1
                   for bx0, by0, bx1, by1 in boxes)


def candidates(anchor: Position, boxes: list[Box]) -> list[Position]:
    """Places to try, nearest first: below `anchor` in its column, then in the columns beside
    it; last, below everything (always free)."""
    step_x, step_y = flow_layout.X_STEP, flow_layout.Y_STEP / 2
    out = [Position(x=anchor.x + c * step_x, y=anchor.y + r * step_y)
           for r in range(2, ROWS) for c in COLUMNS]
    out.sort(key=lambda p: abs(p.y - anchor.y) / step_y + 3 * abs(p.x - anchor.x) / step_x)
    bottom = max((b[3] for b in boxes), default=anchor.y) + 2 * MARGIN
    out.append(Position(x=anchor.x, y=bottom))
    return out


def free_spot(spec: FlowSpec, new_id: str, anchor: Position | None,
              view: tuple[float, float] | None = None) -> tuple[FlowSpec, Position]:
    """`spec` with a node `new_id` (already in spec.nodes, not yet placed) put where its box
    overlaps no node and no edge of the drawing (laid out for a canvas of `view` px), near
    below `anchor`; the other nodes keep their places. Returns the new spec and the new node's
    place."""
    old = spec.model_copy(update={"nodes": [n for n in spec.nodes if n.id != new_id]})
    before = flow_layout.layout(old, old.layout, view=view)
    if anchor is None:
        anchor = max(before.positions.values(), key=lambda p: (p.x, -p.y), default=None)
    if anchor is None:
        at = Position()
        return spec.model_copy(update={"layout": {**spec.layout, new_id: at}}), at
    boxes = occupied(before, old)
    placed = spec
    for at in candidates(anchor, boxes):
        if not _clear(at, boxes):
            continue
        placed = keep_places(old, spec.model_copy(update={"layout": {**spec.layout, new_id: at}}),
                             view)
        after = flow_layout.layout(placed, placed.layout, view=view)   # lanes may move for the new node
        others = occupied(after, placed)[len(after.positions):]   # the edges only
        if _clear(at, others):
            return placed, at
    return placed, placed.layout[new_id]


def keep_places(old: FlowSpec, new: FlowSpec,
                view: tuple[float, float] | None = None) -> FlowSpec:
    """`new` with every node of `old` that the layout (for a canvas of `view` px) would move
    pinned where `old` showed it (nodes placed by hand stay as they are); unchanged when
    nothing would move."""
    before = flow_layout.layout(old, old.layout, view=view)
    after = flow_layout.layout(new, new.layout, view=view)
    ids = {n.id for n in new.nodes}
    turned = after.direction != before.direction
    pins = {nid: p for nid, p in before.positions.items()
            if nid in ids and nid not in new.layout
            and (turned or after.positions.get(nid) != p)}
    if not pins:
        return new
    return new.model_copy(update={"layout": {**new.layout, **pins}})
