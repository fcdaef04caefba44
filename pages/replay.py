"""Replay: step through a stored run (never calling the model again) and fork it from any step.

The address carries the run and the step (?run=...&step=N), so a refresh or a shared link opens
the same place. A fork runs in the background job queue; the new run links back to this one.
"""
from __future__ import annotations

import streamlit as st

from service.runs import get_run, parent_steps
from service.runs import steps as run_steps
from studio.common import inert
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.state import ReplayKeys as K
from studio.common.state import query_select
from studio.common.workspace import get_workspace
from studio.replay import head_panel, picker, replay, step_panel
from studio.replay.fork_panel import fork_status

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()

st.title("Replay")

# ---- which run -------------------------------------------------------------------------------
choices = picker.run_choices(ws, st.query_params.get("run"))
if choices.missing:
    st.warning(f"No run '{inert.escape(choices.missing, limit=80)}' in this workspace.")
if not choices.by_id:
    st.info("No runs yet: start one on the Run page.")
    st.stop()
by_id = choices.by_id
pick = query_select("Run", list(by_id), key=K.PICK, param="run", clear=("step",),
                    from_param=lambda _: choices.wanted,
                    format_func=lambda run_id: picker.run_label(by_id[run_id]),
                    help=f"The latest {picker.LATEST} runs; (fork): a fork of another run")
run = get_run(ws, pick)
steps = run_steps(ws, run.id)

# ---- the run in one glance (a fork: what it changed, its own figures, the parent's apart) --
head_panel.draw(ws, run, steps)
fork_box = st.container()   # a fork started here: shown under its button, here while its tab is shut

if run.record.status == "running":
    @st.fragment(run_every=2.0)
    def _watch() -> None:
        now = get_run(ws, run.id)
        if now.record.status != "running" or now.steps != len(steps):
            st.rerun()
        st.caption(":material/progress_activity: Still running: the replay grows as steps finish.")
    _watch()

if not steps:
    with fork_box:
        fork_status(ws, jobs, run.id)
    st.info("This run has no steps recorded.")
    st.stop()

n = len(steps)
before = parent_steps(ws, run)   # a fork: the parent's steps before it
offset = int(run.record.parent_step or 0) if run.record.parent_run_id else 0


def _step_view() -> bool:
    """Everything that changes with the step. Not a fragment: under load, a fragment's elements
    from the run shown before (a fork) stayed on the page beside the new run's after "Open the
    parent run" (the browser test saw two step headings for 60 s). True when the Fork tab is
    open (it shows a fork started here under its button)."""
    # The step's summary is written first and the controls and graph after it, into boxes placed
    # above and beside it: the summary's message then leaves the server before theirs (each
    # message waits its turn for the GIL while the script runs on).
    idx = replay.sync(run.id, n, st.query_params.get("step"))
    step = steps[idx]
    controls = st.container()
    graph_col, info_col = st.columns([3, 2])
    with info_col:
        step_panel.summary(step, idx, n, offset)
    with controls:
        step_panel.controls(n, offset)
    if st.query_params.get("step") != str(idx):
        st.query_params["step"] = str(idx)
    with graph_col:
        step_panel.graph(run, before, steps, idx)
    step_panel.charts(steps, idx, offset)
    return step_panel.tabs(ws, jobs, run, step, idx)


if not _step_view():         # the Fork tab is shut: the fork's outcome at the top
    with fork_box:
        fork_status(ws, jobs, run.id)
