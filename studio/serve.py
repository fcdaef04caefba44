"""The studio's server: `streamlit run studio/serve.py [options]` serves app.py behind the guard.

What `make run` and the Docker image start. Streamlit finds the `st.App` below and serves app.py
through it; with FLOWKIT_STUDIO_TOKEN set, studio/guard.py's login form and cookie check stand in
front of every route and the websocket (nothing else answers without the token). Without a token
it serves app.py as `streamlit run app.py` does, except that no session runs the pages/ folder on
its own (studio/common/shell.py: its sidebar shows the pages' titles from the first paint).

    streamlit run studio/serve.py --server.address 0.0.0.0 --server.port 8501
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from studio.common.gate_panel import expected_token
from studio.common.guard import Guard, health_routes
from studio.common.shell import leave_pages_folder_mode

APP_SCRIPT = Path(__file__).resolve().parents[1] / "app.py"

# Before the first session: it would otherwise list pages/ by file name in the sidebar until
# app.py's navigation ran (studio/common/shell.py)
leave_pages_folder_mode()

_token = expected_token()
_guard = Guard(_token) if _token is not None else None

app = st.App(APP_SCRIPT,
             routes=_guard.routes() if _guard else health_routes(),
             middleware=[_guard.middleware()] if _guard else None)
