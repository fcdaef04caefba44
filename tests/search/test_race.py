"""Racing on a scripted model: the clearly worse candidates are dropped with their reason, the
better kept, saved as flows and confirmed on the other questions; a killed search resumes
without redoing finished runs; the budget ends a race."""
from __future__ import annotations

import threading

import pytest

from flowkit.eval.metrics import QuestionResult
from flowkit.search.front import Point, pareto
from flowkit.search.racing import Runs, drop_worse, rungs
from service import search
from service.evaluations import eval_repo

from .conftest import PLAIN, VAGUE


def request(world, **over):
    kw = {"first_batch": 3, "budget_calls": 1000}
    kw.update(over)
    return search.SearchRequest(str(world.space), str(world.dataset), "test", "4-9", "1-3", **kw)


def prompt_of(e):
    return e.candidate.params.get("gen.prompt", PLAIN)


def test_racing_drops_the_worse_and_keeps_the_better(world):
    plan = search.prepare(world.ws, request(world))
    # the hand-written flow and a first wave of one (3 to sample in 3 waves); all 4 estimated
    assert not plan.resumed and len(plan.state.entries) == 2
    first = plan.state.entries[0]
    assert first.hand_written and first.wave is None
    assert first.search_runs == first.confirm_runs == Runs()          # not evaluated yet
    assert "first batch" in search.estimate(plan).describe()
    assert search.estimate(plan).candidates == 4
    st = search.run(world.ws, plan)
    assert (st.phase, st.race_status) == ("done", "done")
    assert len(st.entries) == 4 and len({e.key for e in st.entries}) == 4   # all distinct points
    by_prompt = {e.cid: prompt_of(e) for e in st.entries}
    dropped = [e for e in st.entries if e.status == "dropped"]
    kept = [e for e in st.entries if e.status == "kept"]
    assert {by_prompt[e.cid] for e in dropped} == {VAGUE} and len(dropped) == 2
    assert {by_prompt[e.cid] for e in kept} == {PLAIN} and len(kept) == 2
    for e in dropped:
        assert e.reached == 3 and "after 3 questions: F1 -100.0 [-100.0, -100.0]" in e.reason
        # its evaluation answered 3 of the split's 6 questions: stopped, not done
        info = eval_repo(world.ws).get_eval(e.search_runs.eval_id)
        assert info.status == "stopped" and len(info.question_ids) == 6
    for e in kept:
        info = eval_repo(world.ws).get_eval(e.search_runs.eval_id)
        assert info.status == "done"
        assert e.reached == 6 and e.score == 1.0
        spec, version = world.ws.store.get_flow(e.flow_name)
        assert version == e.flow_version and spec.name == f"tiny-{e.cid}"
    # confirmed on questions 1-3, which the race never used; the hand-written flow is the reference
    assert set(st.confirm) >= {"c00"} and st.confirm["c00"].vs == "c00"
    assert all(c.n == 3 and c.score == 1.0 for c in st.confirm.values())
    assert plan.state_file.is_file() and st.budget.spent_calls > 0


def test_a_killed_search_resumes_without_redoing_runs(world):
    fresh_ran = []
    search.run(world.ws, search.prepare(world.ws, request(world)),
               on_run=lambda e, w, p: fresh_ran.append((e.key + w, p.question_index, p.status)))
    fresh = {(k, q) for k, q, s in fresh_ran if s != "skipped"}
    # a second world runs the same search, stopped after 5 runs (as a kill between runs would)
    other = world.root / "home2"
    from .conftest import make_workspace
    ws2 = make_workspace(other)
    stop, first = threading.Event(), []

    def on_run(e, w, p):
        if p.status != "skipped":
            first.append((e.key + w, p.question_index))
        if len(first) >= 5:
            stop.set()
    st = search.run(ws2, search.prepare(ws2, request(world)), on_run=on_run, stop=stop)
    assert st.phase == "race" and st.race_status == "stopped" and len(first) == 5
    again = []
    plan = search.prepare(ws2, request(world))
    assert plan.resumed
    st = search.run(ws2, plan, on_run=lambda e, w, p: again.append((e.key + w, p.question_index,
                                                                 p.status)))
    redone = [(k, q) for k, q, s in again if s != "skipped"]
    assert st.phase == "done"
    assert not set(first) & set(redone)                      # nothing finished is run again
    assert set(first) | set(redone) == fresh                  # and the same work gets done
    assert sorted(e.status for e in st.entries) == ["dropped", "dropped", "kept", "kept"]


def test_the_budget_ends_the_race(world):
    st = search.run(world.ws, search.prepare(world.ws, request(world, budget_calls=10)))
    assert st.race_status == "budget"
    assert all(e.status in ("kept", "dropped") for e in st.entries)
    assert any("model calls" in e.reason and "are left" in e.reason for e in st.entries)
    assert st.budget.spent_calls <= 10


def result(qid, f1):
    return QuestionResult("x", qid, "", [], "", "ok", f1=f1)


def test_drop_rule_and_front_and_rungs():
    good = [result(str(i), 1.0) for i in range(6)]
    close = [result(str(i), 0.0 if i == 0 else 1.0) for i in range(6)]   # worse on one
    bad = [result(str(i), 0.0) for i in range(6)]
    dropped = drop_worse({"a": good, "b": bad, "c": close}, "a")
    assert list(dropped) == ["b"] and "below 0" in dropped["b"]
    assert rungs(200, 10) == [10, 20, 40, 80, 160, 200] and rungs(3, 10) == [3]
    pts = [Point("a", 0.5, 100, 1), Point("b", 0.4, 50, 1), Point("c", 0.3, 60, 2)]
    assert [p.cid for p in pareto(pts)] == ["a", "b"]
    twin = Point("a2", 0.5, 100, 0.9)              # the same answers as a, faster by noise
    assert [p.cid for p in pareto([*pts, twin])] == ["a", "b"]


def test_a_search_killed_as_its_race_ends_on_the_budget_resumes_without_a_new_wave(world,
                                                                               monkeypatch):
    """Killed between the race's end on the budget and the search's own status write: the saved
    state already says 'budget', so the resumed search asks no new wave (it used to see nobody
    racing, call the race 'done' and ask Optuna for one more, which the budget stopped again)."""
    whole = search.run(world.ws, search.prepare(world.ws, request(world, budget_calls=8)))
    assert whole.race_status == "budget" and len(whole.entries) == 2      # 2 of 8 calls left
    for f in world.space.parent.glob("space.search-*.json"):
        f.unlink()
    from .conftest import make_workspace
    ws2 = make_workspace(world.root / "home2")
    real = search.Race.run

    def killed(self):
        real(self)
        raise KeyboardInterrupt          # the process dies before `st.race_status = ...`
    monkeypatch.setattr(search.Race, "run", killed)
    with pytest.raises(KeyboardInterrupt):
        search.run(ws2, search.prepare(ws2, request(world, budget_calls=8)))
    monkeypatch.undo()
    plan = search.prepare(ws2, request(world, budget_calls=8))
    assert plan.resumed and plan.state.race_status == "budget"
    logged: list[str] = []
    st = search.run(ws2, plan, log=logged.append)
    assert not [m for m in logged if m.startswith("wave ")], logged
    assert st.phase == "done" and st.race_status == "budget"
    assert [(e.cid, e.status, e.reason) for e in st.entries] == \
        [(e.cid, e.status, e.reason) for e in whole.entries]
    assert len(st.trials) == len(whole.trials) and st.budget.spent_calls == whole.budget.spent_calls
