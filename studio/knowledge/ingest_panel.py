"""The Knowledge bases page's top half: the list of knowledge bases, a new one, files (or a folder,
or a .zip) added in the background or read for a parse preview first, and the progress of the
ingest this page started (?ingest=<job>)."""
from __future__ import annotations

import json
from typing import Any

import streamlit as st

from flowkit.errors import FlowkitError
from service import knowledge as kbview
from service.uploads import KB_UPLOAD_MB
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import JobManager
from studio.common.state import KbKeys as K
from studio.common.state import flash
from studio.knowledge import preview_panel
from studio.knowledge.tasks import submit_ingest


def plain(text: str) -> str:
    """A help text for where Markdown is not rendered (a select box's options): without the
    backticks of its code spans (`size` reads as size)."""
    return text.replace("`", "")


def markdown_cut(text: str, limit: int) -> str:
    """The first `limit` characters of a Markdown help text (an ellipsis marks a cut); a cut
    through a code span would leave a lone backtick on the page, so then none is kept."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rstrip() + "…"
    return cut if cut.count("`") % 2 == 0 else plain(cut)


def kb_table(rows: list[dict[str, object]]) -> None:
    """Every knowledge base with its counts (or how to make the first one)."""
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch",
                     column_config={"graph": st.column_config.CheckboxColumn("graph index"),
                                    "database": st.column_config.CheckboxColumn("SQLite attached")})
    else:
        st.info("No knowledge base yet. Create one below, or run `flowkit setup` for the sample.")


def create_form(ws: Workspace) -> None:
    """Name + description; the new knowledge base becomes the page's pick (?kb=)."""
    with st.form(K.CREATE_FORM, border=True):
        st.subheader("New knowledge base")
        new_name = st.text_input("Name", key=K.NEW_NAME, placeholder="my_docs")
        new_desc = st.text_input("Description", key=K.NEW_DESC)
        if st.form_submit_button("Create"):
            try:
                kbview.create(ws.resources, new_name, new_desc)
            except FlowkitError as err:
                st.error(inert.escape(err))
            else:
                flash(K.NOTICE, f"Created '{new_name.strip()}'. Add files to it next.")
                st.query_params["kb"] = new_name.strip()
                st.rerun()


#: The upload box's label: the formats read (service.knowledge.UPLOAD_TYPES).
FILES_LABEL = ("Files: .pdf, .docx, .html/.htm, .md, .txt, .jsonl (id/title/text), or a .zip of "
               "them (a folder zipped)")
FOLDER_LABEL = "Folder: its .pdf, .docx, .html/.htm, .md, .txt, .jsonl and .zip files"


def uploader() -> list[Any]:
    """The upload box: several files at once (a .zip for a folder of them), or a whole folder
    where the toggle asks for one (its files of the accepted types)."""
    folder = st.toggle("A folder", key=K.FOLDER,
                       help="Upload every file of a folder (a documentation site's pages) "
                            "instead of single files.")
    if folder:
        files = st.file_uploader(FOLDER_LABEL, type=kbview.UPLOAD_TYPES,
                                 accept_multiple_files="directory", key=K.FILES.item("folder"),
                                 max_upload_size=KB_UPLOAD_MB)
    else:
        files = st.file_uploader(FILES_LABEL, type=kbview.UPLOAD_TYPES, accept_multiple_files=True,
                                 key=K.FILES, max_upload_size=KB_UPLOAD_MB)
    return list(files or [])


def add_files(ws: Workspace, jobs: JobManager, names: list[str]) -> tuple[list[Any], str | None]:
    """Files, a chunker and its params; Ingest queues a background job and puts it in the
    address; Parse preview reads the files and keeps what flowkit made of them
    (preview_panel draws it). Returns the chosen files and the knowledge base they go into."""
    with st.container(border=True):
        st.subheader("Add files")
        if not names:
            st.caption("Create a knowledge base first.")
            return [], None
        if K.INGEST_TARGET.get() not in names:
            K.INGEST_TARGET.set(K.PICK.get() or names[0])
        target = st.selectbox("Into", names, key=K.INGEST_TARGET)
        files = uploader()
        chunkers = kbview.chunkers()
        chunker = st.selectbox("Chunking", list(chunkers), key=K.CHUNKER,
                               format_func=lambda k: f"{k} · {plain(chunkers[k].summary())}",
                               index=list(chunkers).index(kbview.default_chunker(chunkers))
                               if chunkers else 0)
        st.caption(markdown_cut(chunkers[chunker].help().split("\n\n")[-1], 300))
        params_text = st.text_area("Chunking params (JSON)", key=K.PARAMS.item(chunker),
                                   value=json.dumps(kbview.default_params(chunker), indent=2),
                                   height=150)
        try:
            params = kbview.parse_params(chunker, params_text)
            params_error = None
        except ValueError as err:
            params, params_error = {}, str(err)
        if params_error:
            st.error(params_error)
        go_col, preview_col = st.columns(2)
        if preview_col.button("Parse preview", key=K.PREVIEW_GO, disabled=not files,
                              help="Read the files as ingest would and show their sections and "
                                   "tables below; nothing is written."):
            preview_panel.make(files)
        if go_col.button("Ingest ▶", type="primary", key=K.INGEST_GO,
                         disabled=bool(params_error)):
            if not files:
                st.error("Choose one or more files first.")
                return files, target
            try:
                job_id = submit_ingest(jobs, ws, target,
                                       kbview.upload_files([(f.name, f.getvalue())
                                                            for f in files]), chunker,
                                       params)
            except FlowkitError as err:     # a refused file name: nothing was saved
                st.error(inert.escape(err))
            else:
                st.query_params["ingest"] = job_id
                st.query_params["kb"] = target
    return files, target


def ingest_progress(jobs: JobManager, ingest_id: str | None) -> None:
    """The ingest in the address, followed live (once a second) until it ends."""
    ingest_job = jobs.get(ingest_id) if ingest_id else None
    if ingest_job is None or ingest_id is None:
        return
    running = not ingest_job.finished
    job_id: str = ingest_id

    @st.fragment(run_every=1.0 if running else None)
    def _progress() -> None:
        job = jobs.get(job_id)
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

    _progress()
