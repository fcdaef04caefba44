"""Read-only graph pictures with streamlit-agraph (vis.js): the path a run took, a knowledge graph.

streamlit-agraph's `agraph()` takes no widget key, so every change would remount the picture;
`draw()` calls its component with a key, so a replay's picture updates in place as the user steps.
The functions that build nodes and edges are plain (testable without a browser).
"""
from __future__ import annotations

import json
from typing import Any

from flowkit.nodes import FINISH
from flowkit.spec import FlowSpec
from flowkit.trace import StepEvent
from studio.common import assets
from studio.common import layout as flow_layout

CURRENT = "#f59e0b"       # the step being shown
VISITED = "#93c5fd"       # nodes already visited before it
FAILED = "#dc2626"        # a step that failed
UNVISITED = "#f3f4f6"
PATH_EDGE = "#2563eb"
PLAIN_EDGE = "#9ca3af"


def _spec(spec: FlowSpec | dict[str, Any]) -> FlowSpec:
    if isinstance(spec, FlowSpec):
        return spec
    return FlowSpec.model_validate({**spec, "layout": spec.get("layout") or {}})


def flow_picture(spec: FlowSpec | dict[str, Any], steps: list[StepEvent],
                 current: int | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """vis.js nodes and edges for a flow with the run's progress up to step `current` marked.

    The current step's node is amber (red when that step failed), nodes visited before it are
    blue, a node that failed earlier is red, and the edges the run took so far are blue and thick.
    """
    spec = _spec(spec)
    shown = steps[:current + 1] if current is not None else []
    cur = shown[-1] if shown else None
    visited = {s.node_id for s in shown}
    failed = {s.node_id for s in shown if s.error and not s.error.startswith("stopped:")}
    plan = flow_layout.layout(spec)      # the computed layout: loops read as loops
    half_w, half_h = flow_layout.NODE_W / 2, flow_layout.NODE_H / 2
    pos = {k: p.model_copy(update={"x": p.x + half_w, "y": p.y + half_h})   # vis.js: centres
           for k, p in plan.positions.items()}
    nodes: list[dict[str, Any]] = []
    for n in spec.nodes:
        mod = assets.module_look(n.operator)
        if n.id in failed:
            fill = FAILED
        elif cur is not None and n.id == cur.node_id:
            fill = CURRENT
        elif n.id in visited:
            fill = VISITED
        else:
            fill = mod.colour if mod.module else UNVISITED
        is_cur = cur is not None and n.id == cur.node_id
        visits = sum(1 for s in shown if s.node_id == n.id)
        label = f"{n.label or n.id}\n{n.operator}" + (f"\n×{visits}" if visits > 1 else "")
        nodes.append({
            "id": n.id, "label": label, "shape": "box", "x": pos[n.id].x, "y": pos[n.id].y,
            "title": f"{n.id} · {n.operator} ({mod.title})",
            "color": {"background": fill, "border": "#111827" if is_cur else mod.accent},
            "borderWidth": 3 if is_cur else 1, "margin": 10,
            "widthConstraint": {"minimum": flow_layout.NODE_W - 30,
                                "maximum": flow_layout.NODE_W},
            "font": {"color": "#ffffff" if n.id in failed else "#111827", "size": 18,
                     "multi": False}})
    if any(s.node_id == FINISH for s in shown):
        right = max((p.x for p in pos.values()), default=0.0) + 260.0
        is_cur = cur is not None and cur.node_id == FINISH
        nodes.append({"id": FINISH, "label": "finish\n(after a limit)", "shape": "box",
                      "x": right, "y": 0.0, "title": "the engine's finishing step",
                      "color": {"background": CURRENT if is_cur else VISITED,
                                "border": "#111827"}, "borderWidth": 3 if is_cur else 1})
    arrivals = _arrivals(shown, {(e.source, e.target) for e in spec.edges})
    taken = {a for a in arrivals if a is not None}
    into_current = arrivals[-1] if arrivals else None
    edges: list[dict[str, Any]] = []
    for i, e in enumerate(spec.edges):
        on_path = (e.source, e.target) in taken
        look = {"color": PATH_EDGE if on_path else PLAIN_EDGE,
                "width": 5 if (e.source, e.target) == into_current else 3 if on_path else 1.5,
                "dashes": not on_path, "smooth": {"enabled": False},
                "font": {"size": 16, "strokeWidth": 4, "align": "horizontal"}}
        lane = plan.lanes.get(i)
        if lane is None or e.source not in pos or e.target not in pos:
            edges.append({"from": e.source, "to": e.target, "label": e.label or "",
                          "arrows": "to", **look})
            continue
        # around the nodes: down (or up) from the source, along the lane, into the target
        a, b = f"{e.source}->{e.target}~a{i}", f"{e.source}->{e.target}~b{i}"
        if plan.direction == "TB":   # beside the flow: across, along the lane, back across
            corners = ((a, lane.first.x, pos[e.source].y), (b, lane.first.x, pos[e.target].y))
        else:                        # below (or above) it: down, along, up
            corners = ((a, pos[e.source].x, lane.first.y), (b, pos[e.target].x, lane.first.y))
        for cid, x, y in corners:
            nodes.append({"id": cid, "label": "", "shape": "dot", "size": 1, "x": x,
                          "y": y, "physics": False, "fixed": True,
                          "color": {"background": "rgba(0,0,0,0)", "border": "rgba(0,0,0,0)"},
                          "chosen": False})
        edges.append({"from": e.source, "to": a, "label": "", **look})
        edges.append({"from": a, "to": b, "label": e.label or "", **look})
        edges.append({"from": b, "to": e.target, "label": "", "arrows": "to", **look})
    return nodes, edges


def picture_height(spec: FlowSpec | dict[str, Any], width_px: float = 580.0) -> int:
    """Pixels high for the replay picture of a flow drawn `width_px` wide: tall enough that a
    long (top to bottom) flow is drawn at a legible zoom, 300 to 600."""
    w, h = flow_layout.layout(_spec(spec)).extent()
    zoom = min(1.0, width_px / max(w + 60.0, 1.0))
    return int(max(300, min(600, (h + 60.0) * zoom)))


def _arrivals(shown: list[StepEvent],
              edges: set[tuple[str, str]]) -> list[tuple[str, str] | None]:
    """For each step, the edge the run came along: from the latest earlier step whose node has an
    edge to this step's node (None for the first step, or a fork's start)."""
    out: list[tuple[str, str] | None] = []
    for j, b in enumerate(shown):
        came = None
        for a in reversed(shown[:j]):
            if (a.node_id, b.node_id) in edges:
                came = (a.node_id, b.node_id)
                break
        out.append(came)
    return out


def kg_picture(graph: Any, max_nodes: int = 60, focus: str = "",
               edge_labels: int = 80) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """vis.js nodes and edges for a networkx knowledge graph: its `max_nodes` best-connected
    entities (a full index would be unreadable), or, with `focus`, the entities whose label
    contains it and their neighbours. Relations are written on the edges when there are at most
    `edge_labels` of them (else they show on hover)."""
    degree = dict(graph.degree())
    label = {n: str(graph.nodes[n].get("label") or n) for n in graph.nodes}
    if focus.strip():
        hits = [n for n in graph.nodes if focus.strip().lower() in label[n].lower()]
        near = set(hits)
        for n in hits:
            near.update(graph.successors(n) if graph.is_directed() else graph.neighbors(n))
            if graph.is_directed():
                near.update(graph.predecessors(n))
        keep = sorted(near, key=lambda n: (n not in hits, -degree[n], str(n)))[:max_nodes]
    else:
        hits = []
        keep = sorted(degree, key=lambda n: (-degree[n], str(n)))[:max_nodes]
    keep_set = set(keep)
    top = max(degree.values(), default=1) or 1
    nodes = [{"id": str(n), "label": label[n], "shape": "dot",
              "size": 8 + 22 * degree[n] / top, "title": f"{label[n]} ({degree[n]} links)",
              "color": "#f59e0b" if n in hits else "#60a5fa"} for n in keep]
    pairs: dict[tuple[Any, Any], list[str]] = {}
    for a, b, data in graph.edges(data=True):
        if a in keep_set and b in keep_set:
            rel = str(data.get("relation", ""))
            pairs.setdefault((a, b), [])
            if rel and rel not in pairs[(a, b)]:
                pairs[(a, b)].append(rel)
    show = len(pairs) <= edge_labels
    edges = [{"from": str(a), "to": str(b), "title": "; ".join(rels),
              "label": "; ".join(rels)[:30] if show else "", "arrows": "to",
              "color": "#9ca3af", "font": {"size": 10}} for (a, b), rels in pairs.items()]
    return nodes, edges


def draw(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], key: str, height: int = 360,
         physics: bool = False, hierarchical: bool = False) -> Any:
    """Draw with the streamlit-agraph component under a stable key (updated in place)."""
    from streamlit_agraph import _agraph  # the component itself: it takes a key, agraph() does not

    config: dict[str, Any] = {
        "height": f"{height}px", "width": "100%", "autoResize": True,
        "physics": {"enabled": physics, "solver": "forceAtlas2Based",
                    "forceAtlas2Based": {"gravitationalConstant": -90, "springLength": 110,
                                         "avoidOverlap": 0.4},
                    "stabilization": {"enabled": True, "iterations": 250}},
        "layout": {"hierarchical": {"enabled": hierarchical}},
        "interaction": {"dragNodes": True, "zoomView": True, "dragView": True, "hover": True},
        "edges": {"font": {"size": 11, "align": "top"}},
        "nodes": {"font": {"size": 14}},
    }
    data = {"nodes": nodes, "edges": edges}
    return _agraph(data=json.dumps(data), config=json.dumps(config), key=key, default=None)
