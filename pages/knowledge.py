"""Knowledge bases: create one, ingest files in the background, browse its chunks, compare BM25,
dense and hybrid search side by side, see its knowledge graph, attach a SQLite database. The
boxes are drawn by studio/knowledge (ingest_panel: the list, new, add files, progress;
preview_panel: the chosen files' sections and tables as flowkit reads them; kb_panel: one
knowledge base's tabs; questions_panel: a question set generated from it, reviewed, saved)."""
from __future__ import annotations

import streamlit as st

from service import knowledge as kbview
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.state import KbKeys, query_select, show_flash, sync_from_query
from studio.common.workspace import get_workspace
from studio.knowledge import ingest_panel, kb_panel, preview_panel, questions_panel

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()

st.title("Knowledge bases")
show_flash(KbKeys.NOTICE)

rows = kbview.kb_rows(ws.resources)
names = [r["name"] for r in rows]
ingest_panel.kb_table(rows)

# ---- the knowledge base this page works on (?kb=) ---------------------------------------------
before = KbKeys.PICK.get()
if sync_from_query(names, key=KbKeys.PICK, param="kb") != before and \
        st.query_params.get("kb") == KbKeys.PICK.get():
    KbKeys.INGEST_TARGET.set(KbKeys.PICK.get() or "")     # a new KB: "Into" names it too

create_col, ingest_col = st.columns(2, gap="large")
with create_col:
    ingest_panel.create_form(ws)
with ingest_col:
    chosen, target = ingest_panel.add_files(ws, jobs, names)

# ---- what flowkit makes of the chosen files, beside the chunks the target KB has of them -------
preview_panel.panel(ws, chosen, target)

# ---- the ingest this page started (?ingest=<job>) ---------------------------------------------
ingest_panel.ingest_progress(jobs, st.query_params.get("ingest"))

if not names:
    st.stop()

# ---- one knowledge base: chunks, search, graph, database ---------------------------------------
st.divider()
pick = query_select("Knowledge base", names, key=KbKeys.PICK, param="kb")
kb = ws.resources.kb(pick)
t_search, t_chunks, t_graph, t_db, t_questions = st.tabs(
    ["Search", "Chunks", "Knowledge graph", "Database", questions_panel.TAB],
    default=questions_panel.TAB if questions_panel.wanted() else None)

with t_search:
    kb_panel.search_panel(kb)
with t_chunks:
    kb_panel.chunks_panel(kb, pick)
with t_graph:
    kb_panel.graph_panel(kb, pick)
with t_db:
    kb_panel.database_panel(ws, kb, pick)
with t_questions:
    questions_panel.panel(ws, jobs, pick)
