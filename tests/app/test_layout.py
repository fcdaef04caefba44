"""studio/layout.py: layers, back-edges found from the entry, lanes around the nodes."""
from __future__ import annotations

from flowkit import templates
from flowkit.testing import flow
from studio.common.layout import LEGIBLE_ZOOM, NODE_H, NODE_W, X_STEP, back_edges, layout
from studio.editor import canvas


def _edge(spec, src: str, dst: str) -> int:
    return next(i for i, e in enumerate(spec.edges) if (e.source, e.target) == (src, dst))


def test_ircot_loop_is_a_back_edge_in_a_lane_below() -> None:
    spec = templates.load_template("ircot")
    plan = layout(spec, direction="LR")
    back = _edge(spec, "enough", "retrieve")
    assert plan.back_edges == {back}
    assert [plan.layers[n] for n in ("retrieve", "reason", "enough", "read")] == [0, 1, 2, 3]
    lane = plan.lanes[back]
    lowest = max(p.y for p in plan.positions.values()) + NODE_H
    assert lane.below and lane.first.y > lowest and lane.second.y == lane.first.y
    assert lane.first.x > plan.positions["enough"].x + NODE_W       # leaves right of the judge
    assert lane.second.x < plan.positions["retrieve"].x              # enters left of retrieve
    assert _edge(spec, "enough", "read") not in plan.lanes          # plain forward edge


def test_agent_unirag_done_edge_goes_around_search_and_reflect() -> None:
    spec = templates.load_template("agent_unirag")
    plan = layout(spec, direction="LR")
    assert plan.back_edges == {_edge(spec, "reflect", "plan")}
    done = _edge(spec, "plan", "final")
    # 'final' is the next layer after plan, in a row of its own: the done edge runs straight
    # to it, past no node, and its label does not sit on the continue edge
    assert plan.layers["final"] == plan.layers["search"] == 1
    assert plan.positions["final"].y != plan.positions["search"].y
    assert done not in plan.lanes


def test_self_rag_layers_and_a_single_loop() -> None:
    spec = templates.load_template("self_rag")
    plan = layout(spec, direction="LR")
    assert plan.back_edges == {_edge(spec, "rewrite", "search")}
    assert plan.layers["decide"] == 0 and plan.layers["search"] == plan.layers["direct"] == 1
    assert plan.positions["search"].y != plan.positions["direct"].y    # one layer, two rows
    assert plan.width() == max(plan.layers.values()) * X_STEP + NODE_W
    # too long to read left to right in a laptop's canvas: it runs top to bottom instead
    assert plan.fit_zoom() < LEGIBLE_ZOOM
    tall = layout(spec)
    assert tall.direction == "TB" and tall.fit_zoom() > 2 * plan.fit_zoom()
    assert (tall.source_side, tall.target_side) == ("bottom", "top")
    lane = tall.lanes[_edge(spec, "rewrite", "search")]
    rightmost = max(p.x for p in tall.positions.values()) + NODE_W
    assert lane.first.x > rightmost and lane.first.x == lane.second.x     # beside the flow
    assert lane.first.y > tall.positions["rewrite"].y > tall.positions["search"].y > lane.second.y


def test_short_flows_stay_left_to_right() -> None:
    plan = layout(templates.load_template("naive_rag"))
    assert plan.direction == "LR" and plan.fit_zoom() >= LEGIBLE_ZOOM
    assert (plan.source_side, plan.target_side) == ("right", "left")


def test_dfs_from_the_entry_decides_which_edge_is_back() -> None:
    spec = flow("loop", [("a", "retrieval.bm25"), ("b", "orchestration.rule_judge"),
                         ("c", "generation.answer")], ["a>b", "b>a:continue", "b>c:done"])
    assert back_edges(spec) == {1}
    entry_b = spec.model_copy(update={"entry": "b"})
    assert back_edges(entry_b) == {0}                                   # walked from b: a->b


def test_self_loop_and_fixed_positions() -> None:
    spec = flow("self", [("a", "retrieval.bm25"), ("j", "orchestration.rule_judge")],
                ["a>j", "j>j:continue"])
    plan = layout(spec, direction="LR")
    assert plan.back_edges == {1} and plan.lanes[1].below
    from flowkit.spec import Position
    moved = layout(spec, {"a": Position(x=500, y=300)}, direction="LR")
    assert moved.positions["a"] == Position(x=500, y=300)
    assert moved.lanes[1].first.y > 300 + NODE_H                       # the lane follows


