"""The Knowledge page's parse preview (pages/knowledge.py): the files chosen in "Add files" as
flowkit reads them (service.knowledge.preview_uploads), one expander a document: its sections
(heading path, pages, blocks), each table with its caption as a table, and beside them the chunks
the target knowledge base already holds of that document, so a user sees what happened to their
tables before and after ingest.

The preview is made on a click ("Parse preview" in the Add files box) and kept in session state
with the ids of the uploads it was made of; choosing other files drops it."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from flowkit.errors import FlowkitError
from service import knowledge as kbview
from service.knowledge import DocumentPreview, TablePreview
from service.workspace import Workspace
from studio.common import inert
from studio.common import provenance_panel as provenance
from studio.common.state import KbKeys as K


def upload_ids(files: Sequence[Any]) -> tuple[str, ...]:
    """What identifies a choice of uploads (their file ids, else their names)."""
    return tuple(str(getattr(f, "file_id", "") or f.name) for f in files)


def make(files: Sequence[Any]) -> None:
    """Read the uploaded files and keep their preview (nothing is written anywhere); a file the
    readers refuse is one st.error naming it."""
    try:
        previews = kbview.preview_uploads([(f.name, f.getvalue()) for f in files])
    except FlowkitError as err:        # DocumentError (named as uploaded), UploadRefused
        K.PREVIEW.pop()
        st.error(inert.escape(err))
    else:
        K.PREVIEW.set((upload_ids(files), previews))


def columns(header: Sequence[str]) -> list[str]:
    """A table's header as distinct column names (an empty cell becomes 'column N', a repeated
    one gets ' (2)'): a data frame needs them distinct."""
    out: list[str] = []
    for i, cell in enumerate(header, 1):
        name = cell.strip() or f"column {i}"
        n, base = 1, name
        while name in out:
            n += 1
            name = f"{base} ({n})"
        out.append(name)
    return out


def table_frame(table: TablePreview) -> pd.DataFrame:
    """The table's first rows under its header."""
    width = max([len(table.header), *(len(r) for r in table.first_rows)], default=0)
    header = [*table.header, *[""] * (width - len(table.header))]
    rows = [[*r, *[""] * (width - len(r))] for r in table.first_rows]
    return pd.DataFrame(rows, columns=columns(header))


def label(doc: DocumentPreview) -> str:
    """The expander's label: file, format, counts."""
    pages = f" · {doc.pages} page{'s' if doc.pages != 1 else ''}" if doc.pages else ""
    return (f"{doc.source} · {doc.format}{pages} · {len(doc.sections)} section"
            f"{'s' if len(doc.sections) != 1 else ''} · {len(doc.tables)} table"
            f"{'s' if len(doc.tables) != 1 else ''}")


def _structure(doc: DocumentPreview) -> None:
    st.markdown("**Sections**")
    st.dataframe([{"section": s.path or "(before the first heading)", "pages": s.pages,
                   "blocks": s.blocks, "tables": s.tables} for s in doc.sections],
                 hide_index=True, width="stretch")
    for i, t in enumerate(doc.tables, 1):
        st.markdown(f"**Table {i}**" + (f": {inert.escape(t.caption)}" if t.caption else ""))
        st.dataframe(table_frame(t), hide_index=True, width="stretch")
        shown = min(t.rows, len(t.first_rows))
        st.caption(f"{t.rows} row{'s' if t.rows != 1 else ''}"
                   + (f", the first {shown} shown" if shown < t.rows else "")
                   + (f" · in {inert.escape(t.section)}" if t.section else ""))


def _chunks(ws: Workspace, kb_name: str, doc: DocumentPreview) -> None:
    st.markdown(f"**Chunks in '{inert.escape(kb_name)}'**")
    kb = ws.resources.kb(kb_name)
    try:
        chunks = kbview.document_chunks(kb, doc.source)
    except FlowkitError as err:
        st.error(inert.escape(err))
        return
    if not chunks:
        st.caption("None yet: ingest the file to make them.")
        return
    st.dataframe([{"id": c["id"], "title": c["title"], "from": provenance.line(c),
                   "kind": c["meta"].get("kind", ""), "text": c["text"][:300]} for c in chunks],
                 hide_index=True, width="stretch")


def panel(ws: Workspace, files: Sequence[Any] | None, kb_name: str | None) -> None:
    """The kept preview of the files chosen now (nothing when none was made of them)."""
    kept = K.PREVIEW.get()
    if not files or kept is None or kept[0] != upload_ids(files):
        return
    previews: list[DocumentPreview] = kept[1]
    st.subheader("Parse preview")
    if not previews:
        st.caption("The files hold no documents.")
    for doc in previews:
        with st.expander(label(doc), expanded=len(previews) == 1):
            if kb_name:
                left, right = st.columns(2, gap="medium")
                with left:
                    _structure(doc)
                with right:
                    _chunks(ws, kb_name, doc)
            else:
                _structure(doc)
