"""The sidebar every page shares: data directory, model, sample knowledge base."""
from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from flowkit.errors import FlowkitError
from service import runs
from service.device import plan_line
from service.knowledge import SAMPLE_KB
from service.settings import DEFAULT_MODEL, PACKAGED
from service.workspace import Workspace
from studio.common import inert


def sample_kb_status(data_dir: Path) -> str:
    """'ready (N documents)' or 'not ingested', read from the knowledge base's meta file only."""
    meta_path = data_dir / "kb" / SAMPLE_KB / "meta.json"
    if not meta_path.is_file():
        return "not ingested yet (Knowledge bases page, or `flowkit setup`)"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, json.JSONDecodeError):
        return "unreadable meta.json"
    docs = meta.get("documents")
    return f"ready ({docs} documents)" if docs else "ready"


def model_name(ws: Workspace) -> str:
    """The model the settings choose, by name (loads nothing)."""
    s = ws.resources.settings.llm
    if s.backend == "openai":
        return f"{s.model_name or '?'} via {s.base_url or '?'}"
    if not s.model_path:
        return f"{PACKAGED[DEFAULT_MODEL].name} (default)"
    if s.model_path in PACKAGED:
        return PACKAGED[s.model_path].name
    return Path(s.model_path).name


def model_line(ws: Workspace) -> str:
    """The model in one line, without loading it."""
    name = model_name(ws)
    if ws.resources.settings.llm.backend == "openai":
        return name
    try:
        llm = ws.resources.llm   # the wrapper only: the model itself loads on the first call
    except FlowkitError as err:
        return f"{name} · problem: {err}"
    loaded = bool(getattr(llm, "loaded", True))
    return f"{name} · {'loaded' if loaded else 'not loaded yet'}"


def model_state_line(ws: Workspace) -> str:
    """The sidebar's model line: 'Model: loading…', 'Model: ready (<name>)' or 'Model: failed:
    <why>' while the studio's background load (Resources.preload) is under way or over; where none
    was started (a workspace a test injected), the model and whether it is loaded (model_line).
    Reads the state only: it changes on the next rerun."""
    state = ws.resources.model_state()
    if state.phase == "loading":
        return "Model: loading…"
    if state.phase == "failed":
        return f"Model: failed: {state.error}"
    if state.phase == "ready" and runs.model_loaded(ws):
        return f"Model: ready ({model_name(ws)})"
    return f"Model: {model_line(ws)}"      # not preloaded, or its worker stopped since


#: How often the sidebar looks at a model load under way (seconds).
LOAD_POLL_S = 1.0


def model_state_panel(ws: Workspace) -> None:
    """The model line, redrawn by itself every LOAD_POLL_S while the model loads: an idle page
    said 'Model: loading…' until its next rerun, long after the model was in. When the load
    ends the page reruns once, which draws the line without the timer."""
    loading = ws.resources.model_state().phase == "loading"

    @st.fragment(run_every=LOAD_POLL_S if loading else None)
    def line() -> None:
        now = model_state_line(ws)
        st.markdown(inert.escape(now), help="The model loads in the background when the studio "
                    "starts and after Settings change it; a run started meanwhile waits for "
                    "that load.")
        if loading and ws.resources.model_state().phase != "loading":
            st.rerun()          # the timer's last round: the whole page, drawn without it

    line()


def render(ws: Workspace) -> None:
    with st.sidebar:
        st.caption("flowkit studio")
        st.markdown(f"**Data** {inert.code(ws.data_dir)}")
        model_state_panel(ws)
        st.caption(inert.escape(plan_line(ws)), help="What the model loads with here: the "
                   "device, the GPU layers offloaded, the prompt batch and prefix reuse "
                   "(Settings: empty fields are decided by the device)")
        st.markdown(f"**Sample KB** {sample_kb_status(ws.data_dir)}")
