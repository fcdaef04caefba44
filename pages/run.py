"""Run: pick a flow, a knowledge base and a question; the run goes to the background job queue and
this page follows it live. The run id stays in the address (?run=...), so a refresh finds it again."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from flowkit.validate import check
from studio.common import inert, sidebar_panel
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.state import query_select
from studio.common.tasks import RunRefused, submit_run
from studio.common.workspace import get_workspace
from studio.run import datasets, run_panel, runview
from studio.run.overrides import Overrides, tunable

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()


@st.cache_data(show_spinner=False, max_entries=16)
def _questions(path: str, mtime: float) -> list[dict]:
    from pathlib import Path
    return datasets.load_questions(Path(path))


def _fill_question(qs: list[dict]) -> None:
    """Dataset picker callback: copy the chosen question into the question box."""
    idx = st.session_state.get("run_dataset_q")
    if idx is not None and 0 <= idx < len(qs):
        st.session_state["run_question"] = qs[idx]["question"]
        st.session_state["run_gold"] = {"question": qs[idx]["question"], "answers": qs[idx]["answers"]}


st.title("Run")
form_col, live_col = st.columns([2, 3], gap="large")

with form_col:
    # ---- flow: saved flows and templates, preselected from another page or the address -----
    choices = runview.flow_choices(ws)
    hint = st.session_state.pop("run_flow", None)      # set by the Flows and Editor pages
    if (found := runview.find_ref(choices, hint)) is not None:
        st.session_state["run_flow_choice"] = found
    ref = query_select("Flow", choices, key="run_flow_choice", param="flow",
                       from_param=lambda p: runview.find_ref(choices, p),
                       to_param=runview.ref_param, format_func=runview.ref_label,
                       help="A saved flow (its latest version) or a ready-made template")

    # ---- knowledge base ----------------------------------------------------------------------
    kb_names = ws.resources.kb_names()
    kb_options = [*kb_names, ""]
    kb = query_select("Knowledge base", kb_options, key="run_kb", param="kb",
                      default=lambda: "sample" if "sample" in kb_names else kb_options[0],
                      to_param=lambda k: k or None,
                      format_func=lambda k: k or "(none: closed-book flows only)",
                      help="Where the flow's retrieval nodes search (Knowledge bases page)")
    if not kb_names:
        st.caption("No knowledge base yet: create one on the Knowledge bases page, or run "
                   "`flowkit setup` for the sample.")

    # ---- question: typed, or picked from a dataset ---------------------------------------------
    attached = st.query_params.get("run")
    if attached and "run_question" not in st.session_state:   # after a refresh: the run's question
        try:
            st.session_state["run_question"] = ws.store.get_run(attached).question
        except FlowkitError:
            job = jobs.find_run(attached)
            if job is not None:
                st.session_state["run_question"] = job.meta.get("question", "")
    sets = datasets.question_sets()
    with st.expander("Pick a question from a dataset", expanded=False):
        set_names = [s.name for s in sets]
        set_name = st.selectbox("Dataset", set_names, key="run_dataset") if sets else None
        if set_name is not None:
            qset = sets[set_names.index(set_name)]
            qs = _questions(str(qset.path), qset.path.stat().st_mtime)
            st.selectbox("Question", list(range(len(qs))), index=None, key="run_dataset_q",
                         format_func=lambda i: f"{qs[i]['id']}: {qs[i]['question']}",
                         placeholder=f"{len(qs)} questions", on_change=_fill_question, args=(qs,))
            st.caption(f"Read from {inert.code(qset.path)}")
    question = st.text_area("Question", key="run_question", height=90,
                            placeholder="Ask something the knowledge base can answer")
    gold = st.session_state.get("run_gold")
    if gold and gold["question"] == question and gold["answers"]:
        st.caption("Expected: " + " | ".join(inert.escape(a) for a in gold["answers"]))

    # ---- model settings for this run only ------------------------------------------------------
    spec, version, load_error = None, None, None
    if ref is not None:
        try:
            spec, version = runview.load_ref(ws, ref)
        except FlowkitError as err:
            load_error = str(err)
    overrides = Overrides()
    with st.expander("Model settings for this run"):
        st.caption(f"Model: {sidebar_panel.model_line(ws)} (change it on the Settings page)")
        base_t = float(ws.resources.settings.llm.temperature)
        t = st.number_input("Temperature", min_value=0.0, max_value=2.0, step=0.1, value=base_t,
                            key="run_temperature", help="0 = greedy; this run only")
        if abs(t - base_t) > 1e-9:
            overrides.temperature = float(t)
        if spec is not None:
            for node_id, name, value, schema in tunable(spec):
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    continue
                kwargs = {k: schema[k] for k in ("minimum", "maximum") if k in schema}
                is_int = schema.get("type") == "integer"
                new = st.number_input(
                    f"{node_id} · {name}", value=int(value) if is_int else float(value),
                    min_value=kwargs.get("minimum"), max_value=kwargs.get("maximum"),
                    step=1 if is_int else 0.1, key=f"run_param_{spec.name}_{node_id}_{name}",
                    help=schema.get("description"))
                if new != value:
                    overrides.node_params.setdefault(node_id, {})[name] = new
            lim = spec.limits
            st.caption(f"Limits: {lim.max_steps} steps, {lim.max_llm_calls} LLM calls, "
                       f"{lim.max_tokens} tokens, {lim.timeout_s:g} s (edit them in the Editor)")

    if load_error:
        st.error(inert.escape(load_error))
    problems = [p for p in check(spec) if p.severity == "error"] if spec is not None else []
    if problems:
        st.error(f"The flow has {len(problems)} problem(s); fix them in the Editor first.")
        for p in problems:
            st.markdown(f"- {inert.escape(p)}")
    go = st.button("Run ▶", type="primary", key="run_go", width="stretch",
                   disabled=spec is None or bool(problems))
    if go and not question.strip():
        st.error("Type a question first (or pick one from a dataset).")
    elif go and spec is not None:
        try:
            _, new_run = submit_run(jobs, ws, spec, question.strip(), kb, flow_version=version,
                                    overrides=overrides)
        except RunRefused as refused:
            st.error("Not queued: " + "; ".join(inert.escape(p) for p in refused.problems))
        except FlowkitError as err:
            st.error(inert.escape(err))
        else:
            st.query_params["run"] = new_run

with live_col:
    run_id = st.query_params.get("run")
    if not run_id:
        st.info("Choose a flow, a knowledge base and a question, then press **Run**. The run "
                "goes on in the background even if you leave this page.")
    else:
        active = run_panel.is_active(ws, jobs, run_id)

        @st.fragment(run_every=1.0 if active else None)
        def _live() -> None:
            still = run_panel.render(ws, jobs, run_id)
            if active and not still:
                st.rerun()   # the run ended: redraw the page once without the timer

        _live()
    run_panel.queue(jobs)
