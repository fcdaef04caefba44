"""Session state for pages, one way: every key declared here once, owned by one page; flash
notices; select boxes bound to the address; the named hand-over of a flow to the Run page.

    FlowsKeys.SELECTED.get()                # a typed value (None when unset)
    FlowsKeys.SELECTED.set("my_flow")
    st.text_input("Name", key=FlowsKeys.NEW_NAME)           # a Key is the key's text
    st.button("Open", key=FlowsKeys.OPEN.item(name))        # one widget per item: "flows_open_<name>"
    flash(KbKeys.NOTICE, "Created 'x'.")    # before st.rerun(); shown once by
    show_flash(KbKeys.NOTICE)               # ... the next run of the page
    pick = query_select("Run", ids, key="replay_pick", param="run", clear=("step",))
    hand_over_flow("my_flow")               # open the Run page on a flow; it calls take_flow()

Each page's keys sit in one class below (`<Page>Keys`), every name starting with the page's
prefix; tests/app/test_state.py checks that the names are unique and that the pages converted to
this idiom write no raw key.

`query_select` keeps a select box and a query parameter in step: a parameter that changed since
the page last saw it (a link, a refresh, another page's switch_page) picks the option; a pick in
the box writes the parameter. So a shared address opens the same thing, and the user's own pick
is never overwritten by an older address.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping, Sequence
from typing import Any, Generic, Literal, NoReturn, TypeVar, cast

import streamlit as st

from studio.common import inert

T = TypeVar("T", bound=Hashable)
V = TypeVar("V")

FlashKind = Literal["success", "info", "warning", "error"]


def _state(state: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
    return cast(MutableMapping[str, Any], st.session_state) if state is None else state


class Key(str, Generic[V]):
    """A session-state key declared once (in this module, by the page that owns it).

    It is the key's text, so it goes wherever Streamlit takes a key (`key=`); its methods read
    and write the value it holds with its type."""

    def get(self, default: V | None = None,
            state: MutableMapping[str, Any] | None = None) -> V | None:
        """The value under this key, or `default`."""
        return cast("V | None", _state(state).get(str(self), default))

    def set(self, value: V, state: MutableMapping[str, Any] | None = None) -> None:
        """Keep `value` under this key."""
        _state(state)[str(self)] = value

    def pop(self, state: MutableMapping[str, Any] | None = None) -> V | None:
        """The value under this key (None when unset), removed."""
        return cast("V | None", _state(state).pop(str(self), None))

    def held(self, state: MutableMapping[str, Any] | None = None) -> bool:
        """Whether the session holds a value under this key."""
        return str(self) in _state(state)

    def item(self, *parts: object) -> str:
        """The key of one widget among many of this kind: `<key>_<part>_<part>...`."""
        return "_".join([str(self), *(str(p) for p in parts)])


Notice = tuple[str, str]   # (kind, text) kept by `flash`


class FlowsKeys:
    """The Flows page's keys (pages/flows.py, studio/flows)."""

    NOTICE: Key[Notice] = Key("flows_notice")
    SELECTED: Key[str] = Key("flows_selected")              # the flow whose versions are open
    CONFIRM_DELETE: Key[str] = Key("flows_confirm_delete")  # the flow asked about
    NEW_FORM: Key[None] = Key("flows_new")
    NEW_NAME: Key[str] = Key("flows_new_name")
    NEW_TEMPLATE: Key[str] = Key("flows_new_template")
    IMPORT_FILE: Key[Any] = Key("flows_import_file")
    IMPORT_NAME: Key[str] = Key("flows_import_name")
    IMPORT_GO: Key[bool] = Key("flows_import_go")
    # one per saved flow: .item(name)
    OPEN: Key[bool] = Key("flows_open")
    RUN: Key[bool] = Key("flows_run")
    EXPORT: Key[bool] = Key("flows_export")
    EXPORT_LG: Key[bool] = Key("flows_export_lg")
    VERSIONS: Key[bool] = Key("flows_versions")
    DELETE: Key[bool] = Key("flows_delete")
    DELETE_YES: Key[bool] = Key("flows_delete_yes")
    DELETE_NO: Key[bool] = Key("flows_delete_no")
    DIFF_A: Key[int] = Key("flows_diff_a")
    DIFF_B: Key[int] = Key("flows_diff_b")
    RESTORE: Key[int] = Key("flows_restore")
    RESTORE_GO: Key[bool] = Key("flows_restore_go")


