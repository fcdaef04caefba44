"""`flowkit dataset generate` as a user runs it: bad requests refused with nothing written, and the
real default model generating questions from the sample knowledge base that `flowkit eval` then
scores (answers and retrieval recall against the generated gold passages)."""
from __future__ import annotations

import json
import math

import pytest

from flowkit.eval.ranking import kendall_tau, ranks
from flowkit.testing.sample_home import setup_sample
from tests.test_cli import fk


def test_kendall_tau_known_values():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # 5 concordant and 1 discordant pair of 6: (5 - 1) / 6
    assert kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(4 / 6)
    assert math.isnan(kendall_tau([1, 1], [1, 2]))
    with pytest.raises(ValueError):
        kendall_tau([1], [1, 2])
    assert ranks({"a": 0.2, "b": 0.5, "c": 0.2}) == ["b", "a", "c"]


def test_bad_generate_requests_write_nothing(tmp_path):
    p = fk(tmp_path, "dataset", "generate", "--kb", "nope", "--n", "5", check=False)
    assert p.returncode == 2 and "kb: no knowledge base named 'nope'" in p.stderr
    p = fk(tmp_path, "dataset", "generate", "--kb", "nope", "--n", "0", check=False)
    assert p.returncode == 2 and "n: the number of questions must be at least 1; got 0" in p.stderr
    p = fk(tmp_path, "dataset", "generate", "--kb", "nope", "--n", "2", "--kinds", "single,trivia",
           check=False)
    assert p.returncode == 2 and "--kinds: unknown kind(s) trivia" in p.stderr
    p = fk(tmp_path, "dataset", "generate", "--kb", "nope", check=False)
    assert p.returncode == 2 and "needs --n" in p.stderr
    assert "generated" not in fk(tmp_path, "dataset", "list").stdout


@pytest.mark.real
def test_real_model_generates_checked_questions_from_the_sample_kb(tmp_path):
    setup_sample(tmp_path)        # as `flowkit setup` leaves it (one setup per run, copied)
    # a knowledge base of one document cannot give a multi-hop question: refused, nothing written
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"id": "x1", "title": "Solo", "text": "Solo was founded in 1901."})
                   + "\n")
    fk(tmp_path, "ingest", "--kb", "one", str(one))
    p = fk(tmp_path, "dataset", "generate", "--kb", "one", "--n", "2", "--kinds", "bridge",
           check=False)
    assert p.returncode == 2 and "need two passages from different documents" in p.stderr

    p = fk(tmp_path, "dataset", "generate", "--kb", "sample", "--n", "3", "--kinds", "single",
           "--name", "gen", "--show", "3")
    assert "dataset 'gen': 3 generated questions (3 single)" in " ".join(p.stdout.split())
    assert "dropped by check:" in p.stderr and "computed" in p.stderr
    listed = fk(tmp_path, "dataset", "list").stdout
    assert "gen" in listed
    # the same command again: the same set, every call from the cache
    p2 = fk(tmp_path, "dataset", "generate", "--kb", "sample", "--n", "3", "--kinds", "single",
            "--name", "gen", "--replace", "--show", "3")
    assert p2.stdout == p.stdout
    assert "model calls computed 0" in " ".join(p2.stderr.split())
    # a taken name is refused without --replace
    p3 = fk(tmp_path, "dataset", "generate", "--kb", "sample", "--n", "3", "--name", "gen",
            check=False)
    assert p3.returncode == 2 and "a dataset named 'gen' exists" in p3.stderr
    # usable by flowkit eval like an imported set: answers scored, recall against its passages
    out = tmp_path / "r.json"
    fk(tmp_path, "eval", "--flow", "naive_rag", "--dataset", "gen", "--kb", "sample",
       "--out", str(out))
    report = json.loads(out.read_text())
    s = report["summary"]["naive_rag"]
    assert s["n"] == 3 and s["recall"] is not None and s["recall"] > 0


def test_hostile_generate_inputs_are_refused_and_write_nothing(tmp_path):
    # a path for a knowledge base, a name with a newline, markup and a huge count: one clear line
    # each, exit 2, no traceback, nothing stored
    p = fk(tmp_path, "dataset", "generate", "--kb", "../../etc", "--n", "2", check=False)
    assert p.returncode == 2 and "kb: no knowledge base named '../../etc'" in p.stderr
    p = fk(tmp_path, "dataset", "generate", "--kb", "sample", "--n", "2", "--name", "a\nb",
           check=False)
    assert p.returncode == 2 and "name: the question set name 'a\\nb' is not allowed" in p.stderr
    p = fk(tmp_path, "dataset", "generate", "--kb", "[/][link=x]", "--n", "2", check=False)
    assert p.returncode == 2 and "[/][link=x]" in p.stderr
    p = fk(tmp_path, "dataset", "generate", "--kb", "nope", "--n", "-5", "--max-tries", "-1",
           check=False)
    assert p.returncode == 2 and "got -5" in p.stderr and "max_tries: must be >= 0" in p.stderr
    assert "Traceback" not in p.stderr
    assert "generated" not in fk(tmp_path, "dataset", "list").stdout
