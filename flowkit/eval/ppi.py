"""Prediction-powered inference (Angelopoulos et al. 2023, as ARES uses it): a grader's scores on
every item, corrected by a few items a person labelled, give an interval that holds whatever the
grader's error rate (a weak grader only makes it wider).

With grader scores f on the N unlabelled items and n labelled items with truth y (and the grader's
score f on those too), the estimate of the mean truth is mean_N(f) + mean_n(y - f), with variance
var_N(f) / N + var_n(y - f) / n. For the difference between two flows the same is applied to the
paired per-question differences. Every function returns what `metrics.paired_bootstrap` returns
(a `PairedDiff`), so pages and reports show them alike.

This is classical PPI: the judge always counts in full, so a judge without signal widens the
interval past the labels' own. The reports and pages use the power-tuned version beside it
(`ppi_pp`), which weighs the judge by what the labels show of it.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist

import numpy as np

from .metrics import PairedDiff, bootstrap_ci


def z_value(confidence: float) -> float:
    """The two-sided normal quantile of a `confidence` interval (1.96 for 0.95)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def sample_var(x: np.ndarray) -> float:
    """The sample variance (n - 1 in the denominator); 0 for fewer than two values."""
    return float(x.var(ddof=1)) if x.size > 1 else 0.0


def ppi_mean(unlabelled: Sequence[float], labelled: Sequence[tuple[float, float]], *,
             metric: str = "", flow: str = "", confidence: float = 0.95) -> PairedDiff:
    """The PPI estimate of the mean truth and its interval.

    `unlabelled`: grader scores on the items without a label; `labelled`: (grader score, truth)
    on the labelled items. Without labels: nan (use `uncorrected` for the raw grader mean)."""
    f = np.asarray(list(unlabelled), dtype=float)
    pairs = np.asarray(list(labelled), dtype=float).reshape(-1, 2)
    n = pairs.shape[0]
    if n == 0:
        return PairedDiff(metric, flow, "", 0, math.nan, math.nan, math.nan)
    rect = pairs[:, 1] - pairs[:, 0]
    if f.size == 0:                        # every item labelled: the labels' own mean
        return labels_only([float(y) for y in pairs[:, 1]], metric=metric, flow=flow,
                           confidence=confidence)
    est = float(f.mean() + rect.mean())
    se = math.sqrt(sample_var(f) / f.size + sample_var(rect) / n)
    half = z_value(confidence) * se
    return PairedDiff(metric, flow, "", n, est, est - half, est + half)


def labels_only(truth: Sequence[float], *, metric: str = "", flow: str = "",
                confidence: float = 0.95) -> PairedDiff:
    """The classical interval from the labels alone (what PPI is compared with)."""
    y = np.asarray(list(truth), dtype=float)
    if y.size == 0:
        return PairedDiff(metric, flow, "", 0, math.nan, math.nan, math.nan)
    half = z_value(confidence) * math.sqrt(sample_var(y) / y.size)
    m = float(y.mean())
    return PairedDiff(metric, flow, "", int(y.size), m, m - half, m + half)


def uncorrected(scores: Sequence[float], *, metric: str = "", flow: str = "",
                seed: int = 0) -> PairedDiff:
    """The raw grader mean with a bootstrap interval: what the grader says, not corrected for its
    mistakes (shown as 'uncorrected')."""
    mean, low, high = bootstrap_ci([float(s) for s in scores], seed=seed)
    return PairedDiff(metric, flow, "", len(scores), mean, low, high)


def ppi_paired(scores: Mapping[str, float], base_scores: Mapping[str, float],
               labels: Mapping[str, float], base_labels: Mapping[str, float], *,
               metric: str = "", flow: str = "", baseline: str = "",
               confidence: float = 0.95) -> PairedDiff:
    """flow minus baseline by PPI on paired per-question differences.

    `scores` / `base_scores`: grader scores by question id; `labels` / `base_labels`: truth by
    question id where a person labelled the answer. A question is labelled for the pair when both
    flows' answers are."""
    d_f, d_pairs = paired_sets(scores, base_scores, labels, base_labels)
    out = ppi_mean(d_f, d_pairs, metric=metric, flow=flow, confidence=confidence)
    return PairedDiff(metric, flow, baseline, out.n, out.mean, out.low, out.high)


def paired_sets(scores: Mapping[str, float], base_scores: Mapping[str, float],
                labels: Mapping[str, float], base_labels: Mapping[str, float]
                ) -> tuple[list[float], list[tuple[float, float]]]:
    """The per-question differences (flow minus baseline) that paired PPI works on: the judge's
    difference on each question not labelled for both flows, and (judge's difference, labels'
    difference) on each question labelled for both."""
    common = [q for q in scores if q in base_scores]
    both = [q for q in common if q in labels and q in base_labels]
    pair = set(both)
    d_f = [scores[q] - base_scores[q] for q in common if q not in pair]
    d_pairs = [(scores[q] - base_scores[q], labels[q] - base_labels[q]) for q in both]
    return d_f, d_pairs
