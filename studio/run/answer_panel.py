"""The run's answer as the Run page draws it: written live while the model generates it, then the
stored answer marked right or wrong against a dataset's expected answers, its cited passages, and
the steps table (kept after the run ends, so the page keeps its shape and does not jump)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import streamlit as st

from flowkit.trace import StepEvent
from service.runs import RunInfo, grade_answer
from studio.common import inert
from studio.common.pending import user_waiting
from studio.common.state import RunKeys as K
from studio.run import runview
from studio.run.stream import buffers

LOADING = "Loading the model (first run: about 15 s)..."
#: marks the answer while it is being written
CURSOR = "▌"
#: how often the stream looks for new pieces; how long it waits for more once words came (or,
#: where it cannot tell a click is waiting, for any); the longest one stream lasts (seconds)
STREAM_TICK_S, IDLE_S, MAX_STREAM_S = 0.05, 1.0, 30.0


def _pieces(run_id: str, going_on: Callable[[], bool], caption: Any,
            interrupted: Callable[[], bool | None] = user_waiting) -> Iterator[str]:
    """The answer's text as the model writes it, escaped (it is the model's, never Markdown):
    what is there, then each new piece as it arrives. Until the first words the stream stays
    open while the model reads its prompt, so they show the moment they come; after them it
    ends when nothing new came for IDLE_S (the page then polls again). It also ends when the
    run ends or finishes a step (`going_on` turns False: the page then shows how far it got),
    another model call starts, the user clicked something (`interrupted`: Streamlit holds a
    click on Cancel until the stream ends), or after MAX_STREAM_S. Where a click cannot be seen
    (`interrupted` says None) it never waits more than IDLE_S for words."""
    sent, started, last = 0, time.monotonic(), time.monotonic()
    call = None
    while True:
        now = buffers().get(run_id)
        if now is not None:
            if call is None:
                call = now.calls
                caption.caption(f"Writing: {inert.code(now.node_id)} (visit {now.visit}) {CURSOR}")
            elif now.calls != call:
                return
            if len(now.text) > sent:
                yield inert.escape(now.text[sent:])
                sent, last = len(now.text), time.monotonic()
        tick, user = time.monotonic(), interrupted()
        if user or tick - started > MAX_STREAM_S or not going_on():
            return
        if (sent or user is None) and tick - last > IDLE_S:
            return
        time.sleep(STREAM_TICK_S)


def live_answer(run_id: str, loaded: bool, going_on: Callable[[], bool]) -> None:
    """The answer box while the run goes on: the model's text streamed as it comes
    (st.write_stream) while `going_on` (the run at the same step), else why it waits (the model
    loading on the first run)."""
    st.subheader("Answer")
    with st.container(border=True, key=K.ANSWER_BOX):
        if not loaded and buffers().get(run_id) is None:
            st.info(LOADING, icon=":material/hourglass_top:")
            return
        caption = st.empty()
        caption.caption("Waiting for the model's first words...")
        st.write_stream(_pieces(run_id, going_on, caption))


def final_answer(run: RunInfo, expected: Sequence[str] | None) -> None:
    """The stored answer, and right or wrong when the question came from a dataset."""
    st.subheader("Answer")
    with st.container(border=True, key=K.ANSWER_BOX):
        if run.answer:
            inert.text(run.answer)
        else:
            st.caption("(no answer)")
    grade = grade_answer(run.answer or "", expected or [])
    if grade is not None:
        said = " | ".join(inert.escape(a) for a in grade.expected)
        figures = f"exact match {grade.exact:.0f}, token F1 {grade.f1:.2f}"
        if grade.right:
            st.success(f"Right: the answer contains the expected answer ({said}); {figures}.",
                       icon=":material/check_circle:")
        else:
            st.error(f"Wrong: the expected answer ({said}) is not in it; {figures}.",
                     icon=":material/cancel:")


def cited(run: RunInfo, steps: list[StepEvent]) -> None:
    """The passages the answer cites, the first one open."""
    passages = runview.cited_passages(run, steps)
    if passages and not runview.model_cited(steps):
        st.caption("The answer cites no passage: the model wrote no [n] mark.")
    elif passages:
        st.markdown("**Cited passages**")
        for i, d in enumerate(passages, 1):
            title = f"[{i}] " + inert.escape(f"{d['id']}"
                                             + (f" · {d['title']}" if d["title"] else ""))
            with st.expander(title, expanded=(i == 1)):
                if d["found"]:
                    inert.text(d["text"])
                    if d["score"] is not None:
                        st.caption(f"score {runview.rounded(d['score'])}")
                else:
                    st.caption("Not in the run's memory or retrievals.")
    elif run.status == "ok":
        st.caption("The answer cites no passage.")


def steps_table(steps: list[StepEvent]) -> None:
    """The steps finished so far (the same table while running and after the end)."""
    st.markdown(f"**Steps** ({len(steps)})")
    if steps:
        st.dataframe(runview.step_rows(steps), hide_index=True, width="stretch")
    else:
        st.caption("No step has finished yet.")
