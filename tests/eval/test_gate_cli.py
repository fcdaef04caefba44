"""`flowkit eval --fail-if ... --junit FILE` as CI runs it: a worse flow fails the build (exit 1, a
line per failed condition), an equal one passes, an unreadable condition or an unknown flow is
refused before anything runs (exit 2), and the JUnit file reads back with a JUnit parser. In
process on the fake world, and once for real with the default model on three questions."""
from __future__ import annotations

import json
import shutil

import junitparser
import pytest

from flowkit.testing.sample_home import setup_sample
from tests.test_cli import ROOT
from tests.test_cli import fk as fk_process


def test_a_worse_flow_fails_the_build_and_an_equal_one_passes(world, fk, tmp_path):
    twin = tmp_path / "twin.json"
    twin.write_text(json.dumps({**json.loads(world.good.read_text()), "name": "twin"}))
    junit = tmp_path / "gate.xml"
    code, out, err = fk("eval", "--flow", str(world.good), "--flow", str(twin), "--flow",
                        str(world.vague), "--dataset", str(world.dataset), "--kb", "test",
                        "--limit", "4", "--fail-if", "worse-than good on f1",
                        "--fail-if", "f1 < 50", "--junit", str(junit))
    assert code == 1, err
    failed = [line for line in out.splitlines() if line.startswith("FAILED ")]
    assert len(failed) == 2, out
    assert failed[0].startswith("FAILED vague: worse than good, f1 minus good's: ")
    assert failed[1] == "FAILED vague: f1 is 0.0, below 50 (--fail-if 'f1 < 50')"
    assert "gate: 2 of 5 checks failed" in out
    suite = next(iter(junitparser.JUnitXml.fromfile(str(junit))))
    assert (suite.tests, suite.failures) == (5, 2)
    cases = {(c.classname, c.name): c for c in suite}
    assert cases[("twin", "worse-than good on f1")].is_passed        # the equal flow passes
    assert not cases[("vague", "worse-than good on f1")].is_passed
    # the same evaluation gated on what holds: exit 0
    code, out, err = fk("eval", "--flow", str(world.good), "--flow", str(twin),
                        "--dataset", str(world.dataset), "--kb", "test", "--limit", "4",
                        "--fail-if", "worse-than good on f1", "--fail-if", "failed > 0")
    assert code == 0 and "0 computed" in err and "gate: all 3 checks passed" in out


def test_a_bad_condition_is_refused_before_anything_runs(world, fk, tmp_path):
    args = ("eval", "--flow", str(world.good), "--dataset", str(world.dataset), "--kb", "test",
            "--limit", "2")
    code, out, err = fk(*args, "--fail-if", "f1 < 30", "--fail-if", "f1 is bad")
    assert code == 2 and "--fail-if 'f1 is bad': not a condition" in err
    assert "evaluation" not in err and not out                        # nothing planned or run
    code, _, err = fk(*args, "--fail-if", "worse-than ircot on f1")
    assert code == 2 and "'ircot' is not a flow of this evaluation (good)" in err
    assert "ran " not in err
    code, _, err = fk(*args, "--junit", str(tmp_path / "g.xml"))
    assert code == 2 and "--junit: there is nothing to report without a --fail-if" in err
    code, _, err = fk(*args, "--fail-if", "f1 < 30", "--junit", str(tmp_path / "g.txt"))
    assert code == 2 and "--junit" in err and ".xml" in err
    code, _, _ = fk("evals")
    assert not (tmp_path / "g.xml").exists()


@pytest.mark.real        # the CLI's way of loading the model is tests/test_cli.py's loads_model test
def test_the_gate_with_the_real_default_model(tmp_path):
    """Three sample questions, naive_rag and a copy of it: the copy's answers are the same
    (the completion cache), so it is not worse; an F1 of at most 100 always is."""
    setup_sample(tmp_path)        # as `flowkit setup` leaves it (one setup per run, copied)
    copy = tmp_path / "copy.json"
    shutil.copy(ROOT / "flowkit" / "templates" / "naive_rag.json", copy)
    copy.write_text(json.dumps({**json.loads(copy.read_text()), "name": "naive_copy"}))
    junit = tmp_path / "gate.xml"
    p = fk_process(tmp_path, "eval", "--flow", "naive_rag", "--flow", str(copy), "--dataset",
                   str(ROOT / "flowkit" / "sample_kb" / "questions.jsonl"), "--kb", "sample",
                   "--limit", "3", "--fail-if", "worse-than naive_rag on f1",
                   "--fail-if", "f1 <= 100", "--junit", str(junit), check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    failed = [line for line in p.stdout.splitlines() if line.startswith("FAILED ")]
    assert [line.split(":")[0] for line in failed] == ["FAILED naive_rag", "FAILED naive_copy"]
    assert all("at most 100 (--fail-if 'f1 <= 100')" in line for line in failed)
    suite = next(iter(junitparser.JUnitXml.fromfile(str(junit))))
    assert (suite.tests, suite.failures, suite.skipped) == (3, 2, 0)
    cases = {(c.classname, c.name): c for c in suite}
    assert cases[("naive_copy", "worse-than naive_rag on f1")].is_passed
