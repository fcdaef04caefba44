"""Every background job the studio submits, in one place: a run, a fork, an ingest, an evaluation,
a question set generated from a knowledge base, the grading of an evaluation's answers, a model
pulled from the Hugging Face Hub.

Each goes to the process-wide job manager (studio.common.jobs), which runs them one after the other and
can cancel each one: a queued job never starts, a running run or evaluation stops at its next
step (the engine checks the job's cancel event between steps) and is stored as `cancelled`.

A run is checked before it is queued (`check_run`: the question, the flow, the knowledge base,
the question's length against the model's context), so a run that cannot work fails at once
instead of after its wait in the queue; the same run submitted again while it is queued or
running is not queued twice. The run id is chosen here, before the job is queued, so the page can
put it in its query params at once and a refresh finds the same run again.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flowkit.errors import DocumentError, FlowkitError
from flowkit.eval.datasets import Dataset
from flowkit.eval.questiongen.generate import Progress
from flowkit.eval.runner import EvalPlan
from flowkit.spec import FlowSpec, to_dict
from flowkit.trace import RunEnd, RunStart, StepEvent
from flowkit.validate import check
from service import evaluations, grading, hub, knowledge, questiongen
from service.uploads import save_uploads
from service.workspace import Workspace
from studio.common.jobs import ExpectedFailure, InputRefused, Job, JobManager, Reporter
from studio.run.overrides import Overrides, with_overrides

EVAL = "eval"
#: A cheap bound for the question's length in tokens without loading the model (the same
#: estimate the OpenAI-compatible client makes where a server cannot tokenize).
CHARS_PER_TOKEN = 4


class RunRefused(FlowkitError):
    """The run cannot work, so it is not queued; `problems` lists why, one sentence each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class ProgressSink:
    """A trace sink that reports a run's progress to its job (node, steps, tokens)."""

    def __init__(self, report: Reporter) -> None:
        self.report = report

    def start(self, run: RunStart) -> None:
        self.report.update(run_id=run.run_id, parent_run_id=run.parent_run_id,
                           message=f"started {run.flow_name}")

    def step(self, event: StepEvent) -> None:
        self.report.add_tokens(event.tokens)
        self.report.update(node=event.node_id, steps=event.index + 1,
                           message=f"finished step {event.index} ({event.node_id})")

    def end(self, result: RunEnd) -> None:
        self.report.update(message=f"ended: {result.status}")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _result(end: RunEnd) -> dict[str, Any]:
    out = asdict(end)
    out.pop("memory", None)    # the run row keeps it; the job needs only the summary
    return out


