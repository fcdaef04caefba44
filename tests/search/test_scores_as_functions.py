"""Scores as functions (issue 49, item 2): `f1` means F1 and nothing else, and the search takes its
objective as a callable.

A search on EM, Acc or a judge used to write its score into each result's `f1` (and its entries'
and confirmation's), so the race could read it there. Now the race, the drop rule, halving, the
front and the confirmation take a `scoring.Metric` and read each answer through it. The source
checks (AST, not imports) keep it so: nothing in the shipped code writes a field or keyword
named `f1` outside the metric code, the search's code reads `.f1` only in the F1 metric itself,
and its records have typed fields (no `extra` dict, no `f1` field, the candidate parsed once).
"""
from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowkit.cost import Cost
from flowkit.eval.metrics import QuestionResult
from flowkit.search.candidates import Candidate
from flowkit.search.racing import Batch, Budget, Entry, Race, drop_worse, halve
from flowkit.search.scoring import F1, Metric
from flowkit.search.state import SearchState

ROOT = Path(__file__).resolve().parents[2]
#: the shipped code (tests and benchmarks build results by hand)
SHIPPED = ("flowkit", "service", "storage", "studio", "pages", "app.py")
#: where a QuestionResult's scores are computed: the one place that writes `f1`
METRIC_CODE = {"flowkit/eval/metrics.py"}
#: the flow search's files
SEARCH = ("flowkit/search", "service/search.py", "service/cli/search.py", "studio/search",
          "pages/search.py")


def sources(roots: tuple[str, ...]) -> Iterator[tuple[str, ast.Module]]:
    for root in roots:
        path = ROOT / root
        for f in sorted([path] if path.is_file() else path.rglob("*.py")):
            yield f.relative_to(ROOT).as_posix(), ast.parse(f.read_text(encoding="utf-8"))


