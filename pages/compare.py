"""Compare: several flows on the same questions, side by side.

Pick 2 to 6 flows, a question set, a knowledge base and how many questions; the evaluation runs
in the background (it survives a refresh) and its id stays in the address (?eval=...). Then the
metrics with deltas against the first flow, model judges' scores (graded in the background, PPI
once you label a few answers), charts, the questions the flows disagree on, and any question's
traces side by side with the judges' verdicts and the labels you give.
"""
from __future__ import annotations

import streamlit as st

from service.evaluations import eval_repo
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.workspace import get_workspace
from studio.compare import compare_panel, tasks, variant_panel

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()
repo = eval_repo(ws)

st.title("Compare")
eval_id = st.query_params.get("eval")

top_left, top_right = st.columns([3, 2], gap="large")
with top_right:
    compare_panel.open_picker(repo)
with top_left, st.expander("New comparison", expanded=not eval_id):
    compare_panel.setup_form(ws, repo, jobs)

if eval_id:
    plan = compare_panel.load_plan(repo, eval_id)
    if plan is not None:
        compare_panel.header(plan)
        compare_panel.progress_panel(ws, jobs, plan)
        variant_panel.add_variant_panel(ws, jobs, plan,
                                        active=tasks.active_job(jobs, plan.eval_id) is not None)
        compare_panel.results(ws, repo, plan, jobs)
else:
    st.info("Start a comparison, or open an earlier evaluation.")
