"""Run: pick a flow, a knowledge base and a question; the run goes to the background job queue and
this page follows it live, the answer written as the model generates it. The run id stays in the
address (?run=...), so a refresh finds it again; a debugged run (breakpoints) pauses there too."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from flowkit.validate import check
from studio.common import inert
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.state import RunKeys as K
from studio.common.state import query_select, take_flow
from studio.common.workspace import get_workspace
from studio.run import form_panel, run_panel, runview
from studio.run.debugging import submit_debug_run
from studio.run.stream import buffers
from studio.run.tasks import RunRefused, submit_run

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()
#: how often the live answer is redrawn while a run goes on (seconds)
POLL_S = 0.5

st.title("Run")
form_col, live_col = st.columns([2, 3], gap="large")

with form_col:
    # ---- flow: saved flows and templates, preselected from another page or the address -----
    choices = runview.flow_choices(ws)
    if (found := runview.find_ref(choices, take_flow())) is not None:   # hand_over_flow()
        K.FLOW_CHOICE.set(found)
    elif ((opened := st.query_params.get("run")) and "flow" not in st.query_params
          and not K.FLOW_CHOICE.held()):                # opened on a run: that run's flow
        if (found := runview.find_ref(choices, runview.flow_of(ws, jobs, opened))) is not None:
            K.FLOW_CHOICE.set(found)
    ref = query_select("Flow", choices, key=K.FLOW_CHOICE, param="flow",
                       from_param=lambda p: runview.find_ref(choices, p),
                       to_param=runview.ref_param, format_func=runview.ref_label,
                       help="A saved flow (its latest version) or a ready-made template")

    # ---- knowledge base ----------------------------------------------------------------------
    kb_names = ws.resources.kb_names()
    kb_options = [*kb_names, ""]
    kb = query_select("Knowledge base", kb_options, key=K.KB, param="kb",
                      default=lambda: "sample" if "sample" in kb_names else kb_options[0],
                      to_param=lambda k: k or None,
                      format_func=lambda k: k or "(none: closed-book flows only)",
                      help="Where the flow's retrieval nodes search (Knowledge bases page)")
    if not kb_names:
        st.caption("No knowledge base yet: create one on the Knowledge bases page, or run "
                   "`flowkit setup` for the sample.")

    # ---- question: typed, or picked from a dataset ---------------------------------------------
    attached = st.query_params.get("run")
    if attached and not K.QUESTION.held():   # after a refresh: the run's question
        K.QUESTION.set(runview.question_of(ws, jobs, attached))
    form_panel.dataset_picker()
    question = st.text_area("Question", key=K.QUESTION, height=90,
                            placeholder="Ask something the knowledge base can answer")
    if expected := form_panel.expected_answers(question):
        st.caption("Expected: " + " | ".join(inert.escape(a) for a in expected))

    # ---- model settings for this run only ------------------------------------------------------
    spec, version, load_error = None, None, None
    if ref is not None:
        try:
            spec, version = runview.load_ref(ws, ref)
        except FlowkitError as err:
            load_error = str(err)
    overrides = form_panel.model_settings(ws, spec)
    breakpoints, bp_problems = form_panel.breakpoints_editor(spec)

    if load_error:
        st.error(inert.escape(load_error))
    problems = [p for p in check(spec) if p.severity == "error"] if spec is not None else []
    if problems:
        st.error(f"The flow has {len(problems)} problem(s); fix them in the Editor first.")
        for p in problems:
            st.markdown(f"- {inert.escape(p)}")
    label = f"Run with {len(breakpoints)} breakpoint(s) ▶" if breakpoints else "Run ▶"
    go = st.button(label, type="primary", key=K.GO, width="stretch",
                   disabled=spec is None or bool(problems) or bool(bp_problems))
    asked = runview.asked_key(ref, kb, question, breakpoints)
    if go and not question.strip():
        st.error("Type a question first (or pick one from a dataset).")
    elif go and spec is not None:
        K.REFUSED.pop()
        try:
            if breakpoints:
                _, new_run = submit_debug_run(jobs, ws, spec, question.strip(), kb, breakpoints,
                                              flow_version=version, overrides=overrides,
                                              on_token=buffers().on_token)
            else:
                _, new_run = submit_run(jobs, ws, spec, question.strip(), kb, flow_version=version,
                                        overrides=overrides, on_token=buffers().on_token)
        except RunRefused as refused:
            K.REFUSED.set((asked, refused.problems))
        except FlowkitError as err:
            K.REFUSED.set((asked, [str(err)]))
        else:
            st.query_params["run"] = new_run
            K.SUBMITTED.set(new_run)
    # a refusal stays while the form asks the same thing: any rerun (the sidebar's model load
    # ending, a timer) would otherwise wipe it before it was read (issue 47, finding 11)
    if (refused_now := K.REFUSED.get()) is not None:
        if refused_now[0] == asked:
            st.error("Not queued: " + "; ".join(inert.escape(p) for p in refused_now[1]))
        else:
            K.REFUSED.pop()

with live_col:
    run_id = st.query_params.get("run")
    if (submitted := K.SUBMITTED.get()) and not run_id:
        # a rerun the browser asked for before its address held the new run (the sidebar's model
        # load ending, a timer) came with the old address: the run just queued is shown again
        run_id = submitted
        st.query_params["run"] = submitted
    elif submitted and run_id == submitted and not go:
        K.SUBMITTED.pop()           # the address holds it now: nothing left to restore
    if not run_id:
        st.info("Choose a flow, a knowledge base and a question, then press **Run**. The run "
                "goes on in the background even if you leave this page.")
    else:
        active = run_panel.is_active(ws, jobs, run_id)
        expected = form_panel.expected_answers(runview.question_of(ws, jobs, run_id))

        @st.fragment(run_every=POLL_S if active else None)
        def _live() -> None:
            still = run_panel.render(ws, jobs, run_id, expected)
            if active and not still:
                st.rerun()   # the run ended: redraw the page once without the timer

        _live()
    run_panel.queue(jobs)
