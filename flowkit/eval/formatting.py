"""How an evaluation's figures read as text: one formatter per kind of value (a metric, a paired
difference, a judge's interval) and the tables and lines that the exports, the console and the
Compare page all show."""
from __future__ import annotations

import math
from typing import Any

from .metrics import METRICS, PAIRED, PairedDiff
from .ppi_pp import JudgeWeight
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


#: Labels a PPI interval needs: one label says nothing of the judge's spread of mistakes (its
#: variance is 0), so its interval would look exact; it is not shown.
MIN_LABELS = 2
TOO_FEW = "1 label: too few for an interval"


def judge_interval(d: PairedDiff | None, *, labelled: bool, difference: bool = False) -> str:
    """A model judge's score in % as 'mean [low, high]' (its 95% interval), or with `difference`
    its paired difference from the baseline in points ('+5.0 [-1.2, +11.3]', ' *' when the
    interval excludes 0); '-' when there is none. The one formatter of a judge interval: the
    exports' judge table and the Compare page both show it.

    A share lies in [0, 100] (a difference in [-100, +100]): PPI's normal interval may reach
    past that, and cutting it there loses no coverage. From labels (`labelled`: a PPI estimate)
    fewer than MIN_LABELS, the mean with TOO_FEW instead of an interval that would look exact."""
    if d is None or d.n == 0 or any(math.isnan(v) for v in (d.mean, d.low, d.high)):
        return "-"
    sign, floor = ("+", -1.0) if difference else ("", 0.0)
    if labelled and d.n < MIN_LABELS:
        return f"{100 * d.mean:{sign}.1f} ({TOO_FEW})"
    star = " *" if difference and d.significant else ""
    return (f"{100 * d.mean:{sign}.1f} [{100 * max(d.low, floor):{sign}.1f}, "
            f"{100 * min(d.high, 1.0):{sign}.1f}]{star}")


#: A judge whose verdicts make its labels worth less than this much more adds next to nothing.
NEXT_TO_NOTHING = 0.05


def judge_weight_words(w: JudgeWeight | None) -> str:
    """What a judge was worth in a PPI++ interval, in words: 'weight 0.42: the judge makes 30
    labels worth about 38' (as narrow as 38 labels alone would make it), 'weight 0.01: the judge
    adds next to nothing (30 labels worth about 30)', or '-' where no labels corrected the score.
    The one formatter of a judge's weight: the exports, the console and the Compare page."""
    if w is None:
        return "-"
    given = f"{w.labels} label{'s' if w.labels != 1 else ''}"
    if w.labels < MIN_LABELS:
        return f"weight {w.weight:.2f}: {given}, too few to weigh the judge"
    worth = f"{given} worth about {w.effective_labels:.0f}"
    if w.effective_labels < (1 + NEXT_TO_NOTHING) * w.labels:
        return f"weight {w.weight:.2f}: the judge adds next to nothing ({worth})"
    return f"weight {w.weight:.2f}: the judge makes {worth}"


def judge_rows(rep: EvalReport) -> list[list[str]]:
    """Header + one row per flow and judge: the estimate in % with its 95% interval, whether
    labels corrected it (PPI++) or not, how many labels, the paired difference with the
    baseline (* the interval excludes 0), each by `judge_interval`, and what the judge was worth
    in the score and in the difference (`judge_weight_words`)."""
    rows = [["flow", "judge (model)", "score [95%]", "kind", "labels", "vs baseline",
             "judge weight", "judge weight vs baseline"]]
    for j in rep.judges:
        vs = judge_interval(j.vs_baseline, labelled=j.vs_corrected, difference=True)
        rows.append([j.flow, f"{j.grader} ({j.model})", judge_interval(j.estimate,
                                                                       labelled=j.corrected),
                     "PPI++" if j.corrected else "uncorrected", str(j.labels), vs,
                     judge_weight_words(j.weight), judge_weight_words(j.vs_weight)])
    return rows


JUDGE_NOTE = ("Model judges: the judge's mean over the flow's answers; with labels corrected "
              "by power-tuned prediction-powered inference (PPI++: the judge counts with the "
              "weight its agreement with the labels earns, 0 leaving the labels' own interval, "
              "and 'worth about N' is how many labels alone would make the interval as narrow), "
              "without them uncorrected (the judge's own errors are in it). A judge's calls are "
              "never part of a flow's cost.")


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


#: what an evaluation that kept several runs in flight to a model server says of its answers
CONCURRENT_ANSWERS = ("Answers may differ from a one-at-a-time run: a model server may compute "
                      "requests in flight together otherwise than one alone, which can change "
                      "even a greedy answer.")


def concurrent_on_server(rec: dict[str, Any]) -> bool:
    """Whether an execution record ran several runs in flight to one model server (Ray workers
    each load their own model: their answers are the serial run's)."""
    return int(rec.get("concurrency", 1)) > 1 and not rec.get("workers")


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
    """'Runs: 4 runs in flight at once (the server reports 4 parallel slots).', then
    CONCURRENT_ANSWERS where runs were in flight together to a model server; or '' for an
    evaluation run one run at a time throughout (as every evaluation was before concurrency)."""
    plain = [{"concurrency": 1}]
    if not rep.execution or all(r == plain[0] for r in rep.execution):
        return ""
    caveat = (" " + CONCURRENT_ANSWERS if any(concurrent_on_server(r) for r in rep.execution)
              else "")
    return "Runs: " + ", then ".join(_one_execution(r) for r in rep.execution) + "." + caveat

