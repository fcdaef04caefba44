"""A paused run on the Run page: where it stopped, its working memory (the replay's memory view:
what the last node changed), the next node's exact prompt, Continue / Step / Step over / Abort,
and a form to edit one memory key (JSON, checked against the key's type)."""
from __future__ import annotations

import json

import streamlit as st

from flowkit.errors import FlowkitError
from flowkit.memory import OPERATOR_KEYS
from flowkit.trace import StepEvent
from service.debug import Debugger, NotPausedError, paused_memory
from service.runs import RunInfo
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import JobManager
from studio.common.state import DebugKeys as K
from studio.common.state import Key
from studio.replay import memory_panel
from studio.replay.replay import memory_text
from studio.run import debugging
from studio.run.stream import buffers


def _buttons(ws: Workspace, jobs: JobManager, run_id: str, pauses: int, busy: bool) -> None:
    cols = st.columns(4)
    helps = {"continue": "Run on to the next breakpoint or the end",
             "step": "Run the paused node only, then pause again",
             "over": "Run on until the loop the paused node is in is left"}
    for col, (mode, label) in zip(cols, debugging.MODES.items()):
        if col.button(label, key={"continue": K.CONTINUE, "step": K.STEP, "over": K.OVER}[mode], disabled=busy, help=helps[mode],
                      type="primary" if mode == "continue" else "secondary", width="stretch"):
            try:
                debugging.submit_resume(jobs, ws, run_id, mode, pauses, on_token=buffers().on_token)
            except FlowkitError as err:        # NotPausedError: another tab has it
                K.REFUSED.set(str(err))
            st.rerun()
    if cols[3].button("Abort", key=K.ABORT, disabled=busy, width="stretch",
                      help="End the run here, as cancelled"):
        try:
            Debugger(ws).abort(run_id)
        except NotPausedError as err:
            K.REFUSED.set(str(err))
        st.rerun()


def _edit_form(ws: Workspace, run_id: str, memory: dict[str, object], pauses: int) -> None:
    """Set one working-memory key to a JSON value (recorded in the trace as a user edit)."""
    with st.expander("Edit working memory", expanded=False):
        key = st.selectbox("Key", OPERATOR_KEYS, key=K.EDIT_KEY,
                           help="The working-memory key to set before the run goes on")
        field = f"{run_id}_{pauses}_{key}"
        text = st.text_area("Value (JSON)", value=memory_text(memory.get(key)), height=160,
                            key=K.EDIT_VAL.item(field),
                            help="Text in double quotes, a list of passages "
                                 "[{\"id\": ..., \"text\": ...}], a number...")
        if st.button("Set value", key=K.SET.item(field)):
            try:
                Debugger(ws).set_value(run_id, key, json.loads(text))
            except json.JSONDecodeError as err:
                st.error(f"Not JSON: {inert.escape(err)}")
            except FlowkitError as err:      # EditError, NotPausedError
                st.error(inert.escape(err))
            else:
                K.NOTICE.set(f"Set {key}: the run goes on with it.")
                Key(K.EDIT_VAL.item(field)).pop()    # the box shows the new value
                st.rerun()


def render(ws: Workspace, jobs: JobManager, run: RunInfo, steps: list[StepEvent]) -> bool:
    """The paused run (status paused, its checkpoint stored); True while a continue of it is
    queued (the page then keeps polling)."""
    debugger = Debugger(ws)
    view = debugger.show(run.id)
    pause = view.pause
    if pause is None:
        st.warning("The run is paused but its checkpoint is missing.")
        return False
    where = "before" if pause.when == "before" else f"after {inert.code(pause.after_node)}, before"
    st.markdown(f":material/pause_circle: Paused {where} {inert.code(pause.node)} "
                f"(visit {pause.visit}) · {inert.escape(pause.reason)} · "
                f"{view.steps} step(s) done")
    if pause.condition_error:
        st.warning(f"A breakpoint's condition could not be evaluated: "
                   f"{inert.escape(pause.condition_error)}")
    if refused := K.REFUSED.pop():
        st.error(inert.escape(refused))
    if notice := K.NOTICE.pop():
        st.success(inert.escape(notice))
    busy = debugging.active_resume(jobs, run.id)
    if busy is not None:
        st.info(f"{debugging.MODES.get(busy.meta.get('mode', ''), 'Continue')}: "
                f"{busy.status}...")
    _buttons(ws, jobs, run.id, view.pauses, busy is not None)
    if view.edits:
        st.caption("Edited: " + ", ".join(
            f"{inert.code(e.get('key'))} by {inert.escape(e.get('who', '?'))}" for e in view.edits))

    memory = paused_memory(pause)
    st.markdown("**Working memory**")
    before = {k: v for k, v in (steps[-1].memory_before or {}).items()} if steps else memory
    memory_panel.render(before, memory, show_same=True)
    _edit_form(ws, run.id, memory, view.pauses)

    st.markdown(f"**Next prompt** ({inert.code(pause.node)})")
    try:
        prompt = debugger.next_prompt(run.id)
    except FlowkitError as err:
        st.warning(f"The next prompt cannot be shown: {inert.escape(err)}")
        return busy is not None
    if prompt is None:
        st.caption("The next node makes no model call.")
        return busy is not None
    if prompt.system:
        st.caption("System")
        st.code(prompt.system, language=None, wrap_lines=True)
    st.code(prompt.prompt, language=None, wrap_lines=True)
    return busy is not None
