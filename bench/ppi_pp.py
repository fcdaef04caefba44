"""PPI++ against classical PPI and the labels alone, by simulation (not a test; no model).

Each cell is a flow with `--answers` answers (100, as in the stored HotpotQA evaluations), a
share p of them right (the truth, 0 or 1), and a scripted judge:

- no signal: says yes to 75% of the answers whatever they are (as the packaged Gemma 3 270M did:
  72-75% yes, kappa about 0 against gold);
- right 80%: gives the truth on 80% of the answers and the opposite on the rest.

k answers drawn at random are the person's labels, the rest unlabelled; over `--draws` draws
per cell it reports how often each 95% interval holds the flow's true mean over all its answers
(coverage), and mean widths as ratios: PPI++ against the labels-only interval under the same
small-sample rule (weight 0: what PPI++ is meant never to be much wider than), PPI++ and
classical PPI against today's labels-only interval (`ppi.labels_only`, normal, no rule); and the
judge's mean weight and effective labels. A paired block does the same for the difference
between two flows (p and p + 0.1, the same judge on both, k questions labelled for both).

For a judge right 80% of the time the verdict's correlation with the truth is rho, with
rho^2 = 0.36 p (1 - p) / (q (1 - q)) and q = 0.8 p + 0.2 (1 - p) its share of yes (rho = 0.6 at
p = 0.5, less elsewhere), and no weight can narrow the interval below sqrt(1 - rho^2 / (1 + n / N))
of the labels' own (n labels, N unlabelled answers): at best 0.80, and only as N grows without
bound. That bound is printed beside each of its rows.

Usage: python bench/ppi_pp.py [--draws 1000] [--answers 100] [--seed 0]
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.eval.metrics import PairedDiff
from flowkit.eval.ppi import labels_only, ppi_mean, ppi_paired
from flowkit.eval.ppi_pp import judge_weight, judge_weight_paired, ppi_pp_mean, ppi_pp_paired

Judge = Callable[[np.ndarray, np.random.Generator], np.ndarray]


def no_signal(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(truth.size) < 0.75).astype(float)


def right_80(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.where(rng.random(truth.size) < 0.8, truth, 1.0 - truth)


JUDGES: dict[str, Judge] = {"no signal": no_signal, "right 80%": right_80}


@dataclass
class Tally:
    """Hits and widths of one kind of interval over the draws of a cell."""

    hits: int = 0
    widths: list[float] = field(default_factory=list)

    def add(self, d: PairedDiff, true: float) -> None:
        self.hits += d.low <= true <= d.high
        self.widths.append(d.high - d.low)

    def coverage(self) -> float:
        return self.hits / len(self.widths)

    def width(self) -> float:
        return float(np.mean(self.widths))


def bound_80(p: float, k: int, answers: int) -> float:
    """The narrowest PPI++ width against the labels' own for the judge right 80% of the time on
    answers right with probability p."""
    yes = 0.8 * p + 0.2 * (1 - p)
    rho2 = 0.36 * p * (1 - p) / (yes * (1 - yes))
    return math.sqrt(1 - rho2 / (1 + k / (answers - k)))


def mean_cell(p: float, judge: Judge, k: int, answers: int, draws: int,
              rng: np.random.Generator) -> dict[str, float]:
    kinds = {name: Tally() for name in ("pp", "ppi", "alone_rule", "alone")}
    weights, effective = [], []
    for _ in range(draws):
        truth = (rng.random(answers) < p).astype(float)
        verdict = judge(truth, rng)
        order = rng.permutation(answers)
        lab, unl = order[:k], order[k:]
        pairs = list(zip(verdict[lab], truth[lab]))
        true = float(truth.mean())
        kinds["pp"].add(ppi_pp_mean(verdict[unl], pairs), true)
        kinds["ppi"].add(ppi_mean(verdict[unl], pairs), true)
        kinds["alone_rule"].add(ppi_pp_mean(verdict[unl], pairs, weight=0.0), true)
        kinds["alone"].add(labels_only(truth[lab]), true)
        w = judge_weight(verdict[unl], pairs)
        assert w is not None
        weights.append(w.weight)
        effective.append(w.effective_labels)
    return _summary(kinds, weights, effective)


def paired_cell(p: float, judge: Judge, k: int, answers: int, draws: int,
                rng: np.random.Generator) -> dict[str, float]:
    kinds = {name: Tally() for name in ("pp", "ppi", "alone_rule", "alone")}
    weights, effective = [], []
    qids = [f"q{i}" for i in range(answers)]
    for _ in range(draws):
        t_a = (rng.random(answers) < p + 0.1).astype(float)
        t_b = (rng.random(answers) < p).astype(float)
        v_a, v_b = judge(t_a, rng), judge(t_b, rng)
        lab = rng.permutation(answers)[:k]
        s_a, s_b = dict(zip(qids, v_a)), dict(zip(qids, v_b))
        l_a = {qids[i]: float(t_a[i]) for i in lab}
        l_b = {qids[i]: float(t_b[i]) for i in lab}
        true = float((t_a - t_b).mean())
        kinds["pp"].add(ppi_pp_paired(s_a, s_b, l_a, l_b), true)
        kinds["ppi"].add(ppi_paired(s_a, s_b, l_a, l_b), true)
        d_unl = [s_a[q] - s_b[q] for q in qids if q not in l_a]
        d_pairs = [(s_a[q] - s_b[q], l_a[q] - l_b[q]) for q in l_a]
        kinds["alone_rule"].add(ppi_pp_mean(d_unl, d_pairs, weight=0.0,
                                            truth_range=(-1.0, 1.0)), true)
        kinds["alone"].add(labels_only([y for _, y in d_pairs]), true)
        w = judge_weight_paired(s_a, s_b, l_a, l_b)
        assert w is not None
        weights.append(w.weight)
        effective.append(w.effective_labels)
    return _summary(kinds, weights, effective)


def _summary(kinds: dict[str, Tally], weights: list[float],
             effective: list[float]) -> dict[str, float]:
    return {"cov_pp": kinds["pp"].coverage(), "cov_ppi": kinds["ppi"].coverage(),
            "cov_alone_rule": kinds["alone_rule"].coverage(),
            "cov_alone": kinds["alone"].coverage(),
            "pp_vs_rule": kinds["pp"].width() / kinds["alone_rule"].width(),
            "pp_vs_alone": kinds["pp"].width() / kinds["alone"].width(),
            "ppi_vs_alone": kinds["ppi"].width() / kinds["alone"].width(),
            "weight": float(np.mean(weights)), "effective": float(np.mean(effective))}


HEAD = ("judge      p    k | coverage: PPI++  PPI   alone(rule) alone | width PPI++/alone(rule) "
        "PPI++/alone PPI/alone | weight  eff. labels | bound")


def line(name: str, p: float, k: int, r: dict[str, float], limit: str) -> str:
    return (f"{name:10s} {p:.1f} {k:3d} | {100 * r['cov_pp']:14.1f} {100 * r['cov_ppi']:5.1f} "
            f"{100 * r['cov_alone_rule']:11.1f} {100 * r['cov_alone']:5.1f} | "
            f"{r['pp_vs_rule']:22.2f} {r['pp_vs_alone']:11.2f} {r['ppi_vs_alone']:9.2f} | "
            f"{r['weight']:6.2f} {r['effective']:12.1f} | {limit}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--answers", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    for title, cell in (("mean of one flow", mean_cell),
                        ("paired difference (flow at p + 0.1 minus flow at p)", paired_cell)):
        print(f"\n== {title}: {a.answers} answers, {a.draws} draws per row\n{HEAD}")
        for name, judge in JUDGES.items():
            for p in (0.2, 0.3, 0.5):
                for k in (10, 30):
                    r = cell(p, judge, k, a.answers, a.draws, rng)
                    limit = (f"{bound_80(p, k, a.answers):.2f}"
                             if name == "right 80%" and cell is mean_cell else "")
                    print(line(name, p, k, r, limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
