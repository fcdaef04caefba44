"""The Replay page's background job: a fork of a stored run at one of its steps, with memory or
params changed, queued on the process-wide job manager like a run (studio.common.jobs; what every
job shares is in studio.common.tasks).
"""
from __future__ import annotations

from typing import Any

from service.workspace import Workspace
from studio.common.jobs import JobManager, Reporter
from studio.common.tasks import ProgressSink, job_key, run_result


def submit_fork(jobs: JobManager, ws: Workspace, run_id: str, step_index: int,
                memory_changes: dict[str, Any] | None = None,
                param_changes: dict[str, Any] | None = None) -> str:
    """Queue `Workspace.fork(run_id, step_index, ...)`; the new run id appears once it starts.
    The same fork already queued or running is returned instead of a new one."""

    def work(report: Reporter) -> dict[str, Any]:
        end = ws.fork(run_id, step_index, memory_changes or None, param_changes or None,
                      extra_sink=ProgressSink(report), cancel=report.cancel)
        return run_result(end)

    changed = [*(memory_changes or {}), *(f"params.{k}" for k in (param_changes or {}))]
    label = f"fork of {run_id} at step {step_index} ({', '.join(changed) or 'no change'})"
    return jobs.submit("fork", label, work, parent_run_id=run_id,
                       dedupe_key=job_key("fork", run_id, step_index, memory_changes, param_changes),
                       meta={"parent_step": step_index, "memory_changes": memory_changes or {},
                             "param_changes": param_changes or {}})
