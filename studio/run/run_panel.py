"""The run page's live panel: a queued, running or finished run, read from the job and SQLite.

The job (in this process) knows about a run before it starts; the database knows its steps and
how it ended, also after the studio restarted. The panel asks both on every poll.
"""
from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from urllib.parse import urlencode

import streamlit as st

from flowkit.errors import NotFoundError
from flowkit.trace import StepEvent
from service.runs import RunInfo, get_run, model_loaded
from service.runs import steps as run_steps
from service.telemetry import FAILED, SENDING, export_state
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import Job, JobManager
from studio.common.state import RunKeys as K
from studio.run import answer_panel, debug_panel, runview
from studio.run.stream import buffers

#: Jobs that stop at their next step when cancelled (an ingest runs to its end).
CANCELLABLE = ("run", "fork", "eval", "debug")

REPLAY_PAGE = "pages/replay.py"


def _run(ws: Workspace, run_id: str) -> RunInfo | None:
    try:
        return get_run(ws, run_id)
    except NotFoundError:
        return None


def is_active(ws: Workspace, jobs: JobManager, run_id: str) -> bool:
    """Whether the run is still queued or running, or has ended with its trace on its way to
    the collector (the page then polls every second)."""
    job = jobs.find_run(run_id)
    if job is not None and not job.finished:
        return True
    run = _run(ws, run_id)
    return run is not None and (run.record.status == "running" or _trace_sending(ws, run))


def _trace_sending(ws: Workspace, run: RunInfo) -> bool:
    """Whether the ended run's spans are on their way to the collector (live export on)."""
    if run.record.status in ("running", "paused"):
        return False
    state = export_state(ws, run.id)
    return state is not None and state.status == SENDING


def export_notice(ws: Workspace, run: RunInfo) -> bool:
    """Under an ended run, where trace export is on: a warning when the collector did not take
    its spans (they are dropped; the run is stored as usual), else whether they are on their
    way or were sent. True while they are on their way (the page polls until it knows)."""
    state = export_state(ws, run.id)
    if state is None:
        return False
    url = inert.code(state.url)
    if state.status == FAILED:
        st.warning(f"Trace not exported: the collector at {url} did not take this run's spans "
                   "(is it running? Settings, Trace export, checks it when saved). The run "
                   "itself is stored here as usual.", icon=":material/cloud_off:")
    elif state.status == SENDING:
        st.caption(f":material/cloud_upload: Sending the trace to {url}...")
    else:
        st.caption(f":material/cloud_done: Trace sent to {url}.")
    return state.status == SENDING


def _still_running(ws: Workspace, jobs: JobManager, run_id: str) -> bool:
    """Whether the run still goes on (its job unfinished; the database as the fallback)."""
    job = jobs.find_run(run_id)
    if job is not None:
        return not job.finished
    run = _run(ws, run_id)
    return run is not None and run.record.status == "running"


def at_this_step(ws: Workspace, jobs: JobManager, run_id: str) -> Callable[[], bool]:
    """A check that stays True while the run goes on at the step it is at now (its job
    unfinished, no further step finished; the database as the fallback without a job)."""
    job = jobs.find_run(run_id)
    if job is None:
        return lambda: _still_running(ws, jobs, run_id)
    steps = job.steps

    def same() -> bool:
        now = jobs.find_run(run_id)
        return now is not None and not now.finished and now.steps == steps
    return same


def replay_link(run_id: str, label: str = "Open the replay", key: str | None = None,
                step: int | None = None) -> None:
    """A link to the replay page for a run, which the browser follows by itself.

    Not st.page_link: that asks the server to switch pages, and when the click also ends an edit
    of the Question box, the box's own rerun of this page reaches the server just after it and
    wins, so the first click only reran this page. The address is relative ('./replay?run=...'),
    so it holds behind a base path too; run ids and step numbers need no escaping, but get it."""
    params = {"run": run_id, **({"step": str(step)} if step is not None else {})}
    href = html.escape(f"./replay?{urlencode(params)}")
    st.markdown(f':material/history: <a href="{href}" target="_self">{html.escape(label)}</a>',
                unsafe_allow_html=True)


def _status(status: str) -> None:
    st.badge(status, color=runview.STATUS_COLOURS.get(status, "gray"))


def cancel_button(jobs: JobManager, job: Job | None, key: str) -> None:
    """A Cancel button for a queued or running job: a queued one never starts, a running one
    stops at its next step and is stored as `cancelled`."""
    if job is None or job.finished or job.kind not in CANCELLABLE:
        return
    if st.button("Cancel", key=key, icon=":material/stop_circle:", disabled=not job.cancellable,
                 help="A queued run never starts; a running one stops at its next step"):
        jobs.cancel(job.id)
        st.toast("Cancelled" if job.status == "queued" else "Cancelling: stops at the next step")


