"""PPI++ (flowkit/eval/ppi_pp.py): the judge's weight read from the labels, intervals that hold by
simulation, never much wider than the labels alone for a judge without signal, narrower for a good
judge, classical PPI and the labels alone as its two ends, and the weight in words."""
from __future__ import annotations

import math

import numpy as np
import pytest

from flowkit.eval.formatting import judge_weight_words
from flowkit.eval.ppi import labels_only, ppi_mean
from flowkit.eval.ppi_pp import (
    DIFFERENCE,
    JudgeWeight,
    judge_weight,
    judge_weight_paired,
    power_weight,
    ppi_pp_mean,
    ppi_pp_paired,
)


def world(rng: np.random.Generator, size: int, p: float, right: float | None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Truth (0/1, right with probability p) and a judge that gives the truth with probability
    `right`, or says yes to 75% whatever the truth (right=None: no signal)."""
    truth = (rng.random(size) < p).astype(float)
    if right is None:
        return truth, (rng.random(size) < 0.75).astype(float)
    return truth, np.where(rng.random(size) < right, truth, 1.0 - truth)


def split(truth: np.ndarray, verdict: np.ndarray, k: int, rng: np.random.Generator
          ) -> tuple[np.ndarray, list[tuple[float, float]]]:
    order = rng.permutation(truth.size)
    lab, unl = order[:k], order[k:]
    return verdict[unl], list(zip(verdict[lab], truth[lab]))


@pytest.mark.parametrize("right", [None, 0.8])
@pytest.mark.parametrize("k", [10, 30])
def test_the_interval_holds_the_true_mean_by_simulation(right, k) -> None:
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(300):
        truth, verdict = world(rng, 100, 0.3, right)
        est = ppi_pp_mean(*split(truth, verdict, k, rng))
        hits += est.low <= truth.mean() <= est.high
    assert hits / 300 >= 0.93


def test_a_judge_without_signal_gets_a_weight_near_0_and_the_labels_own_width() -> None:
    rng = np.random.default_rng(1)
    weights, ratios, classical = [], [], []
    for _ in range(100):
        truth, verdict = world(rng, 330, 0.3, None)
        unl, pairs = split(truth, verdict, 30, rng)
        weights.append(power_weight(unl, pairs))
        pp, alone = ppi_pp_mean(unl, pairs), ppi_pp_mean(unl, pairs, weight=0.0)
        ratios.append((pp.high - pp.low) / (alone.high - alone.low))
        ppi = ppi_mean(unl, pairs)
        classical.append((ppi.high - ppi.low) / (alone.high - alone.low))
    assert np.mean(weights) < 0.1
    assert np.mean(ratios) <= 1.01
    # classical PPI counts the same judge in full and is far wider
    assert np.mean(classical) > 1.3


def test_a_good_judge_narrows_the_interval_and_is_worth_more_labels() -> None:
    rng = np.random.default_rng(2)
    truth, verdict = world(rng, 2030, 0.4, 0.9)
    unl, pairs = split(truth, verdict, 30, rng)
    pp, alone = ppi_pp_mean(unl, pairs), ppi_pp_mean(unl, pairs, weight=0.0)
    assert pp.high - pp.low < 0.8 * (alone.high - alone.low)
    w = judge_weight(unl, pairs)
    assert w is not None and w.labels == 30 and w.weight > 0.5
    assert w.effective_labels == pytest.approx(
        30 * ((alone.high - alone.low) / (pp.high - pp.low)) ** 2)
    assert w.effective_labels > 45


def test_the_weight_is_the_formula_clipped_to_0_1() -> None:
    unl = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    pairs = [(1.0, 1.0), (0.0, 0.0), (1.0, 0.0), (0.0, 0.0)]
    f_all = np.array(unl + [f for f, _ in pairs])
    y, f = np.array([y for _, y in pairs]), np.array([f for f, _ in pairs])
    expected = np.cov(y, f, ddof=1)[0, 1] / ((1 + 4 / 6) * f_all.var(ddof=1))
    assert 0 < expected < 1 and power_weight(unl, pairs) == pytest.approx(expected)
    flipped = [(1.0 - f, y) for f, y in pairs]            # a judge that says the opposite
    assert power_weight(unl, flipped) == 0.0
    assert power_weight(unl, pairs[:1]) == 0.0            # one label: no covariance to read
    assert power_weight([], pairs) == 0.0                 # nothing unlabelled
    # a judge whose labelled scores vary far more than its scores overall: cut to 1
    assert power_weight([0.5] * 100, [(1.0, 1.0), (0.0, 0.0)] * 3) == 1.0


def test_the_estimated_weight_gives_about_the_narrowest_interval() -> None:
    rng = np.random.default_rng(6)
    truth, verdict = world(rng, 4400, 0.4, 0.8)
    unl, pairs = split(truth, verdict, 400, rng)
    lam = power_weight(unl, pairs)

    def width(w: float) -> float:
        d = ppi_pp_mean(unl, pairs, weight=w)
        return d.high - d.low
    assert 0.2 < lam < 0.9
    assert width(lam) < min(width(lam - 0.15), width(lam + 0.15), width(0.0), width(1.0))


def test_weight_1_is_classical_ppi_and_weight_0_the_labels_alone_with_two_pseudo_labels() -> None:
    rng = np.random.default_rng(3)
    truth, verdict = world(rng, 60, 0.4, 0.7)
    unl, pairs = split(truth, verdict, 12, rng)
    mean_f = float(np.mean([f for f, _ in pairs]))
    pseudo = [(mean_f, 1.0), (mean_f, 0.0)]
    one, classical = ppi_pp_mean(unl, pairs, weight=1.0), ppi_mean(unl, pairs + pseudo)
    assert (one.mean, one.low, one.high) == pytest.approx(
        (classical.mean, classical.low, classical.high))
    zero, alone = ppi_pp_mean(unl, pairs, weight=0.0), labels_only([y for _, y in pairs]
                                                                      + [1.0, 0.0])
    assert (zero.mean, zero.low, zero.high) == pytest.approx((alone.mean, alone.low, alone.high))
    assert one.n == zero.n == 12                            # the real labels are counted


def test_labels_that_all_agree_still_give_an_interval_with_width() -> None:
    unl = [1.0] * 90
    pairs = [(1.0, 0.0)] * 10                              # ten answers, all wrong
    est = ppi_pp_mean(unl, pairs)
    assert est.high - est.low > 0.1 and est.low <= 0.05 <= est.high
    assert math.isnan(ppi_pp_mean(unl, []).mean) and judge_weight(unl, []) is None


def test_the_paired_difference_is_ppi_pp_on_the_per_question_differences() -> None:
    rng = np.random.default_rng(4)
    qids = [f"q{i}" for i in range(80)]
    t_a, t_b = (rng.random(80) < 0.5).astype(float), (rng.random(80) < 0.3).astype(float)
    v_a = np.where(rng.random(80) < 0.85, t_a, 1 - t_a)
    v_b = np.where(rng.random(80) < 0.85, t_b, 1 - t_b)
    s_a, s_b = dict(zip(qids, v_a)), dict(zip(qids, v_b))
    l_a = {q: float(t_a[i]) for i, q in enumerate(qids[:25])}
    l_b = {q: float(t_b[i]) for i, q in enumerate(qids[:25])}
    d = ppi_pp_paired(s_a, s_b, l_a, l_b, metric="correctness", flow="a", baseline="b")
    unl = [s_a[q] - s_b[q] for q in qids[25:]]
    pairs = [(s_a[q] - s_b[q], l_a[q] - l_b[q]) for q in qids[:25]]
    same = ppi_pp_mean(unl, pairs, truth_range=DIFFERENCE)
    assert (d.flow, d.baseline, d.n) == ("a", "b", 25)
    assert (d.mean, d.low, d.high) == pytest.approx((same.mean, same.low, same.high))
    assert judge_weight_paired(s_a, s_b, l_a, l_b) == judge_weight(unl, pairs,
                                                                   truth_range=DIFFERENCE)


def test_the_paired_interval_holds_the_true_difference_by_simulation() -> None:
    rng = np.random.default_rng(5)
    qids = [f"q{i}" for i in range(100)]
    hits = 0
    for _ in range(200):
        t_a, v_a = world(rng, 100, 0.4, 0.8)
        t_b, v_b = world(rng, 100, 0.3, 0.8)
        lab = rng.permutation(100)[:20]
        d = ppi_pp_paired(dict(zip(qids, v_a)), dict(zip(qids, v_b)),
                          {qids[i]: float(t_a[i]) for i in lab},
                          {qids[i]: float(t_b[i]) for i in lab})
        hits += d.low <= float((t_a - t_b).mean()) <= d.high
    assert hits / 200 >= 0.93


def test_the_weight_in_words() -> None:
    assert judge_weight_words(None) == "-"
    assert judge_weight_words(JudgeWeight(0.42, 30, 38.4)) == \
        "weight 0.42: the judge makes 30 labels worth about 38"
    assert judge_weight_words(JudgeWeight(0.01, 30, 30.2)) == \
        "weight 0.01: the judge adds next to nothing (30 labels worth about 30)"
    assert judge_weight_words(JudgeWeight(0.0, 1, 1.0)) == \
        "weight 0.00: 1 label, too few to weigh the judge"
