"""The replay page's view of a fork it submitted (?fork=<job id>): queued, running, or done with a
button that opens the new run. Polls every second while the fork is unfinished. It is drawn under
the "Fork and run" button, where the click was (at the page's top only while the Fork tab is
shut)."""
from __future__ import annotations

import streamlit as st

from flowkit.memory import OPERATOR_KEYS
from flowkit.trace import StepEvent
from service.runs import RunInfo
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import Job, JobManager
from studio.common.state import ReplayKeys as K
from studio.common.state import keep, kept, kept_index
from studio.replay import replay
from studio.replay.tasks import submit_fork


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
                st.button("Open the forked run", key=K.OPEN_FORK, type="primary",
                          icon=":material/call_split:", on_click=replay.open_run,
                          args=(st.query_params, job.run_id, 0))


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


def fork_form(ws: Workspace, jobs: JobManager, run: RunInfo, step: StepEvent, idx: int) -> None:
    """Fork the run from this step: change a memory value (the keys say which remaining nodes
    read them) or the node's params, then run on in the background."""
    why_not = replay.forkable(step, run.spec)
    if why_not:
        st.info(f"Cannot fork from this step: {inert.escape(why_not)}.")
    else:
        st.caption(f"Run on from step {idx} (`{step.node_id}`) with its memory-before, changed as "
                   "you say here. The model runs again from this node; the new run links back.")
        # every value here is kept while another tab is open (studio/state.kept)
        choices = ["a memory value", f"params of node {step.node_id}"]
        what = st.radio("Change", choices, horizontal=True, key=K.FORK_WHAT,
                        index=kept_index(K.FORK_WHAT, choices), on_change=keep,
                        args=(K.FORK_WHAT,))
        memory_changes, param_changes, problem = {}, {}, None
        if what == "a memory value":
            readers = replay.reads_ahead(run.spec, step.node_id)
            keys = sorted(OPERATOR_KEYS, key=lambda k: k not in readers)   # read keys first
            mem_key = st.selectbox("Memory key", keys, key=K.FORK_KEY,
                                   index=kept_index(K.FORK_KEY, keys),
                                   on_change=keep, args=(K.FORK_KEY,),
                                   format_func=lambda k: f"{k} · read by "
                                   f"{', '.join(readers[k])}" if k in readers else f"{k} · not read",
                                   help="The working-memory key to set before the node runs; "
                                        "each names the remaining nodes that read it")
            if mem_key not in readers:
                st.warning(f"No remaining step reads `{mem_key}`: changing it changes nothing. "
                           f"They read: {', '.join(f'`{k}`' for k in readers) or 'nothing'}.")
            val_key = K.FORK_VAL.item(run.id, idx, mem_key)
            text = st.text_area("New value (JSON)", height=160, key=val_key,
                                value=kept(val_key, replay.memory_text(
                                    step.memory_before.get(mem_key))),
                                on_change=keep, args=(val_key,))
            try:
                memory_changes = replay.parse_memory_change(mem_key, text)
            except ValueError as err:
                problem = str(err)
        else:
            op, params = replay.node_params(run.spec, step.node_id)
            params_key = K.FORK_PARAMS.item(run.id, idx)
            text = st.text_area(f"Params of {step.node_id} ({op}) as JSON", height=220,
                                key=params_key, value=kept(params_key, replay.memory_text(params)),
                                on_change=keep, args=(params_key,))
            try:
                param_changes = replay.parse_param_changes(op, params, text)
            except ValueError as err:
                problem = str(err)
            if not problem and not param_changes:
                st.caption("No param changed yet: the fork would run the same params.")
        if problem:
            st.error(inert.escape(problem))
        if st.button("Fork and run ▶", type="primary", key=K.FORK_GO,
                     disabled=bool(problem)):
            job_id = submit_fork(jobs, ws, run.id, idx, memory_changes, param_changes)
            st.query_params["fork"] = job_id
            st.rerun()
    fork_status(ws, jobs, run.id)       # what the click started, under the button
