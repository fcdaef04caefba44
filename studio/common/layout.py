"""Where a flow's nodes go and how its edges are routed: a pure function of the spec.

Layered: a depth-first walk from the entry finds the back-edges (an edge to a node
still on the walk's stack: a loop's way back); without them the graph is acyclic, and each node
sits in the layer of its longest path from a start. Within a layer nodes are ordered by the mean
row of their predecessors (fewer crossings) and the layer is centred. Layers run left to right;
a flow too long to read that way in the canvas (its size in px is the `view` a caller passes: the
canvas takes its height from the window; without one, 540 x 620, a 1366 px window's) runs top to
bottom instead when the layered picture would need a zoom under 0.75, whichever fits larger.

Edges that would run behind nodes get lanes of their own: a back-edge runs in a lane beyond the
whole flow (below it when layers run left to right: down from its source, back along the lane,
up into its target; right of it when they run top to bottom) and a forward edge that skips
layers with a node in its way runs in a lane on the other side. A lane has two corner points;
the editor's canvas draws the edge as one line through them, the replay graph as three pieces
between tiny invisible nodes; both put the label on the lane, so a loop reads as a loop and its
label sits on its own edge.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from flowkit.spec import FlowSpec, Position

X_STEP, Y_STEP = 270.0, 130.0   # left to right: layer and row spacing (canvas units)
TB_X_STEP, TB_Y_STEP = 260.0, 150.0   # top to bottom: row and layer spacing
NODE_W, NODE_H = 220.0, 100.0   # a node's box, as the canvas draws it (three lines)
LANE_GAP = 40.0                 # between the flow and its first lane, and between lanes
VIEW_W, VIEW_H = 540.0, 620.0   # the editor's canvas at 1366 px wide, when no view is given
LEGIBLE_ZOOM = 0.75             # a fit at this zoom or more keeps 14 px text above 10 px


@dataclass(frozen=True)
class Lane:
    """The route of one edge around the nodes: `first` and `second` are its two corners (the
    edge leaves its source towards `first`, runs along the lane to `second`, then into its
    target); `below` (beyond the flow) for a back-edge, on the other side otherwise. The
    `*_in`/`*_out` fields name the corner's sides the pieces meet (top, bottom, left, right)."""

    edge: int
    first: Position
    second: Position
    below: bool
    first_in: str = "top"
    first_out: str = "left"
    second_in: str = "right"
    second_out: str = "top"


@dataclass
class FlowLayout:
    """Node positions (top-left corners), the layer of each node, the indices of the spec's
    back-edges and the lanes of the edges that are routed around the nodes."""

    positions: dict[str, Position]
    layers: dict[str, int]
    back_edges: set[int] = field(default_factory=set)
    lanes: dict[int, Lane] = field(default_factory=dict)
    direction: str = "LR"           # LR: layers left to right; TB: top to bottom

    @property
    def source_side(self) -> str:
        """The side of a node its edges leave from."""
        return "right" if self.direction == "LR" else "bottom"

    @property
    def target_side(self) -> str:
        """The side of a node its edges come in at."""
        return "left" if self.direction == "LR" else "top"

    def width(self) -> float:
        xs = [p.x for p in self.positions.values()]
        return (max(xs) - min(xs) + NODE_W) if xs else 0.0

    def height(self) -> float:
        ys = [p.y for p in self.positions.values()]
        return (max(ys) - min(ys) + NODE_H) if ys else 0.0

    def extent(self) -> tuple[float, float]:
        """(width, height) of the picture, lanes included."""
        xs = [p.x for p in self.positions.values()] + [p.x + NODE_W for p in
                                                       self.positions.values()]
        ys = [p.y for p in self.positions.values()] + [p.y + NODE_H for p in
                                                       self.positions.values()]
        for lane in self.lanes.values():
            xs += [lane.first.x, lane.second.x]
            ys += [lane.first.y, lane.second.y]
        return (max(xs) - min(xs), max(ys) - min(ys)) if xs else (0.0, 0.0)

    def fit_zoom(self, view_w: float = VIEW_W, view_h: float = VIEW_H) -> float:
        """The zoom at which the whole picture fits a view of that size."""
        w, h = self.extent()
        return min(view_w / max(w, 1.0), view_h / max(h, 1.0))


