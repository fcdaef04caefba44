"""Power-tuned prediction-powered inference (PPI++; Angelopoulos, Duchi and Zrnic 2023): PPI with
the judge weighed by what the labels show of it, so a judge without signal leaves the labels'
own interval (it no longer widens it) and a judge with signal narrows it.

Notation: the judge's scores f~ on the N unlabelled items; n labelled items, each with the judge's
score f and the person's truth y. For a weight lambda the estimate of the mean truth is

    theta(lambda) = lambda * mean_N(f~) + mean_n(y - lambda * f)

(the labels' mean, moved by lambda times the judge's difference between the unlabelled and the
labelled items), with variance

    V(lambda) = lambda^2 * var_N(f~) / N + var_n(y - lambda * f) / n.

lambda = 1 is classical PPI (`ppi.ppi_mean`); lambda = 0 is the labels alone. Writing
var_n(y - lambda f) = var(y) - 2 lambda cov(y, f) + lambda^2 var(f) and setting dV/dlambda = 0
gives the weight of the narrowest interval,

    lambda* = cov_n(y, f) / ((1 + n / N) * var(f)),

with cov_n over the labelled items and var(f) over all N + n judge scores. `power_weight`
estimates it from the labels and clips it to [0, 1]: 0 with fewer than two labels (no covariance
to read) or no unlabelled item. A judge whose verdicts do not follow the labels gets a weight near
0; one that does, a weight that grows with its agreement and with N against n.

Small-sample rule. With few labels that all agree (ten answers, all wrong) var_n is 0 and the
interval would claim the mean exactly. So, once lambda is estimated from the real labels, two
pseudo-labels join them: one at each end of the truth's range (0 and 1 for a share, -1 and +1 for
a difference of shares), each with the labelled items' mean judge score, and n becomes n + 2 in
both formulas. It is Agresti and Coull's "add a success and a failure" carried over to PPI: it
pulls the estimate slightly toward the middle of the range and keeps every interval's width
above 0. Measured by simulation (`bench/ppi_pp.py`: flows of 100 and 1,000 answers, shares of
0.2-0.5 right, a judge without signal and one right 80% of the time): at 10 labels the normal
labels-only interval held the true mean in 87-94% of draws, PPI++ with the rule in 92-97%.

Effective labels: how many labels alone (the same rule, lambda = 0) would give an interval this
narrow: n * (labels-only width / PPI++ width)^2; n when the judge adds nothing, more when it helps.

Every interval function returns a `PairedDiff`, as `ppi` does; `judge_weight` says what the judge
was worth (`JudgeWeight`).
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .metrics import PairedDiff
from .ppi import paired_sets, sample_var, z_value

#: The range of a share (a judge's verdict, a label) and of a difference between two shares.
SHARE = (0.0, 1.0)
DIFFERENCE = (-1.0, 1.0)


@dataclass(frozen=True)
class JudgeWeight:
    """What a judge was worth in a PPI++ interval: its `weight` (lambda in [0, 1]: 0 the labels
    alone, 1 classical PPI), the number of real `labels`, and `effective_labels`, how many labels
    alone would give an interval as narrow."""

    weight: float
    labels: int
    effective_labels: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Fit:
    estimate: float
    var: float              # of the estimate
    var_alone: float        # of the labels-only estimate under the same rule
    weight: float
    labels: int


def _arrays(unlabelled: Sequence[float], labelled: Sequence[tuple[float, float]]
            ) -> tuple[np.ndarray, np.ndarray]:
    return (np.asarray(list(unlabelled), dtype=float),
            np.asarray(list(labelled), dtype=float).reshape(-1, 2))


def _weight(f: np.ndarray, pairs: np.ndarray) -> float:
    n, big_n = pairs.shape[0], f.size
    if n < 2 or big_n == 0:
        return 0.0
    spread = sample_var(np.concatenate([f, pairs[:, 0]]))
    if spread <= 0:
        return 0.0
    cov = float(np.cov(pairs[:, 1], pairs[:, 0], ddof=1)[0, 1])
    return float(np.clip(cov / ((1 + n / big_n) * spread), 0.0, 1.0))


def _fit(f: np.ndarray, pairs: np.ndarray, weight: float | None,
         truth_range: tuple[float, float]) -> _Fit | None:
    n = pairs.shape[0]
    if n == 0:
        return None
    lam = 0.0 if f.size == 0 else _weight(f, pairs) if weight is None else float(weight)
    low, high = truth_range
    mean_f = float(pairs[:, 0].mean())
    judged = np.append(pairs[:, 0], [mean_f, mean_f])     # the two pseudo-labels
    truth = np.append(pairs[:, 1], [high, low])
    rect = truth - lam * judged
    m = rect.size
    unlabelled_part = lam * float(f.mean()) if f.size else 0.0
    unlabelled_var = lam ** 2 * sample_var(f) / f.size if f.size else 0.0
    return _Fit(unlabelled_part + float(rect.mean()), unlabelled_var + sample_var(rect) / m,
                sample_var(truth) / m, lam, n)


def power_weight(unlabelled: Sequence[float], labelled: Sequence[tuple[float, float]]) -> float:
    """The judge's weight lambda estimated from the labels, clipped to [0, 1] (see the module's
    help): `unlabelled` are the judge's scores on the items without a label, `labelled` are
    (judge's score, truth) pairs."""
    return _weight(*_arrays(unlabelled, labelled))


def ppi_pp_mean(unlabelled: Sequence[float], labelled: Sequence[tuple[float, float]], *,
                metric: str = "", flow: str = "", confidence: float = 0.95,
                weight: float | None = None,
                truth_range: tuple[float, float] = SHARE) -> PairedDiff:
    """The PPI++ estimate of the mean truth and its interval.

    `unlabelled`: the judge's scores on the items without a label; `labelled`: (judge's score,
    truth) on the labelled items; `truth_range`: where the truth lies (the pseudo-labels' values).
    `weight` fixes lambda instead of estimating it (1: classical PPI with the small-sample rule,
    0: the labels alone with it). Without labels: nan."""
    fit = _fit(*_arrays(unlabelled, labelled), weight, truth_range)
    if fit is None:
        return PairedDiff(metric, flow, "", 0, math.nan, math.nan, math.nan)
    half = z_value(confidence) * math.sqrt(fit.var)
    return PairedDiff(metric, flow, "", fit.labels, fit.estimate, fit.estimate - half,
                      fit.estimate + half)


def judge_weight(unlabelled: Sequence[float], labelled: Sequence[tuple[float, float]], *,
                 truth_range: tuple[float, float] = SHARE) -> JudgeWeight | None:
    """What the judge is worth in `ppi_pp_mean` on the same items: its weight and the effective
    number of labels; None without labels."""
    fit = _fit(*_arrays(unlabelled, labelled), None, truth_range)
    if fit is None:
        return None
    effective = fit.labels * fit.var_alone / fit.var if fit.var > 0 else float(fit.labels)
    return JudgeWeight(fit.weight, fit.labels, effective)


def _differing(scores: Mapping[str, float], base_scores: Mapping[str, float],
               same_truth: Collection[str]) -> tuple[dict[str, float], float, int]:
    """The flow's scores on the questions not in `same_truth`, their share of the questions both
    flows have scores for, and how many those are."""
    common = [q for q in scores if q in base_scores]
    same = set(same_truth)
    rest = {q: scores[q] for q in common if q not in same}
    return rest, (len(rest) / len(common) if common else 1.0), len(common)


def ppi_pp_paired(scores: Mapping[str, float], base_scores: Mapping[str, float],
                  labels: Mapping[str, float], base_labels: Mapping[str, float], *,
                  metric: str = "", flow: str = "", baseline: str = "",
                  confidence: float = 0.95, same_truth: Collection[str] = ()) -> PairedDiff:
    """flow minus baseline by PPI++ on the paired per-question differences (`ppi.paired_sets`:
    a question counts as labelled when both flows' answers are).

    `same_truth`: questions whose truth is known to be the same for both flows without a label
    (both gave the same answer, and the truth depends on the answer alone, as correctness does):
    their difference is 0, so PPI++ runs on the other questions D alone and the estimate and its
    interval are scaled by D's share of the questions, |D| / |Q|. Labels on D then count in full
    and labels on the rest are not needed (`label_next`); the labelled questions of D must be a
    random sample of D, as they are when labelled at random or in `label_next`'s order."""
    rest, share, total = _differing(scores, base_scores, same_truth)
    if not rest and total:                  # every question answered alike: no difference at all
        return PairedDiff(metric, flow, baseline, total, 0.0, 0.0, 0.0)
    d_f, d_pairs = paired_sets(rest, base_scores, labels, base_labels)
    out = ppi_pp_mean(d_f, d_pairs, metric=metric, flow=flow, confidence=confidence,
                      truth_range=DIFFERENCE)
    return PairedDiff(metric, flow, baseline, out.n, share * out.mean, share * out.low,
                      share * out.high)


def judge_weight_paired(scores: Mapping[str, float], base_scores: Mapping[str, float],
                        labels: Mapping[str, float], base_labels: Mapping[str, float], *,
                        same_truth: Collection[str] = ()) -> JudgeWeight | None:
    """What the judge is worth in `ppi_pp_paired` on the same answers; None without a question
    labelled for both flows among those whose truth is not known to be the same."""
    rest, _, _ = _differing(scores, base_scores, same_truth)
    d_f, d_pairs = paired_sets(rest, base_scores, labels, base_labels)
    return judge_weight(d_f, d_pairs, truth_range=DIFFERENCE)
