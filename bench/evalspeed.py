"""Comparisons at the speed of design: the completion cache measured side by side in one run (not a
test). Prints times and ratios, and checks that what is compared is identical.

On the first N questions of ../shared/data/hotpotqa_dev_500_ircotfmt (its corpus ingested as a
knowledge base once), with the real default model:

1. cold: the flows evaluated with an empty completion cache (the cache fills);
2. again: the same evaluation a second time (a new evaluation id, so nothing is skipped; every
   call from the cache): wall time / cold (goal <= 0.05), with identical answers, tokens, calls and
   report figures;
3. variant: iter_retgen with only its final answer node's params changed (its prompt wording; then
   its top_n), added with `--from` (eval --from): wall time / iter_retgen's own cold time (goal <=
   0.3);
4. optional (--templates N): every template on N questions in one evaluation, cold, with the
   completion cache and prefix reuse both off, then both on (calls that flows share are computed
   once): wall ratio (goal <= 0.6), identical answers.

Usage: python bench/evalspeed.py [--limit 50] [--templates 0] [--data-dir DIR]
5. after step 4 (or with --change-from EVAL_ID, an earlier step 4's "on" evaluation): one node
   changed in each template (its last answer node reads fewer passages: top_n halved), every
   variant added to that evaluation with --from: wall time / the cold "on" wall time.

(--limit 0 skips steps 1-3.)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import templates
from flowkit.eval.datasets import resolve
from flowkit.eval.runner import EvalPlan, FlowEntry, evaluation_report, make_plan, run_evaluation
from flowkit.ingest import ingest
from flowkit.runtime.resources import load_settings
from service.evaluations import add_variant_columns
from service.workspace import Workspace
from storage.evals import EvalRepo

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa_dev_500_ircotfmt"
FLOWS = ["naive_rag", "iter_retgen", "corag_early_stop", "ircot"]
KB = "hotpot"
#: evaluation ids of this run (a data dir kept for its knowledge base holds earlier runs' ones)
RUN = time.strftime("%Y%m%d%H%M%S")


def evaluate(ws: Workspace, plan: EvalPlan) -> float:
    t0 = time.perf_counter()
    out = run_evaluation(ws, EvalRepo(ws.store), plan)
    wall = time.perf_counter() - t0
    print(f"  {plan.eval_id}: ran {out.ran}, skipped {out.skipped}; calls computed "
          f"{out.cost.computed}, from the cache {out.cost.cached}; {wall:.1f} s", flush=True)
    return wall


def answers(ws: Workspace, eval_id: str, labels: dict[int, str]) -> dict[tuple[str, int], tuple]:
    """(flow label, question index) -> (answer, tokens, llm_calls) of an evaluation's runs."""
    out = {}
    for r in EvalRepo(ws.store).runs(eval_id):
        _, fi, qi = r.id.rsplit("-", 2)
        out[(labels[int(fi)], int(qi))] = (r.record.answer, r.record.cost.tokens, r.record.cost.calls)
    return out


def flow_times(ws: Workspace, eval_id: str, fi: int) -> tuple[float, float]:
    """A column's (own cold time, wall time) in seconds. Its own cold time is what computing
    every one of its calls costs (each run's `ms`: calls served from the cache count at the time
    they took when computed); its wall time in a cold evaluation is less when other columns
    computed calls it shares (naive_rag's answer is iter_retgen's first draft)."""
    runs = [r for r in EvalRepo(ws.store).runs(eval_id) if r.id.rsplit("-", 2)[1] == str(fi)]
    return (sum(r.record.cost.ms for r in runs) / 1000.0,
            sum((r.record.wall_ms or r.record.cost.ms) for r in runs) / 1000.0)


