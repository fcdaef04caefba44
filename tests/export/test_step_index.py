"""Step indices of an exported package's runs: every node visit its own, ordered index, also the
parallel branches of a fan-out that LangGraph runs in one superstep (flowkit.export.runtime's
StepNumbers: the steps before the superstep, then the order the superstep's visits ended)."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from flowkit import ListSink, compile_flow, run_flow
from flowkit.export.runtime import StepNumbers
from flowkit.run_request import RunHooks, RunRequest
from flowkit.templates import load_template
from flowkit.testing import HashEmbedder, fake_resources
from flowkit.testing.fakes import template_script
from flowkit.trace import StepEvent

from .conftest import export

Q = "Where was Mara Velt born?"


def _step(node: str) -> StepEvent:
    return StepEvent(run_id="r", index=0, node_id=node, operator="x", visit=1, memory_before={},
                     memory_after={})


def test_a_superstep_numbers_its_visits_in_the_order_they_end():
    numbers = StepNumbers()
    assert [s.index for s in numbers.number("r", 0, [_step("expand")])] == [0]
    # two branches of one superstep both saw steps == 1; the second to end comes second
    assert [s.index for s in numbers.number("r", 1, [_step("dense")])] == [1]
    assert [s.index for s in numbers.number("r", 1, [_step("bm25")])] == [2]
    assert [s.index for s in numbers.number("other", 5, [_step("a"), _step("b")])] == [5, 6]
    assert [s.index for s in numbers.number("r", 3, [_step("fuse")])] == [3]   # next superstep
    numbers.forget("r")
    assert [s.index for s in numbers.number("r", 7, [])] == []


def test_the_table_is_bounded_and_thread_safe():
    numbers = StepNumbers()
    got: list[int] = []
    lock = threading.Lock()

    def branch() -> None:
        for _ in range(50):
            idx = numbers.number("r", 10, [_step("b")])[0].index
            with lock:
                got.append(idx)

    threads = [threading.Thread(target=branch) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(10, 410))
    for i in range(StepNumbers.MAX_RUNS + 5):
        numbers.number(f"run{i}", 0, [_step("a")])
    assert len(numbers._next) == StepNumbers.MAX_RUNS


def _run_exported(tmp_path: Path) -> tuple[dict[str, Any], ListSink]:
    spec = load_template("pre_retrieval_branching")
    sink = ListSink()
    run_flow(compile_flow(spec), fake_resources(template_script(), kb="test",
                                                   embedder=HashEmbedder()), RunRequest(Q, kb="test"), RunHooks(sink=sink))
    _, module = export(spec, tmp_path)
    out = module.graph.invoke({"question": Q}, config={"configurable": {
        "flowkit_resources": fake_resources(template_script(), kb="test", embedder=HashEmbedder()),
        "kb": "test"}})
    return out, sink


def test_parallel_branches_of_an_exported_run_get_their_own_indices(tmp_path: Path):
    out, sink = _run_exported(tmp_path)
    trace = sorted(out["trace"], key=lambda t: t["index"])
    assert [t["index"] for t in trace] == list(range(len(trace))) == list(range(out["steps"]))
    nodes = [t["node"] for t in trace]
    assert nodes[0] == "expand" and sorted(nodes[1:3]) == ["bm25", "dense"]
    assert nodes[3:] == ["fuse", "generate"]
    # the same shape as the engine's numbering of the same run
    engine = [s.node_id for s in sorted(sink.steps, key=lambda s: s.index)]
    assert [engine[0], sorted(engine[1:3]), *engine[3:]] == \
        [nodes[0], sorted(nodes[1:3]), *nodes[3:]]
