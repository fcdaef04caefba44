"""The Flows page's two boxes at the top: a new flow from a template, and a flow file imported."""
from __future__ import annotations

import streamlit as st

from flowkit import templates
from flowkit.errors import FlowkitError
from service import flows as library
from service.uploads import FLOW_UPLOAD_MB
from service.workspace import Workspace
from studio.common import inert
from studio.common.state import FlowsKeys as K
from studio.common.state import flash, hand_over_flow
from studio.flows.import_hints import for_the_studio

EDITOR_PAGE = "pages/editor.py"


def open_in(page: str, flow: str) -> None:
    """Go to the Editor (or, through the named hand-over, the Run page) on `flow`."""
    if page == "pages/run.py":
        hand_over_flow(flow)
    st.switch_page(page, query_params={"flow": flow})   # the target page's query params


def new_flow_form(ws: Workspace) -> None:
    """Name + template; 'Create and open' saves the flow and opens it in the Editor."""
    with st.form(K.NEW_FORM, clear_on_submit=False, border=True):
        st.subheader("New flow")
        name = st.text_input("Name", key=K.NEW_NAME, placeholder="my_flow")
        choices = sorted(templates.names(), key=lambda n: n != "naive_rag") + [library.BLANK]
        template = st.selectbox("Start from", choices, key=K.NEW_TEMPLATE,
                                format_func=library.template_title,
                                help="A ready-made template, or an empty canvas")
        if st.form_submit_button("Create and open", type="primary"):
            try:
                library.create_flow(ws, name, template)
            except FlowkitError as err:
                st.error(inert.escape(err))
            else:
                open_in(EDITOR_PAGE, name.strip())


def import_box(ws: Workspace) -> None:
    """A flow JSON file: its problems shown, saved under a name of the user's choice."""
    with st.container(border=True):
        st.subheader("Import")
        upload = st.file_uploader("A flow JSON file", type=["json"], key=K.IMPORT_FILE,
                                  max_upload_size=FLOW_UPLOAD_MB)
        if upload is None:
            return
        spec, found = library.parse_import(upload.getvalue())
        problems = [for_the_studio(p) for p in found]
        if spec is None:
            for p in problems:
                st.error(inert.escape(p))
            return
        if problems:
            st.warning(f"The flow has {len(problems)} problem(s); you can fix them in the editor.")
            with st.expander("Problems"):
                for p in problems:
                    st.markdown(f"- {inert.escape(p)}")
        new_name = st.text_input("Save as", value=spec.name, key=K.IMPORT_NAME)
        if st.button("Import", key=K.IMPORT_GO):
            try:
                library.import_flow(ws, spec, new_name)
            except FlowkitError as err:
                st.error(inert.escape(err))
            else:
                flash(K.NOTICE, f"Imported '{new_name.strip()}'.")
                st.rerun()