def _is_f1_function(value: ast.expr) -> bool:
    """A call of the F1 function itself (`metrics.token_f1(...)`): an F1 score by construction."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "token_f1"


def f1_writes(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, code) of each write to something named `f1`: `x.f1 = ...` (also `+=`, annotated),
    a keyword `f1=...` (a constructor, `dataclasses.replace`), `setattr(x, "f1", ...)`."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "f1" and isinstance(node.ctx, ast.Store):
            out.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.keyword) and node.arg == "f1" and not _is_f1_function(node.value):
            out.append((node.value.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "setattr" and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and node.args[1].value == "f1"):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_nothing_outside_the_metric_code_writes_a_field_named_f1() -> None:
    found = [f"{path}:{line}: {code}" for path, tree in sources(SHIPPED)
             if path not in METRIC_CODE for line, code in f1_writes(tree)]
    assert not found, ("only the metric code writes `f1` (an F1 score); hand another score to the "
                       "search as a scoring.Metric instead:\n" + "\n".join(found))


def test_the_search_reads_f1_only_in_the_f1_metric() -> None:
    """Everything else in the search reads its quality through the metric it was passed."""
    found = [f"{path}:{node.lineno}: {ast.unparse(node)}" for path, tree in sources(SEARCH)
             for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr == "f1"
             and path != "flowkit/search/scoring.py"]
    assert not found, "\n".join(found)


def test_the_search_stores_no_score_under_an_f1_key() -> None:
    """No `{"f1": score}` (the confirmation's figures are a typed record); a constant label
    (`ANSWER_OBJECTIVES`: "f1" -> "F1") or the F1 metric itself (`ANSWER_METRICS`) is no score."""
    found = [f"{path}:{k.lineno}: {ast.unparse(v)}" for path, tree in sources(SEARCH)
             for node in ast.walk(tree) if isinstance(node, ast.Dict)
             for k, v in zip(node.keys, node.values, strict=True)
             if isinstance(k, ast.Constant) and str(k.value).lower().startswith("f1")
             and not (isinstance(v, ast.Constant) and isinstance(v.value, str))
             and ast.unparse(v) != "F1"]
    assert not found, "\n".join(found)


def test_the_search_records_have_typed_fields() -> None:
    """No `extra` dict of string keys and no field named `f1` on the search's records, and the
    candidate is parsed from its stored form in one place (`Entry.from_dict`)."""
    fields = [f"{path}:{cls.name}.{item.target.id}" for path, tree in sources(("flowkit/search",))
              for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for item in cls.body
              if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
              and item.target.id in ("f1", "extra")]
    assert not fields, fields
    parses = [f"{path}:{node.lineno}" for path, tree in sources(SEARCH) for node in ast.walk(tree)
              if isinstance(node, ast.Call) and ast.unparse(node.func) == "Candidate.from_dict"]
    assert parses == [next(p for p in parses if p.startswith("flowkit/search/racing.py:"))], parses


# ---- the objective as a callable ------------------------------------------------------------
def _results(cid: str, scores: list[float], f1: float) -> list[QuestionResult]:
    return [QuestionResult(cid, f"q{i}", "", [], "", "ok", f1=f1, acc=s, llm_calls=1, tokens=10)
            for i, s in enumerate(scores)]


#: per candidate: its Acc per question (the objective here) and an F1 that ranks the other way
TABLE = {"a": ([1.0] * 4, 0.0), "b": ([0.0] * 4, 1.0)}
ACC = Metric("Acc", lambda r: r.acc)


def test_the_race_ranks_on_the_metric_it_is_given() -> None:
    def evaluate(e: Entry, n: int) -> Batch:
        scores, f1 = TABLE[e.cid]
        return Batch(_results(e.cid, scores[:n], f1), Cost(calls=n - e.reached))

    on_acc = [Entry(c, Candidate(c), c) for c in TABLE]
    Race(on_acc, 4, evaluate, Budget(100), first=4, score=ACC).run()
    assert {e.cid: e.status for e in on_acc} == {"a": "kept", "b": "dropped"}
    assert on_acc[1].reason.startswith("after 4 questions: Acc -100.0 [-100.0, -100.0] against a")
    assert (on_acc[0].score, on_acc[1].score) == (1.0, 0.0)       # the mean of the metric
    on_f1 = [Entry(c, Candidate(c), c) for c in TABLE]
    Race(on_f1, 4, evaluate, Budget(100), first=4).run()             # F1 unless told otherwise
    assert {e.cid: e.status for e in on_f1} == {"a": "dropped", "b": "kept"}
    assert on_f1[0].reason.startswith("after 4 questions: F1 -100.0")


def test_the_drop_rule_and_halving_take_the_metric() -> None:
    res = {c: _results(c, s, f1) for c, (s, f1) in TABLE.items()}
    assert list(drop_worse(res, "a", score=ACC)) == ["b"]
    assert list(drop_worse(res, "b")) == ["a"] and F1.name == "F1"
    _, gone = halve({**res, "c": _results("c", [0.5] * 4, 0.5)}, 2, ACC)
    assert [(h.cid, h.score) for h in gone] == [("b", 0.0)]


def test_a_state_saved_before_the_typed_fields_reads_the_same() -> None:
    """Resuming a search whose state file was written with `f1`, `extra` and a confirmation
    dict keyed `f1` (before this change) gives the typed records the same figures."""
    old = {"search_id": "s", "objective": "groundedness", "entries": [
        {"cid": "c00", "candidate": {"flow": "good.json", "model": "default", "operators": {},
                                     "params": {"gen.prompt": "P"}},
         "key": "k0", "status": "kept", "reached": 6, "f1": 0.75, "tokens": 12.0,
         "extra": {"hand_written": True, "search_eval": "e1", "search_best_run": "r1",
                   "confirm_eval": "e2", "confirm_best_run": "r2"}},
        {"cid": "c01", "candidate": {"flow": "good.json"}, "key": "k1", "f1": None,
         "extra": {"wave": 2}}],
        "confirm": {"c00": {"f1": 0.5, "n": 3, "tokens": 12.0, "seconds": 0.1, "vs": "c00",
                            "delta": 0.0, "low": 0.0, "high": 0.0}}}
    st = SearchState.from_dict(old)
    first, second = st.entries
    assert (first.score, first.hand_written, first.wave) == (0.75, True, None)
    assert first.candidate == Candidate("good.json", "default", {}, {"gen.prompt": "P"})
    assert (first.search_runs.eval_id, first.search_runs.best_run) == ("e1", "r1")
    assert (first.confirm_runs.eval_id, first.confirm_runs.best_run) == ("e2", "r2")
    assert (second.score, second.hand_written, second.wave) == (None, False, 2)
    assert st.confirm["c00"].score == 0.5 and st.confirm["c00"].vs == "c00"
    again = SearchState.from_dict(json.loads(json.dumps(st.to_dict())))
    assert again == st
    saved = json.dumps(st.to_dict())
    assert '"f1"' not in saved and '"extra"' not in saved


@pytest.mark.parametrize("name", ["f1", "em", "acc", "groundedness"])
def test_each_objective_is_a_metric_named_as_its_column(name: str) -> None:
    from flowkit.search.objective import Objective
    goal = Objective(name)
    assert goal.metric().name == goal.short
