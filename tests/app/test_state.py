"""studio.common.state.sync_from_query: a new address picks the option, the user's own pick is kept
against an address the page has already seen, defaults fill a missing or stale pick."""
from __future__ import annotations

from studio.common.state import sync_from_query

OPTIONS = ["a", "b", "c"]


def test_an_unseen_query_parameter_picks_its_option_then_the_users_pick_stays():
    state: dict = {}
    params = {"kb": "b"}
    assert sync_from_query(OPTIONS, key="pick", param="kb", state=state, params=params) == "b"
    state["pick"] = "c"                        # the user picks another option in the box
    assert sync_from_query(OPTIONS, key="pick", param="kb", state=state, params=params) == "c"
    params["kb"] = "a"                         # a link or another page changes the address
    assert sync_from_query(OPTIONS, key="pick", param="kb", state=state, params=params) == "a"


def test_defaults_for_a_missing_unknown_or_stale_pick():
    state: dict = {}
    assert sync_from_query(OPTIONS, key="p", param="x", default="b", state=state, params={}) == "b"
    state["p"] = "gone"
    assert sync_from_query(OPTIONS, key="p", param="x", default=lambda: "c", state=state,
                           params={"x": "nope"}) == "c"
    assert sync_from_query(OPTIONS, key="q", param="x", state={}, params={"x": "nope"}) == "a"
    empty: dict = {"p": "a"}
    assert sync_from_query([], key="p", param="x", state=empty, params={}) is None
    assert "p" not in empty


def test_from_param_maps_the_address_text_to_an_option():
    refs = [("template", "naive_rag"), ("saved", "mine")]
    got = sync_from_query(refs, key="f", param="flow", state={}, params={"flow": "mine"},
                          from_param=lambda text: next((r for r in refs if r[1] == text), None))
    assert got == ("saved", "mine")


def test_kept_values_outlive_the_widget() -> None:
    from studio.common.state import keep, kept, kept_index
    s: dict[str, object] = {}
    assert kept("box", "default", s) == "default" and kept_index("pick", ["a", "b"], s) == 0
    s["box"], s["pick"] = "typed", "b"               # the widgets' values, as Streamlit holds them
    keep("box", s)
    keep("pick", s)
    del s["box"], s["pick"]                           # a run that did not draw them forgets them
    assert kept("box", "default", s) == "typed"
    assert kept_index("pick", ["a", "b"], s) == 1
    assert kept_index("pick", ["x"], s) == 0          # a kept value no longer offered: the first
    keep("gone", s)                                   # nothing to keep: nothing kept
    assert "gone__kept" not in s


# ---- declared keys, one owner each; the named hand-over of a flow to the Run page -------------
import ast  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from studio.common import state as st_state  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PREFIX = {st_state.FlowsKeys: "flows_", st_state.KbKeys: "kb_", st_state.CompareKeys: "compare_",
          st_state.RunKeys: "run_", st_state.ReplayKeys: "replay_",
          st_state.SettingsKeys: "settings_", st_state.GateKeys: "gate_",
          st_state.EditorKeys: "editor_", st_state.SearchKeys: "search_", st_state.DebugKeys: "debug_"}

#: The files converted to the declared keys: no raw key text, no st.session_state.
CONVERTED = sorted([ROOT / "pages" / "flows.py", ROOT / "pages" / "knowledge.py",
                    ROOT / "pages" / "compare.py", ROOT / "app.py",
                    ROOT / "studio" / "common" / "gate_panel.py",
                    *(ROOT / "studio" / "flows").glob("*.py"),
                    *(ROOT / "studio" / "knowledge").glob("*.py"),
                    *(ROOT / "studio" / "compare").glob("*.py"),
                    ROOT / "pages" / "run.py", ROOT / "pages" / "replay.py",
                    ROOT / "pages" / "settings.py",
                    *(ROOT / "studio" / "run").glob("*.py"),
                    *(ROOT / "studio" / "replay").glob("*.py"),
                    *(ROOT / "studio" / "settings").glob("*.py"),
                    ROOT / "pages" / "editor.py", *(ROOT / "studio" / "editor").glob("*.py"),
                    ROOT / "pages" / "search.py", *(ROOT / "studio" / "search").glob("*.py")])


def declared() -> list[tuple[type, str, str]]:
    return [(cls, attr, str(key)) for cls in st_state.KEY_CLASSES
            for attr, key in vars(cls).items() if isinstance(key, st_state.Key)]


