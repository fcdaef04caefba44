"""The Compare page's judges: grade the open evaluation's answers with model judges in the
background, show each judge's score per flow (PPI++ with labels, else uncorrected) beside the model
that judged, and, in the side-by-side view, each answer's verdicts with the judge's words and the
radios that label it (stored at once; the scores recompute on the same rerun).

The grading job lives in the process (studio.compare.tasks.grading_job finds it by evaluation), so
a refresh shows it again; verdicts and labels are in the database."""
from __future__ import annotations

from typing import Any

import streamlit as st

from flowkit.errors import FlowkitError
from flowkit.eval.runner import EvalPlan
from service import grading, pairwise
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import JobManager
from studio.common.state import CompareKeys as K
from studio.common.state import Key
from studio.common.tasks import cancel
from studio.compare import judges_data as jd
from studio.compare import label_next_panel, pairwise_panel, tasks

JUDGE_HELP = {
    "correctness": "does the answer mean the same as a gold answer (where the set has one)",
    "groundedness": "is the answer stated in the passages the answering node read",
    "context_relevance": "the share of the passages read that help to answer the question",
    "answer_relevance": "does the answer respond to what was asked, right or wrong"}


def judges_section(ws: Workspace, jobs: JobManager, plan: EvalPlan) -> None:
    """Pick judges and their model, grade in the background, and the judge scores table."""
    st.subheader("Judges")
    st.caption("A model reads each finished answer's stored trace and gives a verdict (no flow "
               "runs again; judge calls are not counted in a flow's cost). A small judge makes "
               "many mistakes: its mean is 'uncorrected' until you label a few answers below.")
    c1, c2, c3 = st.columns([3, 2, 2])
    if not K.JUDGES.held():
        K.JUDGES.set(["correctness"])
    judges = c1.multiselect("Judges", list(grading.GRADERS), key=K.JUDGES,
                            help="; ".join(f"{g}: {h}" for g, h in JUDGE_HELP.items()))
    options = jd.model_options()
    if K.JUDGE_MODEL.get() not in options:
        K.JUDGE_MODEL.set(options[0])
    option = c2.selectbox("Judge model", options, key=K.JUDGE_MODEL,
                          format_func=jd.model_option_label,
                          help="Chosen apart from the flows' model; named beside every score")
    path = ""
    if option == jd.OTHER:
        path = c2.text_input("Path of the .gguf file", key=K.JUDGE_PATH,
                             placeholder="/models/judge.gguf")
    own = st.text_area("Criteria of your own (one per line)", key=K.CRITERIA, height=68,
                       placeholder="the answer names the command\nno price is invented",
                       help="A yes/no question about each answer, in plain words: graded like a "
                            "judge (its own scores, labels and intervals). The words are data: "
                            "nothing in them is run. Editing one makes it another judge.")
    criteria = jd.criteria_lines(own)
    job = tasks.grading_job(jobs, plan.eval_id)
    busy = job is not None and not job.finished
    c3.write("")
    if c3.button("Grade answers", type="primary", key=K.GRADE,
                 disabled=busy or not (judges or criteria),
                 help="Answers graded before by the same judge and model are kept"):
        try:
            tasks.submit_grading(jobs, ws, plan.eval_id, list(judges),
                                 jd.chosen_model(option, path), criteria)
        except FlowkitError as err:
            st.error(inert.escape(err))
        else:
            st.rerun()
    pairwise_panel.grade_button(ws, jobs, plan, jd.chosen_model(option, path), busy, c3)
    grading_progress(jobs, plan)
    scores_table(ws, plan)
    label_next_panel.label_next(ws, plan)


