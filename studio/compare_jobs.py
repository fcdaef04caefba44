"""Evaluations as background jobs: queued on the process-wide job manager (studio.jobs), with a
stop switch per evaluation, and their progress read back from the database.

The evaluation runs in the job manager's one worker thread, after whatever runs were queued
before it, so the model is never used by two threads. Every answer is stored as a run as it
finishes; the page polls `progress()` and survives a refresh or a closed tab. A stopped or
interrupted evaluation resumes from where it stopped when it is started again.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import streamlit as st

from flowkit.eval.datasets import Dataset
from flowkit.eval.runner import EvalPlan, run_evaluation
from flowkit.ingest import ingest
from service.workspace import Workspace
from storage.evals import EvalRepo

from .jobs import Job, JobManager, Reporter

KIND = "eval"


class StopSwitches:
    """One threading.Event per evaluation id: set it and the evaluation stops before its next
    question (the run in flight finishes and is kept)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, threading.Event] = {}

    def event(self, eval_id: str) -> threading.Event:
        with self._lock:
            return self._events.setdefault(eval_id, threading.Event())

    def fresh(self, eval_id: str) -> threading.Event:
        with self._lock:
            self._events[eval_id] = threading.Event()
            return self._events[eval_id]


@st.cache_resource(show_spinner=False)
def get_switches() -> StopSwitches:
    """The process-wide stop switches (shared by every session)."""
    return StopSwitches()


def active_job(jobs: JobManager, eval_id: str) -> Job | None:
    """The queued or running job of this evaluation, if any."""
    for job in reversed(jobs.jobs(kind=KIND, active_only=True)):
        if job.meta.get("eval_id") == eval_id:
            return job
    return None


def last_job(jobs: JobManager, eval_id: str) -> Job | None:
    for job in reversed(jobs.jobs(kind=KIND)):
        if job.meta.get("eval_id") == eval_id:
            return job
    return None


def submit_eval(jobs: JobManager, switches: StopSwitches, ws: Workspace, plan: EvalPlan,
                dataset: Dataset | None = None, ingest_first: bool = False) -> str:
    """Queue the evaluation (or return the job already queued for it). With `ingest_first`, the
    dataset's corpus is ingested into the plan's knowledge base first when that one is empty."""
    running = active_job(jobs, plan.eval_id)
    if running is not None:
        return running.id
    stop = switches.fresh(plan.eval_id)
    repo = EvalRepo(ws.store)
    # record the evaluation now, so the page can open it at once (before the job starts)
    repo.ensure_eval(plan.eval_id, plan.name, plan.dataset, plan.kb,
                     [f.record() for f in plan.flows], [str(q["id"]) for q in plan.questions])

    def work(report: Reporter) -> dict[str, Any]:
        base = ws.resources.kb(plan.kb)
        if ingest_first and dataset is not None and dataset.corpus and \
                not (base.exists and base.count() > 0):
            report.update(message=f"ingesting {dataset.name}'s corpus into '{plan.kb}'")
            ingest(ws.resources, plan.kb, [dataset.corpus],
                   progress=lambda d, t: report.update(progress=d / max(t, 1),
                                                       message=f"ingesting: {d}/{t} chunks"))
            repo.set_dataset_kb(dataset.name, plan.kb)
        report.update(progress=0.0, message="starting (the model loads on the first call)")

        def on_progress(p: Any) -> None:
            report.update(progress=p.done / max(p.total, 1),
                          message=f"{p.done}/{p.total}: {p.flow} on question {p.question_index + 1}"
                                  f" ({p.status})")

        out = run_evaluation(ws, repo, plan, progress=on_progress, stop=stop)
        return {"eval_id": out.eval_id, "status": out.status, "ran": out.ran,
                "skipped": out.skipped, "redone": out.redone}

    return jobs.submit(KIND, f"evaluation {plan.eval_id}: {plan.name}", work,
                       meta={"eval_id": plan.eval_id})


def stop_eval(switches: StopSwitches, eval_id: str) -> None:
    switches.event(eval_id).set()


@dataclass
class EvalProgress:
    """Where an evaluation stands: finished runs of the total, and its job (if this process has
    one)."""

    eval_id: str
    finished: int
    total: int
    failed: int
    status: str          # queued | running | done | stopped | interrupted | error | ...
    message: str = ""
    job_id: str | None = None

    @property
    def fraction(self) -> float:
        return self.finished / self.total if self.total else 0.0

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")


def progress(ws: Workspace, jobs: JobManager, eval_id: str) -> EvalProgress:
    """Progress from the database (runs finished) and the job (queued/running/error)."""
    repo = EvalRepo(ws.store)
    info = repo.get_eval(eval_id)
    counts = repo.progress(info.id)
    finished = counts.get("ok", 0) + counts.get("budget_exceeded", 0)
    failed = counts.get("error", 0)
    job = active_job(jobs, info.id) or last_job(jobs, info.id)
    status = info.status
    message = ""
    if job is not None:
        message = job.message
        if job.status in ("queued", "running"):
            status = job.status
        elif job.status == "error":
            status, message = "error", job.error or "failed"
    elif status == "running":
        # no job in this process: another process (the CLI) runs it, or the one that did is gone
        status = repo.live_status(info.id)
        message = ("running in another process" if status == "running"
                   else "stopped before it finished; resume it here or with the CLI")
    return EvalProgress(info.id, finished, info.total, failed, status, message,
                        job.id if job else None)
