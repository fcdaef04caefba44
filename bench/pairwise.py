"""The pairwise judge against gold, with the real model (not a test).

On a stored evaluation of two flows on a set with gold answers (for example naive_rag and a copy
reading one passage, on SQuAD 2.0's answerable questions; commands below):

1. grade every question both flows answered with the pairwise judge (`flowkit judge --pairwise`),
   asked in both orders, and count the position flips (the verdict changed when A and B swapped
   places), those that picked the same place both times, and the replies that named neither;
2. the gold order of each question: 1 where A's answer has the higher token F1 against the gold
   answers, 0 where B's has, 0.5 where they are equal; the judge's agreement with it as the
   reliability card reads it (kappa, confusion matrix);
3. PPI++ coverage: over `--draws` draws, k questions' gold order are the user's pairwise labels
   (k = 10, 30), and how often the 95% win-rate interval holds the gold win rate over all the
   questions, its width against the labels-only interval, and the uncorrected interval's coverage.

Usage:
  flowkit --data-dir D setup && flowkit --data-dir D dataset import squad2_dev_sample --kb squad \\
      --ingest
  flowkit --data-dir D eval --flow naive_rag --flow one_passage.json --dataset squad2_dev_sample \\
      --kb squad --limit 60
  python bench/pairwise.py --data-dir D --eval EVAL_ID --pair naive_rag,one_passage
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.eval.pairwise import win_rate
from flowkit.eval.reliability import reliability_card
from service.evaluations import eval_repo, report, stored_plan
from service.grading import model_name
from service.pairwise import grade_pairwise, pair, verdicts
from service.workspace import Workspace


def gold_order(ws: Workspace, eval_id: str, a: str, b: str) -> dict[str, float]:
    """Per question both flows answered: 1 A's F1 higher, 0 B's, 0.5 equal."""
    rep = report(eval_repo(ws), stored_plan(ws, eval_id))
    fa = {r.question_id: r.f1 for r in rep.results.get(a, []) if r.status == "ok"}
    fb = {r.question_id: r.f1 for r in rep.results.get(b, []) if r.status == "ok"}
    return {q: 1.0 if fa[q] > fb[q] else 0.0 if fa[q] < fb[q] else 0.5 for q in fa if q in fb}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--pair", required=True)
    ap.add_argument("--judge-model", default="")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ws = Workspace(Path(a.data_dir))
    try:
        fa, fb = pair(ws, a.eval, a.pair)
        t0 = time.perf_counter()
        out = grade_pairwise(ws, a.eval, fa, fb, model=a.judge_model)
        print(f"{out.line()} in {time.perf_counter() - t0:.0f} s")
        label = model_name(ws, a.judge_model)
        vs = verdicts(ws, a.eval, fa, fb, label)
        gold = gold_order(ws, a.eval, fa, fb)
    finally:
        ws.close()
    w = win_rate(vs, {}, a=fa, b=fb, model=label)
    print(f"{w.questions} questions: {w.wins} {fa} better, {w.ties} ties, {w.losses} {fb} "
          f"better; asked in both orders with two replies: {w.asked}; flips {w.flips} "
          f"({100 * w.flip_share:.0f}%), the same place both times {w.same_place}; a reply "
          f"naming neither: {w.unparsed}; answered alike (no call): "
          f"{w.questions - w.asked - w.unparsed}")
    asked = [v.orders for v in vs.values() if v.asked]
    firsts = sum((o[0] == 1.0) + (o[1] == 0.0) for o in asked)
    ties = sum((o[0] == 0.5) + (o[1] == 0.5) for o in asked)
    print(f"replies: the answer shown first {firsts} of {2 * len(asked)}, 'same' {ties}")
    qs = [q for q in vs if q in gold]
    card = reliability_card([(vs[q].score, gold[q]) for q in qs], judge="pairwise vs gold F1",
                            model=label, categories=(f"{fa} better", "tie", f"{fb} better"),
                            asked=w.asked, flips=w.flips)
    for line in card.lines():
        print(line)
    truth = float(np.mean([gold[q] for q in qs]))
    print(f"gold win rate {100 * truth:.1f}; judge's own {100 * w.estimate.mean:.1f} "
          f"[{100 * w.estimate.low:.1f}, {100 * w.estimate.high:.1f}]")
    rng = np.random.default_rng(a.seed)
    for k in (10, 30):
        if k >= len(qs):
            continue
        held = 0
        widths, alone = [], []
        for _ in range(a.draws):
            pick = rng.choice(qs, size=k, replace=False).tolist()
            est = win_rate({q: vs[q] for q in qs}, {q: gold[q] for q in pick}, a=fa, b=fb,
                           model=label)
            held += est.estimate.low <= truth <= est.estimate.high
            widths.append(est.estimate.high - est.estimate.low)
            alone.append(est.labels_only_width or np.nan)
        print(f"k={k}: PPI++ coverage {100 * held / a.draws:.1f}% over {a.draws} draws, width "
              f"{100 * np.mean(widths):.1f} points = {np.mean(widths) / np.nanmean(alone):.2f}x "
              f"the labels-only width; uncorrected holds it: "
              f"{w.estimate.low <= truth <= w.estimate.high}")


if __name__ == "__main__":
    main()
