"""Session state for pages, one way: every key declared here once, owned by one page; flash
notices; select boxes bound to the address; the named hand-over of a flow to the Run page.

    FlowsKeys.SELECTED.get()                # a typed value (None when unset)
    FlowsKeys.SELECTED.set("my_flow")
    st.text_input("Name", key=FlowsKeys.NEW_NAME)           # a Key is the key's text
    st.button("Open", key=FlowsKeys.OPEN.item(name))        # one widget per item: "flows_open_<name>"
    flash(KbKeys.NOTICE, "Created 'x'.")    # before st.rerun(); shown once by
    show_flash(KbKeys.NOTICE)               # ... the next run of the page
    pick = query_select("Run", ids, key=ReplayKeys.PICK, param="run", clear=("step",))
    hand_over_flow("my_flow")               # open the Run page on a flow; it calls take_flow()

Each page's keys sit in one class below (`class RunKeys(Keys, prefix="run")`), declared once:
`QUESTION: Key[str]` is the key "run_question" (see `Keys`); tests/app/test_state.py checks that
the names are unique and start with their page's prefix, and that the pages converted to this
idiom write no raw key.

`query_select` keeps a select box and a query parameter in step: a parameter that changed since
the page last saw it (a link, a refresh, another page's switch_page) picks the option; a pick in
the box writes the parameter. So a shared address opens the same thing, and the user's own pick
is never overwritten by an older address.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping, Sequence
from typing import Any, ClassVar, Generic, Literal, NoReturn, TypeVar, cast

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


class Keys:
    """A page's key group, declared once: `class FlowsKeys(Keys, prefix="flows")`.

    Each `NAME: Key[T]` written without a value becomes `Key("<prefix>_<name>")` (the attribute's
    name in lower case); a key whose text differs gives it (`NEW_FORM: Key[None] = Key("flows_new")`).
    Keys marked `.item(...)` below stand for one widget per item."""

    prefix: ClassVar[str] = ""

    def __init_subclass__(cls, prefix: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.prefix = prefix
        for name in cls.__dict__.get("__annotations__", {}):
            if name.isupper() and name not in cls.__dict__:
                setattr(cls, name, Key(f"{prefix}_{name.lower()}"))


class FlowsKeys(Keys, prefix="flows"):
    """The Flows page's keys (pages/flows.py, studio/flows)."""

    NOTICE: Key[Notice]
    SELECTED: Key[str]                      # the flow whose versions are open
    CONFIRM_DELETE: Key[str]                # the flow asked about
    NEW_FORM: Key[None] = Key("flows_new")
    NEW_NAME: Key[str]
    NEW_TEMPLATE: Key[str]
    IMPORT_FILE: Key[Any]
    IMPORT_NAME: Key[str]
    IMPORT_GO: Key[bool]
    # one per saved flow: .item(name)
    OPEN: Key[bool]
    RUN: Key[bool]
    EXPORT: Key[bool]
    EXPORT_LG: Key[bool]
    VERSIONS: Key[bool]
    DELETE: Key[bool]
    DELETE_YES: Key[bool]
    DELETE_NO: Key[bool]
    DIFF_A: Key[int]
    DIFF_B: Key[int]
    RESTORE: Key[int]
    RESTORE_GO: Key[bool]