class KbKeys:
    """The Knowledge bases page's keys (pages/knowledge.py, studio/knowledge)."""

    NOTICE: Key[Notice] = Key("kb_notice")
    PICK: Key[str] = Key("kb_pick")                         # the knowledge base shown (?kb=)
    CREATE_FORM: Key[None] = Key("kb_create")
    NEW_NAME: Key[str] = Key("kb_new_name")
    NEW_DESC: Key[str] = Key("kb_new_desc")
    INGEST_TARGET: Key[str] = Key("kb_ingest_target")
    FILES: Key[Any] = Key("kb_files")
    CHUNKER: Key[str] = Key("kb_chunker")
    PARAMS: Key[str] = Key("kb_params")                     # .item(chunker)
    INGEST_GO: Key[bool] = Key("kb_ingest_go")
    SEARCH_Q: Key[str] = Key("kb_search_q")
    SEARCH_K: Key[int] = Key("kb_search_k")
    CHUNKS_PAGE: Key[int] = Key("kb_chunks_page")           # .item(kb)
    GRAPH_FOCUS: Key[str] = Key("kb_graph_focus")           # .item(kb)
    GRAPH_N: Key[int] = Key("kb_graph_n")                   # .item(kb)
    GRAPH: Key[Any] = Key("kb_graph")                       # .item(kb)
    DB_FILE: Key[Any] = Key("kb_db_file")                   # .item(kb)
    DB_TABLES: Key[list[str]] = Key("kb_db_tables")         # .item(kb, upload)
    DB_ATTACH: Key[bool] = Key("kb_db_attach")


class CompareKeys:
    """The Compare page's keys (pages/compare.py, studio/compare)."""

    FLOWS: Key[list[str]] = Key("compare_flows")
    DATASET: Key[str] = Key("compare_dataset")
    KB: Key[str] = Key("compare_kb")
    KB_FOR: Key[str] = Key("compare_kb_for")                # the question set KB was picked for
    NEW_KB: Key[str] = Key("compare_new_kb")
    LIMIT: Key[int] = Key("compare_limit")
    START: Key[bool] = Key("compare_start")
    OPEN: Key[str] = Key("compare_open")
    WAS_ACTIVE: Key[dict[str, bool]] = Key("compare_was_active")
    STOP: Key[bool] = Key("compare_stop")
    RESUME: Key[bool] = Key("compare_resume")
    METRICS_DF: Key[Any] = Key("compare_metrics_df")
    DELTA_DF: Key[Any] = Key("compare_delta_df")
    DOWNLOAD: Key[bool] = Key("compare_dl")                 # .item(extension)
    DISAGREE_DF: Key[Any] = Key("compare_disagree_df")
    QUESTION: Key[str] = Key("compare_q")                   # the question inspected (?q=)
    VARIANT_FROM: Key[str] = Key("compare_variant_from")
    VARIANT_NODE: Key[str] = Key("compare_variant_node")
    VARIANT_PARAMS: Key[dict[str, dict[str, Any]]] = Key("compare_variant_params")
    VARIANT_PARAM: Key[Any] = Key("compare_variant_p")      # .item(eval, column, node) + "_" + field
    VARIANT_OTHERS: Key[list[str]] = Key("compare_variant_others")
    VARIANT_ADD: Key[bool] = Key("compare_variant_add")
    PART_PARENT: Key[str] = Key("compare_part_parent")
    PART_VARIANT: Key[str] = Key("compare_part_variant")
    PART_GROUPS: Key[Any] = Key("compare_part_groups")
    PART_DF: Key[Any] = Key("compare_part_df")


class RunKeys:
    """The Run page's keys that other pages meet (the rest: pages/run.py, studio/run)."""

    #: The flow handed to the Run page (written by `hand_over_flow`, read by `take_flow` only).
    #: Its text stays "run_flow", which pages/run.py read before the hand-over had a name.
    FLOW_HANDOVER: Key[str] = Key("run_flow")


class GateKeys:
    """The access gate's key (studio/common/gate_panel.py)."""

    PASSED: Key[bool] = Key("gate_passed")
    TOKEN: Key[str] = Key("gate_token")


#: Every page's key class, for the checks in tests/app/test_state.py.
KEY_CLASSES: tuple[type, ...] = (FlowsKeys, KbKeys, CompareKeys, RunKeys, GateKeys)

RUN_PAGE = "pages/run.py"


def hand_over_flow(flow: str, state: MutableMapping[str, Any] | None = None) -> NoReturn:
    """Open the Run page on the flow `flow` (a saved flow's name or a template's): the page
    preselects it even when its address already named it. Nothing after this call runs."""
    RunKeys.FLOW_HANDOVER.set(flow, state)
    st.switch_page(RUN_PAGE, query_params={"flow": flow})


def take_flow(state: MutableMapping[str, Any] | None = None) -> str | None:
    """The flow another page handed to the Run page (hand_over_flow), once; None when none."""
    return RunKeys.FLOW_HANDOVER.pop(state)


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
