"""The studio's one Workspace per process (st.cache_resource), with a hook for tests.

Pages call `get_workspace()`; they read from it and call its methods, but never change what it
holds in a way another session would see. After the settings change, `reset_workspace()` drops
the cached one so the next page builds a fresh Workspace from the saved settings.

A Workspace built here starts loading its model at once, in a background thread
(`Resources.preload`): no page waits for it, the sidebar shows how it stands, and the first run
waits only for what is left of that same load.

Tests inject their own Workspace (for instance one whose resources use a FakeLLM) with
`use_workspace(ws)`; `use_workspace(None)` removes it again.
"""
from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

from service.settings import default_data_dir
from service.workspace import Workspace

_override_lock = threading.Lock()
_override: list[Workspace] = []   # the test hook: at most one injected Workspace


def use_workspace(ws: Workspace | None) -> None:
    """Make every page use `ws` instead of the cached Workspace (tests); None removes it."""
    with _override_lock:
        _override.clear()
        if ws is not None:
            _override.append(ws)


def _release(ws: Workspace) -> None:
    """Streamlit dropped a cached Workspace (a cache clear, reset_workspace, a code reload that
    changed the function): stop the model worker it started, so none is left running."""
    ws.close()


@st.cache_resource(show_spinner="Opening the workspace...", on_release=_release)
def _cached_workspace(data_dir: str) -> Workspace:
    ws = Workspace(data_dir)
    ws.resources.preload()     # background: the model is (nearly) ready by the first run
    return ws


def data_dir() -> Path:
    """The data directory the studio works in ($FLOWKIT_HOME, else ~/.flowkit)."""
    with _override_lock:
        if _override:
            return _override[0].data_dir
    return default_data_dir()


def get_workspace() -> Workspace:
    """The process-wide Workspace for the data directory (built once, shared by sessions)."""
    with _override_lock:
        if _override:
            return _override[0]
    return _cached_workspace(str(default_data_dir().resolve()))


def reset_workspace() -> None:
    """Forget the cached Workspace (after a settings change); the next call builds a new one.

    The dropped Workspace stops its model worker (at once, or when the call in flight returns);
    work still running on it fails at its next model call instead of starting another worker.
    """
    _cached_workspace.clear()
