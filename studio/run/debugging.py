"""Debugging from the Run page: a run started with breakpoints, and Continue / Step / Step over
on a paused one, each queued on the background job thread like any run (the flow runs there until
it pauses again or ends). A paused run is a stored checkpoint (service.debug), so it survives a
refresh and a restart; the page finds it again by the run id in its address.

Two tabs cannot both continue one pause: a continue is refused at once while another one for the
same run is queued or running in this studio, or when the pause the tab saw is no longer the
current one; the service's compare-and-set refuses whatever gets past that (another process)."""
from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from flowkit.errors import FlowkitError
from flowkit.run_request import RunHooks, RunRequest
from flowkit.spec import FlowSpec
from service.debug import Debugger, NotPausedError
from service.runs import get_run
from service.workspace import Workspace
from studio.common.jobs import Job, JobManager, Reporter
from studio.common.state import RunKeys, take_breakpoints
from studio.common.tasks import ProgressSink
from studio.run.overrides import Overrides, recorded_temperature, tuned_workspace, with_overrides
from studio.run.tasks import check_run, new_run_id

#: what the buttons send (service.debug's modes)
MODES = {"continue": "Continue", "step": "Step", "over": "Step over"}
RESUME = "debug"      # the job kind of a continue

MakeOnToken = Callable[[str], Callable[[str, int, str], None]]


def _result(end: Any) -> dict[str, Any]:
    return {"status": end.status, "answer": end.answer, "steps": end.steps, "error": end.error}


def submit_debug_run(jobs: JobManager, ws: Workspace, spec: FlowSpec, question: str, kb: str,
                     breakpoints: Sequence[str], *, flow_version: int | None = None,
                     overrides: Overrides | None = None,
                     on_token: MakeOnToken | None = None) -> tuple[str, str]:
    """Check (RunRefused, BreakpointError) and queue a run that pauses at `breakpoints`.
    `overrides` (temperature, node params) apply to this run only, as to a straight run, and
    still apply when it is continued. Returns (job id, run id)."""
    check_run(ws, spec, question, kb)
    spec, ws = with_overrides(ws, spec, overrides)
    lines = [b.strip() for b in breakpoints if b.strip()]
    run_id = new_run_id()

    def work(report: Reporter) -> dict[str, Any]:
        report.update(node=None, message="starting (loading the model on the first run)")
        end = Debugger(ws).start(
            spec, RunRequest(question, kb=kb, run_id=run_id, flow_version=flow_version), lines,
            RunHooks(sink=ProgressSink(report), cancel=report.cancel,
                     on_token=on_token(run_id) if on_token else None))
        return _result(end)

    label = f"{spec.name} on {kb or 'no KB'} (debug): {question[:60]}"
    job_id = jobs.submit("run", label, work, run_id=run_id,
                         meta={"flow": spec.name, "kb": kb, "question": question,
                               "breakpoints": lines})
    return job_id, run_id


def active_resume(jobs: JobManager, run_id: str) -> Job | None:
    """The continue of this run that is queued or running in this studio, if any."""
    for job in reversed(jobs.jobs(kind=RESUME, active_only=True)):
        if job.run_id == run_id:
            return job
    return None


def submit_resume(jobs: JobManager, ws: Workspace, run_id: str, mode: str, seen_pauses: int,
                  on_token: MakeOnToken | None = None) -> str:
    """Queue a continue (`mode`: continue | step | over) of the pause the page showed (its count
    `seen_pauses`). NotPausedError, at once, when it is no longer that pause or another continue
    has it."""
    if mode not in MODES:
        raise FlowkitError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
    view, _ = Debugger(ws).require_paused(run_id, "continue")
    temperature = recorded_temperature(ws, get_run(ws, view.run_id).settings)
    debugger = Debugger(ws if temperature is None else tuned_workspace(ws, temperature))
    other = active_resume(jobs, view.run_id)
    if other is not None:
        raise NotPausedError(f"cannot continue run '{view.run_id}': it is already being "
                             f"continued ({other.meta.get('mode', 'continue')}, from another tab "
                             "or session)")
    if view.pauses != seen_pauses:
        raise NotPausedError(f"cannot continue run '{view.run_id}': it was continued elsewhere "
                             f"and paused again since (reload to see where it is now)")

    def work(report: Reporter) -> dict[str, Any]:
        end = debugger.resume(view.run_id, mode,  # type: ignore[arg-type]
                              RunHooks(sink=ProgressSink(report), cancel=report.cancel,
                                       on_token=on_token(view.run_id) if on_token else None),
                              expect_pauses=seen_pauses)
        return _result(end)

    return jobs.submit(RESUME, f"{MODES[mode].lower()} run {view.run_id}", work,
                       run_id=view.run_id, meta={"mode": mode, "question": view.question})


def take_handed_breakpoints(state: MutableMapping[str, Any] | None = None) -> list[str] | None:
    """Call before the breakpoints box is drawn: the breakpoints the Editor handed over with the
    flow (its draft's, set on the canvas) become the box's lines; None when none were handed."""
    handed = take_breakpoints(state)
    if handed is not None:
        RunKeys.BREAKPOINTS.set("\n".join(handed), state)
        RunKeys.BREAKPOINTS_HANDED.set("\n".join(handed), state)
    return handed


def from_the_editor(state: MutableMapping[str, Any] | None = None) -> bool:
    """Whether the breakpoints box still holds what the Editor handed over (not yet edited)."""
    text = (RunKeys.BREAKPOINTS.get(state=state) or "").strip()
    return bool(text) and text == (RunKeys.BREAKPOINTS_HANDED.get(state=state) or "").strip()
