"""Passage labels (issue 37): a person marks each passage an answering node read relevant or not;
stored with the evaluation (replaced, removed, kept across a reopened workspace), set from the CLI
(`flowkit label --passage`), refused for a passage no answer read, and used as the truth of the
context-relevance judge's PPI++ interval once every passage an answer read is labelled."""
from __future__ import annotations

import json

import pytest
from conftest import fake_llm

from flowkit.errors import FlowkitError
from flowkit.testing import FakeLLM
from service.grading import grade, scores
from service.passage_labels import passage_labels, question_passages, set_passage_label
from service.workspace import Workspace


def evaluate(world, fk, tmp_path) -> str:
    code, _, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague),
                      "--dataset", str(world.dataset), "--kb", "test", "--limit", "3",
                      "--out", str(tmp_path / "r.json"))
    assert code == 0, err
    return str(json.loads((tmp_path / "r.json").read_text())["eval_id"])


def flow_of(rep, name):
    return next(f for f in rep.flows if f.flow == name)


def test_passage_labels_are_stored_and_correct_context_relevance(world, fk, tmp_path):
    eval_id = evaluate(world, fk, tmp_path)
    world.ws.resources.set_llm(FakeLLM([], default="yes"))    # a judge that finds all relevant
    grade(world.ws, eval_id, ["context_relevance"])
    read = question_passages(world.ws, eval_id, "q1")
    assert len(read["good"]) == 2 and len(read["vague"]) == 1
    rep = scores(world.ws, eval_id, "context_relevance")
    assert not flow_of(rep, "good").corrected and flow_of(rep, "good").raw_mean == 1.0
    # one of good's two passages labelled: its answer is not labelled yet (vague read only it)
    first, second = (p["id"] for p in read["good"])
    set_passage_label(world.ws, eval_id, "q1", first, 1.0)
    rep = scores(world.ws, eval_id, "context_relevance")
    assert flow_of(rep, "good").labels == 0 and not flow_of(rep, "good").corrected
    set_passage_label(world.ws, eval_id, "q1", second, 0.0)    # now every passage is labelled
    assert passage_labels(world.ws, eval_id, "q1") == {first: 1.0, second: 0.0}
    good = flow_of(scores(world.ws, eval_id, "context_relevance"), "good")
    assert good.corrected and good.labels == 1
    # PPI++ with one label: the judge's weight is 0 (no covariance to read), so the estimate is
    # the mean of the label (the share 0.5) and the two pseudo-labels 1 and 0
    assert good.estimate.mean == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert good.weight is not None and good.weight.weight == 0.0
    # replaced: both relevant, the truth is 1
    set_passage_label(world.ws, eval_id, "q1", second, 1.0)
    assert passage_labels(world.ws, eval_id, "q1") == {first: 1.0, second: 1.0}
    assert flow_of(scores(world.ws, eval_id, "context_relevance"), "good"
                   ).estimate.mean == pytest.approx((1.0 + 1.0 + 0.0) / 3)
    # removed: the answer is unlabelled again
    set_passage_label(world.ws, eval_id, "q1", second, None)
    assert passage_labels(world.ws, eval_id, "q1") == {first: 1.0}
    assert not flow_of(scores(world.ws, eval_id, "context_relevance"), "good").corrected
    # the other judges never read passage labels
    set_passage_label(world.ws, eval_id, "q1", second, 0.0)
    world.ws.resources.set_llm(FakeLLM([], default="yes"))
    grade(world.ws, eval_id, ["groundedness"])
    assert not flow_of(scores(world.ws, eval_id, "groundedness"), "good").corrected
    # they survive reopening the workspace (a restart)
    fresh = Workspace(world.ws.data_dir)
    fresh.resources.set_llm(fake_llm())
    try:
        assert passage_labels(fresh, eval_id, "q1") == {first: 1.0, second: 0.0}
        good = flow_of(scores(fresh, eval_id, "context_relevance"), "good")
    finally:
        fresh.close()
    assert good.corrected and good.labels == 1


def test_a_passage_no_answer_read_is_refused(world, fk, tmp_path):
    eval_id = evaluate(world, fk, tmp_path)
    read = {p["id"] for ps in question_passages(world.ws, eval_id, "q1").values() for p in ps}
    with pytest.raises(FlowkitError, match=r"no answer to question 'q1' .* read passage 'nope'"):
        set_passage_label(world.ws, eval_id, "q1", "nope", 1.0)
    with pytest.raises(FlowkitError, match=r"question 'q9' is not part of evaluation"):
        set_passage_label(world.ws, eval_id, "q9", sorted(read)[0], 1.0)
    with pytest.raises(FlowkitError, match="the value is 1, 0 or none"):
        set_passage_label(world.ws, eval_id, "q1", sorted(read)[0], 0.5)
    assert passage_labels(world.ws, eval_id, "q1") == {}


def test_label_cli_marks_passages(world, fk, tmp_path):
    eval_id = evaluate(world, fk, tmp_path)
    read = question_passages(world.ws, eval_id, "q2")
    ids = [p["id"] for p in read["good"]]
    for pid, value in zip(ids, ("1", "irrelevant")):
        code, out, err = fk("label", eval_id, "--question", "q2", "--passage", pid,
                            "--value", value)
        assert code == 0, err
        assert f"passage label {value} on {pid} / q2" in out
    assert passage_labels(world.ws, eval_id, "q2") == {ids[0]: 1.0, ids[1]: 0.0}
    code, _, err = fk("label", eval_id, "--question", "q2", "--passage", ids[1], "--value",
                      "clear")
    assert code == 0, err
    assert passage_labels(world.ws, eval_id, "q2") == {ids[0]: 1.0}
    code, _, err = fk("label", eval_id, "--question", "q2", "--passage", ids[0], "--value",
                      "maybe")
    assert code == 2 and "--value: use 1 (relevant), 0 (irrelevant) or clear" in err
    code, _, err = fk("label", eval_id, "--flow", "good", "--question", "q2", "--passage",
                      ids[0], "--value", "1")
    assert code == 2 and "leave --flow out with --passage" in err
    code, _, err = fk("label", eval_id, "--question", "q2", "--value", "1")
    assert code == 2 and "--flow: which flow's answer to label" in err
