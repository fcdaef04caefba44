"""The comparison runner: stored runs with traces, deterministic ids, resume after a stop or SIGKILL."""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from flowkit.errors import FlowkitError
from flowkit.eval.datasets import from_path
from flowkit.eval.runner import (
    collect_results,
    eval_id_for,
    make_plan,
    plan_from_eval,
    resolve_flows,
    run_evaluation,
)
from flowkit.eval.strategy import EvalRun
from storage.evals import EvalRepo, parse_run_id, run_id_for
from storage.models import RunRow

HERE = Path(__file__).resolve().parent


def plan_for(world, limit=None, flows=None):
    ds = from_path(world.dataset)
    world.repo.save_dataset(ds.name, ds.source, ds.questions)
    refs = flows or [str(world.good), str(world.vague)]
    return make_plan(resolve_flows(world.ws, refs), ds.name, ds.questions, "test", limit=limit)


def test_every_flow_on_the_same_questions_with_traces(world):
    plan = plan_for(world, limit=4)
    assert [f.label for f in plan.flows] == ["good", "vague"] and plan.total == 8
    seen = []
    out = run_evaluation(world.ws, world.repo, plan, EvalRun(progress=seen.append))
    assert (out.status, out.ran, out.skipped, out.statuses) == ("done", 8, 0, {"ok": 8})
    # question-major order: both flows on q1, then both on q2, ...
    assert [(p.question_index, p.flow_index) for p in seen] == [(q, f) for q in range(4)
                                                                 for f in range(2)]
    runs = world.repo.runs(plan.eval_id)
    assert len(runs) == 8 and all(r.record.eval_id == plan.eval_id for r in runs)
    assert sorted(parse_run_id(plan.eval_id, r.id) for r in runs) == [(f, q) for f in range(2)
                                                                       for q in range(4)]
    steps = world.ws.store.steps(run_id_for(plan.eval_id, 0, 1))
    assert [s.node_id for s in steps] == ["ret", "gen"] and steps[0].retrievals
    assert world.ws.store.list_runs() == []                 # eval runs stay out of the run list
    info = world.repo.get_eval(plan.eval_id)
    assert info.status == "done" and info.question_ids == ["q1", "q2", "q3", "q4"]
    assert info.flow_refs == [str(world.good), str(world.vague)]
    res = collect_results(plan, runs, world.repo.retrievals(plan.eval_id))
    good = res["good"]
    assert [r.em for r in good] == [1.0, 1.0, 0.0, 1.0]      # q3 is answered "twelve"
    assert good[1].retrieved[:2] == ["d2", "d1"] or set(good[1].retrieved) >= {"d1"}
    assert all(r.tokens > 0 and r.llm_calls == 1 for r in good)
    assert [r.prediction for r in res["vague"]] == ["I do not know"] * 4


def test_id_is_deterministic_and_follows_the_flows(world):
    a, b = plan_for(world, limit=3), plan_for(world, limit=3)
    assert a.eval_id == b.eval_id and len(a.eval_id) == 12
    assert plan_for(world, limit=4).eval_id != a.eval_id
    edited = resolve_flows(world.ws, [str(world.good), str(world.vague)])
    edited[0].spec.nodes[0].params["top_k"] = 3
    assert eval_id_for(edited, "tinyqa", "test", 3, a.questions) != a.eval_id
    same = resolve_flows(world.ws, [str(world.good), str(world.vague)])
    assert eval_id_for(same, "tinyqa", "test", 3, a.questions) == a.eval_id
    # the same dataset name with other questions (generated or imported again): a new evaluation
    changed = [dict(q) for q in a.questions]
    changed[0]["answers"] = ["someone else"]
    assert eval_id_for(same, "tinyqa", "test", 3, changed) != a.eval_id
    with pytest.raises(FlowkitError, match="listed twice"):
        plan_for(world, flows=[str(world.good), str(world.good)])


def test_stopped_evaluation_resumes_where_it_stopped(world):
    plan = plan_for(world)
    stop = threading.Event()

    def stop_after_5(p):
        if p.done == 5:
            stop.set()

    first = run_evaluation(world.ws, world.repo, plan, EvalRun(progress=stop_after_5, stop=stop))
    assert (first.status, first.ran) == ("stopped", 5)
    assert world.repo.get_eval(plan.eval_id).status == "stopped"
    # a run left unfinished is redone; the finished ones are skipped
    victim = run_id_for(plan.eval_id, 0, 1)
    with Session(world.ws.store.engine) as s, s.begin():
        s.execute(update(RunRow).where(RunRow.id == victim).values(status="interrupted"))
    again = plan_for(world)
    assert again.eval_id == plan.eval_id
    second = run_evaluation(world.ws, world.repo, again)
    assert (second.status, second.skipped, second.redone, second.ran) == ("done", 4, 1, 8)
    runs = world.repo.runs(plan.eval_id)
    assert len(runs) == 12 and {r.record.status for r in runs} == {"ok"}
    assert len(world.ws.store.steps(victim)) == 2            # the redone run has one clean trace
    third = run_evaluation(world.ws, world.repo, again)
    assert (third.ran, third.skipped) == (0, 12)


