"""Whether the user did something that waits for this script run to end.

Streamlit holds a click inside a running fragment until the fragment's run ends (only a fragment's
own timer may wait like that), and a click outside it until the next Streamlit call. A fragment
that waits a long time inside one call (the Run page's answer stream, waiting for the model's
first words) asks `user_waiting` between its checks and ends the wait when it says so, so a click
on Cancel or on another page is served at once.

This reads Streamlit's pending request (the script runner's queue, not a public API); with a
Streamlit that keeps it elsewhere the answer is None: unknown, and the caller waits briefly instead.
"""
from __future__ import annotations

from typing import Any

try:   # not a public API: another Streamlit may keep it elsewhere (then: unknown, see below)
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequestType
except ImportError:   # pragma: no cover - depends on the Streamlit installed
    RerunData = ScriptRequestType = None  # type: ignore[assignment,misc]

#: the kinds of widget value that a click sets for one run (a button, a chat input)
TRIGGERS = frozenset({"trigger_value", "string_trigger_value", "chat_input_value",
                      "json_trigger_value"})


def _clicked(state: Any) -> bool:
    kind = state.WhichOneof("value")
    if kind not in TRIGGERS:
        return False
    value = getattr(state, kind)
    return bool(value.ListFields()) if hasattr(value, "ListFields") else bool(value)


def waits_for_user(data: RerunData) -> bool:
    """Whether a pending rerun is the user's: the whole page (a widget outside any fragment, a
    page link), any rerun not sent by a fragment's timer, or a timer's that carries a click
    (Streamlit merges a click into the timer's request that follows it)."""
    if not data.fragment_id and not data.fragment_id_queue:
        return True
    if not data.is_auto_rerun:
        return True
    states = data.widget_states
    return states is not None and any(_clicked(w) for w in states.widgets)


def user_waiting() -> bool | None:
    """True when the user did something this run keeps waiting (see `waits_for_user`), or the
    session is being stopped; False when only a timer waits or nothing; None when unknown: no
    script run, another Streamlit, or no real server (AppTest's stand-in: nothing can arrive
    while its run goes on, so waiting for a click would only hold the run up)."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    if RerunData is None or not runtime.exists() or type(runtime.get_instance()) is not runtime.Runtime:
        return None
    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    state = getattr(requests, "_state", None)
    data = getattr(requests, "_rerun_data", None)
    if state is None or not isinstance(data, RerunData):
        return None
    if state == ScriptRequestType.STOP:
        return True
    return state == ScriptRequestType.RERUN and waits_for_user(data)
