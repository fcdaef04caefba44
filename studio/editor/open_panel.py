"""Which flow the Editor edits: the one in the address (?flow=, ?draft=), else this tab's draft,
else a picker of the saved flows; an unknown flow says so. The page stops here until a flow is
open."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import NotFoundError
from service import flows
from service.drafts import Draft
from service.workspace import Workspace
from studio.common import inert
from studio.common.state import EditorKeys as K
from studio.editor.editor import Editor


def _back(label: str, icon: str) -> None:
    st.page_link("pages/flows.py", label=label, icon=icon)


def open_draft(ed: Editor, ws: Workspace) -> Draft:
    """The draft this run edits, its flow and draft id written to the address; stops the page
    (st.stop) with a picker or an error while there is none."""
    flow = st.query_params.get("flow") or (ed.draft.flow if ed.draft else None)
    if not flow:
        st.title("Editor")
        names = [f.name for f in flows.list_flows(ws)]
        if not names:
            st.info("No saved flows yet.")
            _back("Create one on the Flows page", ":material/add:")
            st.stop()
        pick = st.selectbox("Open a flow", names, key=K.PICK)
        if st.button("Open", type="primary"):
            st.query_params["flow"] = pick
            st.rerun()
        st.stop()
    try:
        draft = ed.open(flow, st.query_params.get("draft"))
    except NotFoundError as err:
        st.title("Editor")
        st.error(inert.escape(err))
        _back("Back to the flows", ":material/arrow_back:")
        st.stop()
    if st.query_params.get("flow") != draft.flow or st.query_params.get("draft") != draft.draft_id:
        st.query_params.update({"flow": draft.flow, "draft": draft.draft_id})
    return draft
