"""The run and evaluation jobs (studio.run.tasks, studio.compare.tasks) and the job manager:
checks before queueing, one job for a repeated submit, cancel of queued and running jobs."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from flowkit import templates
from flowkit.spec import from_dict, to_dict
from studio.common.jobs import JobManager
from studio.common.tasks import cancel
from studio.compare import tasks as eval_tasks
from studio.run import tasks as run_tasks

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

QUESTION = "In what year was the Corren Lighthouse first lit?"


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return kit.workspace(tmp_path_factory.mktemp("tasks"))


def _held(jobs: JobManager) -> threading.Event:
    release = threading.Event()
    jobs.submit("test", "blocker", lambda report: release.wait(30) and None)
    return release


def test_check_run_lists_every_reason_a_run_would_fail(ws):
    spec = templates.load_template("naive_rag")
    broken = from_dict({**to_dict(spec), "entry": "nowhere"})
    with pytest.raises(run_tasks.RunRefused) as refused:
        run_tasks.check_run(ws, broken, "x" * (ws.resources.settings.llm.n_ctx * 4), "no_such_kb")
    text = " | ".join(refused.value.problems)
    assert len(refused.value.problems) == 3, text
    assert "flow 'naive_rag' has" in text and "no_such_kb" in text and "tokens" in text
    n_ctx = ws.resources.settings.llm.n_ctx
    assert f"over the limit of {n_ctx // 2} tokens for a question" in text   # names the limit
    with pytest.raises(run_tasks.RunRefused, match="the question is empty"):
        run_tasks.check_run(ws, spec, "  ", "sample")
    run_tasks.check_run(ws, spec, QUESTION, "sample")           # a good run passes


def test_a_repeated_submit_returns_the_queued_run(ws):
    jobs = JobManager()
    release = _held(jobs)
    spec = templates.load_template("naive_rag")
    try:
        first = run_tasks.submit_run(jobs, ws, spec, QUESTION, "sample")
        assert run_tasks.submit_run(jobs, ws, spec, QUESTION, "sample") == first
        other = run_tasks.submit_run(jobs, ws, spec, "Who designed the Corren Lighthouse?", "sample")
        assert other[1] != first[1]
        assert len(jobs.jobs(kind="run", active_only=True)) == 2
    finally:
        release.set()
    jobs.wait_idle(30)
    again = run_tasks.submit_run(jobs, ws, spec, QUESTION, "sample")   # finished: a new run
    assert again[1] != first[1]
    jobs.wait_idle(30)


def test_cancel_queued_never_runs_and_running_sees_the_event():
    jobs = JobManager()
    started, stopped = threading.Event(), threading.Event()

    def running(report):
        started.set()
        stopped.set() if report.cancel.wait(10) else None
        return {"stopped": stopped.is_set()}

    ran: list[str] = []
    first = jobs.submit("run", "long", running)
    queued = jobs.submit("run", "waits", lambda report: ran.append("waits") and None,
                         on_cancelled=lambda report: {"recorded": True})
    assert started.wait(10)
    assert jobs.cancel(queued) is True
    snap = jobs.get(queued)
    assert snap.status == "cancelled" and snap.result == {"recorded": True}
    assert jobs.cancel(first) is True and jobs.get(first).cancel_requested
    done = jobs.wait(first, 10)
    assert done.status == "cancelled" and done.result == {"stopped": True}
    jobs.wait_idle(10)
    assert ran == [] and jobs.cancel(first) is False        # finished: nothing to cancel


def test_a_cancelled_job_is_not_a_duplicate_of_a_new_submit():
    jobs = JobManager()
    release = _held(jobs)
    try:
        a = jobs.submit("run", "a", lambda report: None, dedupe_key="k")
        assert jobs.submit("run", "a", lambda report: None, dedupe_key="k") == a
        jobs.cancel(a)
        assert jobs.submit("run", "a", lambda report: None, dedupe_key="k") != a
    finally:
        release.set()
    jobs.wait_idle(10)


def test_a_cancelled_queued_run_shows_as_cancelled_in_the_replay(ws):
    from studio.common.workspace import use_workspace
    spec = templates.load_template("naive_rag")
    jobs = JobManager()
    release = _held(jobs)
    try:
        _, run_id = run_tasks.submit_run(jobs, ws, spec, "Who founded the Halvard Ferry Company?",
                                         "sample")
        assert cancel(jobs, jobs.find_run(run_id).id)
    finally:
        release.set()
    use_workspace(ws)
    try:
        at = kit.page("pages/replay.py", run=run_id).run()
        assert not at.exception
        assert ":gray-badge[cancelled]" in kit.texts(at)
        assert any(run_id in o and "cancelled" in o for o in at.selectbox(key="replay_pick").options)
    finally:
        use_workspace(None)
    jobs.wait_idle(10)


def test_cancel_a_queued_evaluation_marks_it_stopped(ws):
    from flowkit.eval.datasets import resolve
    from flowkit.eval.runner import make_plan, resolve_flows
    from storage.evals import EvalRepo
    repo = EvalRepo(ws.store)
    ds = resolve(repo, "sample_questions")
    plan = make_plan(resolve_flows(ws, ["naive_rag"]), ds.name, ds.questions, "sample", limit=2)
    jobs = JobManager()
    release = _held(jobs)
    try:
        job_id = eval_tasks.submit_eval(jobs, ws, plan)
        assert eval_tasks.submit_eval(jobs, ws, plan) == job_id            # queued once
        assert eval_tasks.stop_eval(jobs, plan.eval_id)
        assert jobs.get(job_id).status == "cancelled"
        assert eval_tasks.progress(ws, jobs, plan.eval_id).status == "stopped"
        assert eval_tasks.stop_eval(jobs, plan.eval_id) is False           # nothing left to cancel
    finally:
        release.set()
    jobs.wait_idle(10)
    assert repo.runs(plan.eval_id) == []                               # it never ran
