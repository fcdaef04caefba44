"""A tiny evaluation with --concurrency 2 against the real `flowkit serve-model` (SmolLM2), run
as `flowkit eval` does: every run ends ok, stored in the serial order, the concurrency recorded.
Answers are not compared with a serial run here: a server may batch, and greedy answers from a
batching server can differ from serial ones (bench/concurrency.py counts them)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowkit.eval.datasets import from_path
from flowkit.eval.runner import FlowEntry, evaluation_report, make_plan, run_evaluation
from flowkit.eval.strategy import EvalRun, InFlight
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.resources import Settings
from flowkit.templates import load_template
from service.workspace import Workspace
from storage.evals import EvalRepo

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_evaluation_with_two_in_flight(llama_server_url: str, real_resources: Any,
                                            tmp_path: Path) -> None:
    # a data dir of its own: a second Workspace on the session's shared one (real_resources')
    # left its sample knowledge base empty for every real test after it
    from flowkit.ingest import ensure_sample
    settings = Settings(llm=LLMSettings(backend="openai", base_url=llama_server_url,
                                        model_name="default", n_ctx=4096),
                        completion_cache=False)
    ws = Workspace(tmp_path, settings)
    ws.resources.set_embedder(real_resources.embedder)
    ensure_sample(ws.resources)
    repo = EvalRepo(ws.store)
    ds = from_path(ROOT / "flowkit" / "sample_kb" / "questions.jsonl")
    repo.save_dataset(ds.name, ds.source, ds.questions)
    flows = [FlowEntry(ref=name, spec=load_template(name))
             for name in ("naive_rag", "rewrite_retrieve_read")]
    plan = make_plan(flows, ds.name, ds.questions, "sample", limit=2, eval_id="realconc0002")
    try:
        out = run_evaluation(ws, repo, plan, EvalRun(strategy=InFlight(2)))
    finally:
        ws.close()
    runs = repo.runs(plan.eval_id)
    assert out.status == "done" and out.ran == plan.total == 4
    assert [r.record.status for r in runs] == ["ok"] * 4
    assert [r.id[len(plan.eval_id) + 1:] for r in runs] == ["0-0", "1-0", "0-1", "1-1"]
    assert all(r.record.answer.strip() for r in runs)
    assert out.execution.concurrency == 2
    rep = evaluation_report(repo, plan)
    assert rep.execution[-1]["concurrency"] == 2
    assert json.loads(json.dumps(rep.to_dict()["execution"]))[-1]["concurrency"] == 2
