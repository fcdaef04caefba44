"""The Compare page's sections: set up a comparison, follow it, and show its results (metrics with
deltas, judge scores (judges_panel), charts, the questions the flows disagree on, one question's
traces side by side with the judges' verdicts and your labels, of answers and of the passages
they read).

Session keys are prefixed "compare_"; which evaluation and question are open lives in the query
params (?eval=ID&q=QUESTION_ID), so a refresh shows the same thing again.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import streamlit as st

from flowkit.errors import FlowkitError
from flowkit.eval.datasets import Dataset, from_path, known_sets, resolve
from flowkit.eval.exports import to_csv, to_html, to_json, to_markdown
from flowkit.eval.formatting import steadiness_line
from flowkit.eval.report import EvalReport
from flowkit.eval.runner import EvalPlan
from service import grading, passage_labels
from service.evaluations import EvalRepo
from service.workspace import Workspace
from studio.common import inert
from studio.common import provenance_panel as provenance
from studio.common.jobs import JobManager
from studio.common.state import CompareKeys as K
from studio.common.state import query_select, sync_from_query
from studio.compare import compare_charts as charts
from studio.compare import compare_data as cd
from studio.compare import (
    generate_link_panel,
    judges_panel,
    pairwise_panel,
    passage_labels_panel,
    tasks,
    variant_panel,
)

NEW_KB = "__new__"
#: the address parameter that names the question set to pick (a link from another page)
DATASET_PARAM = "dataset"


# ---- the open evaluation in the address -------------------------------------------------------
def open_eval(eval_id: str | None) -> None:
    """Show this evaluation (and forget the open question)."""
    if eval_id:
        st.query_params["eval"] = eval_id
    else:
        st.query_params.pop("eval", None)
    st.query_params.pop("q", None)
    K.QUESTION.pop()


def peek_dataset(repo: EvalRepo, name: str) -> Dataset | None:
    """A dataset for the form (read only: nothing is stored until the comparison starts)."""
    try:
        sets = known_sets()
        if name in sets:
            return from_path(sets[name], name=name)
        info = repo.get_dataset(name)
        return Dataset(info.name, info.questions, source=info.source, kb=info.kb,
                       corpus=resolve(repo, name).corpus if info.source else "")
    except FlowkitError as err:
        st.error(inert.escape(err))
        return None


# ---- new comparison ------------------------------------------------------------------------
def setup_form(ws: Workspace, repo: EvalRepo, jobs: JobManager) -> None:
    """Flows (2-6), dataset, knowledge base, how many questions; starts a background job."""
    choices = cd.flow_choices(ws)
    kept_refs = K.FLOWS.get() or []
    if any(r not in choices for r in kept_refs):
        K.FLOWS.set([r for r in kept_refs if r in choices])
    refs = st.multiselect("Flows (2 to 6; the first is the baseline)", choices,
                          format_func=cd.flow_label, key=K.FLOWS,
                          max_selections=cd.MAX_FLOWS,
                          help="Saved flows and templates; deltas are measured against the first")
    names = cd.dataset_choices(repo)
    if not names:
        st.info("No question set found: generate one from a knowledge base (the link below), or "
                "import one in a shell with `flowkit dataset import DIR_OR_CSV`.")
        generate_link_panel.pointer(repo, names)
        return
    # a set named in the address (?dataset=: the Knowledge page's "Open Compare" after a save)
    # is picked once; else the one picked before, else the sample questions
    sync_from_query(names, key=K.DATASET, param=DATASET_PARAM,
                    default="sample_questions" if "sample_questions" in names else names[0])
    name = st.selectbox("Question set", names, key=K.DATASET,
                        help="Sets under ../shared/data, the sample questions, or imported ones")
    ds = peek_dataset(repo, name)
    if ds is None:
        return
    st.caption(f"{len(ds.questions)} questions"
               + (" · gold passages named (recall@k)" if ds.has_gold_passages else "")
               + (f" · corpus `{ds.corpus}`" if ds.corpus else " · no corpus file"))
    kb_names = ws.resources.kb_names()
    kb_options = [*kb_names, *([NEW_KB] if ds.corpus else [])]
    if not kb_options:
        st.warning("No knowledge base yet, and this set has no corpus to ingest.")
        return
    if K.KB.get() not in kb_options or K.KB_FOR.get() != name:
        want = cd.suggested_kb(ds, kb_names)
        K.KB.set(want if want in kb_names else kb_options[-1])
        K.KB_FOR.set(name)
    kb = st.selectbox("Knowledge base", kb_options, key=K.KB,
                      format_func=lambda k: "new: ingest this set's corpus" if k == NEW_KB else k)
    if kb != NEW_KB:
        generate_link_panel.pointer(repo, names, kb)
    ingest_first = kb == NEW_KB
    if ingest_first:
        kb = st.text_input("Name of the new knowledge base", value=cd.kb_slug(ds.name),
                           key=K.NEW_KB).strip()
        st.caption("Its corpus is ingested first, in the background (a large corpus takes "
                   "minutes).")
    n = len(ds.questions)
    if (K.LIMIT.get() or 0) > n:
        K.LIMIT.set(n)
    if not K.LIMIT.held():
        K.LIMIT.set(min(30, n))
    limit = st.number_input("Questions (the first N, file order)", min_value=1, max_value=n,
                            step=1, key=K.LIMIT)
    concurrency = 1
    if ws.resources.settings.llm.backend == "openai":     # a model server: it can batch
        if not K.CONCURRENCY.held():
            K.CONCURRENCY.set(1)
        concurrency = int(st.number_input(
            "Questions in flight", min_value=1, max_value=64, step=1, key=K.CONCURRENCY,
            help="Runs sent to the model server at once (flowkit eval --concurrency): a server "
                 "with parallel slots (flowkit serve-model --parallel N, llama.cpp's server, "
                 "vLLM) answers them together. Answers, their order and resume are as with one."))
    if st.button("Run the comparison", type="primary", key=K.START,
                 disabled=len(refs) < cd.MIN_FLOWS):
        try:
            plan = cd.new_plan(ws, list(refs), ds, kb, int(limit))
            if not ingest_first:
                ws.resources.kb(kb).require_ready()
            dataset = cd.load_dataset(repo, name)       # stores its questions (for resume)
            tasks.submit_eval(jobs, ws, plan, dataset, ingest_first=ingest_first,
                              concurrency=concurrency)
        except FlowkitError as err:
            st.error(inert.escape(err))
        else:
            open_eval(plan.eval_id)
            st.rerun()
    if len(refs) < cd.MIN_FLOWS:
        st.caption(f"Pick at least {cd.MIN_FLOWS} flows.")


def open_picker(repo: EvalRepo) -> None:
    """A selectbox over earlier evaluations; picking one opens it."""
    evals = cd.evaluations(repo)
    if not evals:
        st.caption("No evaluation yet.")
        return
    ids = [e.id for e in evals]
    labels = {e.id: cd.eval_label(e) for e in evals}
    current = st.query_params.get("eval")
    if current in ids and K.OPEN.get() != current:
        K.OPEN.set(current)

    def picked() -> None:
        eval_id = picked_eval_id(K.OPEN.get(), ids)
        if eval_id is not None and eval_id != st.query_params.get("eval"):
            open_eval(eval_id)

    st.selectbox("Open an evaluation", ids, index=None, key=K.OPEN,
                 format_func=lambda i: labels.get(i, i), on_change=picked,
                 placeholder=f"{len(ids)} evaluations")


def picked_eval_id(value: object, ids: list[str]) -> str | None:
    """The evaluation a picked value stands for. Streamlit keeps a selectbox's value by its
    label, so when an evaluation's label changes between reruns (its status: done -> running
    after a variant is added) the value comes back as the old label, which ends in ' · <id>'."""
    if isinstance(value, str):
        if value in ids:
            return value
        tail = value.rsplit(" · ", 1)[-1]
        if tail in ids:
            return tail
    return None


# ---- progress --------------------------------------------------------------------------------
def progress_panel(ws: Workspace, jobs: JobManager, plan: EvalPlan) -> None:
    """Progress of the open evaluation, polled every second while it runs; when it ends the whole
    page reruns to show the results."""
    first = tasks.progress(ws, jobs, plan.eval_id)

    @st.fragment(run_every=1 if first.active else None)
    def panel() -> None:
        p = tasks.progress(ws, jobs, plan.eval_id)
        was = K.WAS_ACTIVE.get()
        K.WAS_ACTIVE.set({plan.eval_id: p.active})
        if was and was.get(plan.eval_id) and not p.active:
            st.rerun()                                  # finished: show the final results
        label = f"{p.finished}/{p.total} answers · {p.status}"
        if p.failed:
            label += f" · {p.failed} failed"
        st.progress(min(p.fraction, 1.0), text=label)
        if p.message:
            st.caption(inert.escape(p.message),
                       help=cd.CALLS_HELP if "model calls of the" in p.message else None)
        if p.active:
            if st.button("Cancel", key=K.STOP, disabled=p.message.startswith("cancelling"),
                         help="Stops at the next step of the run in flight; the finished "
                              "answers are kept and Resume goes on from there"):
                tasks.stop_eval(jobs, plan.eval_id)
                st.toast("Cancelling: stops at the next step")
        elif p.finished < p.total:
            if st.button("Resume", key=K.RESUME, type="primary"):
                try:
                    tasks.submit_eval(jobs, ws, plan)
                except FlowkitError as err:
                    st.error(inert.escape(err))
                else:
                    st.rerun()

    panel()


# ---- results ---------------------------------------------------------------------------------
def metrics_section(rep: EvalReport, seconds: tuple[float, float] | None = None) -> None:
    """The metrics table, what its columns count, and `seconds` (cost, wall: run_seconds)."""
    st.subheader("Metrics")
    st.dataframe(cd.metrics_table(rep), hide_index=True, width="stretch", key=K.METRICS_DF,
                 column_config={"s/q": st.column_config.NumberColumn("s/q",
                                                                     help=cd.SECONDS_HELP)})
    done, total = cd.answered(rep)
    so_far = f"{done} of {total} answers in so far; " if done < total else ""
    st.caption(f"{so_far}EM, F1, Acc and {rep.recall_title} in %; tokens = prompt + completion per "
               f"question; {rep.recall_title}: share of gold passages in the top "
               f"{rep.k or 'all'} of any search of the run.")
    if seconds is not None:
        st.caption(cd.seconds_note(*seconds), help=cd.SECONDS_HELP)
    steady = steadiness_line(rep) or cd.steadiness_missing(rep)
    if steady:
        st.caption(inert.escape(steady), help=steadiness_line.__doc__)
    if same := cd.indistinct_note(rep):
        st.warning(inert.escape(same), icon=":material/drag_handle:")
    deltas = cd.delta_table(rep)
    if deltas:
        st.markdown(f"**Against the baseline {inert.code(rep.baseline)}**: mean difference "
                    "[95% paired "
                    "bootstrap interval]; * the interval excludes 0")
        st.dataframe(deltas, hide_index=True, width="stretch", key=K.DELTA_DF)


def charts_section(rep: EvalReport) -> None:
    st.subheader("Charts")
    bars = charts.metric_bars(rep)
    for i in range(0, len(bars), 4):
        cols = st.columns(4)
        for col, (title, chart) in zip(cols, bars[i:i + 4]):
            if chart is None:     # every flow scored 0: an empty chart would say nothing
                col.info(cd.zero_note(rep, title), icon=":material/info:")
            else:
                col.altair_chart(chart, width="stretch")
    st.altair_chart(charts.frontier(rep), width="stretch")


def downloads(rep: EvalReport) -> None:
    cols = st.columns(4)
    for col, (label, ext, mime) in zip(cols, [("Report (HTML)", "html", "text/html"),
                                              ("Report (Markdown)", "md", "text/markdown"),
                                              ("Results (CSV)", "csv", "text/csv"),
                                              ("Everything (JSON)", "json", "application/json")]):
        writer = {"html": to_html, "md": to_markdown, "csv": to_csv, "json": to_json}[ext]
        col.download_button(label, writer(rep), file_name=f"eval-{rep.eval_id}.{ext}", mime=mime,
                            key=K.DOWNLOAD.item(ext))


def _select_from_table(rows: list[dict[str, str]]) -> None:
    sel = K.DISAGREE_DF.get()
    picked = list(getattr(getattr(sel, "selection", None), "rows", None) or
                  ((sel or {}).get("selection", {}).get("rows", []) if isinstance(sel, dict)
                   else []))
    if picked and picked[0] < len(rows):
        K.QUESTION.set(rows[picked[0]]["id"])
        st.query_params["q"] = rows[picked[0]]["id"]


def disagreements_section(rep: EvalReport) -> None:
    rows = cd.disagreement_table(rep)
    st.subheader(f"Questions where the flows disagree ({len(rows)})")
    if not rows:
        st.caption("The flows gave the same (normalised) answers to every question so far.")
        return
    st.caption("Different EM or different normalised answers. Click a row to see the traces. "
               + cd.MARKS_NOTE)
    st.dataframe(rows, hide_index=True, width="stretch", key=K.DISAGREE_DF,
                 on_select=lambda: _select_from_table(rows), selection_mode="single-row")


def question_picker(rep: EvalReport) -> str | None:
    options = cd.question_options(rep)
    if not options:
        return None
    dis = set(rep.disagreements)

    def label(qid: str) -> str:
        mark = "≠ " if qid in dis else "= "
        return f"{mark}{qid}: {cd.question_text(rep, qid)[:110]}"

    return query_select("Question to inspect (≠: the flows disagree)", options, key=K.QUESTION,
                        param="q", format_func=label)


def _trace_column(t: cd.FlowTrace, gold: list[str], judged: Callable[[], None] | None = None
                  ) -> None:
    st.markdown(f"**{inert.escape(t.flow)}**")     # a heading broke a long name mid-word
    if t.run is None:
        st.caption("not run yet")
        return
    mark = cd.mark(t.result)
    st.markdown(f"**Answer** {mark}" + ("" if t.run.record.answer else " _(empty)_"))
    if t.run.record.answer:
        inert.text(t.run.record.answer)
    st.caption(f"gold: {' | '.join(inert.escape(g) for g in gold)} · "
               f"{cd.score_line(t.result)} · status {t.run.record.status}")
    if t.run.record.error:
        st.error(inert.escape(t.run.record.error))
    if judged is not None:
        judged()                                        # the judges' verdicts and your labels
    with st.expander(f"Retrieved passages ({len(t.passages)})"):
        for p in t.passages:
            star = "★ " if p["gold"] else ""
            st.markdown(f"{star}**{inert.escape(p['title'] or p['doc'])}** "
                        f"{inert.code(p['id'])} · score {float(p['score']):.3f} · step {p['step']}")
            provenance.caption(p)
            inert.text(str(p["text"])[:300])
    st.markdown("**Steps**")
    for s in t.steps:
        with st.expander(inert.escape(cd.step_title(s))):
            if s.error:
                st.error(inert.escape(s.error))
            for r in s.retrievals:
                st.markdown(f"*{inert.escape(r.method)}* {inert.code(r.query, limit=200)} → "
                            + ", ".join(inert.escape(d.get("id")) for d in r.docs))
            for i, c in enumerate(s.llm_calls):
                st.markdown(f"Prompt {i + 1} ({c.prompt_tokens} tok)")
                st.code(c.prompt, language=None, wrap_lines=True)
                st.markdown(f"Completion ({c.completion_tokens} tok, {c.ms:.0f} ms)")
                st.code(c.completion, language=None, wrap_lines=True)


def traces_section(ws: Workspace, plan: EvalPlan, rep: EvalReport) -> None:
    st.subheader("Side by side")
    qid = question_picker(rep)
    if qid is None:
        return
    q = next(q for q in plan.questions if str(q["id"]) == qid)
    st.markdown(f"**{inert.escape(q['question'])}**")
    ts = cd.traces(ws, plan, rep, qid)
    grades = grading.answer_grades(ws, plan.eval_id, qid)
    labels = grading.answer_labels(ws, plan.eval_id, qid)
    read = passage_labels.question_passages(ws, plan.eval_id, qid)
    marked = passage_labels.passage_labels(ws, plan.eval_id, qid)

    def judged(fi: int, flow: str) -> None:
        judges_panel.answer_panel(ws, plan.eval_id, fi, flow, qid, grades, labels)
        detail = next((g.detail for g in grades
                       if g.flow == flow and g.grader == passage_labels.METRIC), [])
        passage_labels_panel.passage_panel(ws, plan.eval_id, fi, qid, read.get(flow, []),
                                           marked, detail)

    cols = st.columns(len(ts))
    for fi, (col, t) in enumerate(zip(cols, ts)):
        with col:
            ok = t.result is not None and t.result.status == "ok"
            _trace_column(t, list(q.get("answers") or []),
                          functools.partial(judged, fi, t.flow) if ok else None)
    pairwise_panel.pair_labels(ws, plan, qid)


def results(ws: Workspace, repo: EvalRepo, plan: EvalPlan, jobs: JobManager) -> None:
    rep = cd.report(repo, plan)
    if not any(rep.results.values()):
        st.info("No answers yet: the results appear here as the evaluation goes.")
        return
    metrics_section(rep, cd.run_seconds(repo, plan.eval_id))
    judges_panel.judges_section(ws, jobs, plan)
    downloads(rep)
    charts_section(rep)
    disagreements_section(rep)
    variant_panel.partings_panel(ws, plan)
    traces_section(ws, plan, rep)


def load_plan(repo: EvalRepo, eval_id: str) -> EvalPlan | None:
    try:
        return cd.open_plan(repo, eval_id)
    except FlowkitError as err:
        st.error(inert.escape(err))
        return None


def header(plan: EvalPlan) -> None:
    flows = " · ".join(inert.code(f.label) for f in plan.flows)
    st.markdown(f"### {inert.escape(plan.name)}")
    st.caption(f"evaluation {plan.eval_id} · {flows} · {len(plan.questions)} questions of "
               f"{inert.escape(plan.dataset)} · knowledge base {plan.kb} · resume from a shell with "
               f"`flowkit eval --resume {plan.eval_id}`")
