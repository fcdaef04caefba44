"""Comparisons at the speed of design: the completion cache measured side by side in one run (not a
test). Prints times and ratios, and checks that what is compared is identical.

On the first N questions of ../shared/data/hotpotqa_dev_500_ircotfmt (its corpus ingested as a
knowledge base once), with the real default model:

1. cold: the flows evaluated with an empty completion cache (the cache fills);
2. again: the same evaluation a second time (a new evaluation id, so nothing is skipped; every
   call from the cache): wall time / cold (goal <= 0.05), with identical answers, tokens, calls and
   report figures;
3. variant: iter_retgen with only its final answer node's prompt wording changed, added with `--from`
   (eval --from): its wall time / iter_retgen's own cold time (goal <= 0.3);
4. optional (--templates N): every template on N questions in one evaluation, cache off vs on,
   cold (calls that flows share are computed once): wall ratio, identical answers.

Usage: python bench/evalspeed.py [--limit 50] [--templates 0] [--data-dir DIR]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import templates
from flowkit.eval.datasets import resolve
from flowkit.eval.runner import EvalPlan, FlowEntry, evaluation_report, make_plan, run_evaluation
from flowkit.ingest import ingest
from service.evaluations import add_variant_columns
from service.workspace import Workspace
from storage.evals import EvalRepo

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa_dev_500_ircotfmt"
FLOWS = ["naive_rag", "iter_retgen", "corag_early_stop", "ircot"]
KB = "hotpot"


def evaluate(ws: Workspace, plan: EvalPlan) -> float:
    t0 = time.perf_counter()
    out = run_evaluation(ws, EvalRepo(ws.store), plan)
    wall = time.perf_counter() - t0
    print(f"  {plan.eval_id}: ran {out.ran}, skipped {out.skipped}; calls computed "
          f"{out.computed_calls}, from the cache {out.cached_calls}; {wall:.1f} s", flush=True)
    return wall


def answers(ws: Workspace, eval_id: str, labels: dict[int, str]) -> dict[tuple[str, int], tuple]:
    """(flow label, question index) -> (answer, tokens, llm_calls) of an evaluation's runs."""
    out = {}
    for r in EvalRepo(ws.store).runs(eval_id):
        _, fi, qi = r.id.rsplit("-", 2)
        out[(labels[int(fi)], int(qi))] = (r.answer, r.tokens, r.llm_calls)
    return out


def flow_wall(ws: Workspace, eval_id: str, fi: int) -> float:
    return sum((r.wall_ms or r.ms) for r in EvalRepo(ws.store).runs(eval_id)
               if r.id.rsplit("-", 2)[1] == str(fi)) / 1000.0


def plan_for(ws: Workspace, refs: list[str], limit: int, eval_id: str) -> EvalPlan:
    repo = EvalRepo(ws.store)
    ds = resolve(repo, str(DATA))
    entries = [FlowEntry(ref=r, spec=templates.load_template(r)) for r in refs]
    return make_plan(entries, ds.name, ds.questions, KB, limit=limit, eval_id=eval_id)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--templates", type=int, default=0,
                    help="also every template on this many questions, cache off vs on")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="flowkit-evalspeed-"))
    ws = Workspace(data_dir)
    if not ws.resources.kb(KB).ready:
        t0 = time.perf_counter()
        ingest(ws.resources, KB, [DATA / "corpus.jsonl"])
        print(f"ingested {DATA.name} in {time.perf_counter() - t0:.0f} s", flush=True)
    ws.cache_store.clear()

    print(f"1. cold: {', '.join(FLOWS)} on {args.limit} questions")
    cold_plan = plan_for(ws, FLOWS, args.limit, "bench-cold")
    cold = evaluate(ws, cold_plan)
    labels = {i: f.label for i, f in enumerate(cold_plan.flows)}
    print("2. the same evaluation again (every call from the cache)")
    warm_plan = plan_for(ws, FLOWS, args.limit, "bench-again")
    warm = evaluate(ws, warm_plan)
    a, b = answers(ws, "bench-cold", labels), answers(ws, "bench-again", labels)
    rep_a = evaluation_report(EvalRepo(ws.store), cold_plan).summaries
    rep_b = evaluation_report(EvalRepo(ws.store), warm_plan).summaries
    same_report = all((rep_a[f].em, rep_a[f].f1, rep_a[f].tokens, rep_a[f].llm_calls)
                      == (rep_b[f].em, rep_b[f].f1, rep_b[f].tokens, rep_b[f].llm_calls)
                      for f in rep_a)
    print(f"   again / cold = {warm / cold:.3f} (goal <= 0.05); answers, tokens and calls "
          f"identical: {a == b}; report figures identical: {same_report}")

    print("3. a variant of iter_retgen (its final answer node's prompt wording) added with --from")
    base = templates.load_template("iter_retgen")
    last = base.nodes[-1]
    for n in base.nodes:
        if n.operator == "generation.answer":
            last = n
    # a change that alters the answer node's prompt (a larger max_tokens alone would be served
    # from the cache: a completion that stopped by itself is the same for any larger limit)
    from flowkit.operators.generation.answer import ANSWER_PROMPT
    prompt = str(last.params.get("prompt") or ANSWER_PROMPT)
    params = {**last.params, "prompt": prompt.replace("Answer the question", "Answer this question", 1)}
    nodes = [n.model_copy(update={"params": params}) if n.id == last.id else n for n in base.nodes]
    variant = FlowEntry(ref="iter_retgen~answer", spec=base.model_copy(update={"nodes": nodes}))
    vplan = add_variant_columns(ws, "bench-cold", [variant])
    vwall = evaluate(ws, vplan)
    own = flow_wall(ws, "bench-cold", FLOWS.index("iter_retgen"))
    print(f"   variant / iter_retgen cold = {vwall:.1f} / {own:.1f} s = {vwall / own:.3f} "
          "(goal <= 0.3)")

    if args.templates:
        names = templates.names()
        print(f"4. all {len(names)} templates on {args.templates} questions: cache off, then on")
        ws.set_cache(False)
        off = evaluate(ws, plan_for(ws, names, args.templates, "bench-tpl-off"))
        ws.set_cache(True)
        ws.cache_store.clear()
        on = evaluate(ws, plan_for(ws, names, args.templates, "bench-tpl-on"))
        tl = {i: n for i, n in enumerate(names)}
        same = answers(ws, "bench-tpl-off", tl) == answers(ws, "bench-tpl-on", tl)
        print(f"   on / off = {on / off:.3f} (goal <= 0.6); answers identical: {same}")


if __name__ == "__main__":
    main()
