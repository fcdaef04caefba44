"""Session state for pages, one way: page-prefixed keys, flash notices, select boxes bound to the
address.

    keys = Keys("kb")                       # keys("pick") == "kb_pick"
    flash(keys("notice"), "Created 'x'.")   # before st.rerun(); shown once by
    show_flash(keys("notice"))              # ... the next run of the page
    pick = query_select("Run", ids, key="replay_pick", param="run", clear=("step",))

`query_select` keeps a select box and a query parameter in step: a parameter that changed since
the page last saw it (a link, a refresh, another page's switch_page) picks the option; a pick in
the box writes the parameter. So a shared address opens the same thing, and the user's own pick
is never overwritten by an older address.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping, Sequence
from typing import Any, Literal, TypeVar, cast

import streamlit as st

from studio.common import inert

T = TypeVar("T", bound=Hashable)

FlashKind = Literal["success", "info", "warning", "error"]


def _state(state: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
    return cast(MutableMapping[str, Any], st.session_state) if state is None else state


def flash(key: str, text: str, kind: FlashKind = "success",
          state: MutableMapping[str, Any] | None = None) -> None:
    """Keep a notice for the page's next run (call before st.rerun())."""
    _state(state)[key] = (kind, text)


def show_flash(key: str, state: MutableMapping[str, Any] | None = None) -> str | None:
    """Show the notice kept under `key` once (as literal text) and forget it; its text or None."""
    value = _state(state).pop(key, None)
    if not value:
        return None
    kind, text = value if isinstance(value, tuple) else ("success", str(value))
    getattr(st, kind)(inert.escape(text))
    return str(text)


def sync_from_query(options: Sequence[T], *, key: str, param: str,
                    default: T | Callable[[], T] | None = None,
                    from_param: Callable[[str], T | None] | None = None,
                    state: MutableMapping[str, Any] | None = None,
                    params: MutableMapping[str, str] | None = None) -> T | None:
    """Set the select box state `key` from the query parameter `param` before the box is drawn.

    A parameter value the page has not seen yet selects its option (`from_param` maps the text to
    an option; by default the text itself). With no usable parameter and no valid pick, `default`
    (a value or a function) or the first option is selected. Calling it twice in one run is the
    same as once (a page may need the pick before it draws the box)."""
    state, params = _state(state), (st.query_params if params is None else params)
    seen_key = f"{key}__param"
    raw = params.get(param)
    if raw is not None and raw != state.get(seen_key):
        wanted = from_param(raw) if from_param else raw
        if wanted is not None and wanted in options:
            state[key] = wanted
    state[seen_key] = raw
    if state.get(key) not in options:
        if not options:
            state.pop(key, None)
        else:
            fallback = default() if callable(default) else default
            state[key] = fallback if fallback in options else options[0]
    return state.get(key)


def query_select(label: str, options: Sequence[T], *, key: str, param: str,
                 default: T | Callable[[], T] | None = None,
                 from_param: Callable[[str], T | None] | None = None,
                 to_param: Callable[[T], str | None] = str, clear: Sequence[str] = (),
                 state: MutableMapping[str, Any] | None = None,
                 params: MutableMapping[str, str] | None = None, **widget: Any) -> T | None:
    """A select box (st.selectbox with `key`) bound to the query parameter `param`.

    The pick follows the parameter as `sync_from_query` says; it is written back with `to_param`
    (None: leave the parameter as it is), and the parameters in `clear` are removed when it
    changes. Other keyword arguments go to st.selectbox."""
    state, params = _state(state), (st.query_params if params is None else params)
    sync_from_query(options, key=key, param=param, default=default, from_param=from_param,
                    state=state, params=params)
    value: T | None = st.selectbox(label, options, key=key, **widget)
    text = to_param(value) if value is not None else None
    if text is not None and params.get(param) != text:
        params[param] = text
        for name in clear:
            if name in params:
                del params[name]
    state[f"{key}__param"] = params.get(param)
    return value


KEPT = "__kept"   # suffix of the session key that keeps a widget's value while it is not drawn


def kept(key: str, default: T, state: MutableMapping[str, Any] | None = None) -> T:
    """The value to draw the widget `key` with: the one the user last gave it, else `default`.

    Streamlit forgets a widget's value in any run that does not draw it (a tab not open, a
    panel closed), so a value typed and then left behind by switching tabs would be lost. Pass
    this as the widget's `value` and `keep` as its `on_change`, with args=(key,)."""
    s = _state(state)
    return cast(T, s.get(key + KEPT, default))


def keep(key: str, state: MutableMapping[str, Any] | None = None) -> None:
    """on_change callback: remember the widget's current value beside it (see `kept`)."""
    s = _state(state)
    if key in s:
        s[key + KEPT] = s[key]


def kept_index(key: str, options: Sequence[Any], state: MutableMapping[str, Any] | None = None) -> int:
    """The index to draw a select box or radio `key` with: its kept value's, else 0."""
    value = _state(state).get(key + KEPT)
    return list(options).index(value) if value in options else 0
