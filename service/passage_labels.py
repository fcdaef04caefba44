"""People's labels on the passages an answering node read, and the truth they give the
context-relevance judge (the one door the CLI and the studio use).

The context-relevance judge scores an answer with the share of the passages its answering node
read (at most five, each asked alone) that help to answer the question. A person marks those
passages relevant or not, once per question and passage (a passage two flows read is labelled for
both). An answer counts as labelled when every passage it read is: its truth is the share
labelled relevant, and PPI corrects the judge with it (service.grading.scores).
"""
from __future__ import annotations

from typing import Any

from flowkit.errors import FlowkitError
from flowkit.eval.grading import answering_step, read_passages
from flowkit.eval.runner import EvalPlan
from storage.evals import run_id_for
from storage.passage_labels import PassageLabelRepo

from .evaluations import stored_plan
from .workspace import Workspace

METRIC = "context_relevance"


def passage_repo(ws: Workspace) -> PassageLabelRepo:
    return PassageLabelRepo(ws.store)


def _flows(plan: EvalPlan) -> list[str]:
    return [f.label or f.ref for f in plan.flows]


def _question_index(plan: EvalPlan, question_id: str) -> int:
    for i, q in enumerate(plan.questions):
        if str(q["id"]) == question_id:
            return i
    raise FlowkitError(f"passage label: question '{question_id}' is not part of evaluation "
                       f"{plan.eval_id}")


def passages_read(ws: Workspace, plan: EvalPlan, flow_index: int,
                  question_index: int) -> list[dict[str, Any]]:
    """The passages (id, title, text) the answering node of one flow's run on one question read:
    what the context-relevance judge asks about (none when the run is missing or wrote no
    answer)."""
    steps = ws.store.steps(run_id_for(plan.eval_id, flow_index, question_index))
    return read_passages(answering_step(steps))


def question_passages(ws: Workspace, eval_id: str, question_id: str
                      ) -> dict[str, list[dict[str, Any]]]:
    """Per flow of the evaluation, the passages its answer to one question read."""
    plan = stored_plan(ws, eval_id)
    qi = _question_index(plan, question_id)
    return {f: passages_read(ws, plan, fi, qi) for fi, f in enumerate(_flows(plan))}


def passage_labels(ws: Workspace, eval_id: str, question_id: str) -> dict[str, float]:
    """People's labels on one question's passages: {passage id: 1.0 relevant or 0.0 not}."""
    return {lab.passage_id: lab.value for lab in passage_repo(ws).labels(eval_id, question_id)}


def set_passage_label(ws: Workspace, eval_id: str, question_id: str, passage_id: str,
                      value: float | None) -> None:
    """Label one passage relevant (1) or not (0) to one question, or remove its label (None).
    The passage must be one an answering node of the evaluation read for that question."""
    if value is not None and value not in (0, 1):
        raise FlowkitError(f"passage label: the value is 1, 0 or none; got {value!r}")
    read = question_passages(ws, eval_id, question_id)
    ids = {p["id"] for ps in read.values() for p in ps}
    if passage_id not in ids:
        shown = ", ".join(sorted(ids)) or "none"
        raise FlowkitError(f"passage label: no answer to question '{question_id}' of evaluation "
                           f"{eval_id} read passage '{passage_id}' (read: {shown})")
    passage_repo(ws).set(eval_id, question_id, passage_id,
                         None if value is None else float(value))


def passage_truth(ws: Workspace, plan: EvalPlan) -> dict[str, dict[str, float]]:
    """The context-relevance truth that passage labels give: per flow and question, the share of
    the answer's passages labelled relevant, for answers whose every passage is labelled (only
    questions with a label are read from the traces)."""
    by_q: dict[str, dict[str, float]] = {}
    for lab in passage_repo(ws).labels(plan.eval_id):
        by_q.setdefault(lab.question_id, {})[lab.passage_id] = lab.value
    flows = _flows(plan)
    shares: dict[str, dict[str, float]] = {f: {} for f in flows}
    for qi, q in enumerate(plan.questions):
        labels = by_q.get(str(q["id"]))
        if not labels:
            continue
        for fi, f in enumerate(flows):
            read = passages_read(ws, plan, fi, qi)
            if read and all(p["id"] in labels for p in read):
                shares[f][str(q["id"])] = sum(labels[p["id"]] for p in read) / len(read)
    return shares
