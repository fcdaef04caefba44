"""`flowkit search --objective groundedness` end to end on the real default model (Gemma 3 270M
through llama.cpp, as reader and as judge), the real embedder and Chroma: naive_rag as written and
one variant, raced on two sample questions and confirmed on two others (issue 37)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowkit.ingest import SAMPLE_DIR, ensure_sample
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.resources import Resources, Settings, save_settings
from service import cli


@pytest.mark.real
def test_a_tiny_search_on_groundedness_with_the_real_default_model(tmp_path: Path, capsys):
    home = tmp_path / "home"
    save_settings(home, Settings(llm=LLMSettings(n_ctx=4096)))          # the default model
    ensure_sample(Resources(home))
    space = tmp_path / "space.json"
    space.write_text(json.dumps({
        "name": "tiny_judged", "flows": ["naive_rag"], "max_candidates": 2,
        "params": [{"node": "generate", "param": "top_n", "choices": [2]},
                   {"node": "retrieve", "param": "top_k", "choices": [2]}]}))
    args = ["--data-dir", str(home), "search", str(space), "--dataset",
            str(SAMPLE_DIR / "questions.jsonl"), "--kb", "sample", "--search-questions", "3-4",
            "--confirm-questions", "1-2", "--budget-calls", "50", "--first-batch", "2",
            "--objective", "groundedness"]
    assert cli.main(args) == 0
    got = capsys.readouterr()
    err = " ".join(got.err.split())                     # off a terminal, lines wrap at 80
    assert re.search(r"objective groundedness \(judge: default:gemma[^)]*\), about 4 judge calls",
                     err), err
    assert re.search(r"judge calls \(groundedness \(judge: default:gemma[^)]*\)\): [1-9]", err)
    state = json.loads(next(tmp_path.glob("space.search-*.json")).read_text())
    assert state["phase"] == "done" and state["objective"] == "groundedness"
    assert [e["reached"] for e in state["entries"]] == [2, 2]
    assert state["budget"]["judge_calls"] > 0 and state["budget"]["spent_calls"] > 0
    assert all(0.0 <= e["score"] <= 1.0 for e in state["entries"])
    assert re.search(r"^front c0\d .*search groundedness \(judge: default:gemma", got.out, re.M), \
        got.out
    # the same command resumes from the finished state and keeps the objective
    assert cli.main(args) == 0
    again = capsys.readouterr()
    assert "(resumed;" in again.err and "calls computed" not in again.err
    assert "search groundedness" in again.out
