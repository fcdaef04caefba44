"""How far to trust the model judges, measured against gold (not a test).

On a stored evaluation of a set with gold answers and gold passages (for example the gold half of
bench/generated_vs_gold.py: eight templates on HotpotQA questions 1-100), with the real model:

1. grade every answer with the judges (`flowkit judge`), timed against the evaluation's own time;
2. each judge's agreement with its gold signal and Cohen's kappa: correctness vs Acc (the gold
   answer inside the prediction), context relevance vs the share of shown passages that are gold
   passages (>= 0.5 counts as relevant), groundedness vs nothing (its verdicts' spread is printed);
3. PPI and PPI++ coverage: for each flow, k gold-scored answers are the user's labels and the
   rest unlabelled; over D random draws of k = 10, 30, 100 (k < the flow's answers), how often
   each 95% interval holds the flow's true mean over all its answers, and its width against the
   labels-only interval (for PPI++, the labels-only interval under its own small-sample rule:
   weight 0), with the judge's mean PPI++ weight;
4. each judge's flow ranking against the gold-F1 ranking (Kendall's tau).

Usage: python bench/judges.py --data-dir DIR --eval EVAL_ID [--judges correctness,context_relevance,
       groundedness] [--draws 200] [--judge-model M]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.eval.metrics import doc_id_of
from flowkit.eval.ppi import labels_only, ppi_mean
from flowkit.eval.ppi_pp import power_weight, ppi_pp_mean
from flowkit.eval.ranking import kendall_tau
from service.evaluations import eval_repo, report, stored_plan
from service.grading import grade, grade_repo, model_name
from service.workspace import Workspace


def kappa(a: list[int], b: list[int]) -> float:
    """Cohen's kappa of two binary label lists."""
    x, y = np.asarray(a), np.asarray(b)
    po = float((x == y).mean())
    pe = float(x.mean() * y.mean() + (1 - x.mean()) * (1 - y.mean()))
    return (po - pe) / (1 - pe) if pe < 1 else float("nan")


def gold_signals(ws: Workspace, eval_id: str) -> tuple[dict[tuple[str, str], dict[str, float]],
                                                        dict[str, float], float]:
    """Per (flow, question): acc, f1 and the share of shown passages that are gold; per flow its
    F1; and the evaluation's own model seconds."""
    from flowkit.eval.grading import answering_step, read_passages
    plan = stored_plan(ws, eval_id)
    rep = report(eval_repo(ws), plan)
    gold = {str(q["id"]): set(q.get("supporting_doc_ids") or []) for q in plan.questions}
    out: dict[tuple[str, str], dict[str, float]] = {}
    seconds = 0.0
    for flow, rs in rep.results.items():
        for r in rs:
            if r.status != "ok":
                continue
            shown = read_passages(answering_step(ws.store.steps(r.run_id)))
            share = (sum(doc_id_of(p["id"]) in gold[r.question_id] for p in shown) / len(shown)
                     if shown else 0.0)
            out[(flow, r.question_id)] = {"acc": r.acc, "f1": r.f1, "ctx": share}
            seconds += r.seconds
    f1 = {f: s.f1 for f, s in rep.summaries.items()}
    return out, f1, seconds


