"""The background job manager: one worker, jobs in submit order, errors kept, snapshots only."""
from __future__ import annotations

import threading
import time

from studio.common.jobs import JobManager


def test_jobs_run_one_after_the_other_in_submit_order():
    jobs = JobManager()
    order, active, most = [], [0], [0]
    lock = threading.Lock()

    def work(i):
        def run(report):
            with lock:
                active[0] += 1
                most[0] = max(most[0], active[0])
            report.update(progress=0.5, message=f"half of {i}")
            time.sleep(0.05)
            order.append(i)
            with lock:
                active[0] -= 1
            return {"i": i}
        return run

    release = threading.Event()
    jobs.submit("test", "blocker", lambda report: release.wait(5) and None)
    ids = [jobs.submit("test", f"job {i}", work(i)) for i in range(4)]
    assert jobs.ahead_of(ids[3]) == 4 and jobs.get(ids[0]).status == "queued"
    release.set()
    jobs.wait_idle(10)
    assert order == [0, 1, 2, 3] and most[0] == 1
    done = jobs.get(ids[2])
    assert done.status == "done" and done.result == {"i": 2} and done.message == "half of 2"
    assert done.elapsed_s >= 0.05


def test_a_failing_job_keeps_its_error_and_the_worker_goes_on():
    jobs = JobManager()

    def boom(report):
        raise ValueError("the file is broken")

    bad = jobs.submit("test", "bad", boom)
    good = jobs.submit("test", "good", lambda report: {"ok": True})
    assert jobs.wait(bad, 10).error == "the file is broken"
    assert jobs.wait(good, 10).status == "done"


def test_snapshots_do_not_change_the_job_and_runs_are_found_by_id():
    jobs = JobManager()
    release = threading.Event()
    job_id = jobs.submit("run", "r", lambda report: release.wait(5) and None, run_id="abc123")
    snap = jobs.get(job_id)
    snap.tokens = 999
    assert jobs.get(job_id).tokens == 0
    assert jobs.find_run("abc123").id == job_id
    assert jobs.find_run("abc").id == job_id          # a prefix, as run ids are shown short
    assert [j.id for j in jobs.jobs(active_only=True)] == [job_id]
    release.set()
    jobs.wait(job_id, 10)
    assert jobs.jobs(active_only=True) == []
