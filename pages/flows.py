"""Flows (home): saved flows with their last run; create, import, export, versions, delete."""
from __future__ import annotations

from datetime import datetime

import streamlit as st

from flowkit import templates
from flowkit.errors import FlowkitError
from service import flows as library
from studio.common import diffs, inert
from studio.common.shell import route_through_app
from studio.common.state import flash, show_flash
from studio.common.workspace import get_workspace

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
store = ws.store


def _when(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if t else ""


def _go(page: str, flow: str) -> None:
    if page == "pages/run.py":
        st.session_state["run_flow"] = flow
    st.switch_page(page, query_params={"flow": flow})   # the target page's query params


_LG_EXPORT = "Export as LangGraph package (zip)"


@st.cache_data(max_entries=256, show_spinner=False)
def _lg_package(db_url: str, name: str, version: int) -> tuple[bytes | None, str]:
    """(zip, file name) of a saved flow version as a LangGraph package, or (None, the problem).
    Built once per flow version, not on every rerun of the page."""
    try:
        spec = get_workspace().store.get_flow(name, version)[0]
        return library.export_zip(spec), f"{library.graph_id(spec)}.zip"
    except FlowkitError as err:   # a flow with problems cannot become code yet
        return None, str(err)

st.title("Flows")
st.markdown("**flowkit** builds retrieval-augmented generation (RAG) pipelines as flows of "
            "operators (retrieve, rerank, generate, judge, loop) that you draw, run on a "
            "knowledge base, replay step by step and compare.")
st.caption("New here? Create a flow from the **naive_rag** template below and run it on the "
           "**sample** knowledge base (a fictional archipelago, ingested at setup).")
show_flash("flows_notice")
versions_box = st.container()   # a flow's versions open here, at the top, not below every flow

new_col, import_col = st.columns(2)
with new_col, st.form("flows_new", clear_on_submit=False, border=True):
    st.subheader("New flow")
    name = st.text_input("Name", key="flows_new_name", placeholder="my_flow")
    names = templates.names()
    choices = sorted(names, key=lambda n: n != "naive_rag") + [library.BLANK]
    template = st.selectbox("Start from", choices, key="flows_new_template",
                            format_func=library.template_title,
                            help="A ready-made template, or an empty canvas")
    if st.form_submit_button("Create and open", type="primary"):
        try:
            library.create_flow(store, name, template)
        except FlowkitError as err:
            st.error(inert.escape(err))
        else:
            _go("pages/editor.py", name.strip())

with import_col, st.container(border=True):
    st.subheader("Import")
    upload = st.file_uploader("A flow JSON file", type=["json"], key="flows_import_file")
    if upload is not None:
        spec, problems = library.parse_import(upload.getvalue())
        if spec is None:
            for p in problems:
                st.error(inert.escape(p))
        else:
            if problems:
                st.warning(f"The flow has {len(problems)} problem(s); you can fix them in the "
                           "editor.")
                with st.expander("Problems"):
                    for p in problems:
                        st.markdown(f"- {inert.escape(p)}")
            new_name = st.text_input("Save as", value=spec.name, key="flows_import_name")
            if st.button("Import", key="flows_import_go"):
                try:
                    library.import_flow(store, spec, new_name)
                except FlowkitError as err:
                    st.error(inert.escape(err))
                else:
                    flash("flows_notice", f"Imported '{new_name.strip()}'.")
                    st.rerun()

st.subheader("Saved flows")
flows = store.list_flows()
if not flows:
    st.info("No saved flows yet: create one from a template above.")
confirm = st.session_state.get("flows_confirm_delete")
for f in flows:
    with st.container(border=True):
        info, act = st.columns([3, 4])
        with info:
            st.markdown(f"**{inert.escape(f.name)}** · version {f.version} · "
                        f"saved {_when(f.updated_at)}")
            if f.description:
                st.caption(inert.escape(f.description))
            if f.last_run_id:
                st.caption(f"Last run: {inert.escape(f.last_run_status)} · "
                           f"{_when(f.last_run_at)} · {inert.code(f.last_run_id[:8])}")
            else:
                st.caption("Not run yet")
        with act:
            b = st.columns(5)
            if b[0].button("Open", key=f"flows_open_{f.name}", type="primary"):
                _go("pages/editor.py", f.name)
            if b[1].button("Run", key=f"flows_run_{f.name}"):
                _go("pages/run.py", f.name)
            b[2].download_button("Export", data=library.export_bytes(store, f.name),
                                 file_name=f"{f.name}.json", mime="application/json",
                                 key=f"flows_export_{f.name}")
            if b[3].button("Versions", key=f"flows_versions_{f.name}"):
                st.session_state["flows_selected"] = f.name
            if b[4].button("Delete", key=f"flows_delete_{f.name}"):
                st.session_state["flows_confirm_delete"] = confirm = f.name
            package, file_or_problem = _lg_package(store.url, f.name, f.version)
            if package is None:
                st.button(_LG_EXPORT, key=f"flows_export_lg_{f.name}", disabled=True,
                          help=f"Fix the flow first: {inert.escape(file_or_problem)}")
            else:
                st.download_button(_LG_EXPORT, data=package, file_name=file_or_problem,
                                   mime="application/zip", key=f"flows_export_lg_{f.name}",
                                   help="graph.py + langgraph.json: `langgraph dev` serves it")
        if confirm == f.name:
            st.warning(f"Delete '{inert.escape(f.name)}' and all its versions? Its runs stay in "
                       "the history.")
            yes, no = st.columns([1, 6])
            if yes.button("Yes, delete", key=f"flows_delete_yes_{f.name}", type="primary"):
                library.delete(store, ws.data_dir, f.name)
                st.session_state["flows_confirm_delete"] = None
                if st.session_state.get("flows_selected") == f.name:
                    st.session_state["flows_selected"] = None
                flash("flows_notice", f"Deleted '{f.name}'.")
                st.rerun()
            if no.button("Cancel", key=f"flows_delete_no_{f.name}"):
                st.session_state["flows_confirm_delete"] = None
                st.rerun()

selected = st.session_state.get("flows_selected")
if selected and store.flow_exists(selected):
    with versions_box, st.expander(f"Versions of {inert.escape(selected)}", expanded=True,
                                   icon=":material/history:"):
        versions = store.versions(selected)
        st.dataframe([{"version": v.version, "saved": _when(v.created_at), "message": v.message,
                       "nodes": len(v.spec.nodes), "edges": len(v.spec.edges)} for v in versions],
                     hide_index=True, width="stretch")
        numbers = [v.version for v in versions]
        by_number = {v.version: v.spec for v in versions}
        a_col, b_col, r_col = st.columns(3)
        old = a_col.selectbox("From version", numbers, index=min(1, len(numbers) - 1),
                              key=f"flows_diff_a_{selected}")
        new = b_col.selectbox("To version", numbers, index=0, key=f"flows_diff_b_{selected}")
        with r_col:
            back = st.selectbox("Restore version", numbers, index=min(1, len(numbers) - 1),
                                key=f"flows_restore_{selected}")
            if st.button(f"Restore version {back} as the newest",
                         key=f"flows_restore_go_{selected}"):
                try:
                    v = library.restore(store, selected, back)
                except FlowkitError as err:
                    st.error(inert.escape(err))
                else:
                    flash("flows_notice", f"Restored version {back} of '{selected}' "
                                          f"as version {v}.")
                    st.rerun()
        changes = diffs.structural(by_number[old], by_number[new])
        if old == new:
            st.caption("Pick two different versions to see what changed.")
        elif not changes:
            st.caption("No change except canvas positions.")
        else:
            st.markdown("\n".join(f"- {inert.code(c)}" for c in changes))
            with st.expander("Unified diff of the JSON"):
                st.code(diffs.unified(by_number[old], by_number[new], f"v{old}", f"v{new}"),
                        language="diff")