def coverage(scores: dict[tuple[str, str], float], truth: dict[tuple[str, str], float],
             flows: list[str], k: int, draws: int, rng: np.random.Generator) -> dict[str, float]:
    """Share of intervals holding the true mean and mean widths: classical PPI against the normal
    labels-only interval, PPI++ against the labels-only interval under its own rule (weight 0),
    and the mean PPI++ weight."""
    hits = hits_pp = total = 0
    widths: dict[str, list[float]] = {"ppi": [], "alone": [], "pp": [], "alone_rule": []}
    weights: list[float] = []
    for f in flows:
        keys = [key for key in scores if key[0] == f and key in truth]
        if len(keys) <= k:
            continue
        true_mean = float(np.mean([truth[key] for key in keys]))
        for _ in range(draws):
            idx = rng.permutation(len(keys))
            unl = [scores[keys[i]] for i in idx[k:]]
            lab = [(scores[keys[i]], truth[keys[i]]) for i in idx[:k]]
            kinds = {"ppi": ppi_mean(unl, lab), "alone": labels_only([y for _, y in lab]),
                     "pp": ppi_pp_mean(unl, lab), "alone_rule": ppi_pp_mean(unl, lab, weight=0.0)}
            hits += kinds["ppi"].low <= true_mean <= kinds["ppi"].high
            hits_pp += kinds["pp"].low <= true_mean <= kinds["pp"].high
            total += 1
            for name, d in kinds.items():
                widths[name].append(d.high - d.low)
            weights.append(power_weight(unl, lab))
    mean = {name: float(np.mean(w or [np.nan])) for name, w in widths.items()}
    return {"cov": hits / total if total else float("nan"),
            "cov_pp": hits_pp / total if total else float("nan"),
            **mean, "weight": float(np.mean(weights or [np.nan]))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--judges", default="correctness,context_relevance,groundedness")
    ap.add_argument("--judge-model", default="")
    ap.add_argument("--draws", type=int, default=200)
    a = ap.parse_args()
    judges = [j for j in a.judges.split(",") if j]
    ws = Workspace(a.data_dir)
    try:
        signals, f1, eval_seconds = gold_signals(ws, a.eval)
        flows = sorted(f1)
        t0 = time.perf_counter()
        out = grade(ws, a.eval, judges, model=a.judge_model)
        wall = time.perf_counter() - t0
        print(out.line())
        print(f"judging wall {wall:.0f} s; the evaluation's own run time {eval_seconds:.0f} s "
              f"(ratio {wall / max(eval_seconds, 1e-9):.2f})")
        label = model_name(ws, a.judge_model)
        rng = np.random.default_rng(0)
        for j in judges:
            scores = {(g.flow, g.question_id): float(g.score) for g in
                      grade_repo(ws).grades(a.eval, grader=j, model=label) if g.score is not None}
            keys = [key for key in scores if key in signals]
            unparsed = sum(1 for g in grade_repo(ws).grades(a.eval, grader=j, model=label)
                           if not g.parsed)
            print(f"\n== judge {j} on {label}: {len(keys)} answers, {unparsed} unparsed, "
                  f"mean {np.mean([scores[key] for key in keys]):.3f}")
            signal = {"correctness": "acc", "context_relevance": "ctx"}.get(j)
            per_flow = {f: float(np.mean([scores[key] for key in keys if key[0] == f]))
                        for f in flows}
            tau = kendall_tau([f1[f] for f in flows], [per_flow[f] for f in flows])
            print(f"  ranking vs gold F1 ({len(flows)} flows): Kendall's tau {tau:.2f}")
            if signal is None:
                continue
            truth = {key: float(signals[key][signal] >= 0.5) for key in keys}
            judge_bin = [int(scores[key] >= 0.5) for key in keys]
            gold_bin = [int(truth[key]) for key in keys]
            agree = float(np.mean([x == y for x, y in zip(judge_bin, gold_bin)]))
            tp = sum(1 for x, y in zip(judge_bin, gold_bin) if x and y)
            fp = sum(1 for x, y in zip(judge_bin, gold_bin) if x and not y)
            fn = sum(1 for x, y in zip(judge_bin, gold_bin) if not x and y)
            tn = len(keys) - tp - fp - fn
            print(f"  vs gold {signal}: agreement {100 * agree:.1f}%, kappa "
                  f"{kappa(judge_bin, gold_bin):.3f}; confusion (judge yes/no x gold yes/no): "
                  f"yes&yes {tp}, yes&no {fp}, no&yes {fn}, no&no {tn}")
            truth_raw = {key: float(signals[key][signal]) for key in keys}
            for k in (10, 30, 100):
                c = coverage(scores, truth_raw, flows, k, a.draws, rng)
                print(f"  k={k} ({a.draws} draws x flows): PPI coverage {100 * c['cov']:.1f}%, "
                      f"width {100 * c['ppi']:.1f} points vs labels only {100 * c['alone']:.1f}; "
                      f"PPI++ coverage {100 * c['cov_pp']:.1f}%, width {100 * c['pp']:.1f} vs "
                      f"labels only (same rule) {100 * c['alone_rule']:.1f}, judge weight "
                      f"{c['weight']:.2f}")
    finally:
        ws.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
