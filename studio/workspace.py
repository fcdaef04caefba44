"""The studio's one Workspace per process (st.cache_resource), with a hook for tests.

Pages call `get_workspace()`; they read from it and call its methods, but never change what it
holds in a way another session would see. After the settings change, `reset_workspace()` drops
the cached one so the next page builds a fresh Workspace from the saved settings.

Tests inject their own Workspace (for instance one whose resources use a FakeLLM) with
`use_workspace(ws)`; `use_workspace(None)` removes it again.
"""
from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

from flowkit.runtime.resources import default_data_dir
from service.workspace import Workspace

_override_lock = threading.Lock()
_override: list[Workspace] = []   # the test hook: at most one injected Workspace


def use_workspace(ws: Workspace | None) -> None:
    """Make every page use `ws` instead of the cached Workspace (tests); None removes it."""
    with _override_lock:
        _override.clear()
        if ws is not None:
            _override.append(ws)


@st.cache_resource(show_spinner="Opening the workspace...")
def _cached_workspace(data_dir: str) -> Workspace:
    return Workspace(data_dir)


def data_dir() -> Path:
    """The data directory the studio works in ($FLOWKIT_HOME, else ~/.flowkit)."""
    with _override_lock:
        if _override:
            return _override[0].data_dir
    return default_data_dir()


def leave_pages_directory_mode() -> None:
    """Work around a Streamlit quirk: with a pages/ folder beside app.py, the first session of a
    fresh server that opens a page's URL directly (/editor) runs that page file alone, without
    app.py's navigation, page config and sidebar, until some run calls st.navigation. A page that
    finds itself run that way switches the old mode off and reruns: the rerun runs app.py, which
    routes to the same page. (When app.py runs first, st.navigation switches it off itself.)"""
    from unittest.mock import NonCallableMock

    from streamlit.runtime import Runtime
    from streamlit.runtime.pages_manager import PagesManager
    if Runtime.exists() and isinstance(Runtime.instance(), NonCallableMock):
        return   # AppTest (mock Runtime) starts every run in that mode; a rerun would drop clicks
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def get_workspace() -> Workspace:
    """The process-wide Workspace for the data directory (built once, shared by sessions)."""
    leave_pages_directory_mode()
    with _override_lock:
        if _override:
            return _override[0]
    return _cached_workspace(str(default_data_dir().resolve()))


def reset_workspace() -> None:
    """Forget the cached Workspace (after a settings change); the next call builds a new one.

    Work already running keeps the Workspace it started with until it ends.
    """
    _cached_workspace.clear()
