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
