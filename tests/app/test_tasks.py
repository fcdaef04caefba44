"""studio.tasks and the job manager: checks before queueing, one job for a repeated submit,
cancel of queued and running jobs."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from flowkit import templates
from flowkit.spec import from_dict, to_dict
from studio import tasks
from studio.jobs import JobManager

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit  # noqa: E402

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
    with pytest.raises(tasks.RunRefused) as refused:
        tasks.check_run(ws, broken, "x" * (ws.resources.settings.llm.n_ctx * 4), "no_such_kb")
    text = " | ".join(refused.value.problems)
    assert len(refused.value.problems) == 3, text
    assert "flow 'naive_rag' has" in text and "no_such_kb" in text and "tokens" in text
    with pytest.raises(tasks.RunRefused, match="the question is empty"):
        tasks.check_run(ws, spec, "  ", "sample")
    tasks.check_run(ws, spec, QUESTION, "sample")           # a good run passes


def test_a_repeated_submit_returns_the_queued_run(ws):
    jobs = JobManager()
    release = _held(jobs)
    spec = templates.load_template("naive_rag")
    try:
        first = tasks.submit_run(jobs, ws, spec, QUESTION, "sample")
        assert tasks.submit_run(jobs, ws, spec, QUESTION, "sample") == first
        other = tasks.submit_run(jobs, ws, spec, "Who designed the Corren Lighthouse?", "sample")
        assert other[1] != first[1]
        assert len(jobs.jobs(kind="run", active_only=True)) == 2
    finally:
        release.set()
    jobs.wait_idle(30)
    again = tasks.submit_run(jobs, ws, spec, QUESTION, "sample")   # finished: a new run
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
