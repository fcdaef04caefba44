"""A run killed with SIGKILL leaves a contiguous, readable prefix of steps and is marked interrupted."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from storage.repo import Store

CHILD = r'''
import sys, time
from flowkit import compile_flow, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources, flow
from storage.repo import Store

def slow(prompt):
    time.sleep(0.15)
    return "Tessel [1]"

spec = flow("slow-loop", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer"),
                          ("judge", "orchestration.rule_judge", {"max_rounds": 1000})],
            ["ret>gen", "gen>judge", "judge>ret:continue"], entry="ret",
            limits={"max_steps": 5000, "max_llm_calls": 5000, "max_tokens": 10000000})
store = Store(sys.argv[1])
run_flow(compile_flow(spec), fake_resources(FakeLLM([(r"Question:", slow)])),
         RunRequest("Where was Mara Velt born?", kb="test", run_id="victim"),
         RunHooks(sink=store.sink()))
'''


def test_sigkill_leaves_readable_prefix(db_url):
    url = db_url
    store = Store(url)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, url])
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if store.get_run("victim").steps >= 7:
                    break
            except Exception:  # noqa: BLE001 - not started yet
                pass
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert store.get_run("victim").record.status == "running"      # nobody said otherwise yet
    assert store.mark_interrupted() == 1                       # "the next start"
    run = store.get_run("victim")
    assert run.record.status == "interrupted"
    steps = store.steps("victim")
    assert len(steps) >= 7
    assert [s.index for s in steps] == list(range(len(steps)))   # contiguous
    cycle = ["ret", "gen", "judge"]
    assert [s.node_id for s in steps] == [cycle[i % 3] for i in range(len(steps))]
    for s in steps:                                             # every step readable and whole
        assert s.memory_before["question"] == "Where was Mara Velt born?"
        if s.node_id == "gen":
            assert s.llm_calls and s.memory_after["answer"] == "Tessel"
    assert run.steps == len(steps)
