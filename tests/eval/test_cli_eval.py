"""`flowkit eval`, `flowkit evals` and `flowkit dataset` in-process, with the fake workspace."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest


def test_eval_prints_tables_and_writes_reports(world, fk, tmp_path):
    code, out, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague),
                        "--dataset", str(world.dataset), "--kb", "test", "--limit", "4",
                        "--out", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.html"),
                        "--csv", str(tmp_path / "r.csv"))
    assert code == 0, err
    assert "4/4" in err and "ran 8, skipped 0" in err               # the progress bars
    assert "good" in out and "vague" in out and "75.0" in out        # good: EM 3 of 4
    assert "minus baseline 'good'" in out and "by question type" in out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary"]["good"]["em"] == 0.75 and data["baseline"] == "good"
    assert len(list(csv.DictReader((tmp_path / "r.csv").open()))) == 8
    assert "<svg" in (tmp_path / "r.html").read_text()
    eval_id = data["eval_id"]
    # the same command again resumes (nothing left to do) and the baseline can change
    code, out, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague),
                        "--dataset", str(world.dataset), "--kb", "test", "--limit", "4",
                        "--baseline", "vague")
    assert code == 0 and "ran 0, skipped 8" in err and "minus baseline 'vague'" in out
    code, out, err = fk("eval", "--resume", eval_id, "--report", str(tmp_path / "r.md"))
    assert code == 0 and "skipped 8" in err and "| good | 4 | 0 | 75.0 |" in (tmp_path / "r.md").read_text()
    code, out, _ = fk("evals")
    assert eval_id in out and "8/8" in out


def test_eval_errors(world, fk):
    code, _, err = fk("eval", "--flow", "good")
    assert code == 2 and "needs --flow" in err
    code, _, err = fk("eval", "--flow", "nope", "--dataset", str(world.dataset), "--kb", "test")
    assert code == 2 and "not a flow file, a saved flow or a template" in err
    code, _, err = fk("eval", "--flow", str(world.good), "--dataset", "no_such_set", "--kb", "test")
    assert code == 2 and "no dataset named 'no_such_set'" in err
    code, _, err = fk("eval", "--flow", str(world.good), "--dataset", str(world.dataset),
                      "--kb", "test", "--baseline", "zzz", "--limit", "1")
    assert code == 2 and "--baseline 'zzz' is not one of the flows" in err


def test_dataset_import_and_eval_by_name(world, fk, tmp_path):
    qa = tmp_path / "mine.csv"
    qa.write_text("question,answer\nWho designed the Corren Lighthouse?,Mara Velt\n")
    code, out, _ = fk("dataset", "import", str(qa), "--name", "mine")
    assert code == 0 and "dataset 'mine': 1 questions" in out
    code, out, _ = fk("dataset", "list")
    assert "mine" in out
    code, out, err = fk("eval", "--flow", str(world.good), "--dataset", "mine", "--kb", "test")
    assert code == 0, err
    assert "100.0" in out and "by question type" not in out       # no types, no gold passages


def test_dataset_import_takes_a_shared_set_by_name(fk: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`flowkit eval --dataset NAME` finds a set beside the project by name; `dataset import NAME`
    does too (it said "not a question folder"), and an unknown name still gets that error."""
    shared = tmp_path / "shared"
    (shared / "tiny").mkdir(parents=True)
    (shared / "tiny" / "questions.jsonl").write_text(
        json.dumps({"id": "a", "question": "Who?", "answers": ["me"]}) + "\n")
    monkeypatch.setenv("FLOWKIT_SHARED_DATA", str(shared))
    monkeypatch.chdir(tmp_path)
    code, out, err = fk("dataset", "import", "tiny")
    assert code == 0, err
    assert "dataset 'tiny': 1 questions" in out
    code, _, err = fk("dataset", "import", "nothing-by-this-name")
    assert code != 0 and "not a question folder" in err
