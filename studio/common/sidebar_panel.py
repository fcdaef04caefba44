"""The sidebar every page shares: data directory, model, sample knowledge base."""
from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from flowkit.errors import FlowkitError
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


def model_line(ws: Workspace) -> str:
    """The model in one line, without loading it."""
    s = ws.resources.settings.llm
    if s.backend == "openai":
        return f"{s.model_name or '?'} via {s.base_url or '?'}"
    if not s.model_path:
        name = f"{PACKAGED[DEFAULT_MODEL].name} (default)"
    elif s.model_path in PACKAGED:
        name = PACKAGED[s.model_path].name
    else:
        name = Path(s.model_path).name
    try:
        llm = ws.resources.llm   # the wrapper only: the model itself loads on the first call
    except FlowkitError as err:
        return f"{name} · problem: {err}"
    loaded = bool(getattr(llm, "loaded", True))
    return f"{name} · {'loaded' if loaded else 'not loaded yet'}"


def render(ws: Workspace) -> None:
    with st.sidebar:
        st.caption("flowkit studio")
        st.markdown(f"**Data** {inert.code(ws.data_dir)}")
        st.markdown(f"**Model** {inert.escape(model_line(ws))}")
        st.markdown(f"**Sample KB** {sample_kb_status(ws.data_dir)}")
