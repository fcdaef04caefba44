"""The Knowledge page's "Generate questions" tab: a question set generated from the knowledge base
in the background (service.questiongen through studio.knowledge.tasks), its live progress, then a
review table where the user edits, deletes or adds questions before saving the set.

The job's id is in the address (?qgen=<job>): the job lives in the process with the generated,
unsaved set as its result, so a refresh finds the set again. The table's edits are this session's
(the table's widget state); `review` turns them back into questions.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from flowkit.errors import FlowkitError
from flowkit.eval.questiongen.candidates import KINDS
from flowkit.eval.questiongen.checks import REASONS
from flowkit.eval.questiongen.generate import MAX_QUESTIONS, Request
from flowkit.names import check_new_name
from service import questiongen
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import Job, JobManager
from studio.common.state import KbKeys as K
from studio.common.state import Key
from studio.common.tasks import cancel
from studio.compare.compare_panel import DATASET_PARAM
from studio.knowledge import review, tasks

PARAM = "qgen"                    # the address holds the generation's job id
TAB = "Generate questions"
COMPARE_PAGE = "pages/compare.py"
KIND_HELP = {"single": "single: one passage",
             "bridge": "bridge: two passages linked by an entity (the answer needs both)",
             "comparison": "comparison: two entities of one type compared on one property"}


def wanted() -> bool:
    """Whether the address asks for this tab (a generation in it, or a link to it)."""
    return PARAM in st.query_params or st.query_params.get("tab") == "generate"


def panel(ws: Workspace, jobs: JobManager, kb: str) -> None:
    """The form, then the generation in the address (its progress, then its review)."""
    st.subheader("Generate questions from this knowledge base")
    st.caption("Questions are built from the passages and kept only when the model reads them "
               "back: it answers each from its passages, not without them, a two-passage "
               "question not from one alone, and the answer is not written in the question. "
               "Review them, then save the set: it opens in Compare like any other.")
    form(ws, jobs, kb)
    job_id = st.query_params.get(PARAM)
    job = jobs.get(job_id) if job_id else None
    if job is None or job_id is None or job.meta.get("kb") != kb:
        return
    progress(jobs, job_id)
    if job.status == "done" and job.result is not None:
        st.divider()
        review_panel(ws, job)


def form(ws: Workspace, jobs: JobManager, kb: str) -> None:
    """How many, which kinds, seed, name; Generate checks the request and queues the job."""
    if not K.QGEN_N.held():
        K.QGEN_N.set(10)
    if not K.QGEN_KINDS.held():
        K.QGEN_KINDS.set(list(KINDS))
    if not K.QGEN_SEED.held():
        K.QGEN_SEED.set(0)
    n_col, kinds_col, seed_col = st.columns([1, 3, 1])
    n = n_col.number_input("How many questions", step=1, key=K.QGEN_N,
                           max_value=MAX_QUESTIONS,
                           help="Questions to keep; fewer when the candidates run out")
    kinds = kinds_col.multiselect("Kinds", list(KINDS), key=K.QGEN_KINDS,
                                  format_func=lambda k: KIND_HELP.get(k, k))
    seed = seed_col.number_input("Seed", step=1, key=K.QGEN_SEED,
                                 help="The same seed gives the same set (the calls are cached)")
    default = questiongen.default_name(kb, int(seed))
    if K.QGEN_NAME.get() in (None, "", K.QGEN_NAME_FOR.get()):
        K.QGEN_NAME.set(default)            # the name follows the default until the user types
    K.QGEN_NAME_FOR.set(default)
    name = st.text_input("Question set name", key=K.QGEN_NAME)
    if st.button("Generate", type="primary", key=K.QGEN_GO):
        try:
            plan = questiongen.plan(ws, kb, Request(int(n), tuple(kinds), int(seed)),
                                    name=name.strip())
            job_id = tasks.submit_questiongen(jobs, ws, plan)
        except FlowkitError as err:
            st.error(f"Nothing generated: {inert.escape(err)}")
        else:
            st.query_params[PARAM] = job_id


def progress_text(job: Job) -> str:
    """Kept / asked for, tried, model calls computed / cached (from the job's counts)."""
    p: dict[str, Any] = job.meta.get("progress") or {}
    return (f"kept {p.get('kept', 0)} of {job.meta.get('target', '?')} · tried "
            f"{p.get('tried', 0)} · model calls computed {p.get('computed', 0)}, cached "
            f"{p.get('cached', 0)}")


def dropped_text(job: Job) -> str:
    dropped: dict[str, int] = (job.meta.get("progress") or {}).get("dropped") or {}
    parts = [f"{r.replace('_', ' ')} {dropped[r]}" for r in REASONS if dropped.get(r)]
    return "dropped by the checks: " + ", ".join(parts) if parts else ""


def progress(jobs: JobManager, job_id: str) -> None:
    """The generation followed live (once a second) until it ends; Stop while it runs."""
    first = jobs.get(job_id)
    running = first is not None and not first.finished

    @st.fragment(run_every=1.0 if running else None)
    def _panel() -> None:
        job = jobs.get(job_id)
        if job is None:
            return
        if job.status == "queued":
            st.progress(0.0, text=f"Queued: {jobs.ahead_of(job.id)} job(s) ahead")
        elif job.status == "running":
            st.progress(min(max(job.progress or 0.0, 0.0), 1.0), text=progress_text(job))
            st.caption(" · ".join(x for x in (dropped_text(job), job.meta.get("estimate", ""))
                                  if x))
            if st.button("Stop", key=K.QGEN_STOP.item(job_id), disabled=job.cancel_requested):
                cancel(jobs, job_id)
        elif job.status == "error":
            if job.cancel_requested:
                st.warning("Stopped. Generate again with the same settings to resume: what was "
                           "computed is in the completion cache.")
            else:
                st.error(f"Generating questions failed: {inert.escape(job.error)}")
        elif job.status == "cancelled":
            st.warning("Stopped before it started.")
        else:
            st.progress(1.0, text=progress_text(job))
            dropped = dropped_text(job)
            if dropped:
                st.caption(dropped)
        if running and job.finished:
            st.rerun()

    _panel()


def review_panel(ws: Workspace, job: Job) -> None:
    """Each kept question with its answer, kind, passages and the model's answers; edit or
    delete rows in the table, add questions of your own in the form below it, then save the set.

    The table, its count, the passages list and Save are one fragment: an edit reruns only them,
    and the count and the list follow it. A question is added through text boxes, not the
    table's empty last row: keys typed while that row was being added were lost (issue 48,
    item 4). An Add folds the table's edits into the rows this session keeps (`QGEN_ROWS`), then
    the table starts again from those rows."""
    result = job.result or {}
    plan: questiongen.Plan = result["plan"]
    questions: list[dict[str, Any]] = result["questions"]
    reviewed: list[dict[str, Any]] = result.get("reviewed") or []
    if not questions:
        st.markdown(f"**Review** · 0 question(s) kept for {inert.code(plan.name)}")
        st.warning("No question passed the checks. Try more questions, other kinds or another "
                   "seed.")
        return

    @st.fragment
    def _review() -> None:
        head = st.empty()
        if len(questions) < plan.request.n:
            st.info(f"Only {len(questions)} of {plan.request.n} questions passed the checks "
                    "before the candidates ran out.")
        st.caption("Edit a question or its answer in place (double-click a cell); select rows "
                   "and delete them; add a question of your own below the table.")
        rows = Key[list[dict[str, Any]]](K.QGEN_ROWS.item(job.id)).get() \
            or review.rows(questions, reviewed)
        edited = st.data_editor(
            pd.DataFrame(rows, columns=list(review.COLUMNS)), key=K.QGEN_TABLE.item(job.id),
            num_rows="delete", hide_index=True, width="stretch", placeholder="",
            disabled=[c for c in review.COLUMNS if c not in review.EDITABLE],
            column_config={
                "id": st.column_config.TextColumn("id", width="small"),
                "question": st.column_config.TextColumn("question", width="large"),
                "answer": st.column_config.TextColumn("answer", width="medium"),
                "kind": st.column_config.TextColumn("kind", width="small"),
                "model answered": st.column_config.TextColumn(
                    "model answered", help="What the model answered in each check"),
                "passages": st.column_config.TextColumn("passages", help="The supporting "
                                                        "passages (read them below)")})
        records: list[dict[str, Any]] = edited.to_dict("records")
        changed = review.changes(records, questions)
        head.markdown(f"**Review** · {len(records)} question(s) kept for "
                      f"{inert.code(plan.name)}" + (f" ({changed})" if changed else ""))
        add_form(job.id, rows)
        passages_list(records, reviewed)
        save_panel(ws, job, plan, questions, records, result.get("meta") or {})

    _review()


def _add(job_id: str, rows: list[dict[str, Any]]) -> None:
    """Add's callback: the table's rows with its edits, then the new question; the table starts
    again from them (its edits are in the rows now)."""
    q_key: Key[str] = Key(K.QGEN_ADD_Q.item(job_id))
    a_key: Key[str] = Key(K.QGEN_ADD_A.item(job_id))
    question, answer = (str(k.get() or "").strip() for k in (q_key, a_key))
    missing = [name for name, v in (("a question", question), ("its answer", answer)) if not v]
    error: Key[str] = Key(K.QGEN_ADD_ERROR.item(job_id))
    if missing:
        error.set(f"Nothing added: write {' and '.join(missing)}.")
        return
    error.pop()
    table: Key[Any] = Key(K.QGEN_TABLE.item(job_id))
    now = review.apply_edits(rows, table.get())
    Key[list[dict[str, Any]]](K.QGEN_ROWS.item(job_id)).set([*now, review.added_row(question,
                                                                                     answer)])
    table.pop()
    q_key.set("")
    a_key.set("")


def add_form(job_id: str, rows: list[dict[str, Any]]) -> None:
    """'Add a question of your own': a question and its answer, added as a table row."""
    q_col, a_col, go_col = st.columns([5, 3, 2], vertical_alignment="bottom")
    q_col.text_input("Add a question of your own", key=K.QGEN_ADD_Q.item(job_id),
                     placeholder="A question the knowledge base answers")
    a_col.text_input("Its answer", key=K.QGEN_ADD_A.item(job_id))
    go_col.button("Add question", key=K.QGEN_ADD.item(job_id), icon=":material/add:",
                  on_click=_add, args=(job_id, rows), width="stretch",
                  help="Added as a row of the table, of kind 'added', with no passages")
    error = Key[str](K.QGEN_ADD_ERROR.item(job_id)).get()
    if error:
        st.error(inert.escape(error))


def passages_list(records: list[dict[str, Any]], reviewed: list[dict[str, Any]]) -> None:
    """One expander a question of the table as it stands (edits, deletions and additions
    shown): its passages in full and what the model answered."""
    st.markdown("**Passages**, question by question")
    by_id = {r["id"]: r for r in reviewed}
    with st.container(height=320):
        for row in records:
            qid, text = review.cell(row.get("id")), review.cell(row.get("question"))
            r = by_id.get(qid)
            title = f"{qid or review.ADDED} · {text[:100]}{'…' if len(text) > 100 else ''}"
            with st.expander(title):
                st.markdown(f"Answer: {inert.code(review.cell(row.get('answer')))} · kind "
                            f"{inert.code(review.cell(row.get('kind')) or review.ADDED)}")
                if r is None:
                    st.caption("Added by you: no supporting passages (recall is not measured "
                               "on it).")
                    continue
                answered = review.model_answered(r.get("model_answers") or {})
                if answered:
                    st.caption("The model answered: " + inert.escape(answered))
                for p in r.get("passages") or []:
                    st.markdown(f"{inert.code(p['id'])} **{inert.escape(p.get('title') or '')}**")
                    inert.text(p.get("text") or "")


def save_panel(ws: Workspace, job: Job, plan: questiongen.Plan, questions: list[dict[str, Any]],
               edited: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """The name and "Save question set"; the outcome (or why not) beside the button."""
    saved_key: Key[tuple[str, int]] = Key(K.QGEN_SAVED.item(job.id))
    name_col, go_col = st.columns([2, 3], vertical_alignment="bottom")
    name = name_col.text_input("Save as", value=plan.name, key=K.QGEN_SAVE_NAME.item(job.id))
    with go_col:
        if st.button("Save question set", type="primary", key=K.QGEN_SAVE.item(job.id)):
            try:
                name = name.strip()
                check_new_name(name, "question set")   # the one rule (flowkit.names)
                chosen = review.to_questions(edited, questions, plan.kb)
                info = questiongen.save(ws, replace(plan, name=name), chosen, meta)
            except FlowkitError as err:
                st.error(f"Not saved: {inert.escape(err)}")
            else:
                saved_key.set((info.name, info.size))
    saved = saved_key.get()
    if saved:
        st.success(f"Saved dataset '{inert.escape(saved[0])}' with {saved[1]} questions: open "
                   "it in Compare.")
        compare_link(saved[0])


def compare_link(dataset: str) -> None:
    """A link to the Compare page with `dataset` picked as its question set (a plain link when
    this page is run on its own)."""
    label = "Open Compare"
    params = {DATASET_PARAM: dataset}
    try:
        st.page_link(COMPARE_PAGE, label=label, icon=":material/compare_arrows:",
                     query_params=params)
    except (StreamlitAPIException, KeyError):
        st.markdown(f"[{label}](/compare?{urlencode(params)})")
