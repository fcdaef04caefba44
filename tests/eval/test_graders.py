"""Model judges (graders) on a stored evaluation, labels and PPI: parsers on hostile model output,
the cost kept apart from the flows', labels that survive a restart, and intervals that hold."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from conftest import fake_llm

from flowkit.eval import graders as G
from flowkit.eval.ppi import labels_only, ppi_mean, ppi_paired, uncorrected
from flowkit.testing import FakeLLM
from service.grading import grade, scores
from service.workspace import Workspace


@pytest.mark.parametrize("reply,want", [
    ("yes", True), (" Yes.\nmore text", True), ("no", False), ("No, it is not.", False),
    ("", None), ("\n\n", None), ("yes and no", None), ("I think it could be either way", None),
    ("Maybe. The passage talks about a lighthouse built long ago in the north of...", None),
    ("not supported", False), ("correct", True), ("<verdict>", None),
    # what Gemma 3 270M wrote as context-relevance judge: the question's answer, not a verdict
    ("1999", None), ("Bob Seger", None), ("No Doubt", None), ("True Detective", None),
    ("Not Fade Away", None), ("No. 5 Squadron", None), ("Yes I think so", True),
    # a verdict only in quotes is the passage's word, not the judge's
    ('The passage says "yes"', None), ('"no"\nyes', None), ("\u201cYes\u201d", None),
    ('yes, "no" is not in it', None), ("\n\nNo.", False)])
def test_verdict_parser_on_hostile_output(reply, want):
    assert G.parse_yes_no(reply) is want


def test_context_relevance_asks_again_when_the_reply_is_an_answer():
    item = G.Item("Which river flows through Dunmore?", "the Tay", (),
                  ({"id": "d1", "title": "Dunmore", "text": "Dunmore lies on the Tay."},
                   {"id": "d2", "title": "Sundby", "text": "Sundby has a viaduct."},
                   {"id": "d3", "title": "Corren", "text": "Corren has a lighthouse."}))
    asked: list[str] = []

    def ask(p: str) -> str:   # d1: a verdict; d2: an answer, then a verdict; d3: never one
        asked.append(p)
        last = p.rsplit("\n\n", 1)[1]
        if "Dunmore lies" in last:
            return "yes"
        if "Sundby" in last:
            return "no" if last.endswith("Helps:") else "the Tay"
        return "1999"
    v = G.context_relevance(item, ask)
    assert v.detail == [1.0, 0.0, G.UNPARSED] and not v.parsed
    assert len(asked) == 5 and sum(p.endswith("Helps:") for p in asked) == 2
    assert all(p.endswith("Verdict (yes/no):") for p in asked[:2])
    assert v.reason == "1 of 3 passages help (2 asked again: the first reply was no verdict)"
    assert G.grader_version("context_relevance") != G.grader_version("correctness")


def test_each_grader_reads_what_it_should():
    item = G.Item("When was the dam finished?", "1931", ("1931",),
                  ({"id": "d1", "title": "Lake Orin", "text": "Its dam was finished in 1931."},
                   {"id": "d2", "title": "Tomas Vale", "text": "Tomas Vale is a sculptor."}))
    seen: list[str] = []

    def ask(p: str) -> str:
        seen.append(p)
        return "yes" if "Lake Orin" in p.rsplit("Passage: ", 1)[1] else "no"
    assert G.correctness(item, lambda p: "yes").score == 1.0
    v = G.context_relevance(item, ask)
    assert v.detail == [1.0, 0.0] and v.score == 0.5 and v.reason == "1 of 2 passages help"
    assert G.groundedness(item, lambda p: "rambling").score == G.UNPARSED
    assert not G.groundedness(item, lambda p: "rambling").parsed
    assert G.correctness(G.Item("q", "x"), lambda p: "yes").score is None    # no reference
    assert G.groundedness(G.Item("q", "x"), lambda p: "yes").score == 0.0    # no passages
    assert G.answer_relevance(G.Item("q", ""), lambda p: "yes").score == 0.0 # no answer
    with pytest.raises(Exception, match="unknown judge"):
        G.parse_graders("correctness,vibes")


def test_ppi_on_a_synthetic_case_with_a_known_answer():
    rng = np.random.default_rng(0)
    truth = rng.random(2000) < 0.6                      # true mean 0.6
    # a biased judge: says yes to 90% of the right and 50% of the wrong answers
    judge = np.where(truth, rng.random(2000) < 0.9, rng.random(2000) < 0.5).astype(float)
    assert abs(judge.mean() - 0.74) < 0.03              # uncorrected: far off
    hits, widths = 0, []
    for _ in range(300):
        idx = rng.permutation(2000)
        lab, unl = idx[:100], idx[100:]
        est = ppi_mean(judge[unl], list(zip(judge[lab], truth[lab].astype(float))))
        hits += est.low <= truth.mean() <= est.high
        widths.append(est.high - est.low)
        only = labels_only(truth[lab].astype(float))
    assert hits / 300 >= 0.92
    assert np.mean(widths) < only.high - only.low + 0.02
    raw = uncorrected(list(judge))
    assert raw.low > 0.7                                # the raw interval misses the truth
    assert math.isnan(ppi_mean([1.0], []).mean)


def test_ppi_paired_difference():
    s = {f"q{i}": float(i % 2) for i in range(40)}
    b = {f"q{i}": 0.0 for i in range(40)}
    labels = {f"q{i}": float(i % 2) for i in range(10)}
    base_labels = {f"q{i}": 0.0 for i in range(10)}
    d = ppi_paired(s, b, labels, base_labels, metric="correctness", flow="a", baseline="b")
    assert d.flow == "a" and d.baseline == "b" and d.n == 10
    assert d.low <= 0.5 <= d.high


def test_grading_a_stored_evaluation(world, fk, tmp_path):
    code, out, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague),
                        "--dataset", str(world.dataset), "--kb", "test", "--limit", "4",
                        "--out", str(tmp_path / "r.json"))
    assert code == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    eval_id = report["eval_id"]
    flow_cost = {f: (s["tokens"], s["llm_calls"]) for f, s in report["summary"].items()}
    # the judge model: says "yes" (Same / Stated) when the proposed answer is the reference
    judge = FakeLLM([(r"Proposed: (.*)\nSame:$",
                      lambda p: "yes" if p.split("Reference: ")[-1].split("\n")[0]
                      in p.split("Proposed: ")[-1] else "no"),
                     (r"Stated:$", "yes")], default="no")
    world.ws.resources.set_llm(judge)
    out1 = grade(world.ws, eval_id, ["correctness", "groundedness"])
    assert out1.graded == 8 and out1.cost.calls >= 16 and out1.cost.cached == 0
    rep = scores(world.ws, eval_id, "correctness")
    good = next(f for f in rep.flows if f.flow == "good")
    assert not good.corrected and good.labels == 0 and 0.0 < good.estimate.mean <= 1.0
    # grading again: every verdict kept, no call
    out2 = grade(world.ws, eval_id, ["correctness", "groundedness"])
    assert out2.graded == 0 and out2.reused == 8 and out2.cost.calls == 0
    # a flow's cost never includes its judging
    code, out, err = fk("eval", "--resume", eval_id, "--out", str(tmp_path / "r2.json"))
    again = json.loads((tmp_path / "r2.json").read_text())
    assert {f: (s["tokens"], s["llm_calls"]) for f, s in again["summary"].items()} == flow_cost
    # labels: via the CLI, stored, and they survive a restart (a new workspace on the same dir)
    for qid in ("q1", "q2", "q3"):
        code, _, err = fk("label", eval_id, "--flow", "good", "--question", qid,
                          "--metric", "correctness", "--value", "1")
        assert code == 0, err
        code, _, err = fk("label", eval_id, "--flow", "vague", "--question", qid,
                          "--metric", "correctness", "--value", "0")
        assert code == 0, err
    code, _, err = fk("label", eval_id, "--flow", "nope", "--question", "q1", "--value", "1")
    assert code == 2 and "--flow: 'nope' is not a flow" in err
    code, _, err = fk("label", eval_id, "--flow", "good", "--question", "q1", "--value", "maybe")
    assert code == 2 and "--value: use 1 (right), 0 (wrong) or clear" in err
    fresh = Workspace(world.ws.data_dir)
    fresh.resources.set_llm(fake_llm())
    try:
        rep = scores(fresh, eval_id, "correctness", "")
    finally:
        fresh.close()
    good = next(f for f in rep.flows if f.flow == "good")
    assert good.corrected and good.labels == 3 and good.labels_only_width is not None
    vague = next(f for f in rep.flows if f.flow == "vague")
    assert vague.vs_baseline is not None and vague.vs_baseline.baseline == "good"
    code, out, err = fk("judge", eval_id, "--judge", "correctness", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data[0]["flows"][0]["corrected"] is True
    assert data[0]["flows"][0]["judge_weight"]["labels"] == 3
    # the console table: the interval by judge_interval, PPI++ and the judge's weight in words
    code, out, err = fk("judge", eval_id, "--judge", "correctness")
    assert code == 0, err
    assert "PPI++" in out and "adds next to nothing" in out and "uncorrected" not in out, out
    # the exports carry the judges: a table per flow (PPI++ where labelled, with the judge's
    # weight in words) and each verdict
    md, csv_path, js = tmp_path / "r.md", tmp_path / "r.csv", tmp_path / "r3.json"
    code, _, err = fk("eval", "--resume", eval_id, "--report", str(md), "--csv", str(csv_path),
                      "--out", str(js))
    assert code == 0, err
    text = md.read_text()
    assert "## Model judges" in text and "correctness (" in text and "| PPI++ | 3 |" in text, text
    assert "groundedness (" in text and "uncorrected" in text
    # the judge said the same on all three labelled answers: nothing to weigh it by
    assert "| PPI++ | 3 | - | weight 0.00: the judge adds next to nothing (3 labels worth about " \
        "3) |" in text, text
    rows = list(csv.DictReader(csv_path.open()))
    column = next(c for c in rows[0] if c.startswith("judge:correctness@"))
    assert len(rows) == 8 and all(float(r[column]) in (0.0, 0.5, 1.0) for r in rows), rows[0]
    judges = json.loads(js.read_text())["judges"]
    assert {(j["flow"], j["grader"], j["corrected"]) for j in judges} >= {
        ("good", "correctness", True), ("good", "groundedness", False)}


def test_judge_cli_refuses_unknown_judges(world, fk):
    code, _, err = fk("judge", "nope", "--judge", "vibes")
    assert code == 2 and "unknown judge(s) vibes" in err
    code, _, err = fk("eval", "--flow", str(world.good), "--dataset", str(world.dataset),
                      "--kb", "test", "--judge", "vibes")
    assert code == 2 and "unknown judge(s) vibes" in err


def test_the_grading_line_says_what_an_unparsed_verdict_is_only_when_there_is_one():
    from service.grading import GradeOutcome
    clean = GradeOutcome("default:gemma3-270m", graded=9).line()
    assert clean.endswith("0 verdicts unparsed (scored 0.5)")
    some = GradeOutcome("default:gemma3-270m", graded=9, unparsed=3).line()
    assert "3 verdicts unparsed (scored 0.5): the judge model replied with neither yes nor no" in some
    assert "Labels correct for them (PPI)" in some
