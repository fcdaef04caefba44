"""What evaluation output and cost records say is written in one place (issue 49, item 5): the cost
of model calls is one value, `flowkit.cost.Cost`, that records hold instead of their own copy of
its fields, and a model judge's interval is formatted by `flowkit.eval.formatting.judge_interval`
alone, for the exports and the Compare page alike. These checks read the source (AST), so a new
hand copy fails here instead of drifting."""
from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator
from pathlib import Path

from flowkit.cost import Cost
from flowkit.eval.formatting import TOO_FEW, judge_interval, judge_rows, judge_weight_words
from flowkit.eval.metrics import PairedDiff
from flowkit.eval.ppi_pp import JudgeWeight
from flowkit.eval.report import EvalReport, JudgeScore
from studio.compare import judges_data

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flowkit", "service", "studio", "storage", "pages")

#: A cost's parts as records have named them: calls made (or computed), calls the cache served,
#: tokens, the model's milliseconds. Wall time (`seconds`, `elapsed_s`, `wall_ms`) is not a cost,
#: nor is the time the cache saved (`saved_ms`).
COST_PARTS = {
    "calls": re.compile(r"^(?!.*cached)(\w+_)?(calls|computed)$"),
    "cached": re.compile(r"^(\w+_)?cached(_calls)?$"),
    "tokens": re.compile(r"^(\w+_)?tokens$"),
    "ms": re.compile(r"^(?!saved_|wall_)(\w+_)?ms$"),
}
#: Records left with their own cost fields, each with why; remove an entry once it holds a Cost
#: (none left: the engine's RunEnd and storage's RunInfo hold one too).
KNOWN_COST_COPIES: dict[str, str] = {}
#: Hand-written judge intervals left in place, each with why (none left: `flowkit judge`'s
#: console table now shows `judge_interval` too).
KNOWN_JUDGE_FORMATTERS: dict[str, str] = {}


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "node_modules" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text("utf-8"))


def _is_dataclass(node: ast.ClassDef) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if (getattr(target, "id", None) or getattr(target, "attr", None)) == "dataclass":
            return True
    return False


def _cost_parts(node: ast.ClassDef) -> set[str]:
    names = [s.target.id for s in node.body
             if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    return {part for part, pattern in COST_PARTS.items() if any(pattern.match(n) for n in names)}


def test_no_record_but_cost_declares_the_cost_fields() -> None:
    """No dataclass besides Cost declares calls and cached calls beside tokens or model ms: a
    record that counts what model calls cost holds a `Cost`."""
    found = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ClassDef) and _is_dataclass(node)):
                continue
            parts = _cost_parts(node)
            where = f"{rel}:{node.name}"
            if ({"calls", "cached"} <= parts and parts & {"tokens", "ms"}
                    and where != "flowkit/cost.py:Cost" and where not in KNOWN_COST_COPIES):
                found.append(f"{where} ({', '.join(sorted(parts))})")
    assert found == [], f"cost fields declared outside flowkit.cost.Cost (hold a Cost): {found}"


def test_cost_is_defined_once_and_adds_up() -> None:
    homes = [rel for rel, tree in _sources() for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef) and node.name == "Cost"]
    assert homes == ["flowkit/cost.py"]
    total = Cost(3, 1, 40, 12.5) + Cost(2, 2, 10, 0.5)
    assert total == Cost(5, 3, 50, 13.0) and total.computed == 2


def test_the_known_copies_still_exist() -> None:
    """An entry of KNOWN_COST_COPIES whose record now holds a Cost is removed from the list."""
    left = {f"{rel}:{node.name}" for rel, tree in _sources() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and _is_dataclass(node)
            and {"calls", "cached"} <= _cost_parts(node)}
    assert set(KNOWN_COST_COPIES) <= left, set(KNOWN_COST_COPIES) - left


