"""The race on its own, with a scripted evaluation: successive halving, the hours budget, and a
rerun that comes to the same decisions."""
from __future__ import annotations

from flowkit.cost import Cost
from flowkit.eval.metrics import QuestionResult
from flowkit.search.candidates import Candidate
from flowkit.search.racing import Batch, Budget, Entry, Race

#: per candidate, the F1 it scores on question i (a function of i)
SCORES = {"a": lambda i: 1.0, "b": lambda i: 0.0 if i == 0 else 1.0,
          "c": lambda i: 0.0 if i < 2 else 1.0, "d": lambda i: 0.0}


def evaluate(calls: list[tuple[str, int]]):
    def run(e: Entry, n: int) -> Batch:
        calls.append((e.cid, n))
        res = [QuestionResult(e.cid, f"q{i}", "", [], "", "ok", f1=SCORES[e.cid](i), llm_calls=1,
                              tokens=10) for i in range(n)]
        return Batch(res, Cost(calls=max(0, n - e.reached)))
    return run


def entries() -> list[Entry]:
    return [Entry(cid, Candidate(cid), cid) for cid in SCORES]


def test_halving_keeps_the_top_half():
    calls: list[tuple[str, int]] = []
    es = entries()
    status = Race(es, 8, evaluate(calls), Budget(1000), first=2, halving=2).run()
    assert status == "done"
    got = {e.cid: (e.status, e.reached) for e in es}
    assert got == {"a": ("kept", 8), "b": ("kept", 8), "c": ("dropped", 2), "d": ("dropped", 2)}
    reasons = {e.cid: e.reason for e in es}
    # on 2 questions the interval rule does not act yet (it wants 3 pairs): halving does
    assert "after 2 questions: successive halving kept the top 2; ranked 3 of 4" in reasons["c"]
    assert "ranked 4 of 4 on F1 and tokens on those questions (0.0, 10 tokens/q; front layer 3)" in reasons["d"]
    # the same race again (its evaluations skip what is stored) makes the same decisions
    again = entries()
    Race(again, 8, evaluate([]), Budget(1000), first=2, halving=2).run()
    assert [(e.status, e.reason) for e in again] == [(e.status, e.reason) for e in es]


def test_halving_from_holds_the_halving_back_until_a_batch_is_that_large():
    """With halving_from 4 the 2-question batch halves nobody (the interval rule wants 3 pairs,
    so nobody goes there); on 4 questions the interval drops d and halving ranks the rest."""
    calls: list[tuple[str, int]] = []
    es = entries()
    assert Race(es, 8, evaluate(calls), Budget(1000), first=2, halving=2,
                halving_from=4).run() == "done"
    assert sorted(c for c, n in calls if n == 4) == ["a", "b", "c", "d"]   # all four reached 4
    reasons = {e.cid: e.reason for e in es}
    assert {e.cid: e.status for e in es} == {"a": "kept", "b": "kept", "c": "dropped",
                                             "d": "dropped"}
    assert reasons["d"].startswith("after 4 questions: F1 -100.0")
    assert "after 4 questions: successive halving kept the top 2; ranked 3 of 3" in reasons["c"]


def test_halving_keeps_a_cheap_candidate_on_the_front():
    """Halving ranks by front layer (F1 up, tokens down), not F1 alone: 'lean' scores below two
    others but at a third of their tokens, so nobody beats it on both and it stays; 'heavy' is
    beaten on both by 'best' and goes, though its F1 is above lean's."""
    f1 = {"best": 0.9, "heavy": 0.8, "lean": 0.5, "worst": 0.4}
    tokens = {"best": 300, "heavy": 400, "lean": 100, "worst": 500}

    def run(e: Entry, n: int) -> Batch:
        res = [QuestionResult(e.cid, f"q{i}", "", [], "", "ok", f1=f1[e.cid], llm_calls=1,
                              tokens=tokens[e.cid]) for i in range(n)]
        return Batch(res, Cost(calls=max(0, n - e.reached)))
    es = [Entry(cid, Candidate(cid), cid) for cid in f1]
    # a budget of the first batch's 8 calls: the race ends after halving there (the interval
    # rule, which wants 3 questions, would otherwise judge the constant scores next)
    assert Race(es, 8, run, Budget(8), first=2, halving=2).run() == "budget"
    got = {e.cid: e.status for e in es}
    assert got == {"best": "kept", "lean": "kept", "heavy": "dropped", "worst": "dropped"}
    heavy = next(e for e in es if e.cid == "heavy")
    assert "ranked 3 of 4 on F1 and tokens on those questions (80.0, 400 tokens/q; front layer 2)" in heavy.reason


def test_halving_judges_everyone_on_the_same_questions():
    """A candidate of an earlier wave raced again keeps its figures on all it answered (F1 0.3
    on 8 questions here), but halving on 2 questions compares its F1 on those 2 (0.9), where
    it leads; ranked by its 8-question figure it would have gone."""
    f1 = {"old": 0.9, "x": 0.6, "y": 0.5, "z": 0.4}

    def run(e: Entry, n: int) -> Batch:
        res = [QuestionResult(e.cid, f"q{i}", "", [], "", "ok", f1=f1[e.cid], llm_calls=1,
                              tokens=100) for i in range(n)]
        return Batch(res, Cost(calls=max(0, n - e.reached)))
    old = Entry("old", Candidate("old"), "old", reached=8, score=0.3, tokens=100.0,
                calls_per_q=1.0)
    es = [old] + [Entry(cid, Candidate(cid), cid) for cid in ("x", "y", "z")]
    assert Race(es, 8, run, Budget(6), first=2, halving=2).run() == "budget"
    assert {e.cid: e.status for e in es} == {"old": "kept", "x": "kept", "y": "dropped",
                                             "z": "dropped"}


def test_front_layers_sort_by_dominance_then_f1():
    from flowkit.search.front import Point, front_layers

    def entry(cid: str, f1: float, tokens: float) -> Point:
        return Point(cid, f1, tokens, seconds=float(ord(cid)))     # seconds do not count
    es = [entry("a", 0.2, 100), entry("b", 0.5, 300), entry("c", 0.4, 400), entry("d", 0.5, 300),
          entry("e", 0.1, 900)]
    layers = [[e.cid for e in layer] for layer in front_layers(es)]
    # b and d tie (neither beats the other), so both are on the first layer with a
    assert layers == [["b", "d", "a"], ["c"], ["e"]]


def test_without_halving_only_the_interval_drops():
    es = entries()
    Race(es, 8, evaluate([]), Budget(1000), first=4).run()
    got = {e.cid: e.status for e in es}
    assert got == {"a": "kept", "b": "kept", "c": "kept", "d": "dropped"}
    assert "F1 -100.0 [-100.0, -100.0] against a on 4 questions" in es[3].reason


def test_the_hours_budget_ends_the_race():
    calls: list[tuple[str, int]] = []
    ticks = iter(range(0, 10_000, 1000))          # every evaluation "takes" 1000 s
    es = entries()
    status = Race(es, 8, evaluate(calls), Budget(1000, hours=0.5), first=2,
                  clock=lambda: float(next(ticks))).run()
    assert status == "budget" and len(calls) == 2                 # 2000 s > 0.5 h
    assert all(e.status == "kept" and "the budget of 0.5 h is spent" in e.reason for e in es)
