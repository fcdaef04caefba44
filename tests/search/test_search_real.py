"""`flowkit search` end to end on the real model (SmolLM2-135M through llama.cpp), the real
embedder and Chroma, on a tiny space: naive_rag as written and one variant of its answer node,
raced on two sample questions and confirmed on two others."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowkit.ingest import SAMPLE_DIR, ensure_sample
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.resources import Resources, Settings, save_settings
from service import cli


@pytest.mark.real
def test_search_a_tiny_space_on_the_real_model(tmp_path: Path, capsys):
    home = tmp_path / "home"
    save_settings(home, Settings(llm=LLMSettings(model_path="smollm2-135m", n_ctx=4096)))
    ensure_sample(Resources(home))
    space = tmp_path / "space.json"
    space.write_text(json.dumps({
        "name": "tiny_real", "flows": ["naive_rag"], "max_candidates": 2,
        "params": [{"node": "generate", "param": "top_n", "choices": [2]},
                   {"node": "retrieve", "param": "top_k", "choices": [2]}]}))
    args = ["--data-dir", str(home), "search", str(space), "--dataset",
            str(SAMPLE_DIR / "questions.jsonl"), "--kb", "sample", "--search-questions", "3-4",
            "--confirm-questions", "1-2", "--budget-calls", "50", "--first-batch", "2"]
    assert cli.main(args) == 0
    got = capsys.readouterr()
    assert "estimate: 2 candidates raced on batches of [2] questions" in got.err
    state = json.loads(next(tmp_path.glob("space.search-*.json")).read_text())
    assert state["phase"] == "done" and [e["reached"] for e in state["entries"]] == [2, 2]
    assert state["budget"]["spent_calls"] > 0 and state["confirm"]["c00"]["vs"] == "c00"
    assert [(e["flow_name"], e["flow_version"]) for e in state["entries"]] == [
        ("tiny_real-c00", 1), ("tiny_real-c01", 1)]                     # saved as flows
    assert "search" in got.out and "c01" in got.out
    # the same command again resumes from the finished state: nothing is run
    assert cli.main(args) == 0
    again = capsys.readouterr()
    assert "(resumed;" in again.err and "calls computed" not in again.err
