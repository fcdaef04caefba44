"""Adaptive sampling on the scripted model: each wave is asked of an Optuna study told the
results of the waves before it, and a search killed anywhere resumes into the very candidates an
uninterrupted search with the same seed asks."""
from __future__ import annotations

import json

import pytest

from flowkit.search import study
from service import search

from .conftest import make_workspace, space_doc


class Kill(Exception):
    """Stands for a kill: raised from inside a run's progress callback."""


def request(world, **over):
    kw = {"first_batch": 3, "budget_calls": 1000}
    kw.update(over)
    return search.SearchRequest(str(world.space), str(world.dataset), "test", "4-9", "1-3", **kw)


@pytest.fixture()
def wider(world):
    """8 points (prompt x top_k 1..4), 7 candidates: the hand-written flow and 3 waves of 2."""
    doc = space_doc(world.flow, max_candidates=7, seed=3)
    doc["params"][1]["choices"] = [1, 2, 3, 4]
    world.space.write_text(json.dumps(doc))
    return world


def outcome(st):
    return ([(e.cid, e.key, e.candidate, e.status) for e in st.entries],
            [(t.params, t.cid, t.wave, t.values) for t in st.trials])


def test_each_wave_is_asked_knowing_the_results_before_it(wider, monkeypatch):
    seen: list[list[study.Trial]] = []
    real = study.rebuild

    def spy(space, trials):
        seen.append([study.Trial.from_dict(t.to_dict()) for t in trials])
        return real(space, trials)

    monkeypatch.setattr(study, "rebuild", spy)
    plan = search.prepare(wider.ws, request(wider))
    assert [len(t) for t in seen] == [0] and len(plan.state.entries) == 3    # c00 + wave 1
    st = search.run(wider.ws, plan)
    assert st.phase == "done" and len(st.entries) == 7
    assert len({e.key for e in st.entries}) == 7                   # none evaluated twice
    assert [e.wave for e in st.entries] == [None, 1, 1, 2, 2, 3, 3]
    assert len(seen) == 3
    by_cid = {e.cid: e for e in st.entries}
    for before in seen[1:]:            # waves 2 and 3: every earlier trial told [F1, tokens/q]
        assert before and all(t.values is not None for t in before)
        for t in before:
            e = by_cid[t.cid]
            assert t.values is not None and t.values[0] in (0.0, 1.0) and t.values[1] > 0
            assert e.score is not None and t.values[0] == pytest.approx(e.score)
    # the study rebuilt from them holds the told values, two objectives each
    rebuilt = real(plan.space, seen[2])
    assert all(t.state.name == "COMPLETE" and len(t.values) == 2 for t in rebuilt.trials)
    assert all(t.values is not None for t in st.trials)           # the last wave is told too


def test_a_killed_search_resumes_into_the_same_candidates(wider):
    whole = search.run(wider.ws, search.prepare(wider.ws, request(wider)))
    assert whole.phase == "done"
    for i, kill_at in enumerate((4, 20, 28)):   # in wave 1's race, in wave 2's, in wave 3's
        ws = make_workspace(wider.root / f"home-{i}")
        ran = [0]

        def on_run(e, which, p, kill_at=kill_at, ran=ran):
            if p.status != "skipped":
                ran[0] += 1
                if ran[0] == kill_at:
                    raise Kill
        with pytest.raises(Kill):
            search.run(ws, search.prepare(ws, request(wider)), on_run=on_run)
        plan = search.prepare(ws, request(wider))
        assert plan.resumed and plan.state.phase == "race"
        st = search.run(ws, plan)
        assert st.phase == "done"
        assert outcome(st) == outcome(whole), f"killed after {kill_at} runs"


def test_a_search_killed_between_two_waves_asks_the_same_next_wave(wider, monkeypatch):
    whole = search.run(wider.ws, search.prepare(wider.ws, request(wider)))
    ws = make_workspace(wider.root / "home-between")
    real, calls = search.next_wave, [0]

    def dies_on_the_second_wave(space, flows, st):
        calls[0] += 1
        if calls[0] == 2:
            raise Kill
        return real(space, flows, st)
    monkeypatch.setattr(search, "next_wave", dies_on_the_second_wave)
    with pytest.raises(Kill):
        search.run(ws, search.prepare(ws, request(wider)))
    monkeypatch.setattr(search, "next_wave", real)
    plan = search.prepare(ws, request(wider))
    assert len(plan.state.entries) == 3 and plan.state.race_status == "done"
    assert outcome(search.run(ws, plan)) == outcome(whole)