class KbKeys(Keys, prefix="kb"):
    """The Knowledge bases page's keys (pages/knowledge.py, studio/knowledge)."""

    NOTICE: Key[Notice]
    PICK: Key[str]                          # the knowledge base shown (?kb=)
    CREATE_FORM: Key[None] = Key("kb_create")
    NEW_NAME: Key[str]
    NEW_DESC: Key[str]
    INGEST_TARGET: Key[str]
    FILES: Key[Any]
    CHUNKER: Key[str]
    PARAMS: Key[str]                        # .item(chunker)
    INGEST_GO: Key[bool]
    FOLDER: Key[bool]                       # upload a folder instead of files
    PREVIEW_GO: Key[bool]
    PREVIEW: Key[tuple[tuple[str, ...], list[Any]]]   # (upload ids, DocumentPreview records)
    SEARCH_Q: Key[str]
    SEARCH_K: Key[int]
    CHUNKS_PAGE: Key[int]                   # .item(kb)
    GRAPH_FOCUS: Key[str]                   # .item(kb)
    GRAPH_N: Key[int]                       # .item(kb)
    GRAPH: Key[Any]                         # .item(kb)
    DB_FILE: Key[Any]                       # .item(kb)
    DB_TABLES: Key[list[str]]               # .item(kb, upload)
    DB_ATTACH: Key[bool]
    # "Generate questions from this knowledge base" (studio/knowledge/questions_panel.py)
    QGEN_N: Key[int]
    QGEN_KINDS: Key[list[str]]
    QGEN_SEED: Key[int]
    QGEN_NAME: Key[str]
    QGEN_NAME_FOR: Key[str]                 # the default the name box was last given
    QGEN_GO: Key[bool]
    QGEN_STOP: Key[bool]                    # .item(job)
    QGEN_TABLE: Key[Any]                    # .item(job): the review table's edits
    QGEN_ROWS: Key[list[dict[str, str]]]    # .item(job): the table's rows since the last Add
    QGEN_ADD_Q: Key[str]                    # .item(job): "Add a question of your own"
    QGEN_ADD_A: Key[str]                    # .item(job)
    QGEN_ADD: Key[bool]                     # .item(job)
    QGEN_ADD_ERROR: Key[str]                # .item(job): why the last Add added nothing
    QGEN_SAVE_NAME: Key[str]                # .item(job)
    QGEN_SAVE: Key[bool]                    # .item(job)
    QGEN_SAVED: Key[tuple[str, int]]        # .item(job): (dataset, questions) once saved


class CompareKeys(Keys, prefix="compare"):
    """The Compare page's keys (pages/compare.py, studio/compare)."""

    FLOWS: Key[list[str]]
    DATASET: Key[str]
    KB: Key[str]
    KB_FOR: Key[str]                        # the question set KB was picked for
    NEW_KB: Key[str]
    LIMIT: Key[int]
    CONCURRENCY: Key[int]                   # runs in flight (a model server in settings only)
    START: Key[bool]
    OPEN: Key[str]
    WAS_ACTIVE: Key[dict[str, bool]]
    STOP: Key[bool]
    RESUME: Key[bool]
    METRICS_DF: Key[Any]
    DELTA_DF: Key[Any]
    DOWNLOAD: Key[bool] = Key("compare_dl")                 # .item(extension)
    DISAGREE_DF: Key[Any]
    QUESTION: Key[str] = Key("compare_q")                   # the question inspected (?q=)
    VARIANT_FROM: Key[str]
    VARIANT_NODE: Key[str]
    VARIANT_PARAMS: Key[dict[str, dict[str, Any]]]
    VARIANT_PARAM: Key[Any] = Key("compare_variant_p")      # .item(eval, column, node) + "_" + field
    VARIANT_OTHERS: Key[list[str]]
    VARIANT_ADD: Key[bool]
    PART_PARENT: Key[str]
    PART_VARIANT: Key[str]
    PART_GROUPS: Key[Any]
    PART_DF: Key[Any]
    JUDGES: Key[list[str]]                  # the graders picked in the Judges section
    JUDGE_MODEL: Key[str]                   # 'default', a packaged id, or OTHER (a .gguf path)
    JUDGE_PATH: Key[str]
    CRITERIA: Key[str]                      # the criteria of your own, one per line
    NEXT_METRIC: Key[str]                   # "what to label next": the judge
    NEXT_FLOW: Key[str]                     # ... and the flow compared with the baseline
    NEXT_OPEN: Key[bool] = Key("compare_next_open")         # .item(eval, question): its Open
    PAIR_GRADE: Key[bool]                   # grade the baseline against each flow, pairwise
    PAIR_LABEL: Key[str] = Key("compare_pair_label")        # .item(eval, flow index, q)
    GRADE: Key[bool]
    GRADE_STOP: Key[bool]
    GRADE_WAS_ACTIVE: Key[dict[str, bool]]
    JUDGED_DF: Key[Any]
    LABEL: Key[str] = Key("compare_label")                  # .item(eval, flow index, q, metric)


