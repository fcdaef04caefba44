"""The replay's header: the run in one glance (flow, status, question, answer, totals), and for a
fork what it changed and its own figures, with its parent's part shown apart."""
from __future__ import annotations

import streamlit as st

from flowkit.trace import StepEvent
from service.grading import run_verdicts
from service.runs import ForkView, RunInfo, fork_view
from service.workspace import Workspace
from studio.common import inert
from studio.common.state import ReplayKeys as K
from studio.compare.judges_data import verdict_line
from studio.replay import replay
from studio.run import answer_panel, runview


def _fork_banner(view: ForkView, run: RunInfo) -> None:
    """What the fork changed (key, old and new value; params), and where it came from."""
    with st.container(border=True, key=K.FORK_BANNER):
        st.markdown(f":material/call_split: Forked from run {inert.code(view.parent_run_id)} "
                    f"step {view.from_step}")
        if not view.memory_changes and not view.param_changes:
            st.caption("Nothing was changed: the fork re-ran from that step as it was.")
        for key, old, new in view.memory_changes:
            st.markdown(f"Changed {inert.code(key)}: {inert.code(replay.short_value(old))} → "
                        f"{inert.code(replay.short_value(new))}")
        for node, name, old, new in view.param_changes:
            st.markdown(f"Changed param {inert.code(f'{node}.{name}')}: "
                        f"{inert.code(replay.short_value(old))} → "
                        f"{inert.code(replay.short_value(new))}")
        p = view.parent
        st.caption(f"Figures beside are the fork's own (steps {view.from_step} on). Before the "
                   f"fork point the parent ran {p.steps} step(s), {p.llm_calls} LLM call(s), "
                   f"{p.tokens} tokens (steps 0–{max(view.from_step - 1, 0)}).")
        st.button(f"Open the parent run {view.parent_run_id}", key=K.OPEN_PARENT,
                  icon=":material/north_west:", on_click=replay.open_run,
                  args=(st.query_params, view.parent_run_id, view.from_step))


def _verdicts(ws: Workspace, run: RunInfo) -> None:
    """The model judges' verdicts on this answer, where its evaluation was graded (`flowkit
    judge`, or Grade answers on the Compare page): judge, model, verdict and the judge's words."""
    verdicts = run_verdicts(ws, run.id, run.record.eval_id)
    if not verdicts:
        return
    st.markdown("**Judges**")
    for g in verdicts:
        st.caption(inert.escape(verdict_line(g.grader, g.model, g.score, g.parsed)))
        if g.reason:
            st.caption("“" + inert.escape(g.reason[:200]) + "”")


def draw(ws: Workspace, run: RunInfo, steps: list[StepEvent]) -> None:
    """The header of the replay of `run` (its stored `steps`)."""
    head, totals = st.columns([3, 2])
    with head:
        st.markdown(f"**{inert.escape(run.record.flow_name)}** on {inert.code(run.record.kb or '-')} · "
                    f":{runview.STATUS_COLOURS.get(run.record.status, 'gray')}-badge[{run.record.status}]")
        answer_panel.question_head(run, steps)
        st.markdown("**Answer:**" + ("" if run.record.answer else " _(none)_"))
        if run.record.answer:
            inert.text(run.record.answer)
        if run.record.error:
            st.error(inert.escape(run.record.error))
        _verdicts(ws, run)
        view = fork_view(ws, run, steps)
        if view is not None:
            _fork_banner(view, run)
        if run.children:
            st.markdown(f"Forks of this run: {len(run.children)}")
            for child in run.children:
                st.button(f"Fork {child}", key=K.OPEN_CHILD.item(child),
                          icon=":material/call_split:", on_click=replay.open_run,
                          args=(st.query_params, child, 0))
    with totals:
        answer_panel.totals_panel(runview.totals(run, steps))
        st.caption(f"Model {inert.escape(run.record.model_id or '?')} · {run.record.model_hash[:12] or '?'}")
