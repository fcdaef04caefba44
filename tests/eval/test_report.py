"""Reports: tables, deltas with intervals, JSON/CSV/Markdown/HTML exports (self-contained)."""
from __future__ import annotations

import base64
import csv
import io
import json
import re

import pytest

from flowkit.errors import FlowkitError
from flowkit.eval.charts import bar_svg, charts
from flowkit.eval.exports import to_csv, to_html, to_json, to_markdown, write
from flowkit.eval.formatting import delta_rows, steadiness_line, summary_rows, type_rows
from flowkit.eval.metrics import QuestionResult
from flowkit.eval.report import build_report


def _res(flow, qid, em, tokens, typ, pred, recall=None):
    return QuestionResult(flow=flow, question_id=qid, question=f"question {qid}?", answers=["gold"],
                          prediction=pred, status="ok", type=typ, em=em, f1=em, acc=em,
                          recall=recall, tokens=tokens, llm_calls=1, seconds=1.0, run_id=f"r-{qid}")


@pytest.fixture()
def rep():
    base = [_res("naive", f"q{i}", i % 2, 100, "bridge" if i < 2 else "comparison",
                 "gold" if i % 2 else "x", recall=0.5) for i in range(4)]
    other = [_res("iter", f"q{i}", 1, 300, "bridge" if i < 2 else "comparison",
                  "gold" if i else "Gold!", recall=1.0) for i in range(4)]
    return build_report({"naive": base, "iter": other}, eval_id="abc", name="naive vs iter",
                        dataset="tiny", kb="kb1", k=5, planned=4)


def test_tables(rep):
    rows = summary_rows(rep)
    assert rows[0] == ["flow", "n", "failed", "EM", "F1", "Acc", "R@5", "tokens/q", "LLM calls/q",
                       "s/q"]
    assert rows[1] == ["naive", "4", "0", "50.0", "50.0", "50.0", "50.0", "100", "1.00", "1.00"]
    assert rows[2][:7] == ["iter", "4", "0", "100.0", "100.0", "100.0", "100.0"]
    deltas = delta_rows(rep)
    assert deltas[0] == ["flow", "EM", "F1", "Acc", "R@5", "tokens/q", "s/q"]
    assert deltas[1][0] == "iter" and deltas[1][1].startswith("+50.0 [")
    assert deltas[1][5] == "+200 [+200, +200] *" and deltas[1][6] == "+0.00 [+0.00, +0.00]"
    types = type_rows(rep)
    assert ["naive", "bridge", "2", "50.0", "50.0", "50.0", "50.0"] in types
    assert rep.disagreements == ["q0", "q2"]        # q1, q3: both right with the same answer


def test_baseline_choice(rep):
    other = build_report(rep.results, baseline="iter")
    assert list(other.deltas) == ["naive"] and other.deltas["naive"][0].mean == -0.5
    with pytest.raises(FlowkitError, match="not one of the flows"):
        build_report(rep.results, baseline="nope")