class RunKeys(Keys, prefix="run"):
    """The Run page's keys (pages/run.py, studio/run)."""

    #: The flow handed to the Run page (written by `hand_over_flow`, read by `take_flow` only).
    #: Its text stays "run_flow", which pages/run.py read before the hand-over had a name.
    FLOW_HANDOVER: Key[str] = Key("run_flow")
    FLOW_CHOICE: Key[Any]                   # the flow picked (?flow=): a service.runs.FlowRef
    KB: Key[str]                            # (?kb=)
    QUESTION: Key[str]
    GO: Key[bool]
    REFUSED: Key[tuple[str, list[str]]]     # (what was asked, why it was not queued)
    #: the run this session just queued, until an address the browser sends holds it (?run=)
    SUBMITTED: Key[str]
    DATASET: Key[str]
    DATASET_Q: Key[int]                     # the question picked from the dataset
    GOLD: Key[dict[str, Any]]               # {"question", "answers"} of the picked question
    TEMPERATURE: Key[float]
    PARAM: Key[float]                       # .item(flow, node, param)
    BREAKPOINTS: Key[str]
    BREAKPOINTS_HANDED: Key[str]            # the box's text as the Editor handed it
    CANCEL: Key[bool]                       # .item(job or run id)
    QUEUE_CANCEL: Key[bool]                 # .item(job id), in the queue below
    ANSWER_BOX: Key[None]


class DebugKeys(Keys, prefix="debug"):
    """The Run page's paused-run panel (studio/run/debug_panel.py)."""

    CONTINUE: Key[bool]
    STEP: Key[bool]
    OVER: Key[bool]
    ABORT: Key[bool]
    REFUSED: Key[str]                       # why the last Continue/Abort was refused
    NOTICE: Key[str]                        # what the last edit did
    EDIT_KEY: Key[str]
    EDIT_VAL: Key[str]                      # .item(run id, pause, memory key)
    SET: Key[bool]                          # .item(run id, pause, memory key)


class ReplayKeys(Keys, prefix="replay"):
    """The Replay page's keys (pages/replay.py, studio/replay). Its open tab is the query-bound
    `tab` (studio/replay/replay_panel.TAB_KEY)."""

    PICK: Key[str]                          # the run shown (?run=)
    RUN: Key[str]                           # the run the step below belongs to
    STEP: Key[int]                          # the step shown (?step=): the slider's key
    FIRST: Key[bool]
    PREV: Key[bool]
    NEXT: Key[bool]
    LAST: Key[bool]
    GRAPH: Key[Any]                         # .item(run id)
    SHOW_SAME: Key[bool]
    FORK_BANNER: Key[None]
    OPEN_PARENT: Key[bool]
    OPEN_CHILD: Key[bool]                   # .item(child run id)
    OPEN_FORK: Key[bool]
    FORK_WHAT: Key[str]
    FORK_KEY: Key[str]
    FORK_VAL: Key[str]                      # .item(run id, step, memory key)
    FORK_PARAMS: Key[str]                   # .item(run id, step)
    FORK_GO: Key[bool]


class SettingsKeys(Keys, prefix="settings"):
    """The Settings page's keys (pages/settings.py, studio/settings)."""

    NOTICE: Key[Notice]
    FORM: Key[None]
    BACKEND: Key[str]
    MODEL_SOURCE: Key[str]
    MODEL_PATH: Key[str]
    GPU: Key[int]
    THREADS: Key[int]
    CTX: Key[int]
    TEMPERATURE: Key[float]
    SEED: Key[int]
    EXTRA_BUFTS: Key[str]
    BASE_URL: Key[str]
    MODEL_NAME: Key[str]
    EMBEDDER: Key[str]
    CHROMA_HOST: Key[str]
    CHROMA_PORT: Key[int]
    COMPLETION_CACHE: Key[bool]
    CACHE_MAX: Key[int]
    MODELS: Key[Any]
    # the trace export form (studio/settings/telemetry_panel.py)
    TELEMETRY_FORM: Key[None]
    TELEMETRY_ENABLED: Key[bool]
    TELEMETRY_ENDPOINT: Key[str]
    TELEMETRY_HEADERS: Key[str]
    TELEMETRY_NOTICE: Key[Notice]
    BATCH: Key[int]
    PREFIX_REUSE: Key[str]
    PULL_REPO: Key[str]
    PULL_FILE: Key[str]
    PULL_GO: Key[bool]


class GateKeys(Keys, prefix="gate"):
    """The access gate's key (studio/common/gate_panel.py)."""

    PASSED: Key[bool]
    TOKEN: Key[str]