def test_every_declared_key_is_unique_and_named_for_its_page():
    keys = declared()
    assert set(PREFIX) == set(st_state.KEY_CLASSES)
    names = [name for _, _, name in keys]
    assert len(names) == len(set(names))
    assert [n for cls, _, n in keys if not n.startswith(PREFIX[cls])] == []
    # no key is a per-item key of another (`.item()` would collide): "x" and "x_y" both declared
    per_item = {"OPEN", "RUN", "EXPORT", "EXPORT_LG", "VERSIONS", "DELETE", "DELETE_YES",
                "DELETE_NO", "DIFF_A", "DIFF_B", "RESTORE", "RESTORE_GO", "PARAMS",
                "CHUNKS_PAGE", "GRAPH_FOCUS", "GRAPH_N", "GRAPH", "DB_FILE", "DB_TABLES",
                "DOWNLOAD", "VARIANT_PARAM", "PARAM", "CANCEL", "QUEUE_CANCEL", "OPEN_CHILD",
                "FORK_VAL", "FORK_PARAMS", "EDIT_VAL", "SET"}
    assert {a for _, a, _ in keys} >= per_item


def test_a_key_reads_and_writes_its_value():
    state: dict = {}
    key: st_state.Key[int] = st_state.Key("demo_count")
    assert key == "demo_count" and key.get(state=state) is None and not key.held(state)
    key.set(3, state)
    assert state == {"demo_count": 3} and key.get(state=state) == 3 and key.held(state)
    assert key.pop(state) == 3 and state == {} and key.get(7, state) == 7
    assert key.item("a", 2) == "demo_count_a_2"


class Switched(Exception):
    pass


@pytest.fixture()
def went(monkeypatch) -> list[tuple[str, dict]]:
    """The pages switched to (st.switch_page recorded, then stopped as Streamlit would)."""
    out: list[tuple[str, dict]] = []

    def switch(page, query_params=None):
        out.append((page, query_params))
        raise Switched

    monkeypatch.setattr(st_state.st, "switch_page", switch)
    return out


def test_hand_over_flow_keeps_the_flow_for_the_run_page_and_opens_it(went):
    state: dict = {}
    with pytest.raises(Switched):
        st_state.hand_over_flow("my_flow", state)
    assert went == [("pages/run.py", {"flow": "my_flow"})]
    assert state == {"run_flow": "my_flow"}      # the key pages/run.py has always read
    assert st_state.take_flow(state) == "my_flow"
    assert st_state.take_flow(state) is None     # once


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_converted_files_use_only_declared_keys(path):
    raw = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "session_state":
            raw.append(f"line {node.lineno}: st.session_state")
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "key" and isinstance(kw.value, (ast.Constant, ast.JoinedStr)):
                    raw.append(f"line {node.lineno}: key={ast.unparse(kw.value)}")
            name = ast.unparse(node.func)
            if name.split(".")[-1] in ("flash", "show_flash", "form") and node.args \
                    and isinstance(node.args[0], (ast.Constant, ast.JoinedStr)):
                raw.append(f"line {node.lineno}: {name}({ast.unparse(node.args[0])})")
    assert raw == []


def test_a_key_group_names_its_keys_from_one_declaration():
    class DemoKeys(st_state.Keys, prefix="demo"):
        COUNT: st_state.Key[int]
        OTHER: st_state.Key[str] = st_state.Key("demo_x")   # a text of its own

    assert isinstance(DemoKeys.COUNT, st_state.Key) and DemoKeys.COUNT == "demo_count"
    assert DemoKeys.OTHER == "demo_x" and DemoKeys.prefix == "demo"
    assert st_state.RunKeys.FLOW_HANDOVER == "run_flow" and st_state.ReplayKeys.STEP == "replay_step"


def test_hand_over_run_keeps_the_drafts_breakpoints_for_the_run_page(went):
    state: dict = {}
    with pytest.raises(Switched):
        st_state.hand_over_run("my_flow", ["generate", "retrieve:after"], state)
    assert went == [("pages/run.py", {"flow": "my_flow"})]
    assert st_state.take_flow(state) == "my_flow"
    assert st_state.take_breakpoints(state) == ["generate", "retrieve:after"]
    assert st_state.take_breakpoints(state) is None     # once


def test_a_notice_outlives_the_reruns_right_after_it():
    """'Settings saved' was shown once and forgotten; the sidebar's rerun when the model came in
    wiped it at once. It now stays FLASH_S seconds after its first showing, then goes."""
    from studio.common import state as S
    box: dict = {}
    clock = [100.0]
    S.flash("n", "Settings saved.", state=box)
    assert S.show_flash("n", box, now=lambda: clock[0]) == "Settings saved."
    clock[0] += 2
    assert S.show_flash("n", box, now=lambda: clock[0]) == "Settings saved."   # a rerun
    clock[0] += S.FLASH_S
    assert S.show_flash("n", box, now=lambda: clock[0]) is None
    assert "n" not in box and S.show_flash("n", box) is None
