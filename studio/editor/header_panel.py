"""The Editor's head: its title, whether the draft has unsaved changes, the last notice, and the
conflict box after a save that met another version (save mine as a new flow, overwrite, discard)."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError, NotFoundError
from service import flows
from service.drafts import Draft
from service.workspace import Workspace
from studio.common import diffs, inert
from studio.common.state import EditorKeys as K
from studio.editor import actions_panel as actions
from studio.editor.editor import Editor


def render(ed: Editor, ws: Workspace, draft: Draft) -> None:
    """Title, caption, notice and conflict box. The two boxes always exist, filled or not, so the
    canvas below keeps its place in the page (an element inserted above it would make the
    browser mount the canvas afresh)."""
    st.title(f"Editor · {inert.escape(draft.flow)}")
    st.caption(f"Started from version {draft.base_version}"
               + (" · **unsaved changes** (kept on the server: a refresh loses nothing)"
                  if ed.dirty() else " · no unsaved changes"))
    notice_box, conflict_box = st.empty(), st.container()
    notice = ed.notice()
    if notice:
        (notice_box.success if notice[0] == "success" else notice_box.info)(inert.escape(notice[1]))
    conflict = ed.conflict
    if conflict:
        with conflict_box.container(border=True):
            _conflict(ed, ws, draft, conflict)


def _conflict(ed: Editor, ws: Workspace, draft: Draft, conflict: dict[str, object]) -> None:
    name = inert.escape(draft.flow)
    if conflict.get("deleted"):
        st.error(f"Conflict: '{name}' was deleted while you edited it. Your draft is kept: save "
                 "it as a new flow.")
    else:
        st.error(f"Conflict: version {conflict['actual']} of '{name}' was saved while you edited "
                 f"version {conflict['expected']}. Your draft is kept; choose what to do.")
        try:
            theirs, _ = flows.get_flow(ws, draft.flow)
            changes = diffs.structural(theirs, ed.spec)
            with st.expander(f"Your draft compared with version {conflict['actual']}"):
                st.markdown("\n".join(f"- {inert.code(c)}" for c in changes)
                            or "Only positions differ.")
        except NotFoundError:
            pass
    c1, c2, c3 = st.columns(3)
    with c1:
        new_name = st.text_input("New flow name", value=f"{draft.flow}_mine", key=K.CONFLICT_NAME)
        if st.button("Keep mine: save as a new flow", key=K.CONFLICT_SAVE_AS):
            try:
                saved = ed.save_as(new_name)
            except FlowkitError as err:
                st.error(inert.escape(err))
            else:
                st.query_params.update({"flow": saved, "draft": ed.draft.draft_id if ed.draft else ""})
                st.rerun()
    if not conflict.get("deleted"):
        c2.button(f"Overwrite: save mine over version {conflict['actual']}",
                  key=K.CONFLICT_OVERWRITE, on_click=actions.overwrite)
        c3.button(f"Discard mine: load version {conflict['actual']}",
                  key=K.CONFLICT_DISCARD, on_click=actions.discard)