def test_exports(rep, tmp_path):
    data = json.loads(to_json(rep))
    assert data["summary"]["iter"]["em"] == 1.0 and data["vs_baseline"]["iter"][0]["metric"] == "em"
    assert len(data["results"]["naive"]) == 4 and data["disagreements"] == ["q0", "q2"]
    rows = list(csv.DictReader(io.StringIO(to_csv(rep))))
    assert len(rows) == 8 and rows[0]["flow"] == "naive" and rows[0]["recall"] == "0.5"
    md = to_markdown(rep)
    assert "| naive | 4 | 0 | 50.0 |" in md and "## By question type" in md
    svg = base64.b64decode(re.search(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", md)[1])
    assert svg.startswith(b"<svg")
    page = to_html(rep)
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == len(charts(rep)) == 8
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    for name in ("r.json", "r.csv", "r.md", "r.html"):
        assert write(rep, tmp_path / name).stat().st_size > 100
    with pytest.raises(FlowkitError, match=".json, .csv, .md or .html"):
        write(rep, tmp_path / "r.txt")


def test_no_gold_passages_no_recall_chart():
    rs = {"a": [_res("a", "q1", 1, 10, "", "gold")], "b": [_res("b", "q1", 0, 20, "", "x")]}
    rep = build_report(rs, k=None)
    assert "R@all" not in charts(rep) and summary_rows(rep)[1][6] == "-"
    assert json.loads(to_json(rep))["vs_baseline"]["b"][3]["mean"] is None    # NaN -> null


# ---- what people read: whole tokens, no float noise (issue 29) ----------------------------
@pytest.fixture()
def noisy():
    rows = [QuestionResult(flow="f", question_id=f"q{i}", question="q?", answers=["a"],
                           prediction="a", status="ok", type="bridge", em=1.0,
                           f1=0.1 + 0.2, acc=1.0, recall=1 / 3, tokens=t, llm_calls=2,
                           seconds=1.23456789, run_id="r") for i, t in enumerate((735, 736, 736, 736))]
    return build_report({"f": rows}, eval_id="e", dataset="d", kb="kb", k=5)


def test_tokens_per_question_are_whole_tokens_everywhere(noisy):
    assert noisy.summaries["f"].tokens == 735.75
    assert summary_rows(noisy)[1][7] == "736"
    tokens_chart = charts(noisy)["tokens/q"]
    assert ">736<" in tokens_chart and "735.75" not in tokens_chart
    assert ">30.0<" in charts(noisy)["F1"]            # a rate as a percentage, one decimal
    for text in (to_markdown(noisy), to_html(noisy)):
        assert "735.75" not in text and "736" in text


def test_exports_carry_no_float_noise(noisy):
    rows = list(csv.DictReader(io.StringIO(to_csv(noisy))))
    assert rows[0]["f1"] == "0.3" and rows[0]["recall"] == "0.3333" and rows[0]["seconds"] == "1.2346"
    raw = to_csv(noisy) + to_json(noisy)
    assert "0.30000000000000004" not in raw and "0.3333333" not in raw
    data = json.loads(to_json(noisy))
    assert data["summary"]["f"]["f1"] == 0.3 and data["summary"]["f"]["tokens"] == 735.75


def test_bar_labels_stay_readable_without_a_metric():
    svg = bar_svg("t", ["a", "b"], [1234.5, 0.123456])
    assert ">1,234<" in svg or ">1,235<" in svg
    assert ">0.123<" in svg and "e+03" not in svg


def _flows(scores: dict[str, list[float]]):
    return {f: [_res(f, f"q{i}", v, 100, "bridge", "x") for i, v in enumerate(vs)]
            for f, vs in scores.items()}


def test_ranking_steadiness_in_every_export(tmp_path):
    import random
    rng = random.Random(1)
    # three flows far apart: every half of the questions orders them the same way
    apart = build_report(_flows({f: [float(rng.random() < p) for _ in range(40)]
                                 for f, p in (("a", 0.9), ("b", 0.5), ("c", 0.1))}))
    line = steadiness_line(apart)
    assert "Kendall's tau" in line and ": steady." in line
    assert apart.to_dict()["ranking_steadiness"]["median"] >= 0.8
    assert line in to_markdown(apart) and html_escape(line) in to_html(apart)
    # three flows of one skill: the order does not hold, and the line says so
    same = build_report(_flows({f: [float(rng.random() < 0.5) for _ in range(40)] for f in "xyz"}))
    assert "not steady" in steadiness_line(same)


def test_no_steadiness_for_two_flows_or_few_questions(rep):
    assert rep.steadiness == [] and steadiness_line(rep) == ""
    assert rep.to_dict()["ranking_steadiness"] is None
    few = build_report(_flows({f: [1.0, 0.0, 1.0] for f in "abc"}))
    assert steadiness_line(few) == ""


def html_escape(text: str) -> str:
    import html
    return html.escape(text)