def plan_for(ws: Workspace, refs: list[str], limit: int, eval_id: str) -> EvalPlan:
    repo = EvalRepo(ws.store)
    ds = resolve(repo, str(DATA))
    entries = [FlowEntry(ref=r, spec=templates.load_template(r)) for r in refs]
    return make_plan(entries, ds.name, ds.questions, KB, limit=limit, eval_id=eval_id)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--templates", type=int, default=0,
                    help="also every template on this many questions, cache and prefix reuse off vs on")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--change-from", default="",
                    help="only step 5, on this earlier step-4 evaluation (with its wall time)")
    ap.add_argument("--cold-wall", type=float, default=0.0,
                    help="with --change-from: that evaluation's cold wall time in seconds")
    args = ap.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="flowkit-evalspeed-"))
    if args.change_from:
        one_change_each(data_dir, args.change_from, args.cold_wall)
        return
    ws = Workspace(data_dir)
    if not ws.resources.kb(KB).ready:
        t0 = time.perf_counter()
        ingest(ws.resources, KB, [DATA / "corpus.jsonl"])
        print(f"ingested {DATA.name} in {time.perf_counter() - t0:.0f} s", flush=True)
    ws.cache_store.clear()

    if args.limit:
        print(f"1. cold: {', '.join(FLOWS)} on {args.limit} questions")
        cold_plan = plan_for(ws, FLOWS, args.limit, f"bench-cold-{RUN}")
        cold = evaluate(ws, cold_plan)
        labels = {i: f.label for i, f in enumerate(cold_plan.flows)}
        print("2. the same evaluation again (every call from the cache)")
        warm_plan = plan_for(ws, FLOWS, args.limit, f"bench-again-{RUN}")
        warm = evaluate(ws, warm_plan)
        a, b = answers(ws, f"bench-cold-{RUN}", labels), answers(ws, f"bench-again-{RUN}", labels)
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
        vplan = add_variant_columns(ws, f"bench-cold-{RUN}", [variant])
        vwall = evaluate(ws, vplan)
        own, own_wall = flow_times(ws, f"bench-cold-{RUN}", FLOWS.index("iter_retgen"))
        print(f"   variant / iter_retgen's own cold time = {vwall:.1f} / {own:.1f} s = "
              f"{vwall / own:.3f} (goal <= 0.3); / its wall time in the cold evaluation "
              f"({own_wall:.1f} s, calls shared with naive_rag from the cache) = {vwall / own_wall:.3f}")
        # another params change of the same node: it reads two passages instead of four
        fewer = {**last.params, "top_n": 2}
        nodes = [n.model_copy(update={"params": fewer}) if n.id == last.id else n for n in base.nodes]
        variant2 = FlowEntry(ref="iter_retgen~top_n2", spec=base.model_copy(update={"nodes": nodes}))
        vwall2 = evaluate(ws, add_variant_columns(ws, f"bench-cold-{RUN}", [variant2]))
        print(f"   variant (top_n 4 -> 2) / iter_retgen's own cold time = {vwall2:.1f} / {own:.1f} s "
              f"= {vwall2 / own:.3f} (goal <= 0.3); / its wall time = {vwall2 / own_wall:.3f}")

    ws.close()
    if args.templates:
        templates_off_on(data_dir, args.templates)


def templates_off_on(data_dir: Path, n: int) -> None:
    """Step 4: every template on n questions, both savings off, then both on, each in a workspace
    of its own (its own model worker, so prefix reuse follows the settings)."""
    names = templates.names()
    print(f"4. all {len(names)} templates on {n} questions: cache and prefix reuse off, then on")
    base = load_settings(data_dir)
    walls = {}
    for tag, on in (("off", False), ("on", True)):
        ws = Workspace(data_dir, settings=replace(base.with_llm(prefix_reuse=on),
                                                  completion_cache=on))
        ws.cache_store.clear()
        walls[tag] = evaluate(ws, plan_for(ws, names, n, f"bench-tpl-{tag}-{RUN}"))
        ws.close()
    ws = Workspace(data_dir)
    tl = {i: name for i, name in enumerate(names)}
    same = answers(ws, f"bench-tpl-off-{RUN}", tl) == answers(ws, f"bench-tpl-on-{RUN}", tl)
    print(f"   on / off = {walls['on']:.1f} / {walls['off']:.1f} s = "
          f"{walls['on'] / walls['off']:.3f} (goal <= 0.6); answers, tokens and calls "
          f"identical: {same}")
    ws.close()
    one_change_each(data_dir, f"bench-tpl-on-{RUN}", walls["on"])


def changed_once(name: str) -> FlowEntry:
    """A template with one node changed: its last answer node shows fewer passages."""
    spec = templates.load_template(name)
    last = [n for n in spec.nodes
            if n.operator in ("generation.answer", "generation.answer_per_document")][-1]
    top_n = int(last.params.get("top_n", 3))
    params = {**last.params, "top_n": top_n // 2 if top_n > 1 else 2}
    nodes = [n.model_copy(update={"params": params}) if n.id == last.id else n
             for n in spec.nodes]
    return FlowEntry(ref=f"{name}~{last.id}", spec=spec.model_copy(update={"nodes": nodes}))


def one_change_each(data_dir: Path, eval_id: str, cold_wall: float) -> None:
    """Step 5: every template changed in one node, added as columns of a cold evaluation."""
    print(f"5. one node changed in each template, added to {eval_id} with --from")
    ws = Workspace(data_dir)
    wall = evaluate(ws, add_variant_columns(ws, eval_id, [changed_once(n)
                                                          for n in templates.names()]))
    if cold_wall:
        print(f"   after the change / cold = {wall:.1f} / {cold_wall:.1f} s = "
              f"{wall / cold_wall:.3f}")
    ws.close()

if __name__ == "__main__":
    main()
