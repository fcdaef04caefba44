"""Pausing and going on in the engine, on every topology shape and every template, with the
scripted model: a run paused and continued (any number of times) gives the same steps, prompts
and answer as the same run straight through."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from debugkit import SHAPES, compiled, drive, llm, straight

from flowkit import compile_flow
from flowkit.breakpoints import Breakpoint, BreakpointError, check_breakpoints, parse_breakpoint
from flowkit.judges import save_classifier
from flowkit.templates import load_template, names
from flowkit.testing import HashEmbedder, fake_resources
from flowkit.testing.fakes import template_script


def prompts(sink: Any) -> list[str]:
    return [c.prompt for s in sink.steps for c in s.llm_calls]


def eligible(flow: Any) -> list[str]:
    return [n for n in flow.operators if n not in flow.topology.branch_of]


def same_as_straight(flow: Any, res_factory: Any, bps: list[Any], modes: list[str] | None = None,
                     question: str = "Where was Mara Velt born?") -> list[Any]:
    end0, sink0 = straight(flow, res_factory(), question)
    end, sink, pauses = drive(flow, res_factory(), bps, modes, question)
    assert end.status == end0.status and end.answer == end0.answer
    # parallel branches may record their steps in either order
    assert sorted(sink.sequence()) == sorted(sink0.sequence())
    assert [x for x in sink.sequence() if x[0] not in flow.topology.branch_of] == \
        [x for x in sink0.sequence() if x[0] not in flow.topology.branch_of]
    assert sorted(prompts(sink)) == sorted(prompts(sink0))
    assert [s.index for s in sink.steps] == list(range(len(sink.steps)))   # one trace, in order
    assert (end.steps, end.cost.calls, end.cost.tokens) == (end0.steps, end0.cost.calls, end0.cost.tokens)
    assert end.memory == end0.memory
    return pauses


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("when", ["before", "after"])
def test_pausing_at_every_node_changes_nothing(shape: str, when: str):
    flow = compiled(shape)
    bps = [Breakpoint(n, when) for n in eligible(flow)]
    pauses = same_as_straight(flow, lambda: fake_resources(llm()), bps)
    assert pauses, "the run never paused"
    for p in pauses:
        assert p.node in flow.operators and p.node not in flow.topology.branch_of
        assert p.when == when if when == "before" else p.after_node is not None


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stepping_through_a_run_pauses_before_every_node(shape: str):
    flow = compiled(shape)
    entry = flow.spec.entry_node()
    pauses = same_as_straight(flow, lambda: fake_resources(llm()), [entry], ["step"] * 50)
    end0, sink0 = straight(flow, fake_resources(llm()))
    outside = [(n, v) for n, v in sink0.sequence() if n not in flow.topology.branch_of]
    assert [(p.node, p.visit) for p in pauses] == outside     # one pause before each node
    assert [p.reason for p in pauses] == ["breakpoint " + entry] + ["step"] * (len(pauses) - 1)


def test_step_over_a_fan_out_runs_the_branches_as_one_step():
    flow = compiled("fan")
    pauses = same_as_straight(flow, lambda: fake_resources(llm()), ["fanout"], ["step"])
    assert [(p.node, p.reason) for p in pauses] == [("fanout", "breakpoint fanout"),
                                                    ("merge", "step")]
    assert len(pauses[1].state["branches"]) == 2              # the merge's inputs are kept


def test_a_breakpoint_on_a_visit_and_one_with_a_condition():
    flow = compiled("loop")
    pauses = same_as_straight(flow, lambda: fake_resources(llm()),
                              ["gen@2", "ret?len(drafts) >= 2", "judge@3:after"])
    assert [(p.node, p.visit, p.reason) for p in pauses] == [
        ("gen", 2, "breakpoint gen@2"),
        ("ret", 3, "breakpoint ret?len(drafts) >= 2"),
        ("final", 1, "breakpoint judge@3:after")]
    assert pauses[1].memory["drafts"] == ["Tessel", "Tessel"]
    assert pauses[2].after_node == "judge" and pauses[2].memory["route"] == "done"


def test_step_over_a_loop_pauses_at_the_first_node_after_it():
    flow = compiled("loop")
    pauses = same_as_straight(flow, lambda: fake_resources(llm()), ["gen@1"], ["over"])
    assert [(p.node, p.visit, p.reason) for p in pauses] == [
        ("gen", 1, "breakpoint gen@1"), ("final", 1, "step over loop")]
    assert pauses[1].state["visits"] == {"ret": 3, "gen": 3, "judge": 3}


def test_step_over_outside_a_loop_is_one_step():
    flow = compiled("linear")
    pauses = same_as_straight(flow, lambda: fake_resources(llm()), ["ret"], ["over"])
    assert [(p.node, p.reason) for p in pauses] == [("ret", "breakpoint ret"), ("gen", "step")]


def test_breakpoints_still_hit_while_stepping_over_a_loop():
    flow = compiled("loop")
    pauses = same_as_straight(flow, lambda: fake_resources(llm()), ["gen@1", "judge@2"], ["over"])
    assert [(p.node, p.visit) for p in pauses] == [("gen", 1), ("judge", 2)]


def test_a_condition_that_cannot_be_evaluated_pauses_and_says_why():
    flow = compiled("linear")
    end, sink, pauses = drive(flow, fake_resources(llm()), ["gen?question < 3"])
    assert len(pauses) == 1 and pauses[0].node == "gen"
    assert "cannot order text against a number" in (pauses[0].condition_error or "")
    assert end.status == "ok" and end.answer == "Tessel"


def test_bad_breakpoints_are_refused_with_every_problem_named():
    flow = compiled("fan")
    with pytest.raises(BreakpointError) as e:
        check_breakpoints(flow, ["nope", "bm25", "dense:after"])
    msg = str(e.value)
    assert "flow 'fan' has no node 'nope'" in msg
    assert "node 'bm25' is inside a parallel branch" in msg and "fan-out 'fanout'" in msg
    assert "before the merge 'merge'" in msg and "breakpoint 'dense:after'" in msg
    with pytest.raises(BreakpointError, match=r"breakpoint 'gen\?len\(answer\) <': the condition "
                       r"'len\(answer\) <' does not parse at column 14"):
        parse_breakpoint("gen?len(answer) <")
    with pytest.raises(BreakpointError, match="unknown key 'answr'"):
        parse_breakpoint("gen?answr == 'x'")
    for bad in ("gen@0", "gen:later", "9gen", "gen?", "gen@x"):
        with pytest.raises(BreakpointError, match="breakpoint"):
            parse_breakpoint(bad)


def test_breakpoint_text_round_trips():
    for text in ("gen", "gen@2", "judge@3:after", "ret?len(documents) == 0",
                 "ret@1:after?'x' in answer and visit > 1"):
        bp = parse_breakpoint(text)
        assert parse_breakpoint(bp.label()) == bp == Breakpoint.from_dict(bp.to_dict())
    assert parse_breakpoint("gen:before") == Breakpoint("gen")


def test_a_flow_runs_straight_through_without_a_debug_hook():
    """Breakpoints are not part of a flow: the spec has no place for them, and a run without a
    hook (evaluations, exports) never pauses."""
    spec = SHAPES["loop"]
    assert "breakpoints" not in spec.model_dump()
    with pytest.raises(Exception, match="breakpoints"):
        type(spec).model_validate({**spec.model_dump(), "breakpoints": ["gen"]})
    end, _ = straight(compile_flow(spec), fake_resources(llm()))
    assert end.status == "ok"


@pytest.mark.parametrize("name", names())
def test_every_template_paused_before_every_node_matches_a_straight_run(name: str, tmp_path: Path):
    def res() -> Any:
        r = fake_resources(template_script(), kb="test", embedder=HashEmbedder())
        r.data_dir = tmp_path
        return r
    save_classifier(tmp_path / "judges" / "sufficiency.json", [0.0] * HashEmbedder.dim, -3.0)
    flow = compile_flow(load_template(name))
    pauses = same_as_straight(flow, res, eligible(flow),
                              question="On which island was the designer of the Corren "
                                       "Lighthouse born?")
    assert len(pauses) >= 2
