"""Topology catalogue with a scripted LLM: outputs and the exact sequence of (node, visit) steps."""
from __future__ import annotations

from flowkit import ListSink, compile_flow, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources, flow

Q = "Where was Mara Velt born?"


def run(spec, llm=None, question=Q):
    sink = ListSink()
    res = fake_resources(llm or FakeLLM([(r"Question:", "Tessel [1]")]))
    result = run_flow(compile_flow(spec), res, RunRequest(question, kb="test"), RunHooks(sink=sink))
    return result, sink


def test_linear():
    spec = flow("linear", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
                ["ret>gen"])
    result, sink = run(spec)
    assert result.status == "ok"
    assert sink.sequence() == [("ret", 1), ("gen", 1)]
    assert result.answer == "Tessel"
    assert result.citations == [sink.steps[0].memory_after["documents"][0]["id"]]
    assert result.cost.calls == 1 and result.cost.tokens > 0


def test_router_takes_the_labelled_edge():
    spec = flow("router", [
        ("route", "orchestration.keyword_router",
         {"routes": {"retrieve": ["born", "where"]}, "default": "direct"}),
        ("ret", "retrieval.bm25", {"top_k": 2}),
        ("gen", "generation.answer"),
        ("closed", "generation.answer", {"max_tokens": 8}),
    ], ["route>ret:retrieve", "route>closed:direct", "ret>gen"])
    result, sink = run(spec)
    assert sink.sequence() == [("route", 1), ("ret", 1), ("gen", 1)]
    assert result.memory["route"] == "retrieve"
    _, sink2 = run(spec, question="Tell me a joke")
    assert sink2.sequence() == [("route", 1), ("closed", 1)]


def test_fan_out_and_merge_with_rrf():
    spec = flow("fan", [
        ("bm25", "retrieval.bm25", {"top_k": 2}),
        ("dense", "retrieval.dense", {"top_k": 3}),
        ("fanout", "retrieval.bm25", {"top_k": 1}),
        ("merge", "orchestration.rrf", {"top_k": 3}),
        ("gen", "generation.answer"),
    ], ["fanout>bm25", "fanout>dense", "bm25>merge", "dense>merge", "merge>gen"])
    result, sink = run(spec)
    seq = sink.sequence()
    assert seq[0] == ("fanout", 1)
    assert sorted(seq[1:3]) == [("bm25", 1), ("dense", 1)]       # parallel, either order
    assert seq[3:] == [("merge", 1), ("gen", 1)]
    merged = sink.steps[3]
    assert len(merged.memory_before["branches"]) == 2              # it saw both branches
    assert [d["id"] for d in merged.memory_after["documents"]][:1] == ["d2"]
    # the branches wrote into their own scopes; global documents came from the merge only
    assert result.memory["documents"] == merged.memory_after["documents"]
    assert result.status == "ok"


def test_bounded_loop_runs_exactly_t_rounds():
    spec = flow("loop", [
        ("ret", "retrieval.bm25", {"top_k": 2, "add_last_answer": True}),
        ("gen", "generation.answer"),
        ("judge", "orchestration.rule_judge", {"max_rounds": 3}),
    ], ["ret>gen", "gen>judge", "judge>ret:continue"], entry="ret")
    result, sink = run(spec)
    assert sink.sequence() == [(n, v) for v in (1, 2, 3) for n in ("ret", "gen", "judge")]
    assert result.memory["drafts"] == ["Tessel"] * 3
    assert sink.steps[3].retrievals[0].query.endswith("Tessel")     # round 2 used the last answer
    assert result.status == "ok"


def test_loop_with_a_branch_inside():
    spec = flow("loop-branch", [
        ("plan", "retrieval.bm25", {"top_k": 1}),
        ("a", "retrieval.bm25", {"top_k": 2}),
        ("b", "retrieval.dense", {"top_k": 2}),
        ("merge", "orchestration.rrf", {"top_k": 2}),
        ("gen", "generation.answer"),
        ("judge", "orchestration.rule_judge", {"max_rounds": 2}),
    ], ["plan>a", "plan>b", "a>merge", "b>merge", "merge>gen", "gen>judge", "judge>plan:continue"],
        entry="plan")
    result, sink = run(spec)
    seq = sink.sequence()
    for r in (0, 1):
        chunk = seq[r * 6:(r + 1) * 6]
        v = r + 1
        assert chunk[0] == ("plan", v)
        assert sorted(chunk[1:3]) == [("a", v), ("b", v)]
        assert chunk[3:] == [("merge", v), ("gen", v), ("judge", v)]
    assert len(seq) == 12
    assert result.status == "ok"


def test_limit_ends_the_loop_with_an_answer():
    spec = flow("runaway", [
        ("ret", "retrieval.bm25", {"top_k": 2}),
        ("gen", "generation.answer"),
        ("judge", "orchestration.rule_judge", {"max_rounds": 100}),
    ], ["ret>gen", "gen>judge", "judge>ret:continue"], entry="ret",
        limits={"max_llm_calls": 2})
    result, sink = run(spec)
    assert result.status == "budget_exceeded"
    assert result.halt_reason.startswith("max_llm_calls")
    assert result.answer == "Tessel"                   # from the drafts in memory
    assert result.cost.calls == 2
    assert sink.sequence() == [("ret", 1), ("gen", 1), ("judge", 1), ("ret", 2), ("gen", 2)]


def test_step_limit_without_any_answer_makes_one_final_call():
    # the answer node lies behind a judge that never says "done" within the step limit
    spec = flow("steps", [
        ("ret", "retrieval.bm25", {"top_k": 2}),
        ("judge", "orchestration.rule_judge", {"max_rounds": 100}),
        ("gen", "generation.answer"),
    ], ["ret>judge", "judge>ret:continue", "judge>gen:done"], entry="ret", limits={"max_steps": 4})
    llm = FakeLLM([(r"Answer the question in one short sentence", "Tessel")])
    result, sink = run(spec, llm)
    assert result.status == "budget_exceeded"
    assert result.halt_reason.startswith("max_steps")
    assert result.answer == "Tessel"
    assert sink.sequence()[-1] == ("_finish", 1)
    assert len(sink.sequence()) == 5


def test_node_failure_is_recorded_on_its_node():
    spec = flow("fail", [("gen", "generation.answer"), ("merge", "orchestration.rrf")],
                ["gen>merge"])
    result, sink = run(spec)
    assert result.status == "error"
    assert "node 'merge'" in result.error and "orchestration.rrf" in result.error
    assert sink.steps[-1].node_id == "merge" and sink.steps[-1].error
