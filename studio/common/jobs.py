"""The process-wide background job manager: one worker thread serving queued jobs in order.

Long work (a run, a fork, an ingest) never runs in a page's script thread: the page submits a job
and polls it. Jobs live in the process (st.cache_resource), so they survive a page refresh or a
closed tab; a run's steps are also in SQLite as they happen. One worker thread serves the queue
one job after the other, which keeps the model single-threaded: two tabs that press "Run" at
once are queued, never run side by side.

    jobs = get_jobs()
    job_id = jobs.submit("run", "naive_rag on sample", work, run_id="ab12...")
    jobs.get(job_id).status        # queued | running | done | error | cancelled
    jobs.cancel(job_id)            # queued: never runs; running: its work sees report.cancel

`work(report)` does the job; `report` is the job's `Reporter` (progress, current node, tokens, and
`cancel`, the Event a cancellable work checks between its steps). A job submitted with a
`dedupe_key` while an unfinished job has the same key is not queued again: `submit` returns the
id of the one already queued or running (three clicks on Run make one run).

Work that never touches the model (a model file's download) is submitted with `own_thread=True`:
it starts at once in a thread of its own, neither waiting behind the queue nor holding it up.
"""
from __future__ import annotations

import copy
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from flowkit.errors import FlowkitError

log = logging.getLogger(__name__)

STATUSES = ("queued", "running", "done", "error", "cancelled")
KEEP_FINISHED = 200   # finished jobs remembered per process (older ones are dropped)


class ExpectedFailure(FlowkitError):
    """What a job's work raises when it failed for a reason outside the studio that the job's
    own error line says in full (the Hugging Face Hub unreachable, a file it does not have): the
    job fails with this one line, and the log gets one line without a traceback (issue 47,
    finding 10: a traceback is for what is wrong with the studio)."""


class InputRefused(ExpectedFailure):
    """What a job's work raises when the user's own input cannot be used (a file that is not
    UTF-8, a .jsonl line without text): the job fails with this one line, and the log gets one
    line without a traceback, since nothing is wrong with the studio."""


@dataclass
class Job:
    """One piece of background work and how far it got (a snapshot when read from the manager).

    kind: "run" | "fork" | "ingest". run_id: the run this job writes (known at submit time for a
    run, once it starts for a fork). node: the node running now (or last finished); steps: steps
    finished; tokens: tokens so far; progress: 0..1 where known (ingest); result: what the work
    returned (a dict); error: the error text when status is "error".
    """

    id: str
    kind: str
    label: str
    status: str = "queued"
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    ended_at: float | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    node: str | None = None
    steps: int = 0
    tokens: int = 0
    progress: float | None = None
    message: str = ""
    result: dict[str, Any] | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    dedupe_key: str | None = None
    cancel_requested: bool = False
    own_thread: bool = False     # runs beside the queue (never the model's work)

    @property
    def finished(self) -> bool:
        return self.status in ("done", "error", "cancelled")

    @property
    def cancellable(self) -> bool:
        """Queued, or running and not yet asked to stop."""
        return not self.finished and not self.cancel_requested

    @property
    def elapsed_s(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self.ended_at or time.time()) - self.started_at


class Reporter:
    """What a job's work uses to say how far it got; every call is thread-safe."""

    def __init__(self, manager: JobManager, job_id: str) -> None:
        self._manager = manager
        self.job_id = job_id

    def update(self, **values: Any) -> None:
        """Set fields of the job (run_id, node, steps, tokens, progress, message)."""
        self._manager._update(self.job_id, **values)

    def add_tokens(self, n: int) -> None:
        self._manager._add_tokens(self.job_id, n)

    @property
    def cancel(self) -> threading.Event:
        """Set when someone cancels the job: the work stops at its next step boundary."""
        return self._manager._cancel_event(self.job_id)


Work = Callable[[Reporter], dict[str, Any] | None]
#: What a job cancelled while still queued does instead of its work (e.g. record the run as
#: cancelled); it gets the same Reporter.
OnCancelled = Callable[[Reporter], dict[str, Any] | None]


