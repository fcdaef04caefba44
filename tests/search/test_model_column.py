"""An evaluation column that names a model (`--flow good.json@MODEL`): it runs in that model's
workspace, its own column and id; a bad model name is refused naming the ref."""
from __future__ import annotations

import pytest

from flowkit.errors import FlowkitError
from flowkit.eval.datasets import from_path
from flowkit.eval.runner import collect_results, make_plan, resolve_flows, run_evaluation
from flowkit.eval.strategy import EvalRun
from flowkit.testing import FakeLLM, MemoryKB
from service.evaluations import eval_repo
from service.modelchoice import split_ref
from service.workspace import Workspace

from .conftest import CORPUS


def test_split_ref():
    assert split_ref("naive_rag@smollm2-135m") == ("naive_rag", "smollm2-135m")
    assert split_ref("naive_rag@default") == ("naive_rag", "")
    assert split_ref("naive_rag") == ("naive_rag", "")
    with pytest.raises(FlowkitError, match="--flow 'naive_rag@gpt-9': unknown model 'gpt-9'"):
        split_ref("naive_rag@gpt-9")


def test_a_column_on_another_model_runs_in_that_models_workspace(world, tmp_path):
    other = Workspace(world.root / "home")            # the same database, another model
    other.resources.set_llm(FakeLLM(default="Olga"))
    other.resources._kbs["test"] = MemoryKB("test", CORPUS)
    asked = []

    def workspace_for(model):
        asked.append(model)
        return other

    ds = from_path(world.dataset)
    repo = eval_repo(world.ws)
    repo.save_dataset(ds.name, ds.source, ds.questions)
    flows = resolve_flows(world.ws, [str(world.flow), f"{world.flow}@smollm2-135m"], split_ref)
    assert [f.model for f in flows] == ["", "smollm2-135m"]
    plan = make_plan(flows, ds.name, ds.questions, "test", limit=2)
    assert [f.label for f in plan.flows] == ["good", "good@smollm2-135m"]
    with pytest.raises(FlowkitError, match="a flow@model column runs without --workers"):
        run_evaluation(world.ws, repo, plan)
    out = run_evaluation(world.ws, repo, plan, EvalRun(workspace_for=workspace_for))
    assert out.status == "done" and asked == ["smollm2-135m"]
    res = collect_results(plan, repo.runs(plan.eval_id), repo.retrievals(plan.eval_id))
    assert [r.prediction for r in res["good@smollm2-135m"]] == ["Olga", "Olga"]
    assert [r.f1 for r in res["good"]] == [1.0, 1.0]
    assert repo.get_eval(plan.eval_id).flows[1]["model"] == "smollm2-135m"