def test_resume_by_id_uses_the_stored_flows(world):
    plan = plan_for(world, limit=2)
    run_evaluation(world.ws, world.repo, plan)
    info = world.repo.get_eval(plan.eval_id[:6])             # a prefix is enough
    stored = plan_from_eval(info, world.repo.get_dataset(info.dataset).questions)
    assert [f.label for f in stored.flows] == ["good", "vague"]
    assert [q["id"] for q in stored.questions] == ["q1", "q2"]
    assert run_evaluation(world.ws, world.repo, stored).skipped == 4


def _eval_conftest() -> Any:
    """This folder's conftest.py as a module of its own name: `from conftest import ...` would
    find whichever conftest another test folder loaded first."""
    spec = importlib.util.spec_from_file_location("eval_conftest", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module            # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


CHILD = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from typing import Any
from conftest import make_workspace, fake_llm, answer_for
from flowkit.testing import FakeLLM
from flowkit.eval.datasets import from_path
from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
from storage.evals import EvalRepo

def slow(prompt):
    time.sleep(0.3)
    return answer_for(prompt)

def slow_default(prompt):
    time.sleep(0.3)
    return "I do not know"

# every call is slow: a question stays 'running' for 0.3 s at least, much longer than the test
# takes between seeing it running and killing this process (an instant answer could finish in
# between, and the test would find nothing in flight)
root = Path(sys.argv[2])
ws = make_workspace(root / "home", FakeLLM([(r"Question: .*\nAnswer:", slow), (r"(?s).*", slow_default)],
                                           default="I do not know"))
repo = EvalRepo(ws.store)
ds = from_path(root / "files" / "tinyqa")
repo.save_dataset(ds.name, ds.source, ds.questions)
plan = make_plan(resolve_flows(ws, [str(root / "files" / "good.json"), str(root / "files" / "vague.json")]),
                 ds.name, ds.questions, "test")
print(plan.eval_id, flush=True)
run_evaluation(ws, repo, plan)
'''


def test_sigkilled_evaluation_resumes(world):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(HERE), str(world.root)],
                            stdout=subprocess.PIPE, text=True, cwd=HERE.parent.parent)
    try:
        eval_id = proc.stdout.readline().strip()
        deadline = time.time() + 60
        while time.time() < deadline:
            st = world.repo.statuses(eval_id)
            # at least 3 finished and one in flight (the slow model is mid-answer)
            if sum(v == "ok" for v in st.values()) >= 3 and "running" in st.values():
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = world.repo.statuses(eval_id)
    assert "running" in before.values() and len(before) < 12
    finished = {r for r, s in before.items() if s == "ok"}
    assert world.repo.get_eval(eval_id).status == "running"          # as the dead process left it
    assert world.repo.live_status(eval_id) == "interrupted"           # nobody is running it
    # the next start (a fresh Workspace marks the dead process's run interrupted) resumes it
    ws = _eval_conftest().make_workspace(world.root / "home")
    repo = EvalRepo(ws.store)
    assert "interrupted" in repo.statuses(eval_id).values()
    plan = plan_for(type(world)(world.root, ws, repo, world.dataset, world.good, world.vague))
    assert plan.eval_id == eval_id
    out = run_evaluation(ws, repo, plan)
    assert out.skipped == len(finished) and out.redone >= 1 and out.ran == 12 - len(finished)
    after = repo.statuses(eval_id)
    assert len(after) == 12 and set(after.values()) == {"ok"}
    assert repo.get_eval(eval_id).status == "done"


def test_missing_kb_fails_before_running(world):
    plan = plan_for(world, limit=1)
    plan.kb = "nothing_here"
    with pytest.raises(FlowkitError, match="does not exist"):
        run_evaluation(world.ws, world.repo, plan)
    assert world.repo.find_eval(plan.eval_id) is None


def test_delete_eval_removes_runs(world):
    plan = plan_for(world, limit=1)
    run_evaluation(world.ws, world.repo, plan)
    world.repo.delete_eval(plan.eval_id)
    assert world.repo.runs(plan.eval_id) == [] and world.repo.find_eval(plan.eval_id) is None
    assert isinstance(world.repo, EvalRepo)