def back_edges(spec: FlowSpec) -> set[int]:
    """Indices of the edges that close a cycle, found by a depth-first walk from the entry (then
    from every node not reached), following edges in the spec's order."""
    ids = [n.id for n in spec.nodes]
    out_edges: dict[str, list[int]] = {n: [] for n in ids}
    for i, e in enumerate(spec.edges):
        if e.source in out_edges and e.target in out_edges:
            out_edges[e.source].append(i)
    entry = spec.entry_node()
    starts = ([entry] if entry in out_edges else []) + ids
    state: dict[str, int] = {}          # 1: on the stack, 2: done
    found: set[int] = set()
    for start in starts:
        if start in state:
            continue
        state[start] = 1
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, k = stack[-1]
            if k < len(out_edges[node]):
                stack[-1] = (node, k + 1)
                i = out_edges[node][k]
                nxt = spec.edges[i].target
                if state.get(nxt) == 1:
                    found.add(i)
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                stack.pop()
    return found


def _layers(spec: FlowSpec, back: set[int]) -> dict[str, int]:
    """Longest-path layer of every node over the forward edges (Kahn's order)."""
    ids = [n.id for n in spec.nodes]
    preds: dict[str, list[str]] = {n: [] for n in ids}
    succs: dict[str, list[str]] = {n: [] for n in ids}
    for i, e in enumerate(spec.edges):
        if i in back or e.source not in preds or e.target not in preds or e.source == e.target:
            continue
        preds[e.target].append(e.source)
        succs[e.source].append(e.target)
    indeg = {n: len(preds[n]) for n in ids}
    layer = {n: 0 for n in ids}
    ready = [n for n in ids if indeg[n] == 0]
    while ready:
        cur = ready.pop(0)
        for nxt in succs[cur]:
            layer[nxt] = max(layer[nxt], layer[cur] + 1)
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    return layer


def layout(spec: FlowSpec, fixed: dict[str, Position] | None = None,
           direction: str | None = None, view: tuple[float, float] | None = None) -> FlowLayout:
    """The layered layout of `spec`; `fixed` positions (a user's moves) win over computed ones.
    Lanes are routed around whatever positions result. `direction` (LR or TB) is chosen, when
    not given, from the flow's shape and the `view` it is drawn in ((width, height) in px, as
    tall as the window lets the canvas be; default VIEW_W x VIEW_H), never from the positions
    computed before, so moving a node never turns the picture."""
    ids = {n.id for n in spec.nodes}
    if direction is None and fixed and ids and ids <= set(fixed):   # placed by hand: as placed
        xs, ys = [fixed[i].x for i in ids], [fixed[i].y for i in ids]
        direction = "LR" if max(xs) - min(xs) >= max(ys) - min(ys) else "TB"
    if direction is None:
        view_w, view_h = view or (VIEW_W, VIEW_H)
        wide = layout(spec, None, "LR").fit_zoom(view_w, view_h)
        if wide >= LEGIBLE_ZOOM or wide >= layout(spec, None, "TB").fit_zoom(view_w, view_h):
            direction = "LR"
        else:
            direction = "TB"
    back = back_edges(spec)
    layer = _layers(spec, back)
    order = {n.id: i for i, n in enumerate(spec.nodes)}
    by_layer: dict[int, list[str]] = {}
    for n in spec.nodes:
        by_layer.setdefault(layer[n.id], []).append(n.id)
    preds: dict[str, list[str]] = {n.id: [] for n in spec.nodes}
    for i, e in enumerate(spec.edges):
        if i not in back and e.target in preds and e.source in preds:
            preds[e.target].append(e.source)
    row: dict[str, float] = {}
    for d in sorted(by_layer):
        members = by_layer[d]

        def bary(nid: str) -> tuple[float, int]:
            placed = [row[p] for p in preds[nid] if p in row]
            return (sum(placed) / len(placed) if placed else float(order[nid])), order[nid]
        members.sort(key=bary)
        for r, nid in enumerate(members):
            row[nid] = r - (len(members) - 1) / 2
    if direction == "TB":
        positions = {nid: Position(x=row[nid] * TB_X_STEP, y=layer[nid] * TB_Y_STEP)
                     for nid in row}
    else:
        positions = {nid: Position(x=layer[nid] * X_STEP, y=row[nid] * Y_STEP) for nid in row}
    positions.update({k: v for k, v in (fixed or {}).items() if k in positions})
    skips = {i for i, e in enumerate(spec.edges) if e.source in layer and e.target in layer
             and layer[e.target] - layer[e.source] > 1}   # only these can pass a node
    lanes = _lanes(spec, positions, back, skips, tb=direction == "TB")
    return FlowLayout(positions=positions, layers=layer, back_edges=back, lanes=lanes,
                      direction=direction)


