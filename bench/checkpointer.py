"""What pausing on LangGraph's own mechanism costs (issue 24, item 4): a debugged run (its graph
compiled with `SqliteSaver`, `durability="exit"`, a dynamic `interrupt()` at the breakpoint)
against a plain run (no checkpointer), with the scripted model on every template.

For each template, on one question:

1. plain: `run_flow` as every run without breakpoints does (no checkpointer);
2. debug, no pause: the same run with a breakpoint that never hits (`flowkit.debug`, the
   SqliteSaver a workspace opens on its database file, storage.checkpoints): what being
   debuggable costs when nothing stops;
3. debug, paused: a breakpoint before the first node that calls the model, the saver closed, a
   new one opened on the same file (a studio restart), continued to the end.

It prints per template whether 3 gives the answer, the (node, visit) sequence and the prompts of
1, the engine's time of 1, 2 and 3 per run (3: both segments, not opening the savers), the bytes the
checkpointer holds for the paused run's thread and the bytes of the run's own trace (the record
flowkit keeps of every run), and checks that the thread is gone once the run ended. Not a test:
figures for flowkit/debug.py's help.

Usage: python bench/checkpointer.py [--repeat 20]
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import ListSink, compile_flow, run_flow
from flowkit.breakpoints import Breakpoint, check_breakpoints
from flowkit.debug import hook_for, read_pause
from flowkit.judges import save_classifier
from flowkit.run_request import Resume, RunHooks, RunRequest
from flowkit.templates import load_template, names
from flowkit.testing import HashEmbedder, fake_resources
from flowkit.testing.fakes import template_script
from storage.checkpoints import open_checkpointer

Q = "On which island was the designer of the Corren Lighthouse born?"


def resources(data_dir: Path) -> Any:
    r = fake_resources(template_script(), kb="test", embedder=HashEmbedder())
    r.data_dir = data_dir
    return r


def saver(db: Path) -> Any:
    """The checkpointer a workspace on database file `db` uses (storage.checkpoints)."""
    return open_checkpointer(f"sqlite:///{db}")


def prompts(sink: ListSink) -> list[str]:
    return sorted(c.prompt for s in sink.steps for c in s.llm_calls)


def trace_bytes(sink: ListSink) -> int:
    return sum(len(json.dumps(s.to_dict() if hasattr(s, "to_dict") else vars(s), default=str))
               for s in sink.steps)


def thread_bytes(db: Path, thread: str) -> int:
    """Bytes the checkpointer holds for `thread` (checkpoints with metadata, and writes)."""
    with sqlite3.connect(db) as conn:
        a = conn.execute("SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM "
                         "checkpoints WHERE thread_id = ?", (thread,)).fetchone()[0]
        b = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes WHERE thread_id = ?",
                         (thread,)).fetchone()[0]
    return int(a) + int(b)


def paused_run(flow: Any, bps: Any, db: Path, tmp: Path
               ) -> tuple[Any, ListSink, float, int, int]:
    """One run paused at `bps`, each continue from a new saver on `db` (a restart): how it
    ended, its trace, the engine's seconds (all segments), the thread's bytes at the first pause
    and how many times it paused."""
    sink, res, spent, pauses = ListSink(), resources(tmp), 0.0, 0
    with saver(db) as cp:
        t0 = time.perf_counter()
        end = run_flow(flow, res, RunRequest(Q, kb="test"),
                       RunHooks(sink=sink, debug=hook_for(flow, bps, checkpointer=cp)))
        spent += time.perf_counter() - t0
    ckpt = thread_bytes(db, end.run_id)
    while end.status == "paused":           # a loop pauses at the node every round
        pauses += 1
        with saver(db) as cp:
            pause = read_pause(flow, cp, end.run_id)
            assert pause is not None
            t0 = time.perf_counter()
            end = run_flow(flow, res, RunRequest(Q, kb="test", run_id=end.run_id, start=Resume()),
                           RunHooks(sink=sink, debug=hook_for(flow, bps, resume=pause,
                                                              checkpointer=cp)))
            spent += time.perf_counter() - t0
    assert thread_bytes(db, end.run_id) == 0, "an ended run left its checkpoint"
    return end, sink, spent, ckpt, pauses


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
    print(f"{'template':26} {'same':>5} {'ms plain':>8} {'ms dbg':>7} {'ms paused':>9} "
          f"{'pauses':>6} "
          f"{'ckpt bytes':>10} {'trace bytes':>11}")
    tot = {"n": 0, "same": 0, "plain": 0.0, "debug": 0.0, "paused": 0.0, "ckpt": 0, "trace": 0,
           "pauses": 0, "extra": 0.0}
    for name in names():
        flow = compile_flow(load_template(name))
        sink0 = ListSink()
        end0 = run_flow(flow, resources(tmp), RunRequest(Q, kb="test"), RunHooks(sink=sink0))
        want = (end0.answer, sink0.sequence(), prompts(sink0))
        node = first_llm_node(flow, sink0)
        t0 = time.perf_counter()
        for _ in range(args.repeat):
            run_flow(flow, resources(tmp), RunRequest(Q, kb="test"))
        plain = (time.perf_counter() - t0) / args.repeat
        db = tmp / f"{name}.sqlite"
        never = check_breakpoints(flow, [Breakpoint(node or flow.spec.entry, "before",
                                                    condition="steps > 100000")])
        with saver(db) as cp:
            t0 = time.perf_counter()
            for _ in range(args.repeat):
                run_flow(flow, resources(tmp), RunRequest(Q, kb="test"), RunHooks(debug=hook_for(flow, never,
                                                                            checkpointer=cp)))
            debug = (time.perf_counter() - t0) / args.repeat
        same, paused_ms, ckpt, pauses = False, 0.0, 0, 0
        if node is not None:
            bps = check_breakpoints(flow, [Breakpoint(node, "before")])
            for _ in range(args.repeat):
                end, sink, spent, ckpt, pauses = paused_run(flow, bps, db, tmp)
                paused_ms += spent / args.repeat
            same = (end.answer, sink.sequence(), prompts(sink)) == want
        tb = trace_bytes(sink0)
        tot["n"] += 1
        tot["same"] += same
        tot["plain"] += plain
        tot["debug"] += debug
        tot["paused"] += paused_ms if node else plain
        tot["ckpt"] += ckpt
        if pauses:
            tot["pauses"] += pauses
            tot["extra"] += paused_ms - plain
        tot["trace"] += tb
        print(f"{name:26} {str(same):>5} {1000 * plain:8.1f} {1000 * debug:7.1f} "
              f"{1000 * paused_ms:9.1f} {pauses:6d} {ckpt:10d} {tb:11d}", flush=True)
    print(f"same as a plain run after pause + restart + continue: {tot['same']}/{tot['n']}; "
          f"engine time: debug run without a pause {tot['debug'] / tot['plain']:.2f}x a plain run, "
          f"paused and continued {tot['paused'] / tot['plain']:.2f}x "
          f"({1000 * tot['extra'] / max(tot['pauses'], 1):.1f} ms more per pause); checkpoint "
          f"of a paused run {tot['ckpt'] / max(tot['trace'], 1):.2f}x the run's trace bytes")


if __name__ == "__main__":
    main()
