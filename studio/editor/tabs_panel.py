"""Which browser tab runs this script, and whether another tab is still open.

Streamlit gives every browser tab its own session; a reload starts a new one and ends the old.
Outside a Streamlit server (tests, bare mode) there is no tab: `current_tab()` is None and no tab
counts as open.
"""
from __future__ import annotations


def current_tab() -> str | None:
    """The Streamlit session id of the tab running this script, None outside a server."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:
        return None
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def tab_open(session_id: str) -> bool:
    """Whether the tab with this Streamlit session id is still connected."""
    try:
        from streamlit import runtime
        if not runtime.exists():
            return False
        return bool(runtime.get_instance().is_active_session(session_id))
    except Exception:   # noqa: BLE001 - a runtime without this API: treat the tab as closed
        return False
