"""`flowkit train-judge` for real: the default model's chains on questions of the HotpotQA set
beside the project (../shared/data), held-out accuracy reported, weights the judge can load."""
from __future__ import annotations

import pytest

from flowkit.eval.datasets import from_path, shared_data_dir, subset_corpus
from flowkit.judges import load_classifier
from service import cli
from service.cli import common

pytestmark = pytest.mark.real
SET = "hotpotqa_dev_500_ircotfmt"


def test_train_judge_on_hotpot_questions(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(common.out, "width", 200, raising=False)
    folder = shared_data_dir() / SET
    assert (folder / "questions.jsonl").is_file(), f"{folder} must lie beside the repository"
    ds = from_path(folder)
    questions = ds.questions[100:105]            # away from the questions evaluations start with
    corpus = tmp_path / "corpus.jsonl"           # outside the repository
    assert subset_corpus(ds, questions, corpus) >= 10
    home = str(tmp_path / "home")
    assert cli.main(["--data-dir", home, "ingest", "--kb", "hp", str(corpus)]) == 0
    capsys.readouterr()
    code = cli.main(["--data-dir", home, "train-judge", "--dataset", SET, "--kb", "hp",
                     "--skip", "100", "--limit", "5", "--train-frac", "0.6"])
    got = capsys.readouterr()
    assert code == 0, got.err
    assert "examples: " in got.out and "held-out accuracy: " in got.out
    assert "replayed on the held-out chains" in got.out
    clf = load_classifier(tmp_path / "home" / "judges" / "sufficiency.json")
    assert clf.w.shape == (384,) and clf.meta["embedder"] == "all-MiniLM-L6-v2"
    assert clf.meta["train_examples"] + clf.meta["test_examples"] == 5 * 4   # chains of L = 4
