"""The Flows page's saved flows: one row each with its last run and Open, Run, Export, Versions,
Delete and LangGraph export; a delete asks first. What a row's button opens (the delete question,
its versions) is drawn in that row, where the click was, not at the top of a long list."""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import streamlit as st

from flowkit.errors import FlowkitError
from service import flows as library
from service.workspace import Workspace
from studio.common import inert
from studio.common.state import RUN_PAGE, flash
from studio.common.state import FlowsKeys as K
from studio.common.workspace import get_workspace
from studio.flows.create_panel import EDITOR_PAGE, open_in

LG_EXPORT = "Export as LangGraph package (zip)"


def when(t: datetime | None) -> str:
    """A time as the page shows it ('' for none)."""
    return t.strftime("%Y-%m-%d %H:%M") if t else ""


@st.cache_data(max_entries=256, show_spinner=False)
def lg_package(db_url: str, name: str, version: int) -> tuple[bytes | None, str]:
    """(zip, file name) of a saved flow version as a LangGraph package, or (None, the problem).
    Built once per flow version, not on every rerun of the page."""
    try:
        spec = library.get_flow(get_workspace(), name, version)[0]
        return library.export_zip(spec), f"{library.graph_id(spec)}.zip"
    except FlowkitError as err:   # a flow with problems cannot become code yet
        return None, str(err)


def saved_flows(ws: Workspace, below: Callable[[Workspace, str], None] | None = None) -> None:
    """Every saved flow, newest first as the store lists them; `below(ws, name)` draws what the
    row's Versions button opened inside the row (studio/flows/versions_panel)."""
    st.subheader("Saved flows")
    flows = library.list_flows(ws)
    if not flows:
        st.info("No saved flows yet: create one from a template above.")
    for f in flows:
        with st.container(border=True):
            info, act = st.columns([3, 4])
            with info:
                st.markdown(f"**{inert.escape(f.name)}** · version {f.version} · "
                            f"saved {when(f.updated_at)}")
                if f.description:
                    st.caption(inert.escape(f.description))
                if f.last_run_id:
                    st.caption(f"Last run: {inert.escape(f.last_run_status)} · "
                               f"{when(f.last_run_at)} · {inert.code(f.last_run_id[:8])}")
                else:
                    st.caption("Not run yet")
            with act:
                _actions(ws, f.name, f.version)
            if K.CONFIRM_DELETE.get() == f.name:
                _confirm_delete(ws, f.name)
            if below is not None and K.SELECTED.get() == f.name:
                below(ws, f.name)


def _actions(ws: Workspace, name: str, version: int) -> None:
    b = st.columns(5)
    if b[0].button("Open", key=K.OPEN.item(name), type="primary"):
        open_in(EDITOR_PAGE, name)
    if b[1].button("Run", key=K.RUN.item(name)):
        open_in(RUN_PAGE, name)
    b[2].download_button("Export", data=library.export_bytes(ws, name),
                         file_name=f"{name}.json", mime="application/json",
                         key=K.EXPORT.item(name))
    if b[3].button("Versions", key=K.VERSIONS.item(name)):
        K.SELECTED.set(name)
    if b[4].button("Delete", key=K.DELETE.item(name)):
        K.CONFIRM_DELETE.set(name)
    package, file_or_problem = lg_package(ws.resources.database_url, name, version)
    if package is None:
        st.button(LG_EXPORT, key=K.EXPORT_LG.item(name), disabled=True,
                  help=f"Fix the flow first: {inert.escape(file_or_problem)}")
    else:
        st.download_button(LG_EXPORT, data=package, file_name=file_or_problem,
                           mime="application/zip", key=K.EXPORT_LG.item(name),
                           help="graph.py + langgraph.json: `langgraph dev` serves it")


def _confirm_delete(ws: Workspace, name: str) -> None:
    st.warning(f"Delete '{inert.escape(name)}' and all its versions? Its runs stay in the history.")
    yes, no = st.columns([1, 6])
    if yes.button("Yes, delete", key=K.DELETE_YES.item(name), type="primary"):
        library.delete(ws, name)
        K.CONFIRM_DELETE.pop()
        if K.SELECTED.get() == name:
            K.SELECTED.pop()
        flash(K.NOTICE, f"Deleted '{name}'.")
        st.rerun()
    if no.button("Cancel", key=K.DELETE_NO.item(name)):
        K.CONFIRM_DELETE.pop()
        st.rerun()