def test_canvas_draws_the_loop_along_its_lane_with_its_label() -> None:
    spec = templates.load_template("ircot").model_copy(update={"layout": {}})
    pic = canvas.picture(spec, [])
    plan = layout(spec)
    loop = next(e for e in pic["edges"] if e["id"] == "enough->retrieve")
    lane = next(iter(plan.lanes.values()))
    assert loop["lane"] == [[lane.first.x, lane.first.y], [lane.second.x, lane.second.y]]
    assert loop["label"] == "continue" and loop["colour"] == canvas.LANE_STROKE
    assert [n["id"] for n in pic["nodes"]] == [n.id for n in spec.nodes]   # no corner nodes
    assert canvas.find_edge(spec, "enough->retrieve")[1].label == "continue"
    straight = [e for e in pic["edges"] if e["id"] != "enough->retrieve"]
    assert straight and all(e["lane"] is None for e in straight)


def test_a_forward_edge_past_a_node_runs_in_a_lane_above() -> None:
    spec = flow("skip", [("a", "retrieval.bm25"), ("b", "post_retrieval.mmr"),
                         ("c", "generation.answer")], ["a>b", "b>c", "a>c"])
    plan = layout(spec, direction="LR")
    assert not plan.back_edges
    lane = plan.lanes[2]
    assert not lane.below and lane.first.y < min(p.y for p in plan.positions.values())
    assert 0 not in plan.lanes and 1 not in plan.lanes
    # on the canvas only a loop's way back is purple; a routed forward edge is grey
    strokes = {e["id"]: e["colour"] for e in canvas.picture(spec, [])["edges"]}
    assert strokes == {"a->b": canvas.PLAIN_STROKE, "b->c": canvas.PLAIN_STROKE,
                       "a->c": canvas.SKIP_STROKE}
    assert canvas.SKIP_STROKE != canvas.LANE_STROKE


def test_replay_graph_routes_and_labels_the_loop() -> None:
    from studio.common import graph_panel
    spec = templates.load_template("ircot")
    nodes, edges = graph_panel.flow_picture(spec, [], None)
    real = [n for n in nodes if "~" not in n["id"]]
    corners = [n for n in nodes if "~" in n["id"]]
    assert len(real) == 4 and len(corners) == 2
    assert min(c["x"] for c in corners) > max(n["x"] for n in real)      # the lane is beside
    lane = next(e for e in edges if e["label"] == "continue")
    assert {lane["from"], lane["to"]} == {c["id"] for c in corners}
    into = next(e for e in edges if e["to"] == "retrieve")
    assert into["from"] in {c["id"] for c in corners} and into["arrows"] == "to"
    assert all(n["font"]["size"] >= 16 for n in real) and lane["font"]["size"] >= 14


def test_replay_picture_is_tall_enough_for_a_long_flow() -> None:
    from studio.common import graph_panel
    short = graph_panel.picture_height(templates.load_template("naive_rag"))
    tall = graph_panel.picture_height(templates.load_template("self_rag"))
    assert short == 300 and 500 <= tall <= 600


def test_a_flow_placed_by_hand_keeps_its_direction() -> None:
    spec = templates.load_template("self_rag")          # its stored layout runs left to right
    assert set(spec.layout) == {n.id for n in spec.nodes}
    assert layout(spec, spec.layout).direction == "LR"
    assert layout(spec).direction == "TB"


def test_tidy_forgets_the_hand_placed_layout(tmp_path) -> None:
    from service.workspace import Workspace
    from studio.editor.editor import Editor
    ws = Workspace(tmp_path)
    ws.store.save_flow(templates.load_template("ircot").model_copy(update={"name": "t"}), None)
    ed = Editor({}, ws, tab="A", is_open=lambda _: False)
    ed.open("t")
    assert ed.spec.layout
    fit = ed.fit_request
    ed.tidy()
    assert ed.spec.layout == {} and ed.fit_request == fit + 1 and ed.dirty()
