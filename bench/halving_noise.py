"""Halving noise: how often successive halving on a small batch drops a flow that the same rule
keeps on all the questions (not a test). Reads stored evaluations; makes no model call.

The columns of the given evaluations are judged on the questions every one of them answered (N).
The verdict to match is `racing.halve` (the rule the flow search's race applies after a batch:
front layer of F1 up and tokens per question down, best F1 first, the top 1/H stay) on all N.
For each batch size b and each of `--draws` random draws of b of the N questions the same rule
judges the columns on those b only; the bench counts the draws where it dropped a column the
verdict on all N keeps, and how often each column went. Side by side in one run, so the sizes
compare directly: the figures behind `flowkit search --halving-from`.

Usage: python bench/halving_noise.py --data-dir DIR --evals ID,ID,... [--sizes 10,20,40,80]
                                     [--draws 2000] [--halving 2] [--seed 0] [--out FILE.json]
(the ids as `flowkit --data-dir DIR evals` lists them; a flow search's columns are its candidates'
search or confirmation evaluations).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.errors import FlowkitError
from flowkit.eval.metrics import QuestionResult, summarize
from flowkit.eval.runner import collect_results
from flowkit.search.front import Point, front_layers
from flowkit.search.racing import halve
from service import evaluations
from service.workspace import Workspace


def columns(ws: Workspace, eval_ids: list[str]) -> dict[str, dict[str, QuestionResult]]:
    """Column name (`<eval id>:<label>`) -> question id -> its result, for every stored column."""
    repo = evaluations.eval_repo(ws)
    out: dict[str, dict[str, QuestionResult]] = {}
    for eid in eval_ids:
        plan = evaluations.open_plan(repo, eid)
        for label, res in collect_results(plan, repo.runs(plan.eval_id),
                                          repo.retrievals(plan.eval_id)).items():
            out[f"{plan.eval_id[:6]}:{label}"] = {r.question_id: r for r in res}
    return out


def kept_on_all(table: dict[str, list[QuestionResult]], halving: float) -> set[str]:
    """The columns halving keeps when it judges them on all the questions."""
    _, dropped = halve(dict(table), halving)
    return set(table) - {h.cid for h in dropped}


def measure(table: dict[str, list[QuestionResult]], sizes: list[int], draws: int,
            halving: float, seed: int) -> list[dict[str, Any]]:
    """Per batch size: the draws that dropped a column kept on all the questions, the mean
    number of such columns, and each column's drop rate."""
    n = min(len(res) for res in table.values())
    verdict = kept_on_all(table, halving)
    rng = random.Random(seed)
    rows = []
    for b in sizes:
        if b >= n:
            continue
        lost_any, lost, dropped = 0, 0, dict.fromkeys(table, 0)
        for _ in range(draws):
            pick = rng.sample(range(n), b)
            _, out = halve({c: [res[i] for i in pick] for c, res in table.items()}, halving)
            gone = {h.cid for h in out}
            for c in gone:
                dropped[c] += 1
            lost_any += bool(gone & verdict)
            lost += len(gone & verdict)
        rows.append({"batch": b, "questions": n, "draws": draws,
                     "wrong_rate": lost_any / draws, "wrong_mean": lost / draws,
                     "drop_rate": {c: k / draws for c, k in dropped.items()}})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True, help="the workspace holding the evaluations")
    ap.add_argument("--evals", required=True, help="comma-separated evaluation ids")
    ap.add_argument("--sizes", default="10,20,40,80", help="batch sizes, comma-separated")
    ap.add_argument("--draws", type=int, default=2000, help="random batches per size")
    ap.add_argument("--halving", type=float, default=2.0, help="keep the top 1/H")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the figures as JSON here")
    args = ap.parse_args(argv)
    try:
        cols = columns(Workspace(args.data_dir),
                       [e.strip() for e in args.evals.split(",") if e.strip()])
    except FlowkitError as err:
        print(f"halving_noise: {err}", file=sys.stderr)
        return 2
    shared = set.intersection(*(set(c) for c in cols.values())) if cols else set()
    if len(cols) < 3 or not shared:
        print(f"need at least 3 columns with questions in common; got {len(cols)} columns, "
              f"{len(shared)} shared questions", file=sys.stderr)
        return 2
    order = sorted(shared)
    table = {c: [res[q] for q in order] for c, res in cols.items()}
    verdict = kept_on_all(table, args.halving)
    means = {c: summarize(c, res) for c, res in table.items()}
    front = {p.cid for p in front_layers([Point(c, m.f1, m.tokens, 0.0)
                                          for c, m in means.items()])[0]}
    print(f"{len(table)} columns on {len(order)} shared questions; halving keeps the top "
          f"1/{args.halving:g}")
    for c, m in means.items():
        print(f"  {c:<18} F1 {100 * m.f1:5.1f}  {m.tokens:7.0f} tokens/q"
              f"{'  front' if c in front else '       '}"
              f"{'  kept on all' if c in verdict else ''}")
    rows = measure(table, [int(s) for s in args.sizes.split(",")], args.draws, args.halving,
                   args.seed)
    print(f"\n{'batch':>6} {'wrong drops':>12} {'wrong per draw':>15}  drop rate per column")
    for r in rows:
        rates = " ".join(f"{c.split(':')[1]}={v:.2f}" for c, v in r["drop_rate"].items())
        print(f"{r['batch']:>6} {r['wrong_rate']:>12.1%} {r['wrong_mean']:>15.2f}  {rates}")
    if args.out:
        Path(args.out).write_text(json.dumps({"columns": sorted(table), "front": sorted(front),
                                              "kept_on_all": sorted(verdict), "rows": rows},
                                             indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