def _waiting(jobs: JobManager, job: Job) -> bool:
    if job.status == "queued":
        ahead = jobs.ahead_of(job.id)
        _status("queued")
        st.info(f"Queued: {ahead} job(s) ahead of this one. Runs take turns on the model.")
        cancel_button(jobs, job, K.CANCEL.item(job.id))
        return True
    if job.status == "running":
        _status("starting")
        st.info(inert.escape(job.message or "Starting..."))
        cancel_button(jobs, job, K.CANCEL.item(job.id))
        return True
    if job.status == "cancelled":
        _status("cancelled")
        st.warning("Cancelled before it started.")
        return False
    if job.status == "error":
        _status("error")
        st.error(f"The run could not start: {inert.escape(job.error)}")
        return False
    st.warning("The run ended but its record is missing from the database.")
    return False


def _header(run: RunInfo, steps: Sequence[StepEvent]) -> None:
    st.markdown(f"**{inert.escape(run.record.flow_name)}** on {inert.code(run.record.kb or '-')} · "
                f"run {inert.code(run.id)}")
    answer_panel.question_head(run, steps)


def _ended_notice(run: RunInfo) -> None:
    if run.record.status == "error":
        st.error(inert.escape(run.record.error or "the run failed"))
    elif run.record.status == "budget_exceeded":
        st.warning("Stopped by the flow's limits: "
                   f"{inert.escape(run.record.halt_reason or run.record.error or 'budget')}. "
                   "The answer below is what was in memory then.")
    elif run.record.status == "interrupted":
        st.warning(inert.escape(run.record.error or "interrupted"))
    elif run.record.status == "cancelled":
        st.warning(inert.escape(run.record.error or "Cancelled: it stopped at a step boundary. The "
                                "answer below is what was in memory then."))


def render(ws: Workspace, jobs: JobManager, run_id: str,
           expected: Sequence[str] | None = None) -> bool:
    """Draw the run; True while it is still queued or running (or its trace on its way).
    `expected`: the dataset's answers to the run's question (the answer is then marked right or
    wrong)."""
    job = jobs.find_run(run_id)
    run = _run(ws, run_id)
    if run is None:
        if job is None:
            st.warning(f"No run '{inert.escape(run_id, limit=80)}' here: it may have been queued before the studio "
                       "restarted, or deleted.")
            return False
        st.markdown(f"**{inert.escape(job.meta.get('flow', ''))}** on "
                    f"{inert.code(job.meta.get('kb') or '-')}")
        st.markdown(inert.quote(job.meta.get('question', '')))
        waiting = _waiting(jobs, job)
        if waiting and job.status == "running" and not model_loaded(ws):
            st.info(answer_panel.LOADING, icon=":material/hourglass_top:")
        return waiting

    steps = run_steps(ws, run.id)
    _header(run, steps)
    if run.record.status == "running":
        _status("running")
        nxt = runview.next_nodes(run.spec, steps)
        now = ", ".join(inert.code(n) for n in nxt) if nxt else "finishing"
        st.markdown(f":material/progress_activity: Running now: {now}")
        answer_box = st.container()   # filled last: Cancel is taken before the stream waits
        cols = st.columns(3)
        cols[0].metric("Steps finished", len(steps))
        live_figures = answer_panel.LiveFigures(
            cols[1].empty(), cols[2].empty(),
            job.tokens if job else sum(s.tokens for s in steps), steps,
            (lambda: job.elapsed_s) if job else (lambda: None))
        live_figures.draw(buffers().get(run.id))
        cancel_button(jobs, job, K.CANCEL.item(run.id))
        if job is not None and job.cancel_requested:
            st.caption("Cancelling: the run stops at its next step.")
        answer_panel.steps_table(steps)
        with answer_box:
            answer_panel.live_answer(run, steps, model_loaded(ws), at_this_step(ws, jobs, run.id),
                                     tick=live_figures.draw)
        return True

    if run.record.status == "paused":
        _status("paused")
        continuing = debug_panel.render(ws, jobs, run, steps)
        answer_panel.steps_table(steps)
        replay_link(run.id, label="Open the replay (so far)")
        return continuing

    _status(run.record.status)
    _ended_notice(run)
    answer_panel.final_answer(run, expected, steps)
    answer_panel.totals_panel(runview.totals(run, steps))
    sending = export_notice(ws, run)
    answer_panel.cited(run, steps)
    answer_panel.retrieved(run)
    if run.record.parent_run_id:
        st.caption(f"Forked from run {run.record.parent_run_id} step {run.record.parent_step}")
    answer_panel.steps_table(steps)
    replay_link(run.id)
    return sending


def queue(jobs: JobManager) -> None:
    """The jobs queued or running in this studio process (every session's)."""
    active = jobs.jobs(active_only=True)
    if not active:
        return
    with st.expander(f"Background jobs ({len(active)})"):
        for j in active:
            text_col, button_col = st.columns([5, 1])
            text_col.markdown(f"- `{j.status}` {inert.escape(j.label)}"
                              + (f" · {inert.escape(j.message)}" if j.message else ""))
            with button_col:
                cancel_button(jobs, j, K.QUEUE_CANCEL.item(j.id))
