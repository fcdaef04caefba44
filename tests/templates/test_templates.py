"""Every template loads, validates, compiles and runs; the loops show their shape in the trace.

Unit part: a scripted FakeLLM and an in-memory KB. Real part (`-m real`): the real default model,
embedder and Chroma on the sample knowledge base.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowkit import ListSink, check, compile_flow, run_flow
from flowkit.judges import PACKAGED_DIR, load_classifier, save_classifier
from flowkit.run_request import RunHooks, RunRequest
from flowkit.templates import load_template, names
from flowkit.testing import FakeLLM, HashEmbedder, fake_resources
from flowkit.testing.fakes import template_script

#: The methods the templates issue asks for, by file name.
REQUIRED = {"naive_rag", "advanced_linear", "rewrite_retrieve_read", "conditional",
            "pre_retrieval_branching", "post_retrieval_branching", "iter_retgen",
            "recursive_clarifications", "flare", "self_rag", "ircot", "agent_unirag",
            "agent_unirag_no_reflector", "agent_unirag_no_planning", "corag_early_stop",
            "corag_fixed"}
TWO_HOP = "On which island was the designer of the Corren Lighthouse born?"


def scripted() -> FakeLLM:
    return template_script()


def run(name: str, res: Any, question: str = TWO_HOP, **changes: Any) -> tuple[Any, ListSink]:
    spec = load_template(name)
    if changes:
        spec = spec.model_copy(update={"nodes": [
            n.model_copy(update={"params": {**n.params, **changes.get(n.id, {})}})
            for n in spec.nodes]})
    sink = ListSink()
    result = run_flow(compile_flow(spec), res, RunRequest(question, kb="test"), RunHooks(sink=sink))
    return result, sink


def test_every_method_has_a_template():
    assert REQUIRED <= set(names())


@pytest.mark.parametrize("name", names())
def test_template_validates_and_runs_with_a_scripted_model(name: str, tmp_path: Path):
    assert [p for p in check(load_template(name)) if p.severity == "error"] == []
    res = fake_resources(scripted(), kb="test", embedder=HashEmbedder())
    res.data_dir = tmp_path
    # the early-stop chain's weights were trained with the real embedder; give it fake ones here
    save_classifier(tmp_path / "judges" / "sufficiency.json", [0.0] * HashEmbedder.dim, -3.0)
    result, sink = run(name, res)
    assert result.status in ("ok", "budget_exceeded"), (result.status, result.error)
    assert result.answer.strip(), f"{name} gave no answer"
    assert sink.steps[0].node_id == load_template(name).entry_node()


#: iter_retgen's T = 3 rounds: two drafts feed the next retrieval, the third round answers
ITER_RETGEN_STEPS = ["retrieve", "rounds", "generate"] * 2 + ["retrieve", "rounds", "final"]


@pytest.mark.parametrize("name", names())
def test_template_opens_clean(name: str):
    """A shipped template has no problem at all: no error and no warning (issue 29)."""
    assert [(p.code, p.node, p.message) for p in check(load_template(name))] == []


def test_iter_retgen_runs_t_rounds():
    result, sink = run("iter_retgen", fake_resources(scripted(), kb="test"))
    assert [n for n, _ in sink.sequence()] == ITER_RETGEN_STEPS
    assert result.cost.calls == 3 and len(result.memory["drafts"]) == 3


def test_self_rag_checks_support_of_the_answer_it_keeps():
    result, sink = run("self_rag", fake_resources(scripted(), kb="test"))
    nodes = [n for n, _ in sink.sequence()]
    assert nodes[-2:] == ["useful", "support"], nodes


def test_agent_thought_action_evidence_then_final_answer():
    result, sink = run("agent_unirag", fake_resources(scripted(), kb="test"))
    assert [n for n, _ in sink.sequence()] == ["plan", "search", "reflect", "plan", "final"]
    actions = [h.get("action") for h in result.memory["history"] if "action" in h]
    assert actions == ["Search", "Final Answer"]
    assert result.memory["evidence"]


def test_agent_stops_at_its_compute_budget():
    llm = FakeLLM([(r"Reply with two lines:", "Thought: more.\nAction: Search[something else]")],
                  default="Mara Velt [1]")
    result, sink = run("agent_unirag", fake_resources(llm, kb="test"),
                       plan={"max_searches": 2})
    assert [n for n, _ in sink.sequence()].count("search") == 2
    assert sink.sequence()[-1][0] == "final" and result.status == "ok"
    assert result.memory["history"][-1]["thought"] == "compute budget spent"


@pytest.mark.parametrize("bias,expected_chain", [(5.0, 1), (-5.0, 4)])
def test_early_stop_chain_ends_when_the_classifier_says_sufficient(tmp_path: Path, bias: float,
                                                                     expected_chain: int):
    res = fake_resources(scripted(), kb="test", embedder=HashEmbedder())
    res.data_dir = tmp_path
    save_classifier(tmp_path / "w.json", [0.0] * HashEmbedder.dim, bias)
    result, sink = run("corag_early_stop", res, sufficient={"model_path": "w.json"})
    assert [n for n, _ in sink.sequence()].count("subq") == expected_chain
    assert sink.sequence()[-2:] == [("final_retrieve", 1), ("final", 1)]
    verdicts = [s.memory_after["judgement"] for s in sink.steps if s.node_id == "sufficient"]
    if bias > 0:
        assert [v["label"] for v in verdicts] == ["Sufficient"]
    else:
        assert [v["label"] for v in verdicts[:-1]] == ["Insufficient"] * 3
        assert verdicts[-1]["reason"] == "chain length 4 >= 4"


def test_fixed_chain_runs_exactly_l_steps():
    result, sink = run("corag_fixed", fake_resources(scripted(), kb="test"))
    assert [n for n, _ in sink.sequence()].count("subq") == 4


def test_packaged_sufficiency_weights_load():
    clf = load_classifier(PACKAGED_DIR / "sufficiency.json")
    assert clf.w.shape == (384,) and clf.meta.get("embedder")


# ---- the real default model on the sample knowledge base --------------------------------------
@pytest.mark.real
@pytest.mark.parametrize("name", names())
def test_template_runs_on_the_real_model(name: str, real_resources: Any):
    sink = ListSink()
    result = run_flow(compile_flow(load_template(name)), real_resources,
                      RunRequest(TWO_HOP, kb="sample"), RunHooks(sink=sink))
    assert result.status in ("ok", "budget_exceeded"), (result.status, result.error)
    assert result.answer.strip() and result.cost.calls >= 1 and result.cost.tokens > 0
    assert all(s.error is None for s in sink.steps)
    nodes = [n for n, _ in sink.sequence()]
    if name == "iter_retgen":
        assert nodes == ITER_RETGEN_STEPS
    if name == "agent_unirag":
        actions = [h["action"] for h in result.memory["history"] if "action" in h]
        assert actions[-1] == "Final Answer" or result.memory["history"][-1]["thought"] == \
            "compute budget spent"
        assert "reflect" in nodes and nodes[-1] == "final"
    if name == "corag_fixed":
        assert nodes.count("subq") == 4
    if name in ("corag_early_stop", "corag_fixed"):
        assert nodes[-2:] == ["final_retrieve", "final"]


@pytest.mark.real
def test_early_stop_with_the_real_embedder_stops_before_l(real_resources: Any, tmp_path: Path):
    save_classifier(tmp_path / "always.json", [0.0] * 384, 4.0,
                    meta={"embedder": real_resources.embedder.model_id})
    spec = load_template("corag_early_stop")
    spec = spec.model_copy(update={"nodes": [
        n.model_copy(update={"params": {**n.params, "model_path": str(tmp_path / "always.json")}})
        if n.id == "sufficient" else n for n in spec.nodes]})
    sink = ListSink()
    result = run_flow(compile_flow(spec), real_resources, RunRequest(TWO_HOP, kb="sample"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    assert [n for n, _ in sink.sequence()].count("subq") == 1 < 4