#: Every page's key class, for the checks in tests/app/test_state.py.
KEY_CLASSES: tuple[type[Keys], ...] = (FlowsKeys, KbKeys, CompareKeys, RunKeys, DebugKeys,
                                       ReplayKeys, SettingsKeys, GateKeys)

RUN_PAGE = "pages/run.py"


def hand_over_flow(flow: str, state: MutableMapping[str, Any] | None = None) -> NoReturn:
    """Open the Run page on the flow `flow` (a saved flow's name or a template's): the page
    preselects it even when its address already named it. Nothing after this call runs."""
    RunKeys.FLOW_HANDOVER.set(flow, state)
    st.switch_page(RUN_PAGE, query_params={"flow": flow})


def take_flow(state: MutableMapping[str, Any] | None = None) -> str | None:
    """The flow another page handed to the Run page (hand_over_flow), once; None when none."""
    return RunKeys.FLOW_HANDOVER.pop(state)


#: seconds a notice stays on the page after it is first shown, whatever reruns the page in
#: between (the sidebar's rerun when the model is in came right after "Settings saved" and wiped
#: it before anyone could read it: a whole-suite run's browser test saw nothing in half the runs)
FLASH_S = 8.0


def flash(key: str, text: str, kind: FlashKind = "success",
          state: MutableMapping[str, Any] | None = None) -> None:
    """Keep a notice for the page's next run (call before st.rerun())."""
    _state(state)[key] = (kind, text, None)


def show_flash(key: str, state: MutableMapping[str, Any] | None = None,
               now: Callable[[], float] | None = None) -> str | None:
    """Show the notice kept under `key` (as literal text); its text or None. It is shown on
    every run of the page for `FLASH_S` seconds after its first showing, then forgotten."""
    import time
    box = _state(state)
    value = box.get(key)
    if not value:
        return None
    if not isinstance(value, tuple):
        value = ("success", str(value), None)
    kind, text, first = (*value, None)[:3] if len(value) == 2 else value
    t = (now or time.monotonic)()
    if first is None:
        box[key] = (kind, text, t)
    elif t - first > FLASH_S:
        box.pop(key, None)
        return None
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


class EditorKeys(Keys, prefix="editor"):
    """The Editor page's keys (pages/editor.py, studio/editor)."""

    DRAFT: Key[Any]                         # the service.drafts.Draft being edited
    BASE: Key[Any]                          # (flow, version, spec dict) the draft started from
    CANVAS: Key[Any]                        # the canvas.Picture last handed to the component
    CANVAS_PUSH: Key[bool]                  # hand the browser a new revision even if unchanged
    CANVAS_SEEN: Key[dict[str, int]]        # {canvas token: number of its last event taken in}
    CANVAS_FIT: Key[int]                    # fit-view request number (opening, tidying)
    CANVAS_VIEW: Key[Any]                   # (width, height) px the canvas last reported
    LAYOUT_VIEW: Key[Any]                   # (width, height) px the open draft is laid out for
    LAYOUT_DIRECTION: Key[str | None]       # LR or TB: the open draft's, kept while it is open
    FLOW_CANVAS: Key[Any]                   # the component itself: .item(hash of the flow)
    SELECTED: Key[str | None]               # the selection (node id or canvas edge id)
    CONFLICT: Key[dict[str, Any] | None]    # {"expected", "actual", "deleted"} after a stale save
    FORM_GEN: Key[int]                      # bumped to reset the side panel's widgets
    NOTICE: Key[Any]                        # (kind, text, when): shown a few seconds
    PROBLEMS: Key[Any]                      # (hash, problems, spec) cache
    PARSED: Key[Any]                        # (draft spec dict, its FlowSpec)
    DESIRED: Key[Any]                       # (FlowSpec, selection, picture, breakpoints, view, direction)
    UNDO_STACK: Key[Any]                    # (draft id, [spec dicts before each edit])
    REDO_STACK: Key[Any]                    # (draft id, [spec dicts undone])
    #: The draft's breakpoints handed to the Run page with the flow (hand_over_run/take_breakpoints)
    RUN_BREAKPOINTS: Key[list[str]]
    # widgets
    PICK: Key[str]                          # the flow to open when none is
    CONFLICT_NAME: Key[str]
    CONFLICT_SAVE_AS: Key[bool]
    CONFLICT_OVERWRITE: Key[bool]
    CONFLICT_DISCARD: Key[bool]
    SAVE_MSG: Key[str]
    SAVE: Key[bool]
    RUN: Key[bool]
    DISCARD: Key[bool]
    UNDO: Key[bool]
    REDO: Key[bool]
    DELETE: Key[bool]
    DESELECT: Key[bool]
    PALETTE: Key[bool]                      # .item("add", operator)
    LABEL: Key[str]                         # .item(form gen, node id)
    PARAM: Key[Any] = Key("editor_p")       # .item(form gen, node id) + "_" + param
    EDGE_LABEL: Key[str]                    # .item(form gen, edge id)
    EDGE_UNLABEL: Key[bool]                 # .item(form gen)
    EDGE_REMOVE: Key[bool]                  # .item(form gen, edge id): a node form's edge list
    CONNECT_TARGET: Key[str]                # .item(form gen, node id): "Connect to" its target
    CONNECT_LABEL: Key[str]                 # .item(form gen, node id): the new edge's route label
    CONNECT: Key[bool]                      # .item(form gen, node id): the "Connect" button
    ALL_PROBLEMS: Key[bool]
    DESC: Key[str]                          # .item(form gen)
    ENTRY: Key[str]                         # .item(form gen)
    LIMITS: Key[Any]                        # .item(form gen) + "_" + limit
    TIDY: Key[bool]
    BP_BEFORE: Key[bool]                    # .item(form gen, node id)
    BP_AFTER: Key[bool]                     # .item(form gen, node id)
    BP_VISIT: Key[int]                      # .item(form gen, node id)
    BP_CONDITION: Key[str]                  # .item(form gen, node id)
    BP_ERROR: Key[tuple[str, str] | None]   # (node id, why its visit or condition was refused)