def question_tokens(question: str) -> int:
    """About how many tokens `question` is (CHARS_PER_TOKEN characters a token)."""
    return -(-len(question) // CHARS_PER_TOKEN)


def check_run(ws: Workspace, spec: FlowSpec, question: str, kb: str) -> None:
    """What can be known before queueing: RunRefused lists every reason the run would fail."""
    problems = []
    if not question.strip():
        problems.append("the question is empty")
    errors = [p for p in check(spec) if p.severity == "error"]
    if errors:
        problems.append(f"flow '{spec.name}' has {len(errors)} problem(s): "
                        + "; ".join(str(p) for p in errors[:3]))
    if kb:
        try:
            ws.resources.kb(kb).require_ready()
        except FlowkitError as err:
            problems.append(str(err))
    n_ctx = int(ws.resources.settings.llm.n_ctx or 0)
    tokens = question_tokens(question)
    if n_ctx and tokens > n_ctx // 2:
        problems.append(f"the question is about {tokens} tokens ({len(question)} characters), over "
                        f"the limit of {n_ctx // 2} tokens for a question: half of the model's "
                        f"{n_ctx}-token context (settings: n_ctx), the rest is for passages and "
                        "the answer; shorten the question")
    if problems:
        raise RunRefused(problems)


def _key(*parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def submit_run(jobs: JobManager, ws: Workspace, spec: FlowSpec, question: str, kb: str, *,
               flow_version: int | None = None, overrides: Overrides | None = None,
               on_token: Callable[[str], Callable[[str, int, str], None]] | None = None
               ) -> tuple[str, str]:
    """Check (RunRefused) and queue a run of `spec` on `question` against knowledge base `kb`
    (may be ""). Returns (job id, run id); the same run already queued or running is returned
    instead of a new one. `overrides` (temperature, node params) apply to this run only.
    `on_token(run_id)`, when given, makes the callback that gets the model's text as it is
    generated (run_flow's on_token; the Run page streams the answer with it)."""
    check_run(ws, spec, question, kb)
    spec, view = with_overrides(ws, spec, overrides)
    key = _key("run", to_dict(spec), question, kb, flow_version,
               overrides.temperature if overrides else None)
    run_id = new_run_id()

    def work(report: Reporter) -> dict[str, Any]:
        report.update(node=None, message="starting (loading the model on the first run)")
        end = view.run(spec, question, kb, flow_version=flow_version, run_id=run_id,
                       extra_sink=ProgressSink(report), cancel=report.cancel,
                       on_token=on_token(run_id) if on_token else None)
        return _result(end)

    def cancelled(report: Reporter) -> dict[str, Any]:
        return _result(ws.record_cancelled(spec, question, kb, run_id, flow_version=flow_version))

    label = f"{spec.name} on {kb or 'no KB'}: {question[:60]}"
    job_id = jobs.submit("run", label, work, run_id=run_id, dedupe_key=key, on_cancelled=cancelled,
                         meta={"flow": spec.name, "kb": kb, "question": question})
    job = jobs.get(job_id)
    return job_id, (job.run_id if job is not None and job.run_id else run_id)


def submit_fork(jobs: JobManager, ws: Workspace, run_id: str, step_index: int,
                memory_changes: dict[str, Any] | None = None,
                param_changes: dict[str, Any] | None = None) -> str:
    """Queue `Workspace.fork(run_id, step_index, ...)`; the new run id appears once it starts.
    The same fork already queued or running is returned instead of a new one."""

    def work(report: Reporter) -> dict[str, Any]:
        end = ws.fork(run_id, step_index, memory_changes or None, param_changes or None,
                      extra_sink=ProgressSink(report), cancel=report.cancel)
        return _result(end)

    changed = [*(memory_changes or {}), *(f"params.{k}" for k in (param_changes or {}))]
    label = f"fork of {run_id} at step {step_index} ({', '.join(changed) or 'no change'})"
    return jobs.submit("fork", label, work, parent_run_id=run_id,
                       dedupe_key=_key("fork", run_id, step_index, memory_changes, param_changes),
                       meta={"parent_step": step_index, "memory_changes": memory_changes or {},
                             "param_changes": param_changes or {}})


def cancel(jobs: JobManager, job_id: str) -> bool:
    """Cancel a queued or running job (see JobManager.cancel); False when it had finished."""
    return jobs.cancel(job_id)


def submit_ingest(jobs: JobManager, ws: Workspace, kb: str, files: list[tuple[str, bytes]],
                  chunker: str, params: dict[str, Any]) -> str:
    """Save uploaded (name, bytes) files under <data_dir>/uploads/<id>/ and queue their ingest.

    A file name that is empty, '.' or '..', holds a NUL, '/' or '\\', or is over 255 bytes raises
    uploads.UploadRefused (naming each such file) before anything is created; two files with the same
    name are both kept, the second as 'name (2).ext'. The saved copies are removed when the
    ingest ends, whether it worked or not. A file that cannot be read fails the job with one
    line naming it as the user named it ('notes.txt: not UTF-8 text ...'), never by the path of
    its saved copy.
    """
    folder = ws.data_dir / "uploads" / uuid.uuid4().hex[:10]
    paths = save_uploads(folder, files)
    try:
        return _queue_ingest(jobs, ws, kb, folder, paths, chunker, params,
                             {path: name for path, (name, _) in zip(paths, files)})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _queue_ingest(jobs: JobManager, ws: Workspace, kb: str, folder: Path, paths: list[Path],
                  chunker: str, params: dict[str, Any], names: dict[Path, str]) -> str:
    """Submit the ingest job of the saved `paths` (`names`: each one's name as uploaded); the job
    removes `folder` when it ends."""

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="reading and chunking")

        def progress(done: int, total: int) -> None:
            report.update(progress=done / total if total else 1.0,
                          message=f"embedded {done} of {total} chunks")
        try:
            n = knowledge.ingest_files(ws, kb, paths, chunker, params, progress=progress)
        except DocumentError as err:      # the user's file, named as they named it
            raise InputRefused(f"{err.where(names.get(err.path, err.path.name))}: "
                               f"{err.reason}") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        report.update(progress=1.0, message=f"ingested {n} chunks")
        return {"kb": kb, "chunks": n, "files": [p.name for p in paths]}

    listed = ", ".join(p.name for p in paths)
    return jobs.submit("ingest", f"ingest {listed} into {kb}", work,
                       meta={"kb": kb, "chunker": chunker, "params": params})


# ---- evaluations ------------------------------------------------------------------------------
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

        out = evaluations.run(ws, plan, progress=on_progress, stop=report.cancel,
                              concurrency=concurrency)
        return {"eval_id": out.eval_id, "status": out.status, "ran": out.ran,
                "skipped": out.skipped, "redone": out.redone,
                "computed_calls": out.computed_calls, "cached_calls": out.cached_calls}

    def cancelled(report: Reporter) -> dict[str, Any]:
        repo.set_status(plan.eval_id, "stopped")
        return {"eval_id": plan.eval_id, "status": "stopped"}

    return jobs.submit(EVAL, f"evaluation {plan.eval_id}: {plan.name}", work,
                       dedupe_key=_key(EVAL, plan.eval_id), on_cancelled=cancelled,
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


# ---- question sets generated from a knowledge base ---------------------------------------------
QGEN = "questiongen"


def submit_questiongen(jobs: JobManager, ws: Workspace, plan: questiongen.Plan) -> str:
    """Queue the generation of a checked plan (`service.questiongen.plan`), or return the job
    already queued or running for the same plan.

    While it runs, the job's `progress` is kept / asked for, its `message` the progress line and
    `meta["progress"]` the counts (kept, tried, calls computed / cached, drops). Its result holds
    the generated set, not saved: {"plan", "questions", "reviewed", "meta", "progress", "line"};
    the job lives in the process, so a refresh of the page finds the set again. Cancelling stops
    it at the next candidate (what it computed stays in the completion cache)."""
    base = {"kb": plan.kb, "name": plan.name, "target": plan.request.n,
            "estimate": plan.estimate.line()}

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="starting (the model loads on the first call)")

        def on_progress(p: Progress) -> None:
            report.update(progress=min(p.kept / max(p.target, 1), 1.0), message=p.line(),
                          meta={**base, "progress": p.to_dict()})

        out = questiongen.run(ws, plan, on_progress=on_progress,
                              should_stop=report.cancel.is_set)
        report.update(progress=1.0, message=out.progress.line(),
                      meta={**base, "progress": out.progress.to_dict()})
        return {"plan": plan, "questions": out.questions, "reviewed": out.reviewed,
                "meta": out.meta, "progress": out.progress.to_dict(),
                "line": out.progress.line()}

    return jobs.submit(QGEN, f"questions from '{plan.kb}' into '{plan.name}'", work,
                       dedupe_key=_key(QGEN, plan.kb, plan.name, asdict(plan.request),
                                       plan.model),
                       meta=base)


# ---- graders on an evaluation's answers --------------------------------------------------------
GRADE = "grade"


def grading_job(jobs: JobManager, eval_id: str) -> Job | None:
    """The evaluation's grading job: the queued or running one, else the last one (or None)."""
    mine = [j for j in jobs.jobs(kind=GRADE) if j.meta.get("eval_id") == eval_id]
    active = [j for j in mine if not j.finished]
    return (active or mine)[-1] if mine else None


def submit_grading(jobs: JobManager, ws: Workspace, eval_id: str, graders: list[str],
                   model: str = "") -> str:
    """Check (FlowkitError) and queue `service.grading.grade` of the evaluation's finished answers
    with `graders` on `model` ('' / 'default': the workspace's), or return the job already queued
    or running for the same grading.

    It runs in the job manager's one worker thread (after an evaluation queued before it, so the
    model is never used by two threads); `progress` is answers graded / to grade and `message`
    says so; its result holds the outcome's line. Cancelling stops it before the next answer (the
    verdicts made are stored: grading again resumes)."""
    grading.check(graders, model)
    meta = {"eval_id": eval_id, "graders": list(graders), "model": model,
            "model_name": grading.model_name(ws, model)}

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="starting (the model loads on the first call)")

        def on_progress(i: int, n: int) -> None:
            report.update(progress=i / max(n, 1), message=f"graded {i} of {n} answers")

        out = grading.grade(ws, eval_id, graders, model=model, on_progress=on_progress,
                            should_stop=report.cancel.is_set)
        report.update(progress=1.0, message=out.line())
        return {"eval_id": eval_id, "line": out.line(), "graded": out.graded,
                "reused": out.reused, "calls": out.calls, "cached_calls": out.cached_calls}

    return jobs.submit(GRADE, f"judges {', '.join(graders)} on evaluation {eval_id}", work,
                       dedupe_key=_key(GRADE, eval_id, sorted(graders), model), meta=meta)


