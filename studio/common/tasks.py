"""What the studio's background jobs share: the key that keeps the same job from being queued
twice (`job_key`), the trace sink that reports a run's progress to its job (`ProgressSink`), the
summary a run's job returns (`run_result`) and `cancel`.

Each kind of job is submitted beside the page that uses it: a run in studio.run.tasks, a fork in
studio.replay.tasks, an ingest and a question set generated from a knowledge base in
studio.knowledge.tasks, an evaluation and the grading of its answers in studio.compare.tasks, a
model pulled from the Hugging Face Hub in studio.settings.tasks.

Each goes to the process-wide job manager (studio.common.jobs), which runs them one after the other and
can cancel each one: a queued job never starts, a running run or evaluation stops at its next
step (the engine checks the job's cancel event between steps) and is stored as `cancelled`.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from flowkit.trace import RunEnd, RunStart, StepEvent
from studio.common.jobs import JobManager, Reporter


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


def run_result(end: RunEnd) -> dict[str, Any]:
    """What a run's (or a fork's) job returns: the run's end without its memory."""
    out = end.to_dict()
    out.pop("memory", None)    # the run row keeps it; the job needs only the summary
    return out


def job_key(*parts: Any) -> str:
    """A job's dedupe key: a short hash of `parts` (the job kind first, then what makes
    two submits the same job)."""
    text = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def cancel(jobs: JobManager, job_id: str) -> bool:
    """Cancel a queued or running job (see JobManager.cancel); False when it had finished."""
    return jobs.cancel(job_id)
