"""Knowledge bases: create one, ingest files in the background, browse its chunks, compare BM25,
dense and hybrid search side by side, see its knowledge graph, attach a SQLite database."""
from __future__ import annotations

import json

import streamlit as st

from flowkit.errors import FlowkitError
from service import knowledge as kbview
from studio.common import inert
from studio.common.jobs import get_jobs
from studio.common.shell import route_through_app
from studio.common.state import flash, query_select, show_flash, sync_from_query
from studio.common.tasks import submit_ingest
from studio.common.workspace import get_workspace
from studio.knowledge import kb_panel

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
jobs = get_jobs()
res = ws.resources
state = st.session_state

st.title("Knowledge bases")
show_flash("kb_notice")

rows = kbview.kb_rows(res)
names = [r["name"] for r in rows]
if rows:
    st.dataframe(rows, hide_index=True, width="stretch",
                 column_config={"graph": st.column_config.CheckboxColumn("graph index"),
                                "database": st.column_config.CheckboxColumn("SQLite attached")})
else:
    st.info("No knowledge base yet. Create one below, or run `flowkit setup` for the sample.")

# ---- the knowledge base this page works on (?kb=) ---------------------------------------------
before = state.get("kb_pick")
if sync_from_query(names, key="kb_pick", param="kb") != before and \
        st.query_params.get("kb") == state.get("kb_pick"):
    state["kb_ingest_target"] = state["kb_pick"]       # a new KB: "Into" names it too

create_col, ingest_col = st.columns(2, gap="large")
with create_col, st.form("kb_create", border=True):
    st.subheader("New knowledge base")
    new_name = st.text_input("Name", key="kb_new_name", placeholder="my_docs")
    new_desc = st.text_input("Description", key="kb_new_desc")
    if st.form_submit_button("Create"):
        try:
            kbview.create(res, new_name, new_desc)
        except FlowkitError as err:
            st.error(inert.escape(err))
        else:
            flash("kb_notice", f"Created '{new_name.strip()}'. Add files to it next.")
            st.query_params["kb"] = new_name.strip()
            st.rerun()

with ingest_col, st.container(border=True):
    st.subheader("Add files")
    if not names:
        st.caption("Create a knowledge base first.")
    else:
        if state.get("kb_ingest_target") not in names:
            state["kb_ingest_target"] = state["kb_pick"]
        target = st.selectbox("Into", names, key="kb_ingest_target")
        files = st.file_uploader("Files (.txt, .md, .jsonl with id/title/text, .pdf)",
                                 type=kbview.UPLOAD_TYPES, accept_multiple_files=True,
                                 key="kb_files")
        chunkers = kbview.chunkers()
        chunker = st.selectbox("Chunking", list(chunkers), key="kb_chunker",
                               format_func=lambda k: f"{k} · {chunkers[k].summary()}",
                               index=list(chunkers).index("indexing.chunk_fixed")
                               if "indexing.chunk_fixed" in chunkers else 0)
        st.caption(chunkers[chunker].help().split("\n\n")[-1][:300])
        params_text = st.text_area("Chunking params (JSON)", key=f"kb_params_{chunker}",
                                   value=json.dumps(kbview.default_params(chunker), indent=2),
                                   height=150)
        try:
            params = kbview.parse_params(chunker, params_text)
            params_error = None
        except ValueError as err:
            params, params_error = {}, str(err)
        if params_error:
            st.error(params_error)
        if st.button("Ingest ▶", type="primary", key="kb_ingest_go", disabled=bool(params_error)):
            if not files:
                st.error("Choose one or more files first.")
            else:
                try:
                    job_id = submit_ingest(jobs, ws, target,
                                           [(f.name, f.getvalue()) for f in files], chunker, params)
                except FlowkitError as err:     # a refused file name: nothing was saved
                    st.error(inert.escape(err))
                else:
                    st.query_params["ingest"] = job_id
                    st.query_params["kb"] = target

# ---- the ingest this page started (?ingest=<job>) ---------------------------------------------
ingest_id = st.query_params.get("ingest")
ingest_job = jobs.get(ingest_id) if ingest_id else None
if ingest_job is not None:
    running = not ingest_job.finished

    @st.fragment(run_every=1.0 if running else None)
    def _ingest_progress() -> None:
        job = jobs.get(ingest_id)
        if job is None:
            return
        if job.status == "queued":
            st.progress(0.0, text=f"{inert.escape(job.label)}: queued, "
                              f"{jobs.ahead_of(job.id)} job(s) ahead")
        elif job.status == "running":
            st.progress(min(max(job.progress or 0.0, 0.0), 1.0),
                        text=f"{inert.escape(job.label)}: {inert.escape(job.message)}")
        elif job.status == "error":
            st.error(f"{inert.escape(job.label)} failed: {inert.escape(job.error)}")
        else:
            st.progress(1.0, text=f"{inert.escape(job.label)}: {inert.escape(job.message)}")
            st.success(f"Ingested {(job.result or {}).get('chunks', 0)} chunks into "
                       f"'{(job.result or {}).get('kb')}'.")
        if running and job.finished:
            st.rerun()

    _ingest_progress()

if not names:
    st.stop()

# ---- one knowledge base: chunks, search, graph, database ---------------------------------------
st.divider()
pick = query_select("Knowledge base", names, key="kb_pick", param="kb")
kb = res.kb(pick)
t_search, t_chunks, t_graph, t_db = st.tabs(["Search", "Chunks", "Knowledge graph", "Database"])

with t_search:
    kb_panel.search_panel(kb)
with t_chunks:
    kb_panel.chunks_panel(kb, pick)
with t_graph:
    kb_panel.graph_panel(kb, pick)
with t_db:
    kb_panel.database_panel(ws, kb, pick)
