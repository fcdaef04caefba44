"""A model judge's score of each flow from its verdicts and people's labels: what the reports and
the Compare page show (`report.JudgeScore`). A pure function: the caller reads the verdicts and
labels from wherever they are stored (`service.grading.scores`).

Per flow, with labels on some of its answers, the power-tuned prediction-powered estimate of the
mean truth and its 95% interval (`ppi_pp.ppi_pp_mean` on the judge's scores of the unlabelled
answers and the (score, label) pairs of the labelled ones), what the judge was worth in it
(`ppi_pp.judge_weight`: its weight and the effective number of labels) and beside it the width of
the labels-only interval (the same rule with weight 0); without labels, the judge's raw mean with
a bootstrap interval, marked uncorrected (`ppi.uncorrected`). Against the baseline (the first
flow): where some questions are labelled for both flows, PPI++ on the paired per-question
differences (`ppi_pp.ppi_pp_paired`), else the raw paired differences, uncorrected. Questions on
which a flow answered as the baseline did (`same_answers`, for a judge whose truth depends on the
answer alone) have a difference of 0 without a label: PPI++ runs on the others.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

from .metrics import PairedDiff
from .ppi import uncorrected
from .ppi_pp import judge_weight, judge_weight_paired, ppi_pp_mean, ppi_pp_paired
from .report import JudgeScore


def judge_scores(flows: Sequence[str], scores: Mapping[str, Mapping[str, float]],
                 labels: Mapping[str, Mapping[str, float]], *, grader: str, model: str,
                 same_answers: Mapping[str, Collection[str]] | None = None) -> list[JudgeScore]:
    """One `JudgeScore` per flow of `flows` (the first is the baseline), in that order.

    `scores`: the judge's verdict per flow and question id (0..1); `labels`: people's truth per
    flow and question id (a flow missing from either has none); `grader` and `model` name the
    judge and its model on every score; `same_answers`: per flow, the questions it answered as
    the baseline did, given only for a judge whose truth depends on the answer alone."""
    baseline = flows[0] if flows else ""
    base, base_truth = scores.get(baseline, {}), labels.get(baseline, {})
    out = []
    for f in flows:
        s, t = scores.get(f, {}), labels.get(f, {})
        jf = _score(f, s, t, grader, model)
        same = set((same_answers or {}).get(f, ()))
        if f != baseline and s and base:
            differ = [q for q in s if q in base and q not in same]
            if not differ or any(q in t and q in base_truth for q in differ):
                jf.vs_baseline = ppi_pp_paired(s, base, t, base_truth, metric=grader, flow=f,
                                               baseline=baseline, same_truth=same)
                jf.vs_weight = judge_weight_paired(s, base, t, base_truth, same_truth=same)
                jf.vs_corrected = True
            else:
                diffs = [s[q] - base[q] for q in s if q in base]
                u = uncorrected(diffs, metric=grader, flow=f)
                jf.vs_baseline = PairedDiff(grader, f, baseline, u.n, u.mean, u.low, u.high)
        out.append(jf)
    return out


def _score(flow: str, s: Mapping[str, float], t: Mapping[str, float], grader: str,
           model: str) -> JudgeScore:
    raw = sum(s.values()) / len(s) if s else math.nan
    labelled = [(s[q], t[q]) for q in t if q in s]
    if not labelled:
        return JudgeScore(flow, grader, model, uncorrected(list(s.values()), metric=grader,
                                                           flow=flow), False, 0, raw)
    rest = [v for q, v in s.items() if q not in t]
    est = ppi_pp_mean(rest, labelled, metric=grader, flow=flow)
    alone = ppi_pp_mean(rest, labelled, weight=0.0)
    return JudgeScore(flow, grader, model, est, True, len(labelled), raw, alone.high - alone.low,
                      weight=judge_weight(rest, labelled))