def grading_progress(jobs: JobManager, plan: EvalPlan) -> None:
    """The grading job's progress, polled every second while it runs; when it ends the whole
    page reruns so the scores show."""
    first = tasks.grading_job(jobs, plan.eval_id)
    if first is None:
        return

    @st.fragment(run_every=1 if not first.finished else None)
    def panel() -> None:
        job = tasks.grading_job(jobs, plan.eval_id)
        if job is None:
            return
        was = K.GRADE_WAS_ACTIVE.get() or {}
        K.GRADE_WAS_ACTIVE.set({plan.eval_id: not job.finished})
        if was.get(plan.eval_id) and job.finished:
            st.rerun()                                  # finished: show the new scores
        judges = ", ".join(job.meta.get("graders", []))
        who = f"{judges} on {job.meta.get('model_name', '')}"
        if job.status == "error":
            st.error(inert.escape(f"grading ({who}): {job.error or 'failed'}"))
        elif job.status == "cancelled":
            st.caption(inert.escape(f"grading ({who}) cancelled"))
        elif job.finished:
            st.caption(inert.escape(f"{judges}: {(job.result or {}).get('line', job.message)}"))
        else:
            text = f"grading · {who} · {job.status}: {job.message}"
            st.progress(min(float(job.progress or 0.0), 1.0), text=inert.escape(text))
            if st.button("Stop grading", key=K.GRADE_STOP, disabled=job.cancel_requested,
                         help="Stops before the next answer; the verdicts made are kept"):
                cancel(jobs, job.id)

    panel()


def scores_table(ws: Workspace, plan: EvalPlan) -> None:
    try:
        reports = grading.all_scores(ws, plan.eval_id)
    except FlowkitError as err:
        st.error(inert.escape(err))
        return
    if not reports:
        st.caption("No judge has graded this evaluation yet.")
        return
    texts = grading.criterion_texts(ws, [r.grader for r in reports])
    st.dataframe(jd.score_rows(reports, texts), hide_index=True, width="stretch",
                 key=K.JUDGED_DF)
    st.caption("Judge scores in %: PPI = the judge's mean corrected by your labels (PPI++: the "
               "judge counts with the weight its agreement with your labels earns), with its 95% "
               "interval (cut to 0-100); uncorrected = the judge's own mean with a bootstrap "
               "interval. vs baseline: the paired difference from the first flow, in points; * "
               "the interval excludes 0. Judge weight: 0 leaves your labels' own interval; "
               "'worth about N' is how many labels alone would make the interval as narrow.")
    for r in reports:
        st.markdown(inert.escape(jd.labels_line(r, texts)))
        if jd.card_line(r):
            st.caption(inert.escape(jd.card_line(r)))
    pairwise_lines(ws, plan)


def pairwise_lines(ws: Workspace, plan: EvalPlan) -> None:
    """Each pair the pairwise judge graded (`flowkit judge EVAL --pairwise A,B`): A's win rate
    over B, the ties and the position flips, and its agreement with your pairwise labels."""
    try:
        lines = [jd.pairwise_line(pairwise.win(ws, plan.eval_id, a, b, model_label=m),
                                  pairwise.card(ws, plan.eval_id, a, b, model_label=m))
                 for a, b, m in pairwise.graded_pairs(ws, plan.eval_id)]
    except FlowkitError as err:
        st.error(inert.escape(err))
        return
    for line in lines:
        st.markdown(inert.escape(line))


# ---- one answer's verdicts and labels (in the side-by-side view) ------------------------------
def _store_label(ws: Workspace, eval_id: str, flow: str, qid: str, metric: str,
                 key: Key[str]) -> None:
    try:
        grading.set_label(ws, eval_id, flow, qid, metric, jd.label_value(metric, key.get()))
    except FlowkitError as err:
        st.toast(inert.escape(err))


def answer_panel(ws: Workspace, eval_id: str, flow_index: int, flow: str, qid: str,
                 grades: list[Any], labels: dict[tuple[str, str], float]) -> None:
    """The judges' verdicts on one flow's answer, each with the model's words, and a radio per
    labelled metric (a click stores the label)."""
    mine = [g for g in grades if g.flow == flow]
    texts = grading.criterion_texts(ws, sorted({g.grader for g in grades}))
    if mine:
        st.markdown("**Judges**")
        for g in mine:
            st.caption(inert.escape(jd.verdict_line(g.grader, g.model, g.score, g.parsed,
                                                    texts)))
            if g.reason:
                st.caption("“" + inert.escape(g.reason[:200]) + "”")
    for metric in [*jd.LABEL_METRICS, *texts]:
        key: Key[str] = Key(K.LABEL.item(eval_id, flow_index, qid, metric))
        key.set(jd.label_option(metric, labels.get((flow, metric))))  # the stored label wins
        st.radio(f"Your label: {jd.judge_name(metric, texts)}", jd.label_options(metric),
                 key=key, horizontal=True,
                 on_change=_store_label, args=(ws, eval_id, flow, qid, metric, key),
                 help="Stored with the evaluation; with a few labels the judge's score becomes "
                      "a PPI estimate")
