"""Search: let the studio find the flow.

Define a search space (a starter from a flow, an uploaded file or JSON in the box), a question
set and knowledge base, the search and confirmation questions and a budget in model calls; check
it to see the cost, then start it. The search runs in the background (it survives a refresh: its
id stays in the address, ?search=...), the candidates race on growing batches and the clearly
worse are dropped; the front is confirmed on questions the race never saw. Any candidate opens
in the Editor (its saved flow), in Compare (its evaluation) or in Replay (its best answer, to
step through and fork).
"""
from __future__ import annotations

import streamlit as st

from service.evaluations import eval_repo
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.workspace import get_workspace
from studio.search import setup_panel, watch_panel

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()

st.title("Search")
search_id = st.query_params.get("search")

left, right = st.columns([3, 2], gap="large")
with right:
    setup_panel.open_picker(ws)
with left, st.expander("New search", expanded=not search_id):
    setup_panel.setup_form(ws, eval_repo(ws), jobs)

if search_id:
    watch_panel.watch_panel(ws, jobs, search_id)
else:
    st.info("Define a search space and start a search, or open an earlier one.")
