"""How an evaluation's figures read as text: one formatter per kind of value (a metric, a paired
difference, a judge's interval) and the tables and lines that the exports, the console and the
Compare page all show."""
from __future__ import annotations

import math
from typing import Any

from .metrics import METRICS, PAIRED, PairedDiff
from .report import EvalReport, steadiness_summary


def fmt(metric: str, value: float | None) -> str:
    """A metric value as people read it: rates as percentages with one decimal, tokens as whole
    tokens ("736 tokens/q", never "735.75"), calls and seconds with two decimals. The one
    formatter of every table, chart label and page that shows a metric."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric in ("em", "f1", "acc", "recall"):
        return f"{100 * value:.1f}"
    if metric == "tokens":
        return f"{value:.0f}"
    if metric == "llm_calls":
        return f"{value:.2f}"
    return f"{value:.2f}"


def fmt_delta(d: PairedDiff) -> str:
    if d.n == 0:
        return "-"
    scale = 100 if d.metric in ("em", "f1", "acc", "recall") else 1
    digits = 0 if d.metric == "tokens" else (1 if scale == 100 else 2)
    star = " *" if d.significant else ""
    return (f"{scale * d.mean:+.{digits}f} [{scale * d.low:+.{digits}f}, "
            f"{scale * d.high:+.{digits}f}]{star}")


def metric_titles(rep: EvalReport) -> list[tuple[str, str]]:
    """(metric, its column title) in table order; recall titled by its cut-off (R@5, R@all)."""
    return [(m, rep.recall_title if m == "recall" else t) for m, t, _ in METRICS]


def summary_rows(rep: EvalReport) -> list[list[str]]:
    """Header + one row per flow: flow, n, failed, then every metric."""
    head = ["flow", "n", "failed", *[t for _, t in metric_titles(rep)]]
    rows = [head]
    for f in rep.flows:
        s = rep.summaries[f]
        rows.append([f, str(s.n), str(s.failed),
                     *[fmt(m, getattr(s, m)) for m, _ in metric_titles(rep)]])
    return rows


def delta_rows(rep: EvalReport) -> list[list[str]]:
    titles = dict(metric_titles(rep))
    rows = [["flow", *[titles[m] for m in PAIRED]]]
    for f, ds in rep.deltas.items():
        rows.append([f, *[fmt_delta(d) for d in ds]])
    return rows


def type_rows(rep: EvalReport) -> list[list[str]]:
    rows = [["flow", "type", "n", "EM", "F1", "Acc", rep.recall_title]]
    for f in rep.flows:
        for t, s in rep.types[f].items():
            rows.append([f, t, str(s.n), fmt("em", s.em), fmt("f1", s.f1), fmt("acc", s.acc),
                         fmt("recall", s.recall)])
    return rows


def _judge_interval(d: PairedDiff, signed: bool = False) -> str:
    if d.n == 0:
        return "-"
    sign = "+" if signed else ""
    return f"{100 * d.mean:{sign}.1f} [{100 * d.low:{sign}.1f}, {100 * d.high:{sign}.1f}]"


def judge_rows(rep: EvalReport) -> list[list[str]]:
    """Header + one row per flow and judge: the estimate in % with its 95% interval, whether
    labels corrected it (PPI) or not, how many labels, and the paired difference with the
    baseline (* the interval excludes 0)."""
    rows = [["flow", "judge (model)", "score [95%]", "kind", "labels", "vs baseline"]]
    for j in rep.judges:
        vs = "-" if j.vs_baseline is None else (_judge_interval(j.vs_baseline, signed=True)
                                                + (" *" if j.vs_baseline.significant else ""))
        rows.append([j.flow, f"{j.grader} ({j.model})", _judge_interval(j.estimate),
                     "PPI" if j.corrected else "uncorrected", str(j.labels), vs])
    return rows


JUDGE_NOTE = ("Model judges: the judge's mean over the flow's answers; with labels corrected "
              "by prediction-powered inference (PPI), without them uncorrected (the judge's own "
              "errors are in it). A judge's calls are never part of a flow's cost.")


def steadiness_line(rep: EvalReport) -> str:
    """How far the flows' order by F1 holds across halves of these questions, in words, or ''
    (too few flows or questions). A median tau under ~0.6 says the order of close flows here
    may not carry over to other questions: more questions, or flows further apart, are needed."""
    s = steadiness_summary(rep.steadiness)
    if s is None:
        return ""
    verdict = ("steady" if s["median"] >= 0.8 else "fairly steady" if s["median"] >= 0.6
               else "not steady: close flows may swap places on other questions")
    return (f"Ranking steadiness: two random halves of these questions order the flows by F1 "
            f"with Kendall's tau {s['median']:.2f} (median of {int(s['splits'])} splits; middle "
            f"half {s['q1']:.2f} to {s['q3']:.2f}): {verdict}.")


def _one_execution(rec: dict[str, Any]) -> str:
    n = int(rec.get("concurrency", 1))
    text = f"{n} runs in flight at once" if n > 1 else "one run at a time"
    if rec.get("workers"):
        text = f"on {rec['workers']} Ray workers"
    if rec.get("requested") and int(rec["requested"]) != n:
        text += f" (--concurrency {rec['requested']} asked; the model was not a server)"
    if rec.get("server_parallel"):
        text += f" (the server reports {rec['server_parallel']} parallel slots)"
    return text


def execution_line(rep: EvalReport) -> str:
    """'Runs: 4 runs in flight at once (the server reports 4 parallel slots).', or '' for an
    evaluation run one run at a time throughout (as every evaluation was before concurrency)."""
    plain = [{"concurrency": 1}]
    if not rep.execution or all(r == plain[0] for r in rep.execution):
        return ""
    return "Runs: " + ", then ".join(_one_execution(r) for r in rep.execution) + "."

