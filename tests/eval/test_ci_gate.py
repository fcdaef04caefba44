"""The CI gate (flowkit/eval/gate.py, flowkit/eval/junit.py) on reports built from constructed
results: a flow worse than the reference fails, an equal one passes, thresholds in the tables'
units, unreadable conditions refused with their text, and the JUnit file read back by a JUnit
parser."""
from __future__ import annotations

import junitparser
import numpy as np
import pytest

from flowkit.eval.gate import GateError, Threshold, WorseThan, check, check_flows, parse
from flowkit.eval.junit import write_junit
from flowkit.eval.metrics import QuestionResult, paired_bootstrap
from flowkit.eval.report import build_report

N = 30


def results(flow: str, f1: list[float], *, tokens: int = 100, failed: int = 0,
            recall: float | None = None) -> list[QuestionResult]:
    return [QuestionResult(flow, f"q{i}", f"question {i}", ["x"], "x",
                           "error" if i < failed else "ok", em=float(v == 1.0), f1=v,
                           acc=float(v > 0.5), recall=recall, tokens=tokens + i, llm_calls=1)
            for i, v in enumerate(f1)]


def report(**flows: list[QuestionResult]):
    return build_report(dict(flows), eval_id="e1", k=5)


@pytest.fixture()
def scores() -> list[float]:
    rng = np.random.default_rng(0)
    return [float(v) for v in rng.uniform(0.2, 1.0, N)]


def by(outcomes, flow: str, text: str):
    (o,) = [o for o in outcomes if o.flow == flow and o.condition.text == text]
    return o


def test_a_worse_flow_fails_and_an_equal_one_passes(scores) -> None:
    worse = [max(0.0, s - 0.3) for s in scores]
    rep = report(base=results("base", scores), same=results("same", scores),
                 worse=results("worse", worse))
    out = check([parse("worse-than base on f1")], rep)
    assert [o.flow for o in out] == ["same", "worse"]      # the reference is not checked
    assert by(out, "same", "worse-than base on f1").status == "passed"
    failed = by(out, "worse", "worse-than base on f1")
    assert failed.failed and failed.message.startswith("worse: worse than base, f1 minus base's: ")
    d = rep.deltas["worse"][1]                               # the report's own interval
    assert d.metric == "f1" and d.high < 0 and f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}]" \
        in failed.message


def test_a_difference_whose_interval_holds_0_passes(scores) -> None:
    rng = np.random.default_rng(1)
    noisy = [float(np.clip(s + rng.normal(0, 0.2), 0, 1)) for s in scores]
    rep = report(base=results("base", scores), noisy=results("noisy", noisy))
    d = rep.deltas["noisy"][1]
    assert d.low < 0 < d.high
    (o,) = check([parse("worse-than base on f1")], rep)
    assert o.status == "passed"


def test_worse_on_a_cost_is_more_of_it_and_any_flow_can_be_the_reference(scores) -> None:
    rep = report(base=results("base", scores), cheap=results("cheap", scores, tokens=50),
                 dear=results("dear", scores, tokens=400))
    out = check([parse("worse-than cheap on tokens")], rep)
    assert by(out, "dear", "worse-than cheap on tokens").failed
    assert by(out, "base", "worse-than cheap on tokens").failed
    assert [o.flow for o in out] == ["base", "dear"]
    # against a flow that is not the baseline, the same paired bootstrap the report uses
    d = paired_bootstrap(rep.results["dear"], rep.results["cheap"], "tokens")
    assert f"{d.mean:+.0f} [{d.low:+.0f}, {d.high:+.0f}]" in out[1].message
    assert not check([parse("worse-than dear on tokens")], rep)[0].failed


def test_thresholds_are_in_the_tables_units(scores) -> None:
    low = [0.1] * N
    rep = report(base=results("base", scores), low=results("low", low, failed=2))
    out = check([parse("f1 < 30"), parse("failed > 0"), parse("tokens >= 114.5"),
                 parse("recall < 50")], rep)
    assert by(out, "low", "f1 < 30").failed and by(out, "base", "f1 < 30").status == "passed"
    assert by(out, "low", "f1 < 30").message == "low: f1 is 10.0, below 30 (--fail-if 'f1 < 30')"
    assert by(out, "low", "failed > 0").failed and not by(out, "base", "failed > 0").failed
    assert by(out, "low", "failed > 0").message.startswith("low: failed is 2, above 0")
    mean_tokens = 100 + (N - 1) / 2                          # 114.5 a question
    assert mean_tokens == 114.5 and by(out, "base", "tokens >= 114.5").failed
    # no gold passages: recall has no value, so the check is skipped, not failed
    assert {o.status for o in out if o.condition.text == "recall < 50"} == {"skipped"}


@pytest.mark.parametrize("text, why", [
    ("f1 << 30", "not a condition"),
    ("vibes < 3", "unknown metric 'vibes'"),
    ("f1 < thirty", "not a condition"),
    ("worse-than naive_rag on vibes", "'vibes' cannot be compared question by question"),
    ("worse-than naive_rag f1", "not a condition"),
    ("", "not a condition"),
])
def test_an_unreadable_condition_is_refused_naming_it(text, why) -> None:
    with pytest.raises(GateError) as e:
        parse(text)
    assert f"--fail-if '{text}': {why}" in str(e.value) and "worse-than FLOW on METRIC" in str(e.value)


def test_conditions_parse_to_their_parts() -> None:
    assert parse(" F1 <= 30.5 ") == Threshold("F1 <= 30.5", "f1", "<=", 30.5)
    assert parse("Worse-Than naive_rag@m on EM") == WorseThan("Worse-Than naive_rag@m on EM",
                                                              "naive_rag@m", "em")
    with pytest.raises(GateError, match=r"'ircot' is not a flow of this evaluation \(a, b\)"):
        check_flows([parse("worse-than ircot on f1")], ["a", "b"])


def test_the_junit_report_reads_back_with_a_junit_parser(scores, tmp_path) -> None:
    worse = [max(0.0, s - 0.3) for s in scores]
    rep = report(base=results("base", scores), worse=results("worse", worse))
    out = check([parse("f1 < 30"), parse("worse-than base on f1"), parse("recall < 10")], rep)
    path = write_junit(tmp_path / "gate.xml", out, "flowkit eval e1")
    xml = junitparser.JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    assert suite.name == "flowkit eval e1"
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 1, 0, 2)
    cases = {(c.classname, c.name): c for c in suite}
    assert set(cases) == {("base", "f1 < 30"), ("worse", "f1 < 30"),
                          ("worse", "worse-than base on f1"), ("base", "recall < 10"),
                          ("worse", "recall < 10")}
    failing = cases[("worse", "worse-than base on f1")]
    (failure,) = failing.result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message == by(out, "worse", "worse-than base on f1").message
    assert cases[("base", "f1 < 30")].is_passed
    assert cases[("base", "recall < 10")].is_skipped