KEY_CLASSES = (*KEY_CLASSES, EditorKeys)


def hand_over_run(flow: str, breakpoints: Sequence[str],
                  state: MutableMapping[str, Any] | None = None) -> NoReturn:
    """`hand_over_flow` with the editor draft's breakpoints: the Run page's breakpoints box
    starts with them (it calls take_breakpoints()). Nothing after this call runs."""
    EditorKeys.RUN_BREAKPOINTS.set(list(breakpoints), state)
    hand_over_flow(flow, state)


def take_breakpoints(state: MutableMapping[str, Any] | None = None) -> list[str] | None:
    """The breakpoints the editor handed to the Run page with a flow (hand_over_run), once;
    None when none were handed over."""
    return EditorKeys.RUN_BREAKPOINTS.pop(state)


class SearchKeys(Keys, prefix="search"):
    """The Search page's keys (pages/search.py, studio/search)."""

    STARTER: Key[list[str]]                 # the flows a starter space is made from
    STARTER_GO: Key[bool]
    SPACE_TEXT: Key[str]                    # the space JSON being edited
    SPACE_FILE: Key[Any]                    # an uploaded space file
    DATASET: Key[str]
    KB: Key[str]
    SEARCH_QS: Key[str]
    CONFIRM_QS: Key[str]
    RANGES_FOR: Key[str]                    # the question set the ranges were filled for
    BUDGET: Key[int]
    FIRST_BATCH: Key[int]
    BUDGET_HOURS: Key[float]                # 0: no limit in hours
    HALVING: Key[float]                     # 0: the interval rule alone
    HALVING_FROM: Key[int]                  # questions a batch needs before halving acts
    WORKERS: Key[int]                       # Ray workers (1: in the studio's own thread)
    OBJECTIVE: Key[str]                     # f1, em, acc or a judge (flowkit.search.objective)
    JUDGE_MODEL: Key[str]                   # a judge objective's model ('' the workspace's)
    CHECK: Key[bool]
    CHECKED: Key[Any]                       # (form fingerprint, studio.search.search_data.Checked)
    START: Key[bool]
    OPEN: Key[str]                          # the picker of earlier searches
    WAS_ACTIVE: Key[dict[str, bool]]
    STOP: Key[bool]
    RESUME: Key[bool]
    TABLE_DF: Key[Any]


KEY_CLASSES = (*KEY_CLASSES, SearchKeys)
