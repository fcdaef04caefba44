"""How far to trust a generated question set: flows ranked on generated questions vs on gold ones.

Not a test. On a question set that has both gold questions and a corpus (its corpus ingested as a
knowledge base), with the real default model:

1. generate N questions from the knowledge base (`flowkit dataset generate`, the completion cache
   on: a second run is served from it), printing the share each check kept;
2. evaluate the flows on the generated set and on the first M gold questions (one evaluation each,
   paired within it);
3. print each flow's F1 on both, the two rankings and Kendall's tau between them, and S generated
   questions with their answers and passages, to read;
4. the ceiling on that tau (with --gold-ref): the same flows on the next M gold questions (M+1 to
   2M), and Kendall's tau between the two gold samples: how well one gold sample of M questions
   predicts another. Each set's steadiness over random halves (median tau of 200 half splits) is
   printed too; a generated set cannot agree with gold better than gold agrees with itself.

Usage:
  python bench/generated_vs_gold.py --dataset hotpotqa_dev_500_ircotfmt --kb hotpot --n 100 \
      --gold 100 [--gold-ref] [--flows naive_rag,advanced_linear,...] [--seed 0] [--show 20]
      [--data-dir DIR]
  (--flows "" generates and shows only.)
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.eval.datasets import shared_data_dir
from flowkit.eval.questiongen.checks import REASONS
from flowkit.eval.questiongen.generate import Request
from flowkit.eval.ranking import half_split_taus, kendall_tau, ranks
from flowkit.eval.report import steadiness_summary
from service import questiongen
from service.cli import main as cli
from service.workspace import Workspace

EIGHT = ["naive_rag", "advanced_linear", "post_retrieval_branching", "iter_retgen", "ircot",
         "flare", "self_rag", "corag_early_stop"]


def generate(ws: Workspace, kb: str, n: int, seed: int, name: str) -> dict[str, Any]:
    plan = questiongen.plan(ws, kb, Request(n=n, seed=seed), name=name, replace=True)
    print(f"generate: {plan.estimate.line()}", flush=True)
    t0 = time.perf_counter()
    out = questiongen.run(ws, plan)
    wall = time.perf_counter() - t0
    questiongen.save(ws, plan, out.questions, out.meta, replace=True)
    p = out.progress
    print(f"generated into '{name}': {p.line()}; {wall:.1f} s", flush=True)
    for kind in ("single", "bridge", "comparison"):
        if p.tried_by_kind[kind]:
            print(f"  {kind}: tried {p.tried_by_kind[kind]}, kept {p.kept_by_kind[kind]} "
                  f"({100 * p.kept_by_kind[kind] / p.tried_by_kind[kind]:.0f}%)")
    left = p.tried
    for r in REASONS:
        print(f"  check {r}: dropped {p.dropped[r]} of {left} that reached it "
              f"({100 * p.dropped[r] / max(left, 1):.0f}%)")
        left -= p.dropped[r]
    return {"questions": out.questions, "reviewed": out.reviewed, "seconds": wall,
            "progress": p.to_dict()}


def evaluate(data_dir: str, flows: list[str], dataset: str, kb: str, limit: int,
             out: Path) -> dict[str, Any]:
    args = ["--data-dir", data_dir, "eval", "--dataset", dataset, "--kb", kb,
            "--limit", str(limit), "--out", str(out)]
    for f in flows:
        args += ["--flow", f]
    t0 = time.perf_counter()
    code = cli(args)
    if code != 0:
        raise SystemExit(f"flowkit eval failed ({code}) on {dataset}")
    data = json.loads(out.read_text())
    print(f"evaluated {len(flows)} flows on {dataset}: {time.perf_counter() - t0:.0f} s",
          flush=True)
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dataset", default="hotpotqa_dev_500_ircotfmt")
    ap.add_argument("--kb", default="hotpot")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--gold", type=int, default=100)
    ap.add_argument("--gold-ref", action="store_true",
                    help="also evaluate gold questions M+1..2M: tau between two gold samples")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flows", default=",".join(EIGHT))
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--data-dir", default=None)
    a = ap.parse_args()
    data_dir = a.data_dir or tempfile.mkdtemp(prefix="fk-genvsgold-")
    ws = Workspace(data_dir)
    name = f"{a.kb}-generated-s{a.seed}"
    if a.kb not in ws.resources.kb_names():
        print(f"ingesting {a.dataset}'s corpus into '{a.kb}'", flush=True)
        ws.close()
        if cli(["--data-dir", data_dir, "dataset", "import", a.dataset, "--kb", a.kb,
                "--ingest"]) != 0:
            return 1
        ws = Workspace(data_dir)
    gen = generate(ws, a.kb, a.n, a.seed, name)
    ws.close()
    for q, r in list(zip(gen["questions"], gen["reviewed"]))[:a.show]:
        print(f"\n[{q['type']}] {q['question']}\n  answer: {q['answers'][0]}   "
              f"(model with passages: {r['model_answers'].get('with_passages', '')!r}, "
              f"closed-book: {r['model_answers'].get('closed_book', '')!r})")
        for p in r["passages"]:
            print(f"  {p['id']} {p['title']}: {p['text'][:300]}")
    flows = [f for f in a.flows.split(",") if f]
    if not flows:
        return 0
    out_dir = Path(data_dir)
    generated = evaluate(data_dir, flows, name, a.kb, len(gen["questions"]),
                         out_dir / "generated.json")
    gold = evaluate(data_dir, flows, a.dataset, a.kb, a.gold, out_dir / "gold.json")
    f1_gen = {f: float(generated["summary"][f]["f1"]) for f in flows}
    f1_gold = {f: float(gold["summary"][f]["f1"]) for f in flows}
    print(f"\n{'flow':28} {'F1 gold':>8} {'F1 gen':>8} {'rank gold':>10} {'rank gen':>9}")
    rg, rn = ranks(f1_gold), ranks(f1_gen)
    for f in flows:
        print(f"{f:28} {100 * f1_gold[f]:8.1f} {100 * f1_gen[f]:8.1f} {rg.index(f) + 1:10d} "
              f"{rn.index(f) + 1:9d}")
    tau = kendall_tau([f1_gold[f] for f in flows], [f1_gen[f] for f in flows])
    print(f"\nKendall's tau (F1 on gold vs F1 on generated, {len(flows)} flows): {tau:.2f}")
    for kind in ("single", "bridge", "comparison"):
        per = {f: _by_type(generated, f, kind) for f in flows}
        if all(v is not None for v in per.values()):
            t = kendall_tau([f1_gold[f] for f in flows], [float(per[f] or 0) for f in flows])
            print(f"  on the generated {kind} questions only: tau {t:.2f}")
    print("\nsteadiness over random halves (median Kendall's tau of 200 half splits, IQR):")
    for label, report in (("gold", gold), ("generated", generated)):
        print(f"  {label:10} {_steadiness(report, flows)}")
    if a.gold_ref:
        ref = evaluate(data_dir, flows, str(_slice(a.dataset, a.gold, out_dir)), a.kb, a.gold,
                       out_dir / "gold_ref.json")
        f1_ref = {f: float(ref["summary"][f]["f1"]) for f in flows}
        t_ref = kendall_tau([f1_gold[f] for f in flows], [f1_ref[f] for f in flows])
        t_gen = kendall_tau([f1_ref[f] for f in flows], [f1_gen[f] for f in flows])
        print(f"\n{'flow':28} {'F1 gold 1':>9} {'F1 gold 2':>9}")
        for f in flows:
            print(f"{f:28} {100 * f1_gold[f]:9.1f} {100 * f1_ref[f]:9.1f}")
        print(f"Kendall's tau, gold questions 1-{a.gold} vs {a.gold + 1}-{2 * a.gold}: "
              f"{t_ref:.2f} (the ceiling for generated vs gold); generated vs gold "
              f"{a.gold + 1}-{2 * a.gold}: {t_gen:.2f}")
        print(f"  gold 2     {_steadiness(ref, flows)}")
    print(f"data dir: {data_dir}")
    return 0


def _steadiness(report: dict[str, Any], flows: list[str]) -> str:
    scores = {f: [float(r["f1"] or 0) for r in report["results"][f]] for f in flows}
    s = steadiness_summary(half_split_taus(scores))
    return "n/a" if s is None else f"{s['median']:.2f} [{s['q1']:.2f}, {s['q3']:.2f}]"


def _slice(dataset: str, m: int, out_dir: Path) -> Path:
    """Gold questions m+1..2m of a shared set, as a question file of their own."""
    lines = (shared_data_dir() / dataset / "questions.jsonl").read_text().splitlines()
    if len(lines) < 2 * m:
        raise SystemExit(f"--gold-ref needs {2 * m} questions in {dataset}; it has {len(lines)}")
    path = out_dir / f"{dataset}-{m + 1}-{2 * m}.jsonl"
    path.write_text("\n".join(lines[m: 2 * m]) + "\n")
    return path


def _by_type(report: dict[str, Any], flow: str, kind: str) -> float | None:
    s = report.get("by_type", {}).get(flow, {}).get(kind)
    return float(s["f1"]) if s else None


if __name__ == "__main__":
    sys.exit(main())
