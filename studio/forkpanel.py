"""The replay page's view of a fork it submitted (?fork=<job id>): queued, running, or done with a
button that opens the new run. Polls every second while the fork is unfinished."""
from __future__ import annotations

import streamlit as st

from service.workspace import Workspace

from . import inert, replay
from .jobs import Job, JobManager


def _show(jobs: JobManager, job: Job) -> None:
    step = job.meta.get("parent_step")
    with st.container(border=True):
        if job.status == "queued":
            st.info(f"Fork from step {step}: queued, {jobs.ahead_of(job.id)} job(s) ahead.")
        elif job.status == "running":
            where = f" · last finished {inert.code(job.node)}" if job.node else ""
            st.info(f"Fork from step {step}: running as run `{job.run_id or '...'}` · "
                    f"{job.steps} step(s), {job.tokens} tokens so far{where}")
        elif job.status == "error":
            st.error(f"The fork from step {step} failed: {inert.escape(job.error)}")
        else:
            result = job.result or {}
            st.success(f"Fork from step {step} finished: run `{job.run_id}` "
                       f"({result.get('status', 'done')}). Answer: "
                       f"{inert.escape(result.get('answer', ''), limit=300)}")
            if job.run_id:   # a callback, drawn outside the fragment: it changes the whole page
                st.button("Open the forked run", key="replay_open_fork", type="primary",
                          icon=":material/call_split:", on_click=replay.open_run,
                          args=(st.session_state, st.query_params, job.run_id, 0))


def fork_status(ws: Workspace, jobs: JobManager, run_id: str) -> None:
    """Show the fork job named in the address, if it forks `run_id`."""
    job_id = st.query_params.get("fork")
    job = jobs.get(job_id) if job_id else None
    if job is None or job.parent_run_id != run_id:
        return
    if job.finished:
        _show(jobs, job)
        return

    fork_id = job.id

    @st.fragment(run_every=1.0)
    def _poll() -> None:
        now = jobs.get(fork_id)
        if now is None or now.finished:
            st.rerun()      # the whole page again, which shows the result outside this fragment
        _show(jobs, now)

    _poll()
