"""Replay: step through a stored run (never calling the model again) and fork it from any step.

The address carries the run and the step (?run=...&step=N), so a refresh or a shared link opens
the same place. A fork runs in the background job queue; the new run links back to this one.
"""
from __future__ import annotations

import streamlit as st

from flowkit.errors import NotFoundError
from studio.common import graph_panel, inert
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.state import query_select
from studio.common.workspace import get_workspace
from studio.replay import head_panel, memory_panel, replay, replay_panel, resize_panel
from studio.replay.fork_panel import fork_form, fork_status

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()
state = st.session_state

st.title("Replay")

# ---- which run -------------------------------------------------------------------------------
runs = ws.store.list_runs(limit=100)
by_id = {r.id: r for r in runs}
wanted = st.query_params.get("run")
if wanted and wanted not in by_id:
    try:
        found = ws.store.get_run(wanted)
        by_id = {found.id: found, **by_id}
        wanted = found.id
    except NotFoundError:
        st.warning(f"No run '{inert.escape(wanted, limit=80)}' in this workspace.")
        wanted = None
if not by_id:
    st.info("No runs yet: start one on the Run page.")
    st.stop()
options = list(by_id)


def _run_label(run_id: str) -> str:
    r = by_id[run_id]
    when = r.started_at.strftime("%m-%d %H:%M") if r.started_at else ""
    fork = " (fork)" if r.parent_run_id else ""
    return f"{r.id}{fork} · {r.flow_name} · {r.status} · {when} · {r.question[:60]}"


pick = query_select("Run", options, key="replay_pick", param="run", clear=("step",),
                    from_param=lambda _: wanted, format_func=_run_label,
                    help="The latest 100 runs; (fork): a fork of another run")
run = ws.store.get_run(pick)
steps = ws.store.steps(run.id)

# ---- the run in one glance (a fork: what it changed, its own figures, the parent's apart) --
head_panel.draw(ws, run, steps, state)

fork_status(ws, jobs, run.id)

if run.status == "running":
    @st.fragment(run_every=2.0)
    def _watch() -> None:
        now = ws.store.get_run(run.id)
        if now.status != "running" or now.steps != len(steps):
            st.rerun()
        st.caption(":material/progress_activity: Still running: the replay grows as steps finish.")
    _watch()

if not steps:
    st.info("This run has no steps recorded.")
    st.stop()

n = len(steps)
before = replay.parent_steps(ws.store, run)   # a fork: the parent's steps before it
offset = int(run.parent_step or 0) if run.parent_run_id else 0


def _step_view() -> None:
    """Everything that changes with the step. Not a fragment: under load, a fragment's elements
    from the run shown before (a fork) stayed on the page beside the new run's after "Open the
    parent run" (the browser test saw two step headings for 60 s)."""
    # The step's summary is written first and the controls and graph after it, into boxes placed
    # above and beside it: the summary's message then leaves the server before theirs (each
    # message waits its turn for the GIL while the script runs on).
    idx = replay.sync(state, run.id, n, st.query_params.get("step"))
    step = steps[idx]
    controls = st.container()

    graph_col, info_col = st.columns([3, 2])

    # ---- the step's summary ----------------------------------------------------------------------
    with info_col:
        st.markdown(f"### Step {offset + idx} of {offset + n - 1}: {inert.code(step.node_id)}")
        st.caption(replay.step_position(idx, n, offset))
        st.markdown(f"{inert.code(step.operator)} · visit {step.visit}"
                    + (f" · branch {inert.code(step.branch)}" if step.branch else "")
                    + f" · {replay_panel.passages(step)} passage(s) retrieved")
        c1, c2, c3 = st.columns(3)
        c1.metric("LLM calls", len(step.llm_calls))
        c2.metric("Tokens", step.tokens)
        c3.metric("ms", round(step.ms))
        if step.error and step.error.startswith("stopped:"):
            st.warning(inert.escape(step.error))
        elif step.error:
            st.error(f"This step failed: {inert.escape(step.error)}")

    # ---- step controls ---------------------------------------------------------------------------
    with controls:
        nav = st.columns([1, 1, 1, 1, 6], vertical_alignment="bottom")
        for col, (target, label, icon) in zip(nav, [
                ("first", "First", ":material/first_page:"),
                ("prev", "Prev", ":material/chevron_left:"),
                ("next", "Next", ":material/chevron_right:"), ("last", "Last", ":material/last_page:")]):
            col.button(label, key=f"replay_{target}", icon=icon, on_click=replay.go,
                       args=(state, target, n), width="stretch")
        with nav[4]:
            if n > 1:
                st.slider("Step", 0, n - 1, key=replay.STEP_KEY)
            else:
                st.caption("One step")
    if st.query_params.get("step") != str(idx):
        st.query_params["step"] = str(idx)

    # ---- the graph -------------------------------------------------------------------------------
    with graph_col:
        nodes, edges = graph_panel.flow_picture(run.spec, [*before, *steps], len(before) + idx)
        graph_panel.draw(nodes, edges, key=f"replay_graph_{run.id}",
                       height=graph_panel.picture_height(run.spec))
        resize_panel.refit_on_resize()   # fitted again to a resized window
        st.caption(":orange[■] this step · :blue[■] visited before · :red[■] failed · pale: not "
                   "reached yet · thick blue edges: the path so far · edges routed around "
                   "the nodes: a loop's way back, or an edge past nodes in its way")

    tok_df, ms_df = replay.chart_data(steps, idx, offset)
    chart_h = min(130 + 34 * n, 560)
    ch1, ch2 = st.columns(2)
    for col, df, title in ((ch1, tok_df, "Tokens per step"), (ch2, ms_df, "Milliseconds per step")):
        with col:
            st.caption(f"{title} (this step in amber)")
            st.bar_chart(df, x="step", y=list(df.columns[1:]), color=["#f59e0b", "#93c5fd"],
                         stack=True, horizontal=True, height=chart_h, sort=False, y_label="",
                         x_label="")

    # ---- what the step did: only the open tab is drawn ------------------------------------------
    t_mem, t_llm, t_ret, t_fork = replay_panel.step_tabs()
    replay_panel.keep(state, "replay_show_same")    # the toggle keeps its value while its tab is shut
    if t_mem.open:
        with t_mem:
            same = st.toggle("Show unchanged keys too", key="replay_show_same")
            memory_panel.render(step.memory_before, step.memory_after, show_same=same)
    if t_llm.open:
        with t_llm:
            replay_panel.llm_calls_panel(step)
    if t_ret.open:
        with t_ret:
            replay_panel.retrievals_panel(step)
    if t_fork.open:
        with t_fork:
            fork_form(ws, jobs, run, step, idx)


_step_view()
