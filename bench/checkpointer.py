"""LangGraph's own pause (a checkpointer + `interrupt_before`) against flowkit's paused-run
checkpoint, measured side by side on every template with the scripted model (issue 24, item 4).

For each template, the same compiled graph is run four ways on one question:

1. straight: flowkit's graph as every run uses it (no checkpointer);
2. checkpointed: the same graph compiled with LangGraph's `SqliteSaver` on a file, straight
   through (what every run would pay if any run may be paused: a checkpoint per super-step);
3. LangGraph pause: `interrupt_before` the first node that calls the model, the process's graph
   and saver dropped, a new saver opened on the same file (a studio restart) and `invoke(None)`
   going on from the checkpoint;
4. flowkit pause: a breakpoint before the same node (flowkit.debug), continued from the stored
   checkpoint, as the studio and `flowkit resume` do.

It prints per template whether 3 and 4 give the answer, the (node, visit) sequence and the
prompts of 1, the time of 2 / 1, and the bytes the checkpointer wrote against the bytes of the
run's own trace (the one record flowkit keeps). Not a test: figures for the closing note.

Usage: python bench/checkpointer.py [--repeat 20]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "debug"))

from langgraph.checkpoint.sqlite import SqliteSaver

from flowkit import ListSink, compile_flow, run_flow
from flowkit.breakpoints import Breakpoint
from flowkit.judges import save_classifier
from flowkit.templates import load_template, names
from flowkit.testing import HashEmbedder, fake_resources
from flowkit.testing.fakes import template_script

Q = "On which island was the designer of the Corren Lighthouse born?"


def resources(data_dir: Path) -> Any:
    r = fake_resources(template_script(), kb="test", embedder=HashEmbedder())
    r.data_dir = data_dir
    return r


class _Graph:
    """A compiled graph whose invoke runs under a checkpointer thread (and may go on from one)."""

    def __init__(self, inner: Any, thread: str, resume: bool = False) -> None:
        self.inner, self.thread, self.resume = inner, thread, resume

    def invoke(self, state: Any, config: dict[str, Any]) -> Any:
        cfg = {**config, "configurable": {**config["configurable"], "thread_id": self.thread}}
        return self.inner.invoke(None if self.resume else state, config=cfg)


def with_graph(flow: Any, graph: Any) -> Any:
    return dataclasses.replace(flow, graph=graph)


def prompts(sink: ListSink) -> list[str]:
    return sorted(c.prompt for s in sink.steps for c in s.llm_calls)


def trace_bytes(sink: ListSink) -> int:
    return sum(len(json.dumps(s.to_dict() if hasattr(s, "to_dict") else vars(s), default=str))
               for s in sink.steps)


def first_llm_node(flow: Any, sink: ListSink) -> str | None:
    for s in sink.steps:
        if s.llm_calls and s.node_id not in flow.topology.branch_of:
            return str(s.node_id)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="flowkit-ckpt-"))
    save_classifier(tmp / "judges" / "sufficiency.json", [0.0] * HashEmbedder.dim, -3.0)
    print(f"{'template':26} {'LG same (pauses)':>16} {'fk same':>7} {'ms straight':>11} "
          f"{'ms ckpt':>8} {'ckpt bytes':>10} {'trace bytes':>11}")
    totals: dict[str, float] = {"lg_same": 0, "fk_same": 0, "n": 0, "plain": 0.0, "ckpt": 0.0}
    for name in names():
        flow = compile_flow(load_template(name))
        sink0 = ListSink()
        end0 = run_flow(flow, Q, resources(tmp), kb="test", sink=sink0)
        want = (end0.answer, sink0.sequence(), prompts(sink0))
        node = first_llm_node(flow, sink0)
        builder = flow.graph.builder
        # 1 vs 2: straight through, without and with a checkpointer
        t0 = time.perf_counter()
        for _ in range(args.repeat):
            run_flow(flow, Q, resources(tmp), kb="test")
        plain = time.perf_counter() - t0
        db = tmp / f"{name}.sqlite"
        with sqlite3.connect(db, check_same_thread=False) as conn:
            saver = SqliteSaver(conn)
            graph = builder.compile(checkpointer=saver)
            t0 = time.perf_counter()
            for i in range(args.repeat):
                run_flow(with_graph(flow, _Graph(graph, f"s{i}")), Q, resources(tmp), kb="test")
            checkpointed = time.perf_counter() - t0
        ckpt_bytes = sum(p.stat().st_size for p in tmp.glob(f"{name}.sqlite*")) // args.repeat
        # 3: LangGraph's pause; each time a new saver on the same file goes on (a restart).
        # interrupt_before holds at every visit of the node (a loop pauses each round), so it
        # goes on until the checkpoint has nothing next
        lg_same, lg_pauses = False, 0
        if node is not None:
            db3 = tmp / f"{name}-pause.sqlite"
            sink3 = ListSink()
            res3 = resources(tmp)
            cfg = {"configurable": {"thread_id": "t"}}
            try:
                end3 = None
                for i in range(60):
                    with sqlite3.connect(db3, check_same_thread=False) as conn:
                        g = builder.compile(checkpointer=SqliteSaver(conn), interrupt_before=[node])
                        if i and not g.get_state(cfg).next:
                            break
                        end3 = run_flow(with_graph(flow, _Graph(g, "t", resume=i > 0)), Q, res3,
                                        kb="test", sink=sink3)
                        lg_pauses += bool(g.get_state(cfg).next)
                assert end3 is not None
                got = (end3.answer, sink3.sequence(), prompts(sink3))
                lg_same = got == want
            except Exception as err:  # noqa: BLE001 - a bench reports what broke and goes on
                print(f"  {name}: LangGraph pause failed: {type(err).__name__}: {err}")
        # 4: flowkit's pause before the same node, continued from its checkpoint
        from debugkit import drive
        fk_same = False
        if node is not None:
            end4, sink4, pauses = drive(flow, resources(tmp), [Breakpoint(node, "before")], None, Q)
            fk_same = bool(pauses) and (end4.answer, sink4.sequence(), prompts(sink4)) == want
        totals["n"] += 1
        totals["lg_same"] += lg_same
        totals["fk_same"] += fk_same
        totals["plain"] += plain
        totals["ckpt"] += checkpointed
        print(f"{name:26} {f'{lg_same} ({lg_pauses})':>16} {str(fk_same):>7} "
              f"{1000 * plain / args.repeat:11.1f} {1000 * checkpointed / args.repeat:8.1f} "
              f"{ckpt_bytes:10d} {trace_bytes(sink0):11d}", flush=True)
    print(f"same as straight after a pause: LangGraph {totals['lg_same']}/{totals['n']}, "
          f"flowkit {totals['fk_same']}/{totals['n']}; a checkpointer on every run: "
          f"{totals['ckpt'] / totals['plain']:.1f}x the engine's own time with the scripted model")


if __name__ == "__main__":
    main()