def _in_the_way(spec: FlowSpec, i: int, pos: dict[str, Position], tb: bool = False) -> bool:
    """Whether a node stands between a forward edge's ends (the straight run would cross it)."""
    e = spec.edges[i]
    a, b = pos[e.source], pos[e.target]
    if tb:
        lo, hi = min(a.x, b.x) - NODE_W, max(a.x, b.x) + NODE_W
        return any(a.y + NODE_H / 2 < p.y < b.y - NODE_H / 2 and lo < p.x < hi
                   for nid, p in pos.items() if nid not in (e.source, e.target))
    lo, hi = min(a.y, b.y) - NODE_H, max(a.y, b.y) + NODE_H
    return any(a.x + NODE_W / 2 < p.x < b.x - NODE_W / 2 and lo < p.y < hi
               for nid, p in pos.items() if nid not in (e.source, e.target))


#: The sides a lane's corners meet (first_in, first_out, second_in, second_out), by
#: (top to bottom?, a back-edge?): a back-edge runs beyond the flow (right of it top to bottom,
#: below it left to right), an edge skipping layers on the other side.
_SIDES: dict[tuple[bool, bool], tuple[str, str, str, str]] = {
    (True, True): ("left", "top", "bottom", "left"),
    (True, False): ("right", "bottom", "top", "right"),
    (False, True): ("top", "left", "right", "top"),
    (False, False): ("bottom", "left", "right", "bottom"),
}
#: How far along the flow a lane's corners sit from its source's start and before its target,
#: by top to bottom?: past the source's box, and a little before the target.
_ENDS: dict[bool, tuple[float, float]] = {True: (NODE_H + 20, 20), False: (NODE_W + 24, 24)}


def _lanes(spec: FlowSpec, pos: dict[str, Position], back: set[int],
           skips: set[int], tb: bool = False) -> dict[int, Lane]:
    """The lanes of the edges routed around the nodes: back-edges (and any edge that goes
    backwards) beyond the flow, edges skipping layers past a node in their way on the other side.
    The widest spans take the outermost lanes, so lanes never cross."""
    if not pos:
        return {}

    def along(p: Position) -> float:     # the flow's direction
        return p.y if tb else p.x

    def across(p: Position) -> float:
        return p.x if tb else p.y

    beyond = max(across(p) for p in pos.values()) + (NODE_W if tb else NODE_H) + LANE_GAP
    before = min(across(p) for p in pos.values()) - LANE_GAP
    n_beyond = n_before = 0
    out, into = _ENDS[tb]
    lanes: dict[int, Lane] = {}
    candidates = [i for i, e in enumerate(spec.edges) if e.source in pos and e.target in pos]
    for i in sorted(candidates, key=lambda i: abs(along(pos[spec.edges[i].source])
                                                  - along(pos[spec.edges[i].target]))):
        e = spec.edges[i]
        s, t = pos[e.source], pos[e.target]
        if i in back or along(t) <= along(s):
            lane, is_back, n_beyond = beyond + n_beyond * LANE_GAP, True, n_beyond + 1
        elif i in skips and _in_the_way(spec, i, pos, tb=tb):
            lane, is_back, n_before = before - n_before * LANE_GAP, False, n_before + 1
        else:
            continue
        first, second = ((Position(x=lane, y=s.y + out), Position(x=lane, y=t.y - into)) if tb
                         else (Position(x=s.x + out, y=lane), Position(x=t.x - into, y=lane)))
        first_in, first_out, second_in, second_out = _SIDES[(tb, is_back)]
        lanes[i] = Lane(i, first, second, below=is_back, first_in=first_in, first_out=first_out,
                        second_in=second_in, second_out=second_out)
    return lanes
