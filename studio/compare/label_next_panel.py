"""The Compare page's "What should I label next?": the answers whose labels count most for a
judge's interval (`service.label_next`, as `flowkit label EVAL_ID --next`). Where two flows gave
the same answer the difference needs no label, so those questions are left out; the rest come in
a fixed random order (a choice by the judge's own verdicts would make the interval wrong). A
question's "Open" button shows it in the side-by-side view, where its label radios are."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from flowkit.eval.runner import EvalPlan
from service.label_next import next_to_label
from service.passage_labels import METRIC as CONTEXT_RELEVANCE
from service.workspace import Workspace
from studio.common import inert
from studio.common.state import CompareKeys as K
from studio.compare import judges_data as jd

#: how many questions the list offers at a time
COUNT = 5


def metrics() -> list[str]:
    """The judges labelled answer by answer (context relevance is labelled passage by passage)."""
    return [m for m in jd.LABEL_METRICS if m != CONTEXT_RELEVANCE]


def open_question(qid: str) -> None:
    """Show `qid` in the side-by-side view (its picker and the page's ?q=)."""
    K.QUESTION.set(qid)
    st.query_params["q"] = qid


def label_next(ws: Workspace, plan: EvalPlan) -> None:
    """The expander: a judge and a flow to pick, then where the labels stand and the next few
    questions to label, each with the flows' answers and a button that opens it below."""
    flows = [f.label or f.ref for f in plan.flows]
    with st.expander("What should I label next?"):
        c1, c2 = st.columns(2)
        metric = c1.selectbox("Judge to label for", metrics(), key=K.NEXT_METRIC)
        flow = c2.selectbox("Flow (against the baseline, the first)",
                            flows[1:] or flows, key=K.NEXT_FLOW)
        try:
            nxt = next_to_label(ws, plan.eval_id, metric or metrics()[0], flow or "", COUNT)
        except FlowkitError as err:
            st.error(inert.escape(err))
            return
        st.caption(inert.escape(nxt.line()))
        if not nxt.suggestions:
            st.success("Nothing left to label: every answer that counts is labelled.")
            return
        for s in nxt.suggestions:
            a, b = st.columns([5, 1])
            said = "; ".join(f"{f}: {ans or '-'}" for f, ans in s.answers.items())
            a.markdown(inert.escape(f"**{s.question_id}**: {s.question[:140]}") + "  \n"
                       + inert.escape(said[:300]))
            b.button("Open", key=K.NEXT_OPEN.item(plan.eval_id, s.question_id),
                     on_click=open_question, args=(s.question_id,),
                     help="Shows this question in the side-by-side view below")
