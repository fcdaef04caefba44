"""Criteria of your own: the text is data (put into the prompt as written, never read for
placeholders or run), versioned by its hash, read from a file, and graded, cached, labelled and
scored like the built-in judges by `flowkit judge EVAL --criterion`."""
from __future__ import annotations

import json
import re

import pytest

from flowkit.errors import FlowkitError
from flowkit.eval.criteria import CRITERION, Criterion, criterion
from flowkit.eval.graders import Item, fill
from flowkit.testing import FakeLLM
from service.grading import graded


def test_the_text_is_inserted_as_written_and_never_run():
    text = "the answer has {answer} and {question} in it; {__import__('os').system('x')} \"q\""
    asked: list[str] = []
    v = Criterion(text)(Item("Who?", "Mara Velt"), lambda p: asked.append(p) or "yes")
    assert v.score == 1.0 and len(asked) == 1
    last = asked[0].rsplit("\n\n", 1)[1]
    assert last == f"Criterion: {text}\nQuestion: Who?\nAnswer: Mara Velt\nMeets:"
    assert fill("{criterion}|{answer}", criterion="{answer}", answer="A") == "{answer}|A"
    # an empty answer: no, without a call
    assert Criterion(text)(Item("Who?", " "), lambda p: asked.append(p) or "yes").score == 0.0
    assert len(asked) == 1 and CRITERION.endswith("Meets:")


def test_a_criterion_is_named_and_versioned_by_its_text(tmp_path):
    a, b = criterion("the answer names  a person"), criterion(" the answer names a person ")
    assert a == b and a.name == b.name and re.fullmatch(r"criterion:[0-9a-f]{12}", a.name)
    other = criterion("the answer names a place")
    assert other.name != a.name and other.version != a.version
    assert a.version.startswith("criterion-1:")
    f = tmp_path / "c.txt"
    f.write_text("the answer names a person\n")
    assert criterion(f"@{f}") == a
    for bad, why in (("", "write the criterion in words"), ("x" * 501, "keep it to 500"),
                     (f"@{tmp_path / 'none.txt'}", "cannot read")):
        with pytest.raises(FlowkitError, match=why):
            criterion(bad)


def _meets(prompt: str) -> str:
    """The fake judge of 'names a person': yes when the answer is one of the corpus's people."""
    answer = prompt.rsplit("Answer: ", 1)[1]
    return "yes" if re.search(r"Mara Velt|Jorun Abbe", answer) else "no"


def test_judge_with_a_criterion_of_your_own(world, fk, tmp_path):
    code, _, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague),
                      "--dataset", str(world.dataset), "--kb", "test", "--limit", "4",
                      "--out", str(tmp_path / "r.json"))
    assert code == 0, err
    eval_id = json.loads((tmp_path / "r.json").read_text())["eval_id"]
    world.ws.resources.set_llm(FakeLLM([(r"Meets:$", _meets)], default="no"))
    c = criterion("the answer names a person")
    code, out, err = fk("judge", eval_id, "--criterion", c.text)
    assert code == 0, err
    assert "graded 8 answers (0 already graded)" in err, err
    assert f"{c.name} is your criterion 'the answer names a person'" in out
    assert f"judge '{c.name}'" in out and "uncorrected" in out
    # the same text again: every verdict kept; with a built-in judge beside it
    code, _, err = fk("judge", eval_id, "--criterion", c.text, "--judge", "correctness")
    assert code == 0 and "(0 already graded)" in err      # correctness is new on every answer
    code, _, err = fk("judge", eval_id, "--criterion", c.text)
    assert "graded 0 answers (8 already graded)" in err
    # labels under its name make it a PPI++ score with a reliability card
    for flow, qid, value in (("good", "q1", "1"), ("good", "q2", "0"), ("vague", "q1", "0")):
        code, _, err = fk("label", eval_id, "--flow", flow, "--question", qid, "--metric",
                          c.name, "--value", value)
        assert code == 0, err
    code, out, err = fk("judge", eval_id, "--criterion", c.text, "--json")
    data = json.loads(out)[0]
    assert data["grader"] == c.name and data["reliability"]["labels"] == 3
    good = next(f for f in data["flows"] if f["flow"] == "good")
    assert good["corrected"] is True and good["labels"] == 2
    assert (c.name, "default:" + data["model"].split(":", 1)[1]) in graded(world.ws, eval_id)
    # an edited criterion is another judge: graded again, the old verdicts untouched
    code, _, err = fk("judge", eval_id, "--criterion", "the answer names a place")
    assert "graded 8 answers (0 already graded)" in err
    code, _, err = fk("label", eval_id, "--flow", "good", "--question", "q1", "--metric",
                      "criterion", "--value", "1")
    assert code == 2 and "criterion's name (criterion:..." in err
    code, _, err = fk("judge", eval_id, "--criterion", "  ")
    assert code == 2 and "write the criterion in words" in err
