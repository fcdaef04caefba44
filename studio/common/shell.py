"""The studio shell's one Streamlit work-around: a page opened by its URL as a fresh server's first
session is routed through app.py.

app.py lists the files in pages/ with st.navigation. Streamlit ignores a pages/ folder only once
some session has called st.navigation ("As soon as any session of your app executes the
st.navigation command, your app will ignore the pages/ directory", st.navigation's reference).
Before that, in the first session of a fresh server, a direct URL such as /editor runs
pages/editor.py on its own: no page config, no access gate, no sidebar. Streamlit offers no
public switch for this (app.py does not run in that session, so nothing in app.py can help).
So every page starts with `route_through_app()`: in that one case it turns the pages/ folder mode
off (the same flag st.navigation sets) and reruns; the rerun runs app.py, which routes to the same
page with its query parameters. Everywhere else it does nothing. tests/app/test_shell.py checks
both the switch and that every page calls it before anything else.

The same mode also lists pages/ in the sidebar by file name ("app", "run", ...) for a moment in
that first session, until app.py's st.navigation replaces them with the pages' titles. The
studio's server (studio/serve.py, what `make run` and the Docker image start) runs code before any
session, so it calls `leave_pages_folder_mode()` there: its sessions never enter the mode. A plain
`streamlit run app.py` has no such place, and keeps the work-around above.
"""
from __future__ import annotations

import streamlit as st
from streamlit import config
from streamlit.runtime.pages_manager import PagesManager


def in_pages_folder_mode() -> bool:
    """Whether Streamlit would run a page file without app.py (no session ran st.navigation yet).

    Always False under AppTest, which starts each of its runs in that mode and would lose the
    widget values of a rerun."""
    if config.get_option("global.appTest"):
        return False
    return bool(PagesManager.uses_pages_directory)


def leave_pages_folder_mode() -> None:
    """Have Streamlit run app.py in every session from now on, never a pages/ file on its own nor
    the pages/ folder's navigation by file name (what st.navigation does once some session ran it)."""
    PagesManager.uses_pages_directory = False


def route_through_app() -> None:
    """Rerun through app.py when this page file was run on its own (see the module docstring)."""
    if in_pages_folder_mode():
        leave_pages_folder_mode()
        st.rerun()
