"""The studio's background jobs: a run, a fork, an ingest, each submitted to the job manager.

A run goes through `Workspace.run` (which stores every step in SQLite as it happens) with an extra
sink that tells the job which node finished and how many tokens were used so far. The run id is
chosen here before the job is queued, so the page can put it in its query params at once and a
refresh finds the same run again.
"""
from __future__ import annotations

import shutil
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from flowkit.ingest import ingest
from flowkit.spec import FlowSpec
from flowkit.trace import RunEnd, RunStart, StepEvent
from storage.workspace import Workspace

from .jobs import JobManager, Reporter
from .overrides import Overrides, with_overrides


class ProgressSink:
    """A trace sink that reports a run's progress to its job (node, steps, tokens)."""

    def __init__(self, report: Reporter):
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


def submit_run(jobs: JobManager, ws: Workspace, spec: FlowSpec, question: str, kb: str, *,
               flow_version: int | None = None, overrides: Overrides | None = None) -> tuple[str, str]:
    """Queue a run of `spec` on `question` against knowledge base `kb` (may be "").

    Returns (job id, run id). `overrides` (temperature, node params) apply to this run only.
    """
    run_id = new_run_id()
    spec, view = with_overrides(ws, spec, overrides)

    def work(report: Reporter) -> dict[str, Any]:
        report.update(node=None, message="starting (loading the model on the first run)")
        end = view.run(spec, question, kb, flow_version=flow_version, run_id=run_id,
                       extra_sink=ProgressSink(report))
        return _result(end)

    label = f"{spec.name} on {kb or 'no KB'}: {question[:60]}"
    job_id = jobs.submit("run", label, work, run_id=run_id,
                         meta={"flow": spec.name, "kb": kb, "question": question})
    return job_id, run_id


def submit_fork(jobs: JobManager, ws: Workspace, run_id: str, step_index: int,
                memory_changes: dict[str, Any] | None = None,
                param_changes: dict[str, Any] | None = None) -> str:
    """Queue `Workspace.fork(run_id, step_index, ...)`; the new run id appears once it starts."""

    def work(report: Reporter) -> dict[str, Any]:
        end = ws.fork(run_id, step_index, memory_changes or None, param_changes or None,
                      extra_sink=ProgressSink(report))
        return _result(end)

    changed = [*(memory_changes or {}), *(f"params.{k}" for k in (param_changes or {}))]
    label = f"fork of {run_id} at step {step_index} ({', '.join(changed) or 'no change'})"
    return jobs.submit("fork", label, work, parent_run_id=run_id,
                       meta={"parent_step": step_index, "memory_changes": memory_changes or {},
                             "param_changes": param_changes or {}})


def submit_ingest(jobs: JobManager, ws: Workspace, kb: str, files: list[tuple[str, bytes]],
                  chunker: str, params: dict[str, Any]) -> str:
    """Save uploaded (name, bytes) files under <data_dir>/uploads/<id>/ and queue their ingest.

    The saved copies are removed when the ingest ends, whether it worked or not.
    """
    folder = ws.data_dir / "uploads" / uuid.uuid4().hex[:10]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in files:
        safe = Path(name).name or "upload.txt"
        path = folder / safe
        path.write_bytes(data)
        paths.append(path)

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="reading and chunking")

        def progress(done: int, total: int) -> None:
            report.update(progress=done / total if total else 1.0,
                          message=f"embedded {done} of {total} chunks")
        try:
            n = ingest(ws.resources, kb, paths, chunker, params, progress=progress)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        report.update(progress=1.0, message=f"ingested {n} chunks")
        return {"kb": kb, "chunks": n, "files": [p.name for p in paths]}

    names = ", ".join(p.name for p in paths)
    return jobs.submit("ingest", f"ingest {names} into {kb}", work,
                       meta={"kb": kb, "chunker": chunker, "params": params})
