"""Repository for graders' verdicts (GradeRow) and people's labels (LabelRow) on an evaluation's
answers. Everything returned is a plain object, never a live ORM row."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from flowkit.cost import Cost

from .models import GradeRow, LabelRow
from .repo import Store


@dataclass
class Grade:
    """One verdict: which answer, which grader on which model, its score and what it cost."""

    eval_id: str
    flow: str
    question_id: str
    grader: str
    model: str
    score: float | None
    reason: str = ""
    parsed: bool = True
    version: str = ""
    detail: list[float] = field(default_factory=list)
    cost: Cost = field(default_factory=Cost)


@dataclass(frozen=True)
class Label:
    eval_id: str
    flow: str
    question_id: str
    metric: str
    value: float


def _grade(r: GradeRow) -> Grade:
    return Grade(r.eval_id, r.flow, r.question_id, r.grader, r.model, r.score, r.reason,
                 bool(r.parsed), r.version, list(r.detail or []),
                 Cost(r.calls, r.cached_calls, r.tokens, r.ms))


class GradeRepo:
    """Grades and labels in the workspace's database."""

    def __init__(self, store: Store) -> None:
        self.engine = store.engine

    def put_grade(self, g: Grade) -> None:
        """Store a verdict, replacing one for the same answer, grader and model."""
        with Session(self.engine) as s, s.begin():
            s.execute(delete(GradeRow).where(
                GradeRow.eval_id == g.eval_id, GradeRow.flow == g.flow,
                GradeRow.question_id == g.question_id, GradeRow.grader == g.grader,
                GradeRow.model == g.model))
            s.add(GradeRow(eval_id=g.eval_id, flow=g.flow, question_id=g.question_id,
                           grader=g.grader, model=g.model, version=g.version, score=g.score,
                           parsed=int(g.parsed), reason=g.reason, detail=list(g.detail),
                           calls=g.cost.calls, cached_calls=g.cost.cached, tokens=g.cost.tokens,
                           ms=g.cost.ms))

    def grades(self, eval_id: str, grader: str | None = None,
               model: str | None = None) -> list[Grade]:
        q = select(GradeRow).where(GradeRow.eval_id == eval_id)
        if grader is not None:
            q = q.where(GradeRow.grader == grader)
        if model is not None:
            q = q.where(GradeRow.model == model)
        with Session(self.engine) as s:
            return [_grade(r) for r in s.scalars(q.order_by(GradeRow.id))]

    def set_label(self, eval_id: str, flow: str, question_id: str, metric: str,
                  value: float | None) -> None:
        """Label one answer (value 1 or 0), or remove its label (None)."""
        with Session(self.engine) as s, s.begin():
            s.execute(delete(LabelRow).where(
                LabelRow.eval_id == eval_id, LabelRow.flow == flow,
                LabelRow.question_id == question_id, LabelRow.metric == metric))
            if value is not None:
                s.add(LabelRow(eval_id=eval_id, flow=flow, question_id=question_id,
                               metric=metric, value=float(value)))

    def labels(self, eval_id: str, metric: str | None = None) -> list[Label]:
        q = select(LabelRow).where(LabelRow.eval_id == eval_id)
        if metric is not None:
            q = q.where(LabelRow.metric == metric)
        with Session(self.engine) as s:
            return [Label(r.eval_id, r.flow, r.question_id, r.metric, r.value)
                    for r in s.scalars(q.order_by(LabelRow.id))]

    def summary(self, eval_id: str) -> dict[str, Any]:
        """How many grades and labels an evaluation has, by grader and by metric."""
        out: dict[str, Any] = {"grades": {}, "labels": {}}
        for g in self.grades(eval_id):
            out["grades"][g.grader] = out["grades"].get(g.grader, 0) + 1
        for lab in self.labels(eval_id):
            out["labels"][lab.metric] = out["labels"].get(lab.metric, 0) + 1
        return out
