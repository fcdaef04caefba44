"""Evaluations as the CLI and the studio use them: add a variant column, and where two columns part.

The one door to what the Compare page and `flowkit eval --from` / `flowkit diverge` do with a
stored evaluation, so neither reaches into storage or the runner by itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from flowkit.errors import FlowkitError
from flowkit.eval.divergence import Parting, PartingGroup, first_parting, group_partings
from flowkit.eval.runner import EvalPlan, add_variants, collect_results, plan_from_eval
from flowkit.eval.runner import FlowEntry as FlowEntry
from storage.evals import EvalRepo, run_id_for

from .workspace import Workspace


def stored_plan(ws: Workspace, eval_id: str) -> EvalPlan:
    """The plan of a stored evaluation (its flows, questions and knowledge base)."""
    repo = EvalRepo(ws.store)
    info = repo.get_eval(eval_id)
    return plan_from_eval(info, repo.get_dataset(info.dataset).questions)


def add_variant_columns(ws: Workspace, eval_id: str, variants: list[FlowEntry]) -> EvalPlan:
    """Add flows as new columns of a stored evaluation and return the plan to run (its other
    columns' finished runs are skipped when it runs)."""
    return add_variants(EvalRepo(ws.store), stored_plan(ws, eval_id), variants)


@dataclass
class PartingReport:
    """Where two columns of an evaluation part, per question and grouped by node."""

    eval_id: str
    parent: str
    variant: str
    partings: list[Parting]
    groups: list[PartingGroup]
    #: question id -> (run id of the parent, run id of the variant)
    runs: dict[str, tuple[str, str]]


def _column(plan: EvalPlan, name: str) -> int:
    for i, f in enumerate(plan.flows):
        if name in (f.label, f.ref, f.spec.name):
            return i
    raise FlowkitError(f"evaluation {plan.eval_id} has no column '{name}' "
                       f"(columns: {', '.join(f.label for f in plan.flows)})")


def where_flows_part(ws: Workspace, eval_id: str, parent: str, variant: str) -> PartingReport:
    """For each question both columns answered, the first step where their runs differ; and the
    questions grouped by the node where they part, with the paired F1 delta per group."""
    repo = EvalRepo(ws.store)
    plan = stored_plan(ws, eval_id)
    pi, vi = _column(plan, parent), _column(plan, variant)
    if pi == vi:
        raise FlowkitError("name two different columns")
    shared = {n.id for n in plan.flows[pi].spec.nodes} & {n.id for n in plan.flows[vi].spec.nodes}
    if not shared:
        raise FlowkitError(f"'{plan.flows[pi].label}' and '{plan.flows[vi].label}' share no node "
                           "ids: compare a variant with the flow it was made from")
    results = collect_results(plan, repo.runs(plan.eval_id), repo.retrievals(plan.eval_id))
    by_q = {lbl: {r.question_id: r for r in rs} for lbl, rs in results.items()}
    p_res, v_res = by_q[plan.flows[pi].label], by_q[plan.flows[vi].label]
    partings, runs = [], {}
    for qi, q in enumerate(plan.questions):
        qid = str(q["id"])
        if qid not in p_res or qid not in v_res:
            continue
        ra, rb = run_id_for(plan.eval_id, pi, qi), run_id_for(plan.eval_id, vi, qi)
        partings.append(first_parting(qid, ws.store.steps(ra), ws.store.steps(rb)))
        runs[qid] = (ra, rb)
    return PartingReport(plan.eval_id, plan.flows[pi].label, plan.flows[vi].label, partings,
                         group_partings(partings, p_res, v_res), runs)
