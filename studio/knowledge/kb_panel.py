"""The knowledge base page's panels (pages/knowledge.py): search side by side, the chunks, the
knowledge graph and the attached SQLite database of one knowledge base."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from service import knowledge as kbview
from service.knowledge import KnowledgeBase
from service.uploads import KB_UPLOAD_MB
from service.workspace import Workspace
from studio.common import graph_panel as graphs
from studio.common import inert
from studio.common import provenance_panel as provenance
from studio.common.provenance import line as provenance_line
from studio.common.state import KbKeys as K
from studio.common.state import flash

#: the search box's example for the sample knowledge base (its lighthouse); others get a
#: general one: the sample's lighthouse is not in a user's documents
SAMPLE_QUERY = "e.g. Corren Lighthouse keeper"


def search_placeholder(kb_name: str) -> str:
    """The search box's placeholder: the sample's example on the sample only."""
    return SAMPLE_QUERY if kb_name == kbview.SAMPLE_KB else \
        "A name, a term or a question from these documents"


def search_panel(kb: KnowledgeBase) -> None:
    """BM25, dense and hybrid results for one query, in three columns."""
    qcol, kcol = st.columns([5, 1])
    query = qcol.text_input("Search", key=K.SEARCH_Q, placeholder=search_placeholder(kb.name))
    k = kcol.number_input("Top k", 1, 50, 5, key=K.SEARCH_K)
    if query.strip():
        try:
            results = kbview.search(kb, query.strip(), int(k))
        except FlowkitError as err:
            st.error(inert.escape(err))
        else:
            for col, (method, docs) in zip(st.columns(3), results.items()):
                with col:
                    st.markdown(f"**{method}**")
                    if not docs:
                        st.caption("No results.")
                    for rank, d in enumerate(docs, 1):
                        with st.container(border=True):
                            st.markdown(f"**{rank}.** {inert.code(d['id'])} · "
                                        f"score {d['score']:.4f}")
                            if d.get("title"):
                                st.caption(inert.escape(d["title"]))
                            provenance.caption(d)
                            text = d.get("text", "")
                            inert.text(text[:280] + ("…" if len(text) > 280 else ""))


def chunks_panel(kb: KnowledgeBase, pick: str) -> None:
    """The chunks, 20 a page, each with where it came from when its chunk knows (file, pages,
section)."""
    total = kb.count() if kb.exists else 0
    size = 20
    pages = max(1, -(-total // size))
    pcol, _ = st.columns([1, 4])
    page_no = pcol.number_input(f"Page (of {pages})", 1, pages, 1, key=K.CHUNKS_PAGE.item(pick))
    st.caption(f"{total} chunks · showing {size * (page_no - 1) + 1 if total else 0}-"
               f"{min(total, size * page_no)}")
    chunk_rows = [{"id": d["id"], "title": d.get("title", ""), "from": provenance_line(d),
                   "doc": (d.get("meta") or {}).get("doc_id", ""),
                   "chars": len(d.get("text", "")), "text": d.get("text", "")[:400]}
                  for d in (kb.chunks(limit=size, offset=size * (page_no - 1)) if total else [])]
    if not any(r["from"] for r in chunk_rows):     # chunks that know no page or section
        chunk_rows = [{k: v for k, v in r.items() if k != "from"} for r in chunk_rows]
    st.dataframe(chunk_rows, hide_index=True, width="stretch")


def graph_panel(kb: KnowledgeBase, pick: str) -> None:
    """The knowledge-graph index (when the KB was ingested with the graph chunker), drawn."""
    try:
        graph = kbview.load_kg(kb.dir)
    except FlowkitError as err:
        graph = None
        st.error(inert.escape(err))
    if graph is None:
        st.caption("No knowledge-graph index: ingest files with the `indexing.knowledge_graph` "
                   "chunker to build one.")
    else:
        st.caption(f"{graph.number_of_nodes()} entities, {graph.number_of_edges()} relations. "
                   "Drag to move, scroll to zoom, hover an edge for its relations.")
        fcol, ncol = st.columns([4, 1])
        focus = fcol.text_input("Focus on an entity", key=K.GRAPH_FOCUS.item(pick),
                                placeholder="e.g. Corren (its neighbours are drawn, in amber)")
        most = ncol.number_input("Entities drawn", 5, 300, 60, step=5, key=K.GRAPH_N.item(pick))
        nodes, edges = graphs.kg_picture(graph, int(most), focus)
        if focus.strip() and not nodes:
            st.caption(f"No entity matches '{inert.escape(focus.strip())}'.")
        graphs.draw(nodes, edges, key=K.GRAPH.item(pick), height=560, physics=True)


def database_panel(ws: Workspace, kb: KnowledgeBase, pick: str) -> None:
    """The attached SQLite database: its tables and the allowlist; attach another file."""
    current = kbview.attached_database(kb)
    if current is not None:
        st.markdown(f"Attached: {inert.code(current)}")
        allowed = kbview.allowed_tables(kb)
        try:
            st.dataframe([{"table": t, "rows": n, "allowed": allowed is None or t in allowed}
                          for t, n in kbview.sqlite_tables(current)], hide_index=True)
        except Exception as err:  # noqa: BLE001 - a broken file: say so, do not crash the page
            st.error(f"cannot read it: {inert.escape(err)}")
    else:
        st.caption("No SQLite database attached. Text-to-SQL flows query the one attached here.")
    db_file = st.file_uploader("SQLite database", type=["sqlite", "sqlite3", "db"],
                               key=K.DB_FILE.item(pick), max_upload_size=KB_UPLOAD_MB)
    offered = kbview.upload_tables(db_file.getvalue()) if db_file is not None else []
    upload_id = getattr(db_file, "file_id", "") if db_file is not None else ""
    chosen = st.multiselect("Tables text-to-SQL may read", offered, default=offered,
                            key=K.DB_TABLES.item(pick, upload_id), disabled=not offered,
                            help="The allowlist: a query that reads any other table is refused.")
    if st.button("Attach", key=K.DB_ATTACH, disabled=db_file is None) and db_file is not None:
        try:
            where = kbview.attach_upload(ws.data_dir, kb, db_file.name, db_file.getvalue(),
                                         chosen if offered else None)
        except (FlowkitError, OSError) as err:
            st.error(inert.escape(err))
        else:
            flash(K.NOTICE, f"Attached {db_file.name} to '{pick}' ({where.name}).")
            st.rerun()
