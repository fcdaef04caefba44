"""The Run page's background job: a run of a flow on a question, queued on the process-wide job
manager (studio.common.jobs; what every job shares is in studio.common.tasks).

A run is checked before it is queued (`check_run`: the question, the flow, the knowledge base,
the question's length against the model's context), so a run that cannot work fails at once
instead of after its wait in the queue; the same run submitted again while it is queued or
running is not queued twice. The run id is chosen here, before the job is queued, so the page can
put it in its query params at once and a refresh finds the same run again.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from flowkit.errors import FlowkitError
from flowkit.run_request import RunHooks, RunRequest
from flowkit.spec import FlowSpec, to_dict
from flowkit.validate import check
from service.workspace import Workspace
from studio.common.jobs import JobManager, Reporter
from studio.common.tasks import ProgressSink, job_key, run_result
from studio.run.overrides import Overrides, with_overrides

#: A cheap bound for the question's length in tokens without loading the model (the same
#: estimate the OpenAI-compatible client makes where a server cannot tokenize).
CHARS_PER_TOKEN = 4


class RunRefused(FlowkitError):
    """The run cannot work, so it is not queued; `problems` lists why, one sentence each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


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
    key = job_key("run", to_dict(spec), question, kb, flow_version,
                  overrides.temperature if overrides else None)
    run_id = new_run_id()

    def work(report: Reporter) -> dict[str, Any]:
        report.update(node=None, message="starting (loading the model on the first run)")
        end = view.run(spec, RunRequest(question, kb=kb, flow_version=flow_version, run_id=run_id),
                       RunHooks(sink=ProgressSink(report), cancel=report.cancel,
                                on_token=on_token(run_id) if on_token else None))
        return run_result(end)

    def cancelled(report: Reporter) -> dict[str, Any]:
        return run_result(ws.record_cancelled(spec, question, kb, run_id, flow_version=flow_version))

    label = f"{spec.name} on {kb or 'no KB'}: {question[:60]}"
    job_id = jobs.submit("run", label, work, run_id=run_id, dedupe_key=key, on_cancelled=cancelled,
                         meta={"flow": spec.name, "kb": kb, "question": question})
    job = jobs.get(job_id)
    return job_id, (job.run_id if job is not None and job.run_id else run_id)