# ---- a model pulled from the Hugging Face Hub ---------------------------------------------------
PULL = "pull"


class PullRefused(FlowkitError):
    """The same file is being pulled already: its job is `job_id` (the page shows its progress)."""

    def __init__(self, message: str, job_id: str) -> None:
        self.job_id = job_id
        super().__init__(message)


def pull_progress_text(done: int, total: int | None) -> str:
    """'120 of 253 MB' (or '120 MB' while the size is unknown)."""
    return f"{done / 1e6:.0f} of {total / 1e6:.0f} MB" if total else f"{done / 1e6:.0f} MB"


def pull_jobs(jobs: JobManager, active_only: bool = False) -> list[Job]:
    """The pulls this process knows of, oldest first."""
    return jobs.jobs(kind=PULL, active_only=active_only)


def submit_pull(jobs: JobManager, ws: Workspace, repo: str, filename: str) -> str:
    """Check the request (FlowkitError, one line) and start pulling `filename` of the Hub
    repository `repo` into the workspace's models folder in a thread of its own (a download never
    uses the model, so it neither waits behind runs nor holds them up). The same file already
    being pulled is refused (PullRefused naming its job), never started twice.

    The job's meta holds done/total bytes (`progress` their ratio); its result the pulled file
    (path, sha256, size), or `stopped` with the bytes kept when it was cancelled: the next pull of
    the file goes on from them, as it does after a killed studio or a dropped connection."""
    repo, filename = repo.strip(), filename.strip()
    hub.check_request(repo, filename)
    folder = hub.models_dir(ws)
    key = _key(PULL, str(folder), repo, filename)
    for job in pull_jobs(jobs, active_only=True):
        if job.dedupe_key == key:
            raise PullRefused(f"{repo}/{filename} is already being pulled "
                              f"({pull_progress_text(job.meta.get('done', 0), job.meta.get('total'))}"
                              " so far); it was not started again", job.id)
    base = {"repo": repo, "filename": filename, "folder": str(folder)}

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="asking the Hub")

        def on_progress(done: int, total: int | None) -> None:
            if report.cancel.is_set():
                raise hub.PullCancelled(f"the pull of {repo}/{filename} was stopped")
            finished = bool(total) and done >= (total or 0)
            report.update(progress=min(done / total, 1.0) if total else None,
                          message=(f"checking the sha256 of {pull_progress_text(done, total)}"
                                   if finished else pull_progress_text(done, total)),
                          meta={**base, "done": done, "total": total})
        try:
            got = hub.pull_into(folder, repo, filename, on_progress=on_progress)
        except hub.PullCancelled:
            kept = hub.partial_bytes(folder, repo, filename)
            report.update(message=f"stopped; {pull_progress_text(kept, None)} kept")
            return {**base, "stopped": True, "kept": kept}
        except hub.HubError as err:     # the Hub's doing, said in full: one log line
            raise ExpectedFailure(str(err)) from None
        report.update(progress=1.0, message=f"pulled {pull_progress_text(got.size_bytes, None)}",
                      meta={**base, "done": got.size_bytes, "total": got.size_bytes})
        return {**base, "path": str(got.path), "sha256": got.sha256, "size_bytes": got.size_bytes,
                "commit": got.commit}

    return jobs.submit(PULL, f"pull {repo}/{filename}", work, dedupe_key=key, own_thread=True,
                       meta={**base, "done": hub.partial_bytes(folder, repo, filename),
                             "total": None})
