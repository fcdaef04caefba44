"""Chosen labels against random ones, by simulation (not a test; no model): the width of the
PPI++ interval of the difference between two flows after k questions labelled for both flows.

Two flows answer `--questions` questions (100); on a share s of them both gave the same answer
(the same truth and the same verdict for both), on the rest their answers differ and are right
with probability 0.35 and 0.25, independently. The judge is the no-signal one (yes to 75%) or one
right 80% of the time (`bench/ppi_pp.py`). Over `--draws` draws (200) per row:

- random: k questions drawn at random, today's estimator (`ppi_pp_paired` without `same_truth`);
- random, alike known: the same labels, the questions answered alike counted as known
  (`same_truth`), so only the estimator changes;
- chosen: k questions in `label_next.next_labels`' order (the questions answered differently, in
  a random order), with `same_truth`.

It prints how often each interval holds the true difference and the chosen interval's width
against the random ones. Where fewer than k questions differ, chosen labels stop there (every
difference is then known) and the row says how many were labelled.

Usage: python bench/label_next.py [--draws 200] [--questions 100] [--seed 0]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.eval.label_next import next_labels
from flowkit.eval.metrics import PairedDiff
from flowkit.eval.ppi_pp import ppi_pp_paired

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppi_pp import JUDGES, Judge  # the same simulated judges as the PPI++ bench


def pair(share: float, questions: int, judge: Judge, rng: np.random.Generator
         ) -> tuple[list[str], set[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Question ids, those answered alike, and each flow's truth and verdicts."""
    qids = [f"q{i:03d}" for i in range(questions)]
    alike = rng.random(questions) < share
    t_b = (rng.random(questions) < 0.25).astype(float)
    t_a = np.where(alike, t_b, (rng.random(questions) < 0.35).astype(float))
    v_b = judge(t_b, rng)
    v_a = np.where(alike, v_b, judge(t_a, rng))
    return qids, {q for q, a in zip(qids, alike) if a}, t_a, t_b, v_a, v_b


def interval(qids: list[str], lab: list[str], t_a: np.ndarray, t_b: np.ndarray, v_a: np.ndarray,
             v_b: np.ndarray, same: set[str] | None) -> PairedDiff:
    at = {q: i for i, q in enumerate(qids)}
    return ppi_pp_paired(dict(zip(qids, v_a)), dict(zip(qids, v_b)),
                         {q: float(t_a[at[q]]) for q in lab}, {q: float(t_b[at[q]]) for q in lab},
                         same_truth=same or ())


def row(share: float, judge: Judge, k: int, questions: int, draws: int,
        rng: np.random.Generator) -> dict[str, float]:
    hits = {"random": 0, "random_known": 0, "chosen": 0}
    widths: dict[str, list[float]] = {name: [] for name in hits}
    labelled = []
    for d in range(draws):
        qids, same, t_a, t_b, v_a, v_b = pair(share, questions, judge, rng)
        true = float((t_a - t_b).mean())
        rand = [qids[i] for i in rng.permutation(questions)[:k]]
        chosen = next_labels(qids, labelled=(), known=same, n=k, seed=d)
        labelled.append(len(chosen))
        for name, lab, known in (("random", rand, None), ("random_known", rand, same),
                                 ("chosen", chosen, same)):
            est = interval(qids, lab, t_a, t_b, v_a, v_b, known)
            hits[name] += est.low <= true <= est.high
            widths[name].append(est.high - est.low)
    w = {name: float(np.nanmean(v)) for name, v in widths.items()}
    return {"cov_random": hits["random"] / draws, "cov_known": hits["random_known"] / draws,
            "cov_chosen": hits["chosen"] / draws,
            "vs_random": w["chosen"] / w["random"], "vs_known": w["chosen"] / w["random_known"],
            "labelled": float(np.mean(labelled))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print(f"{a.questions} questions, {a.draws} draws a row\n"
          "judge      alike  k | holds: random  alike known  chosen | chosen width vs random  "
          "vs alike known | labelled")
    for name, judge in JUDGES.items():
        for share in (0.0, 0.3, 0.5, 0.7):
            for k in (10, 30):
                r = row(share, judge, k, a.questions, a.draws, rng)
                print(f"{name:10s} {share:5.1f} {k:2d} | {100 * r['cov_random']:13.1f} "
                      f"{100 * r['cov_known']:12.1f} {100 * r['cov_chosen']:7.1f} | "
                      f"{r['vs_random']:22.2f} {r['vs_known']:15.2f} | {r['labelled']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
