"""Issue 39 item 5: breakpoint conditions and visits from the user never end a run with a
traceback. A condition that cannot be evaluated on the values in memory is a condition error
shown on the pause; a visit of 5,000 digits is a BreakpointError naming the breakpoint.

Before: `generate?[1] in documents[0]` raised TypeError (unhashable list) inside the engine and
the run ended as an error (7 of 98 probe conditions did this); `gen@<5,000 digits>` raised
ValueError (int conversion limit) out of the parser."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit.breakpoints import MAX_VISIT, Breakpoint, BreakpointError, parse_breakpoint
from flowkit.debug_expr import Condition, ExprError
from security.cliworld import Runner, flow_file, runner


@pytest.fixture()
def fk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
       ) -> Runner:
    return runner(tmp_path / "home", monkeypatch, capsys)


@pytest.mark.parametrize("condition", ["[1] in documents[0]", "documents in documents[0]",
                                       "[[]] in documents[0]", "documents[0] in documents[0]"])
def test_a_condition_that_cannot_be_evaluated_pauses_with_a_condition_error(
        tmp_path: Path, fk: Runner, condition: str) -> None:
    code, out, err = fk("run", str(flow_file(tmp_path)), "--kb", "test", "-q", "Who designed it?",
                        "--break", f"gen?{condition}", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "paused" and data["pause"]["node"] == "gen", data
    problem = data["pause"]["condition_error"]
    assert problem and "could not be evaluated" in problem and "Traceback" not in err


@pytest.mark.parametrize("text", ["gen@" + "9" * 5000, "gen@" + "1" * 20, f"gen@{MAX_VISIT + 1}"])
def test_a_huge_visit_is_a_breakpoint_error(text: str) -> None:
    with pytest.raises(BreakpointError, match="the visit is a number from 1 to 1,000,000"):
        parse_breakpoint(text)


def test_a_huge_visit_in_a_request_is_a_breakpoint_error() -> None:
    for visit in (10 ** 30, True, -1):
        with pytest.raises(BreakpointError, match="the visit is a number from 1"):
            Breakpoint.from_dict({"node": "gen", "visit": visit})


def test_a_huge_visit_on_the_command_line_is_one_line(tmp_path: Path, fk: Runner) -> None:
    code, _, err = fk("run", str(flow_file(tmp_path)), "--kb", "test", "-q", "q",
                      "--break", "gen@" + "9" * 5000)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "5000 digits" in err


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats()
                     | st.text(max_size=5),
                     lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(st.text(max_size=3), kids, max_size=3), max_leaves=8)
_OPERAND = st.sampled_from(["documents", "documents[0]", "documents[0].id", "answer", "queries",
                            "judgement", "judgement.score", "[1]", "[]", "[[1]]", "\"a\"", "1",
                            "-2.5", "null", "true", "len(documents)", "len(answer)", "visit",
                            "queries[0]", "scratch"])
_OP = st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(left=_OPERAND, op=_OP, right=_OPERAND, memory=st.dictionaries(
    st.sampled_from(["documents", "answer", "queries", "judgement", "scratch"]), _JSON))
def test_any_condition_over_any_memory_holds_or_is_an_expr_error(
        left: str, op: str, right: str, memory: dict[str, Any]) -> None:
    cond = Condition.of(f"{left} {op} {right}")
    try:
        assert cond.holds({**memory, "visit": 1}) in (True, False)
    except ExprError as e:
        assert str(e)
