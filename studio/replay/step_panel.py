"""The Replay page's view of one step: its summary (node, operator, figures, error), the step
controls (First, Prev, Next, Last and the slider), the flow's graph with the step marked, the
per-step token and time charts, and the tabs of what the step did."""
from __future__ import annotations

import streamlit as st

from flowkit.trace import StepEvent
from service.runs import RunInfo
from service.workspace import Workspace
from studio.common import graph_panel, inert
from studio.common.jobs import JobManager
from studio.common.state import ReplayKeys as K
from studio.replay import memory_panel, replay, replay_panel, resize_panel
from studio.replay.fork_panel import fork_form

#: the step buttons: (target, label, icon)
NAV = (("first", "First", ":material/first_page:"), ("prev", "Prev", ":material/chevron_left:"),
       ("next", "Next", ":material/chevron_right:"), ("last", "Last", ":material/last_page:"))
BUTTON_KEYS = {"first": K.FIRST, "prev": K.PREV, "next": K.NEXT, "last": K.LAST}


def summary(step: StepEvent, idx: int, n: int, offset: int) -> None:
    """The step's heading, where it sits in the run, and its figures (a failed step says why)."""
    st.markdown(f"### Step {offset + idx} of {offset + n - 1}: {inert.code(step.node_id)}")
    st.caption(replay.step_position(n, offset))
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


def controls(n: int, offset: int = 0) -> None:
    """First, Prev, Next, Last (callbacks, so the slider drawn after agrees) and the slider, which
    shows the steps by the header's numbers (a fork's start at `offset`, not at 0)."""
    nav = st.columns([1, 1, 1, 1, 6], vertical_alignment="bottom")
    for col, (target, label, icon) in zip(nav, NAV):
        col.button(label, key=BUTTON_KEYS[target], icon=icon, on_click=replay.go,
                   args=(target, n), width="stretch")
    with nav[4]:
        if n > 1:
            st.select_slider("Step", options=range(n), key=K.STEP,
                             format_func=lambda i: replay.step_label(i, offset))
        else:
            st.caption("One step")


def graph(run: RunInfo, before: list[StepEvent], steps: list[StepEvent], idx: int) -> None:
    """The flow with this step, the steps before it and the path so far marked."""
    nodes, edges = graph_panel.flow_picture(run.spec, [*before, *steps], len(before) + idx)
    graph_panel.draw(nodes, edges, key=K.GRAPH.item(run.id),
                     height=graph_panel.picture_height(run.spec))
    resize_panel.refit_on_resize()   # fitted again to a resized window
    st.caption(":orange[■] this step · :blue[■] visited before · :red[■] failed · pale: not "
               "reached yet · thick blue edges: the path so far · edges routed around "
               "the nodes: a loop's way back, or an edge past nodes in its way")


def charts(steps: list[StepEvent], idx: int, offset: int) -> None:
    """Tokens and milliseconds per step, this step in amber."""
    tok_df, ms_df = replay.chart_data(steps, idx, offset)
    chart_h = min(130 + 34 * len(steps), 560)
    ch1, ch2 = st.columns(2)
    for col, df, title in ((ch1, tok_df, "Tokens per step"), (ch2, ms_df, "Milliseconds per step")):
        with col:
            st.caption(f"{title} (this step in amber)")
            st.bar_chart(df, x="step", y=list(df.columns[1:]), color=["#f59e0b", "#93c5fd"],
                         stack=True, horizontal=True, height=chart_h, sort=False, y_label="",
                         x_label="")


def tabs(ws: Workspace, jobs: JobManager, run: RunInfo, step: StepEvent, idx: int) -> bool:
    """What the step did, in tabs: only the open one is drawn. True when the Fork tab is open
    (it shows the fork this page started, under its button)."""
    t_mem, t_llm, t_ret, t_fork = replay_panel.step_tabs()
    replay_panel.keep(K.SHOW_SAME)    # the toggle keeps its value while its tab is shut
    if t_mem.open:
        with t_mem:
            same = st.toggle("Show unchanged keys too", key=K.SHOW_SAME)
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
    return bool(t_fork.open)