def _judge_formatters(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """Functions that read a judge score (`.estimate`, `.vs_baseline`) and write an interval's
    ends (`.low`, `.high`) into an f-string themselves."""
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or fn.name == "judge_interval":
            continue
        attrs = {a.attr for a in ast.walk(fn) if isinstance(a, ast.Attribute)}
        if not attrs & {"estimate", "vs_baseline"}:
            continue
        for s in ast.walk(fn):
            if isinstance(s, ast.JoinedStr):
                inner = {a.attr for a in ast.walk(s) if isinstance(a, ast.Attribute)}
                if {"low", "high"} <= inner:
                    yield fn
                    break


def test_a_judge_interval_is_formatted_by_judge_interval_only() -> None:
    found = [f"{rel}:{fn.lineno} {fn.name}" for rel, tree in _sources()
             for fn in _judge_formatters(tree) if rel not in KNOWN_JUDGE_FORMATTERS]
    assert found == [], f"judge intervals formatted by hand (use judge_interval): {found}"
    homes = [rel for rel, tree in _sources() for fn in ast.walk(tree)
             if isinstance(fn, ast.FunctionDef) and fn.name == "judge_interval"]
    assert homes == ["flowkit/eval/formatting.py"]


def _score(labels: int, mean: float, low: float, high: float) -> JudgeScore:
    d = PairedDiff("correctness", "f", "", labels, mean, low, high)
    vs = PairedDiff("correctness", "f", "base", labels, mean - 0.5, low - 0.5, high - 0.5)
    return JudgeScore("f", "correctness", "m", d, True, labels, vs_baseline=vs, vs_corrected=True)


def test_the_exports_and_the_compare_page_show_a_judge_interval_alike() -> None:
    """The same score reads the same in the exports' judge table and on the Compare page: cut
    to 0-100, and from one label never as an exact interval."""
    rep = EvalReport("e", "n", "d", "kb", ["base", "f"], "base", 5, 1, {})
    for labels, mean, low, high in ((1, 0.8, 0.8, 0.8), (6, 0.9, 0.62, 1.18)):
        j = _score(labels, mean, low, high)
        rep.judges = [j]
        row = judge_rows(rep)[1]
        assert judges_data.score_cell(j) == f"PPI {row[2]}"
        assert judges_data.delta_cell(j, "base") == f"PPI {row[5]}"
        assert row[2] == judge_interval(j.estimate, labelled=True)
        if labels == 1:
            assert row[2] == f"80.0 ({TOO_FEW})" and "[" not in row[5]
        else:
            assert row[2] == "90.0 [62.0, 100.0]" and row[5] == "+40.0 [+12.0, +68.0] *"
    nothing = PairedDiff("g", "f", "", 0, math.nan, math.nan, math.nan)
    assert judge_interval(nothing, labelled=True) == "-"


def test_a_judges_weight_reads_alike_in_the_exports_and_on_the_compare_page() -> None:
    """The PPI++ weight and effective labels: the same words in the exports' judge table and the
    Compare page's rows, by `judge_weight_words`."""
    from service.grading import JudgedReport
    j = _score(6, 0.9, 0.62, 1.18)
    j.weight, j.vs_weight = JudgeWeight(0.42, 6, 8.4), JudgeWeight(0.1, 6, 6.1)
    rep = EvalReport("e", "n", "d", "kb", ["base", "f"], "base", 5, 1, {})
    rep.judges = [j]
    row = judge_rows(rep)[1]
    assert row[6] == judge_weight_words(j.weight) == "weight 0.42: the judge makes 6 labels " \
        "worth about 8"
    assert row[7] == judge_weight_words(j.vs_weight)
    (shown,) = judges_data.score_rows([JudgedReport("e", "correctness", "m", "base", [j])])
    assert shown["judge weight"] == row[6]


def test_a_run_ends_saved_form_keeps_its_flat_keys_and_loads_back() -> None:
    """RunEnd holds a Cost; what it saves (a run job's result) keeps the keys it always had, and
    such a saved end, old or new, loads back."""
    from flowkit.trace import RunEnd
    end = RunEnd("r1", "ok", "Tessel", ["d1"], 3, Cost(2, 1, 40, 12.5), wall_ms=3.0)
    saved = end.to_dict()
    assert list(saved) == ["run_id", "status", "answer", "citations", "steps", "llm_calls", "tokens",
                           "ms", "error", "halt_reason", "memory", "wall_ms", "cached_calls"]
    assert (saved["llm_calls"], saved["cached_calls"], saved["tokens"], saved["ms"]) == (2, 1, 40, 12.5)
    assert RunEnd.from_dict(saved) == end
    old = {k: v for k, v in saved.items() if k not in ("wall_ms", "cached_calls")}   # before either
    assert RunEnd.from_dict(old).cost == Cost(2, 0, 40, 12.5)
