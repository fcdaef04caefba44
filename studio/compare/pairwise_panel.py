"""The Compare page's pairwise judge: "which answer is better, or are they equal?", the baseline
against each other flow, asked in both orders (`service.pairwise`). A button in the Judges section
grades every question both flows answered, in the background; in the side-by-side view, each pair
shows the judge's verdict on the question and a radio to label it yourself (stored at once): the
win rate below the judge scores is corrected by those labels."""
from __future__ import annotations

from typing import Any

import streamlit as st

from flowkit.errors import FlowkitError
from flowkit.eval.runner import EvalPlan
from service import grading, pairwise
from service.pairwise import A_BETTER, B_BETTER, TIE
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import JobManager
from studio.common.state import CompareKeys as K
from studio.common.state import Key
from studio.common.tasks import job_key
from studio.compare import tasks

UNLABELLED = "unlabelled"
SAME = "the same"


def flows_of(plan: EvalPlan) -> list[str]:
    return [f.label or f.ref for f in plan.flows]


def pair_options(a: str, b: str) -> list[str]:
    """The radio's choices for the pair: no label, A's better, the same, B's better."""
    return [UNLABELLED, f"{a}'s is better", SAME, f"{b}'s is better"]


def pair_value(option: str | None, a: str, b: str) -> float | None:
    """The stored value of a choice (1 A better, 0.5 the same, 0 B better; None: no label)."""
    return {f"{a}'s is better": A_BETTER, SAME: TIE, f"{b}'s is better": B_BETTER}.get(
        option or UNLABELLED)


def pair_option(value: float | None, a: str, b: str) -> str:
    if value is None:
        return UNLABELLED
    return {A_BETTER: f"{a}'s is better", TIE: SAME, B_BETTER: f"{b}'s is better"}[value]


def verdict_words(score: float, a: str, b: str) -> str:
    """The pairwise judge's verdict on one question in words."""
    if score == A_BETTER:
        return f"{a}'s answer is better (both orders agree)"
    if score == B_BETTER:
        return f"{b}'s answer is better (both orders agree)"
    return "the same, or the two orders disagree (counted as a tie)"


def submit_pairwise(jobs: JobManager, ws: Workspace, plan: EvalPlan, model: str = "") -> str:
    """Queue the pairwise judge on `model` for the baseline against every other flow (one job,
    pair after pair), or return the job already queued for it. It shows as the evaluation's
    grading job; cancelling stops it before the next question (the verdicts made are kept)."""
    flows = flows_of(plan)
    if len(flows) < 2:
        raise FlowkitError("pairwise judge: this evaluation has one flow; it compares two")
    grading.check_model(model)
    base, others = flows[0], flows[1:]
    names = [f"pairwise {base} vs {b}" for b in others]
    meta = {"eval_id": plan.eval_id, "graders": names, "model": model,
            "model_name": grading.model_name(ws, model)}

    def work(report: Any) -> dict[str, Any]:
        report.update(progress=0.0, message="starting (the model loads on the first call)")
        lines = []
        for k, b in enumerate(others):
            def on_progress(i: int, n: int, k: int = k, b: str = b) -> None:
                if report.cancel.is_set():
                    raise FlowkitError("pairwise grading stopped; run it again to resume")
                report.update(progress=(k + i / max(n, 1)) / len(others),
                              message=f"{base} vs {b}: {i} of {n} questions")
            out = pairwise.grade_pairwise(ws, plan.eval_id, base, b, model=model,
                                          on_progress=on_progress)
            lines.append(f"{base} vs {b}: {out.line()}")
        report.update(progress=1.0, message="; ".join(lines))
        return {"eval_id": plan.eval_id, "line": "; ".join(lines)}

    return jobs.submit(tasks.GRADE, f"pairwise judge on evaluation {plan.eval_id}", work,
                       dedupe_key=job_key(tasks.GRADE, plan.eval_id, "pairwise", model),
                       meta=meta)


def grade_button(ws: Workspace, jobs: JobManager, plan: EvalPlan, model: str, busy: bool,
                 where: Any) -> None:
    """'Pairwise judge' in the Judges section (with two flows or more)."""
    flows = flows_of(plan)
    if len(flows) < 2:
        return
    if where.button("Pairwise judge", key=K.PAIR_GRADE, disabled=busy,
                    help=f"Asks which answer is better, {flows[0]}'s or the other flow's, for "
                         "every question both answered, in both orders; a side wins only when "
                         "both orders agree. Label pairs in the side-by-side view to correct it."):
        try:
            submit_pairwise(jobs, ws, plan, model)
        except FlowkitError as err:
            st.error(inert.escape(err))
        else:
            st.rerun()


def _store(ws: Workspace, eval_id: str, a: str, b: str, qid: str, key: Key[str]) -> None:
    try:
        pairwise.set_pairwise_label(ws, eval_id, a, b, qid, pair_value(key.get(), a, b))
    except FlowkitError as err:
        st.toast(inert.escape(err))


def pair_labels(ws: Workspace, plan: EvalPlan, qid: str) -> None:
    """Under the side-by-side columns: for the baseline against each other flow, the pairwise
    judge's verdict on this question (where it graded the pair) and your label of the pair."""
    flows = flows_of(plan)
    if len(flows) < 2:
        return
    base = flows[0]
    st.markdown("**Which answer is better?**")
    graded = pairwise.graded_pairs(ws, plan.eval_id)           # read once for every pair
    for fi, b in enumerate(flows[1:], 1):
        for a_, b_, model in graded:
            if (a_, b_) == (base, b):
                got = pairwise.verdicts(ws, plan.eval_id, base, b, model).get(qid)
                if got is not None:
                    st.caption(inert.escape(f"pairwise judge on {model}: "
                                            f"{verdict_words(got.score, base, b)}"))
        key: Key[str] = Key(K.PAIR_LABEL.item(plan.eval_id, fi, qid))
        key.set(pair_option(pairwise.labels(ws, plan.eval_id, base, b).get(qid), base, b))
        st.radio(f"Your label: {base} vs {b}", pair_options(base, b), key=key, horizontal=True,
                 on_change=_store, args=(ws, plan.eval_id, base, b, qid, key),
                 help="Stored with the evaluation; with a few labels the pairwise judge's win "
                      "rate becomes a PPI estimate")
