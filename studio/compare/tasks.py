"""The Compare page's background jobs: an evaluation (its progress, its stop) and the grading of an
evaluation's answers by model judges, each queued on the process-wide job manager
(studio.common.jobs; what every job shares is in studio.common.tasks).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flowkit.eval.datasets import Dataset
from flowkit.eval.runner import EvalPlan
from flowkit.eval.strategy import EvalRun, InFlight
from service import evaluations, grading, knowledge
from service.workspace import Workspace
from studio.common.jobs import Job, JobManager, Reporter
from studio.common.tasks import job_key

EVAL = "eval"
GRADE = "grade"


def active_job(jobs: JobManager, eval_id: str) -> Job | None:
    """The queued or running job of this evaluation, if any."""
    for job in reversed(jobs.jobs(kind=EVAL, active_only=True)):
        if job.meta.get("eval_id") == eval_id:
            return job
    return None


def last_job(jobs: JobManager, eval_id: str) -> Job | None:
    for job in reversed(jobs.jobs(kind=EVAL)):
        if job.meta.get("eval_id") == eval_id:
            return job
    return None


def submit_eval(jobs: JobManager, ws: Workspace, plan: EvalPlan, dataset: Dataset | None = None,
                ingest_first: bool = False, concurrency: int = 1) -> str:
    """Queue the evaluation (or return the job already queued for it). With `ingest_first`, the
    dataset's corpus is ingested into the plan's knowledge base first when that one is empty.
    `concurrency` > 1 keeps that many runs in flight against a model server in settings (with
    the embedded model the runs go one after another, as `flowkit eval --concurrency` does).

    It runs in the job manager's one worker thread, after whatever was queued before it, so the
    model is never used by two threads. Every answer is stored as a run as it finishes; a
    cancelled or interrupted evaluation resumes from where it stopped when it is started again."""
    repo = evaluations.eval_repo(ws)
    # record the evaluation now, so the page can open it at once (before the job starts)
    evaluations.record(ws, plan)

    def work(report: Reporter) -> dict[str, Any]:
        if ingest_first and dataset is not None and dataset.corpus:
            n = knowledge.ingest_corpus(
                ws, dataset, plan.kb,
                progress=lambda d, t: report.update(
                    progress=d / max(t, 1),
                    message=f"ingesting {dataset.name}'s corpus into '{plan.kb}': {d}/{t} chunks"))
            if n:
                repo.set_dataset_kb(dataset.name, plan.kb)
        report.update(progress=0.0, message="starting (the model loads on the first call)")

        def on_progress(p: Any) -> None:
            report.update(progress=p.done / max(p.total, 1),
                          message=f"{p.describe()} · {p.flow} on question "
                                  f"{p.question_index + 1} ({p.status})")

        out = evaluations.run(ws, plan, EvalRun(strategy=InFlight(concurrency),
                                                progress=on_progress, stop=report.cancel))
        return {"eval_id": out.eval_id, "status": out.status, "ran": out.ran,
                "skipped": out.skipped, "redone": out.redone,
                "computed_calls": out.cost.computed, "cached_calls": out.cost.cached}

    def cancelled(report: Reporter) -> dict[str, Any]:
        repo.set_status(plan.eval_id, "stopped")
        return {"eval_id": plan.eval_id, "status": "stopped"}

    return jobs.submit(EVAL, f"evaluation {plan.eval_id}: {plan.name}", work,
                       dedupe_key=job_key(EVAL, plan.eval_id), on_cancelled=cancelled,
                       meta={"eval_id": plan.eval_id})


def stop_eval(jobs: JobManager, eval_id: str) -> bool:
    """Cancel the evaluation's job: the run in flight stops at its next step, no question starts
    after it (the finished runs are kept). False when no job of it is queued or running."""
    job = active_job(jobs, eval_id)
    return job is not None and jobs.cancel(job.id)


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
    repo = evaluations.eval_repo(ws)
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


def grading_job(jobs: JobManager, eval_id: str) -> Job | None:
    """The evaluation's grading job: the queued or running one, else the last one (or None)."""
    mine = [j for j in jobs.jobs(kind=GRADE) if j.meta.get("eval_id") == eval_id]
    active = [j for j in mine if not j.finished]
    return (active or mine)[-1] if mine else None


def submit_grading(jobs: JobManager, ws: Workspace, eval_id: str, graders: list[str],
                   model: str = "", criteria: list[str] | None = None) -> str:
    """Check (FlowkitError) and queue `service.grading.grade` of the evaluation's finished answers
    with `graders` and the user's `criteria` (their words, one each) on `model` ('' / 'default':
    the workspace's), or return the job already queued or running for the same grading.

    It runs in the job manager's one worker thread (after an evaluation queued before it, so the
    model is never used by two threads); `progress` is answers graded / to grade and `message`
    says so; its result holds the outcome's line. Cancelling stops it before the next answer (the
    verdicts made are stored: grading again resumes)."""
    wanted = [grading.criterion_from(t, "Criteria of your own")
              for t in dict.fromkeys(criteria or [])]
    if graders or not wanted:
        grading.check(graders, model)
    else:
        grading.check_model(model)
    names = [*graders, *(f'criterion "{c.text}"' for c in wanted)]
    meta = {"eval_id": eval_id, "graders": names, "model": model,
            "model_name": grading.model_name(ws, model)}

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="starting (the model loads on the first call)")

        def on_progress(i: int, n: int) -> None:
            report.update(progress=i / max(n, 1), message=f"graded {i} of {n} answers")

        out = grading.grade(ws, eval_id, graders, model=model, on_progress=on_progress,
                            should_stop=report.cancel.is_set, criteria=wanted)
        report.update(progress=1.0, message=out.line())
        return {"eval_id": eval_id, "line": out.line(), "graded": out.graded,
                "reused": out.reused, "calls": out.cost.calls, "cached_calls": out.cost.cached}

    return jobs.submit(GRADE, f"judges {', '.join(names)} on evaluation {eval_id}", work,
                       dedupe_key=job_key(GRADE, eval_id, sorted(graders),
                                          sorted(c.name for c in wanted), model), meta=meta)