class JobManager:
    """A queue of jobs and the one worker thread that serves it (started on the first submit)."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._work: dict[str, Work] = {}
        self._on_cancelled: dict[str, OnCancelled] = {}
        self._cancels: dict[str, threading.Event] = {}
        self._order: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None

    # ---- submitting -----------------------------------------------------------------------
    def submit(self, kind: str, label: str, work: Work, *, run_id: str | None = None,
               parent_run_id: str | None = None, meta: dict[str, Any] | None = None,
               dedupe_key: str | None = None, on_cancelled: OnCancelled | None = None,
               own_thread: bool = False) -> str:
        """Queue `work` and return the job id at once; the worker runs it when its turn comes.

        With `dedupe_key`, an unfinished job with the same key is returned instead (nothing new is
        queued). `on_cancelled` runs instead of `work` when the job is cancelled while queued.
        With `own_thread`, the work starts now in a thread of its own, beside the queue: only for
        work that never uses the model (which must stay single-threaded)."""
        job = Job(id=uuid.uuid4().hex[:10], kind=kind, label=label, run_id=run_id,
                  parent_run_id=parent_run_id, meta=dict(meta or {}), dedupe_key=dedupe_key,
                  own_thread=own_thread)
        with self._lock:
            if dedupe_key is not None:
                for other in self._jobs.values():
                    if other.dedupe_key == dedupe_key and not other.finished \
                            and not other.cancel_requested:
                        return other.id
            self._jobs[job.id] = job
            self._work[job.id] = work
            self._cancels[job.id] = threading.Event()
            if on_cancelled is not None:
                self._on_cancelled[job.id] = on_cancelled
            self._order.append(job.id)
            self._forget_old()
            if not own_thread:
                self._ensure_worker()
        if own_thread:
            threading.Thread(target=self._run, args=(job.id,), name=f"flowkit-job-{job.id}",
                             daemon=True).start()
        else:
            self._queue.put(job.id)
        return job.id

    def _ensure_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._serve, name="flowkit-jobs", daemon=True)
            self._worker.start()

    def _forget_old(self) -> None:
        finished = [i for i in self._order if self._jobs[i].finished]
        for job_id in finished[:max(0, len(finished) - KEEP_FINISHED)]:
            self._order.remove(job_id)
            self._jobs.pop(job_id, None)
            self._cancels.pop(job_id, None)

    # ---- the worker -----------------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            self._run(self._queue.get())

    def _run(self, job_id: str) -> None:
        """Run one job's work in this thread (the worker's, or its own) and record how it ended."""
        with self._lock:
            job = self._jobs.get(job_id)
            work = self._work.pop(job_id, None)
            self._on_cancelled.pop(job_id, None)
            if job is None or work is None:
                return
            job.status, job.started_at = "running", time.time()
        try:
            result = work(Reporter(self, job_id))
        except InputRefused as err:
            log.warning("job %s (%s) refused its input: %s", job_id, job.label, err)
            self._finish(job_id, "error", None, _error_text(err))
        except ExpectedFailure as err:
            log.warning("job %s (%s) failed: %s", job_id, job.label, err)
            self._finish(job_id, "error", None, _error_text(err))
        except Exception as err:
            log.exception("job %s (%s) failed", job_id, job.label)
            self._finish(job_id, "error", None, _error_text(err))
        else:
            done = "cancelled" if self._cancel_event(job_id).is_set() else "done"
            self._finish(job_id, done, result, None)

    def _finish(self, job_id: str, status: str, result: dict[str, Any] | None,
                error: str | None) -> None:
        with self._lock:
            job = self._jobs[job_id]
            job.status, job.result, job.error, job.ended_at = status, result, error, time.time()
            if result and not job.run_id and result.get("run_id"):
                job.run_id = str(result["run_id"])
            if status == "error" and not job.message:
                job.message = "failed"
            self._idle.notify_all()

    def _update(self, job_id: str, **values: Any) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return
            for k, v in values.items():
                if k not in Job.__dataclass_fields__ or k in ("id", "status"):
                    raise KeyError(f"a job has no settable field '{k}'")
                setattr(job, k, v)

    def _cancel_event(self, job_id: str) -> threading.Event:
        with self._lock:
            return self._cancels.setdefault(job_id, threading.Event())

    def cancel(self, job_id: str) -> bool:
        """Ask the job to stop. A queued job is cancelled at once: its work never runs and its
        `on_cancelled` runs now, in the caller's thread. A running one is asked to stop at its next
        step boundary (its work sees `report.cancel`). False when it had already finished."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.finished:
                return False
            self._cancels.setdefault(job_id, threading.Event()).set()
            job.cancel_requested = True
            if job.status != "queued":
                job.message = "cancelling: stops at the next step"
                return True
            self._work.pop(job_id, None)
            on_cancelled = self._on_cancelled.pop(job_id, None)
        result = None
        if on_cancelled is not None:
            try:
                result = on_cancelled(Reporter(self, job_id))
            except Exception:
                log.exception("job %s: recording its cancellation failed", job_id)
        self._finish(job_id, "cancelled", result, None)
        self._update(job_id, message="cancelled before it started")
        return True

    def _add_tokens(self, job_id: str, n: int) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                job.tokens += int(n)

    # ---- reading --------------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        """A snapshot of the job (a copy: changing it changes nothing), or None."""
        with self._lock:
            job = self._jobs.get(job_id)
            return copy.deepcopy(job) if job else None

    def find_run(self, run_id: str) -> Job | None:
        """The latest job that writes run `run_id` (a snapshot), or None."""
        with self._lock:
            for job_id in reversed(self._order):
                job = self._jobs[job_id]
                if job.run_id and (job.run_id == run_id or job.run_id.startswith(run_id)):
                    return copy.deepcopy(job)
        return None

    def jobs(self, kind: str | None = None, active_only: bool = False) -> list[Job]:
        """Snapshots in submit order, newest last."""
        with self._lock:
            out = [copy.deepcopy(self._jobs[i]) for i in self._order
                   if (kind is None or self._jobs[i].kind == kind)
                   and (not active_only or not self._jobs[i].finished)]
        return out

    def ahead_of(self, job_id: str) -> int:
        """How many unfinished queued jobs were submitted before this one (0: it is next or
        running); jobs in threads of their own are never ahead of another."""
        with self._lock:
            n = 0
            for i in self._order:
                if i == job_id:
                    return n
                if not self._jobs[i].finished and not self._jobs[i].own_thread:
                    n += 1
        return 0

    def wait(self, job_id: str, timeout: float = 60.0) -> Job:
        """Block until the job is finished (tests, the CLI); raises TimeoutError."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._jobs[job_id].finished:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"job {job_id} did not finish within {timeout:g}s")
                self._idle.wait(left)
            return copy.deepcopy(self._jobs[job_id])

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until no job is queued or running."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while any(not j.finished for j in self._jobs.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"jobs still busy after {timeout:g}s")
                self._idle.wait(left)


def _error_text(err: BaseException) -> str:
    text = str(err).strip()
    return text if text else type(err).__name__


@st.cache_resource(show_spinner=False)
def get_jobs() -> JobManager:
    """The one job manager of this process (shared by every session and page)."""
    return JobManager()
