"""UI benchmark (not a test): the editor with a 150-node flow against a 2-node one, in Chromium.

    python bench/ui.py [--repeat 5] [--replay-only] [--against /path/to/other/checkout]

Prints, for each flow, the median time from navigation to every canvas node drawn, and the median
round trip of three edits: clicking a node until the side panel shows its id, adding a node from
the palette until it is on the canvas, and drawing an edge (a drag from a node's output handle to a
node just added) until the studio has stored it and drawn it again. The ratio column is big / small, measured side by side.
Then the replay of a stored 50-step run (a fake model: no model file needed): the median time from a
click on Next until the page shows the new step's heading (goal: 200 ms).

--replay-only measures only the replay. --against DIR serves another checkout's app.py (e.g. main)
beside this one on the same data and measures the replay on both in alternating rounds, so the
two figures share the machine's load; the load average is printed with them.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))

from e2ekit import CANVAS_FRAME, CHROMIUM, CHROMIUM_ARGS, StudioServer, canvas  # tests/e2e/e2ekit.py

from flowkit import templates
from flowkit.run_request import RunRequest
from flowkit.spec import EdgeSpec, FlowSpec, Limits, NodeSpec, Position
from flowkit.testing import FakeLLM
from service.workspace import Workspace

OPERATORS = ("retrieval.bm25", "retrieval.dense", "generation.answer")


def big_flow(n: int = 150, per_row: int = 15) -> FlowSpec:
    """n nodes in a chain (n-1 edges) plus a skip edge every 10 nodes, laid out in rows."""
    ids = [f"n{i:03d}" for i in range(n)]
    nodes = [NodeSpec(id=nid, operator=OPERATORS[i % len(OPERATORS)]) for i, nid in enumerate(ids)]
    edges = [EdgeSpec(source=ids[i], target=ids[i + 1]) for i in range(n - 1)]
    edges += [EdgeSpec(source=ids[i], target=ids[i + 2]) for i in range(0, n - 2, 10)]
    layout = {nid: Position(x=(i % per_row) * 240.0, y=(i // per_row) * 120.0)
              for i, nid in enumerate(ids)}
    return FlowSpec(name="bench_150", nodes=nodes, edges=edges, layout=layout)


def step_run(ws: Workspace, n: int = 50) -> str:
    """Store a run of exactly n steps (a chain of n-1 rewrites and an answer, on a fake model)."""
    ids = [f"s{i:02d}" for i in range(n)]
    nodes = [NodeSpec(id=nid, operator="pre_retrieval.rewrite") for nid in ids[:-1]]
    nodes.append(NodeSpec(id=ids[-1], operator="generation.answer"))
    spec = FlowSpec(name=f"bench_steps_{n}", nodes=nodes,
                    edges=[EdgeSpec(source=a, target=b) for a, b in zip(ids, ids[1:])],
                    limits=Limits(max_steps=n + 10, max_llm_calls=n + 10, max_tokens=1_000_000))
    ws.store.save_flow(spec, None)
    ws.resources.set_llm(FakeLLM())
    run_id = ws.run(spec, RunRequest("Why is the sky blue?", kb="")).run_id
    steps = len(ws.store.steps(run_id))
    if steps != n:
        raise RuntimeError(f"the bench run has {steps} steps, not {n}")
    return run_id


def replay_steps(browser: Any, url: str, run_id: str, n_steps: int, repeat: int) -> list[float]:
    """Click Next `repeat` times from the middle of the run; each: click -> the new step shown."""
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    page.set_default_timeout(60_000)
    start = n_steps // 2 - repeat // 2
    page.goto(f"{url}/replay?run={run_id}&step={start}")
    page.get_by_text(f"Step {start} of {n_steps - 1}").wait_for()
    _settle(page)
    button = page.get_by_role("button", name="Next")
    times: list[float] = []
    for i in range(repeat):
        t0 = time.perf_counter()
        button.click()
        page.get_by_text(f"Step {start + i + 1} of {n_steps - 1}").wait_for()
        times.append(time.perf_counter() - t0)
        _settle(page)
    page.close()
    return times


def _wait_nodes(page: Any, count: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    nodes = canvas(page).locator(".react-flow__node")
    while nodes.count() < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {nodes.count()} of {count} nodes drawn")
        page.wait_for_timeout(20)
    nodes.nth(count - 1).wait_for(state="visible")


def first_draw(browser: Any, url: str, flow: str, n_nodes: int) -> float:
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    t0 = time.perf_counter()
    page.goto(f"{url}/editor?flow={flow}")
    _wait_nodes(page, n_nodes)
    elapsed = time.perf_counter() - t0
    page.close()
    return elapsed


def _settle(page: Any) -> None:
    """Wait until the app is idle (no script running), so edits are timed one at a time."""
    page.wait_for_timeout(300)
    page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')",
                           timeout=60_000)


def _inside_view(page: Any, node_ids: list[str]) -> list[str]:
    """The nodes the canvas shows inside its frame (a click elsewhere would miss them)."""
    frame = page.locator(CANVAS_FRAME).bounding_box()
    out = []
    for nid in node_ids:
        box = canvas(page).locator(f'.react-flow__node[data-id="{nid}"]').bounding_box()
        if box and frame["x"] + 40 <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame[
                "width"] - 10 and frame["y"] <= box["y"] and box["y"] + box["height"] <= frame[
                "y"] + frame["height"] - 150:
            out.append(nid)
    return out or node_ids


def _edge_ids(page: Any) -> list[str]:
    return [i.removeprefix("rf__edge-") for i in canvas(page).locator(".react-flow__edge")
            .evaluate_all("es => es.map(e => e.dataset.testid)")]


def draw_edge(page: Any, source: str, target: str, timeout_s: float = 20.0) -> float | None:
    """Drag from `source`'s output handle to `target` as a user does; seconds from the drop until
    the studio's own redraw shows the edge `source->target` (stored, not only drawn in place), or
    None when no edge came within `timeout_s` (counted and printed: a drag that drew nothing)."""
    handle = canvas(page).locator(f'.react-flow__node[data-id="{source}"] '
                                  ".react-flow__handle.source")
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    goal = canvas(page).locator(f'.react-flow__node[data-id="{target}"]').bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(goal["x"] + goal["width"] / 2, goal["y"] + goal["height"] / 2, steps=8)
    page.wait_for_timeout(200)                     # React Flow may auto-pan: aim again
    goal = canvas(page).locator(f'.react-flow__node[data-id="{target}"]').bounding_box()
    page.mouse.move(goal["x"] + goal["width"] / 2, goal["y"] + goal["height"] / 2, steps=2)
    t0 = time.perf_counter()
    page.mouse.up()
    want = f"{source}->{target}"
    while want not in _edge_ids(page):
        if time.perf_counter() - t0 > timeout_s:
            return None
        time.sleep(0.01)
    return time.perf_counter() - t0


def edit_round_trips(browser: Any, url: str, flow: str, node_ids: list[str],
                     repeat: int) -> tuple[list[float], list[float], list[float | None]]:
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    page.set_default_timeout(60_000)
    page.goto(f"{url}/editor?flow={flow}")
    _wait_nodes(page, len(node_ids))
    _settle(page)
    clicks: list[float] = []
    shown = _inside_view(page, node_ids)
    shown = shown if len(shown) >= 2 else node_ids
    last = ""
    for i in range(repeat):
        nid = shown[(i * 7 + 1) % len(shown)]
        if nid == last:        # a click on the node already open changes nothing: not a round trip
            nid = next(x for x in shown if x != last)
        last = nid
        target = canvas(page).locator(f'.react-flow__node[data-id="{nid}"]')
        t0 = time.perf_counter()
        target.click()
        page.get_by_text(f"Node {nid}").wait_for()
        clicks.append(time.perf_counter() - t0)
        _settle(page)
    adds: list[float] = []
    edges: list[float | None] = []
    box = page.get_by_placeholder("e.g. rerank, judge")
    box.fill("bm25")
    box.press("Enter")
    _settle(page)
    button = page.get_by_role("button", name="bm25", exact=True)
    for i in range(repeat):
        new_id = "bm25" if i == 0 else f"bm25_{i + 1}"
        t0 = time.perf_counter()
        button.click()
        canvas(page).locator(f'.react-flow__node[data-id="{new_id}"]').wait_for()
        adds.append(time.perf_counter() - t0)
        _settle(page)
        # an edge to the node just added (it lands in view) from the one added before it (the
        # first from a node of the flow in view): a chain, so no drop lands on an older edge
        prev = None if i == 0 else ("bm25" if i == 1 else f"bm25_{i}")
        source = prev or next(x for x in _inside_view(page, node_ids) if x != new_id)
        edges.append(draw_edge(page, source, new_id))
        _settle(page)
    page.close()
    return clicks, adds, edges


def replay_side_by_side(browser: Any, urls: dict[str, str], run_id: str, repeat: int,
                        rounds: int = 3) -> dict[str, list[float]]:
    """Next -> new step on each server, `rounds` alternating rounds of `repeat` clicks each."""
    for url in urls.values():                                 # warm each server
        replay_steps(browser, url, run_id, 50, 1)
    times: dict[str, list[float]] = {name: [] for name in urls}
    for _ in range(rounds):
        for name, url in urls.items():
            times[name] += replay_steps(browser, url, run_id, 50, repeat)
    return times


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def replay_main(args: argparse.Namespace) -> None:
    """The replay part alone; with --against, this checkout and the other one side by side."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(tmp)
        run_id = step_run(ws, 50)
        servers = {"this checkout": StudioServer(tmp)}
        if args.against:
            servers = {f"{args.against}": StudioServer(tmp, root=Path(args.against),
                                                       log=Path(tmp) / "against.log"),
                       **servers}
        load_before = _load()
        try:
            urls = {name: s.start() for name, s in servers.items()}
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                times = replay_side_by_side(browser, urls, run_id, args.repeat)
                browser.close()
        finally:
            for s in servers.values():
                s.stop()
    print(f"replay of a 50-step run: Next -> the new step shown (ms), {len(next(iter(times.values())))}"
          f" clicks each, alternating rounds; before: {load_before}; after: {_load()}")
    print(f"{'server':<40}{'median':>8}{'min':>8}{'max':>8}")
    for name, ts in times.items():
        print(f"{name:<40}{statistics.median(ts) * 1000:>8.0f}{min(ts) * 1000:>8.0f}"
              f"{max(ts) * 1000:>8.0f}")
    if len(times) == 2:
        (_, a), (_, b) = times.items()
        print(f"ratio this / other: {statistics.median(b) / statistics.median(a):.2f} (goal: "
              "this checkout's median <= 200 ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--replay-only", action="store_true", help="measure only the replay")
    ap.add_argument("--against", default=None,
                    help="another checkout (e.g. /work/main) whose replay is measured beside this "
                         "one's (implies --replay-only)")
    args = ap.parse_args()
    if args.replay_only or args.against:
        replay_main(args)
        return
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(tmp)
        big = big_flow()
        ws.store.save_flow(big, None)
        small = templates.load_template("naive_rag").model_copy(update={"name": "bench_2"})
        ws.store.save_flow(small, None)
        flows = {"bench_2": [n.id for n in small.nodes], "bench_150": [n.id for n in big.nodes]}
        run_id = step_run(ws, 50)
        with StudioServer(tmp) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            first_draw(browser, url, "bench_2", 2)          # warm the server (imports, caches)
            results: dict[str, dict[str, float]] = {}
            drawn: dict[str, int] = {}
            for name, ids in flows.items():
                draws = [first_draw(browser, url, name, len(ids)) for _ in range(args.repeat)]
                clicks, adds, edges = edit_round_trips(browser, url, name, ids, args.repeat)
                results[name] = {"draw": statistics.median(draws),
                                 "click": statistics.median(clicks),
                                 "add": statistics.median(adds),
                                 "edge": statistics.median([e for e in edges if e is not None]
                                                           or [math.nan])}
                drawn[name] = sum(e is not None for e in edges)
            steps = replay_steps(browser, url, run_id, 50, args.repeat)
            browser.close()
    print(f"editor in Chromium, median of {args.repeat} (seconds); bench_150 has {len(big.nodes)} "
          f"nodes / {len(big.edges)} edges, bench_2 has 2 / 1")
    print(f"{'measure':<42}{'bench_2':>10}{'bench_150':>12}{'ratio':>8}")
    labels = {"draw": "navigation -> all nodes drawn",
              "click": "click a node -> its form shows",
              "add": "palette add -> the node is on the canvas",
              "edge": "drag an edge -> stored and redrawn"}
    for key, label in labels.items():
        a, b = results["bench_2"][key], results["bench_150"][key]
        print(f"{label:<42}{a:>10.2f}{b:>12.2f}{b / a:>8.2f}")
    print(f"edges drawn by a drag (of {args.repeat} each): bench_2 {drawn['bench_2']}, "
          f"bench_150 {drawn['bench_150']}")
    nav = statistics.median(steps)
    print(f"replay of a 50-step run: Next -> the new step shown, median {nav * 1000:.0f} ms "
          f"(goal 200 ms: {'met' if nav <= 0.2 else 'not met'})")



if __name__ == "__main__":
    main()
