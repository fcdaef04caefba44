"""Flows (home): saved flows with their last run; create, import, export, versions, delete.
The boxes are drawn by studio/flows (create_panel, list_panel, versions_panel)."""
from __future__ import annotations

import streamlit as st

from studio.common.shell import route_through_app
from studio.common.state import FlowsKeys, show_flash
from studio.common.workspace import get_workspace
from studio.flows import create_panel, list_panel, versions_panel

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()

st.title("Flows")
st.markdown("**flowkit** builds retrieval-augmented generation (RAG) pipelines as flows of "
            "operators (retrieve, rerank, generate, judge, loop) that you draw, run on a "
            "knowledge base, replay step by step and compare.")
st.caption("New here? Create a flow from the **naive_rag** template below and run it on the "
           "**sample** knowledge base (a fictional archipelago, ingested at setup).")
show_flash(FlowsKeys.NOTICE)

new_col, import_col = st.columns(2)
with new_col:
    create_panel.new_flow_form(ws)
with import_col:
    create_panel.import_box(ws)

list_panel.saved_flows(ws, below=versions_panel.versions)   # a flow's versions: in its row
