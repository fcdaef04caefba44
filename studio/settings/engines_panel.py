"""Settings: the engines in use (database, vector engine, LLM backend, threads actually used)."""
from __future__ import annotations

import streamlit as st

from service.settings import EngineInfo


def rows(info: EngineInfo) -> dict[str, str]:
    """What the table shows, label -> value."""
    out = {"Database": f"{info.database_kind}: {info.database}",
           "Vector engine": f"{info.vector_kind}: {info.vector}",
           "LLM backend": info.llm_backend,
           "Model": info.model}
    if info.threads is not None:
        out["Threads used"] = f"{info.threads} ({info.threads_from})"
    if info.gpu_layers is not None:
        out["GPU layers"] = {-1: "all", 0: "none (CPU only)"}.get(info.gpu_layers,
                                                                str(info.gpu_layers))
    return out


def draw(info: EngineInfo) -> None:
    """The 'Engines in use' table."""
    st.subheader("Engines in use")
    table = rows(info)
    st.table({"": list(table), "value": list(table.values())})
    st.caption("The database is set by `database_url` in settings.json (or the workspace's URL); "
               "empty: the SQLite file in the data directory.")
