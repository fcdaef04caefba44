"""The Compare page's passage labels (issue 37): under each flow's answer in the side-by-side
view, the passages its answering node read (the ones the context-relevance judge asks about,
each with the judge's verdict where it graded) and a radio per passage that marks it relevant or
not in one click. A label belongs to the question and the passage, so a passage two flows read
shows the same label in both columns; it is stored at once and the judge scores recompute on the
same rerun (an answer counts as labelled once every passage it read is)."""
from __future__ import annotations

from typing import Any

import streamlit as st

from flowkit.errors import FlowkitError
from service.passage_labels import set_passage_label
from service.workspace import Workspace
from studio.common import inert
from studio.common.state import CompareKeys as K
from studio.common.state import Key

UNLABELLED = "unlabelled"
RELEVANT = "relevant"
NOT_RELEVANT = "not relevant"
OPTIONS = [UNLABELLED, RELEVANT, NOT_RELEVANT]
RADIO_LABEL = "Your label: passage {n}"


def option_of(value: float | None) -> str:
    """The radio choice showing a stored label (None: no label)."""
    return UNLABELLED if value is None else RELEVANT if value >= 0.5 else NOT_RELEVANT


def value_of(option: str | None) -> float | None:
    """The stored value of a radio choice (None: remove the label)."""
    return {RELEVANT: 1.0, NOT_RELEVANT: 0.0}.get(option or UNLABELLED)


def judge_word(detail: list[float], i: int) -> str:
    """The context-relevance judge's verdict on the i-th passage ('' where it did not grade)."""
    if i >= len(detail):
        return ""
    v = detail[i]
    return "judge: helps" if v >= 1 else "judge: does not help" if v <= 0 else "judge: unclear"


def progress_line(read: list[dict[str, Any]], labels: dict[str, float]) -> str:
    done = sum(1 for p in read if p["id"] in labels)
    tail = " (the answer counts as labelled)" if read and done == len(read) else ""
    return f"{done} of {len(read)} passages labelled{tail}"


def _store(ws: Workspace, eval_id: str, qid: str, pid: str, key: Key[str]) -> None:
    try:
        set_passage_label(ws, eval_id, qid, pid, value_of(key.get()))
    except FlowkitError as err:
        st.toast(inert.escape(err))


def passage_panel(ws: Workspace, eval_id: str, flow_index: int, qid: str,
                  read: list[dict[str, Any]], labels: dict[str, float],
                  detail: list[float]) -> None:
    """The passages one flow's answering node read, each with a relevant / not relevant radio
    (a click stores the label) and the context-relevance judge's verdict (`detail`, in order)."""
    if not read:
        return
    st.markdown("**Passages read** (context relevance)")
    st.caption(inert.escape(progress_line(read, labels)))
    for i, p in enumerate(read):
        word = judge_word(detail, i)
        st.caption(f"{i + 1}. **{inert.escape(p['title'] or p['id'])}** {inert.code(p['id'])}"
                   + (f" · {word}" if word else "") + " — "
                   + inert.escape(str(p["text"])[:160]))
        key: Key[str] = Key(K.LABEL.item(eval_id, flow_index, qid, "passage", i))
        key.set(option_of(labels.get(p["id"])))          # the stored label wins
        st.radio(RADIO_LABEL.format(n=i + 1), OPTIONS, key=key, horizontal=True,
                 on_change=_store, args=(ws, eval_id, qid, p["id"], key),
                 help="Does this passage help to answer the question? Stored with the "
                      "evaluation for every flow that read it; once every passage an answer "
                      "read is labelled, the context-relevance score becomes a PPI estimate")
