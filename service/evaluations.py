"""Evaluations as the CLI and the studio use them: plan one, submit it, its report, add a variant
column, and where two columns part.

The one door to what the Compare page and `flowkit eval` / `flowkit diverge` do with evaluations,
so neither reaches into storage or the runner by itself. `eval_repo` is the one place the
evaluation repository is built.
"""
from __future__ import annotations

from dataclasses import dataclass

from flowkit import templates
from flowkit.errors import FlowkitError
from flowkit.eval.datasets import Dataset, known_sets, resolve
from flowkit.eval.divergence import (
    Parting,
    PartingGroup,
    first_parting,
    group_partings,
    parent_label,
    unrelated,
)
from flowkit.eval.report import EvalReport
from flowkit.eval.runner import (
    DEFAULT_RUN,
    EvalPlan,
    Outcome,
    add_variants,
    collect_results,
    evaluation_report,
    make_plan,
    plan_from_eval,
    run_evaluation,
)
from flowkit.eval.runner import FlowEntry as FlowEntry
from flowkit.eval.strategy import EvalRun
from storage.evals import EvalInfo as EvalInfo
from storage.evals import EvalRepo as EvalRepo
from storage.evals import run_id_for

from .runs import FlowRef
from .workspace import Workspace

MIN_FLOWS, MAX_FLOWS = 2, 6


def eval_repo(ws: Workspace) -> EvalRepo:
    """The evaluations, datasets and retrievals stored in the workspace's database (the one place
    an EvalRepo is built)."""
    return EvalRepo(ws.store)


def stored_plan(ws: Workspace, eval_id: str) -> EvalPlan:
    """The plan of a stored evaluation (its flows, questions and knowledge base)."""
    return open_plan(eval_repo(ws), eval_id)


def open_plan(repo: EvalRepo, eval_id: str) -> EvalPlan:
    """The plan of a stored evaluation, from the repository the page holds."""
    info = repo.get_eval(eval_id)
    return plan_from_eval(info, repo.get_dataset(info.dataset).questions)


def flow_entries(ws: Workspace, refs: list[FlowRef]) -> list[FlowEntry]:
    """The chosen flows resolved to specs. A template keeps its plain name as ref (the same
    evaluation id as `flowkit eval --flow NAME`) unless a saved flow has that name too."""
    if not MIN_FLOWS <= len(refs) <= MAX_FLOWS:
        raise FlowkitError(f"pick {MIN_FLOWS} to {MAX_FLOWS} flows (got {len(refs)})")
    saved = {f.name for f in ws.store.list_flows()}
    out = []
    for kind, name in refs:
        if kind == "saved":
            spec, version = ws.store.get_flow(name)
            out.append(FlowEntry(ref=name, spec=spec, version=version))
        else:
            ref = f"template:{name}" if name in saved else name
            out.append(FlowEntry(ref=ref, spec=templates.load_template(name)))
    return out


def new_plan(ws: Workspace, refs: list[FlowRef], dataset: Dataset, kb: str,
             limit: int) -> EvalPlan:
    """The plan of a new evaluation: these flows on the first `limit` questions of `dataset`."""
    return make_plan(flow_entries(ws, refs), dataset.name, dataset.questions, kb, limit=limit)


def dataset_choices(repo: EvalRepo) -> list[str]:
    """Sets found on disk (../shared/data, the sample questions), then imported datasets."""
    on_disk = list(known_sets())
    return on_disk + [d.name for d in repo.list_datasets() if d.name not in on_disk]


def load_dataset(repo: EvalRepo, name: str) -> Dataset:
    """A question set by name: on disk or imported (NotFoundError names the known ones)."""
    return resolve(repo, name)


def evaluations(repo: EvalRepo) -> list[EvalInfo]:
    """Every stored evaluation, newest first."""
    return repo.list_evals()


def report(repo: EvalRepo, plan: EvalPlan, k: int | None = 5) -> EvalReport:
    """The report so far (the first flow is the baseline)."""
    return evaluation_report(repo, plan, None, k)


def run_seconds(repo: EvalRepo, eval_id: str) -> tuple[float, float]:
    """(cost, wall) in seconds over the evaluation's runs: what computing them costs (s/q summed)
    and the wall time they took here (calls served from the cache take almost none)."""
    return repo.run_seconds(eval_id)


def record(ws: Workspace, plan: EvalPlan) -> None:
    """Store the evaluation before it runs, so a page can open it at once."""
    eval_repo(ws).ensure_eval(plan.eval_id, plan.name, plan.dataset, plan.kb,
                              [f.record() for f in plan.flows],
                              [str(q["id"]) for q in plan.questions])


def run(ws: Workspace, plan: EvalPlan, how: EvalRun = DEFAULT_RUN) -> Outcome:
    """Run an evaluation in this thread (finished runs are skipped: it resumes); `how`: its
    strategy, progress, stop event and notices (flowkit.eval.strategy)."""
    return run_evaluation(ws, eval_repo(ws), plan, how)


def add_variant_columns(ws: Workspace, eval_id: str, variants: list[FlowEntry]) -> EvalPlan:
    """Add flows as new columns of a stored evaluation and return the plan to run (its other
    columns' finished runs are skipped when it runs)."""
    return add_variants(eval_repo(ws), stored_plan(ws, eval_id), variants)


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


def recorded_parent(plan: EvalPlan, label: str) -> str | None:
    """The label of the column that column `label` was made from (a variant added on the Compare
    page records it), or None."""
    labels = [f.label for f in plan.flows]
    for f in plan.flows:
        if f.label == label:
            return parent_label(f.label, f.parent, f.ref, labels)
    return None


def where_flows_part(ws: Workspace, eval_id: str, parent: str, variant: str) -> PartingReport:
    """For each question both columns answered, the first step where their runs differ; and the
    questions grouped by the node where they part, with the paired F1 delta per group."""
    repo = eval_repo(ws)
    plan = stored_plan(ws, eval_id)
    pi, vi = _column(plan, parent), _column(plan, variant)
    if pi == vi:
        raise FlowkitError("name two different columns")
    why = unrelated(plan.flows[pi].label, plan.flows[pi].spec, plan.flows[vi].label,
                    plan.flows[vi].spec)
    if why:
        raise FlowkitError(why)
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
