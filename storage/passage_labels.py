"""People's labels on passages: for one question of an evaluation, whether a passage an answering
node read helps to answer it (1 relevant, 0 not). The truth the context-relevance judge is
corrected with (service.passage_labels turns them into per-answer shares).

A label belongs to the question and the passage, not to a flow: a passage two flows read is
labelled once. The table is created here on first use, so older workspaces gain it on opening."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import DateTime, Float, String, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from .models import Base, utcnow
from .repo import Store


class PassageLabelRow(Base):
    """A person's label on one passage read for one question of an evaluation."""

    __tablename__ = "passage_labels"
    __table_args__ = (UniqueConstraint("eval_id", "question_id", "passage_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    eval_id: Mapped[str] = mapped_column(String(32), index=True)
    question_id: Mapped[str] = mapped_column(String(200))
    passage_id: Mapped[str] = mapped_column(String(500))
    value: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


@dataclass(frozen=True)
class PassageLabel:
    eval_id: str
    question_id: str
    passage_id: str
    value: float


class PassageLabelRepo:
    """Passage labels in the workspace's database."""

    def __init__(self, store: Store) -> None:
        self.engine = store.engine
        PassageLabelRow.__table__.create(self.engine, checkfirst=True)  # type: ignore[attr-defined]

    def set(self, eval_id: str, question_id: str, passage_id: str, value: float | None) -> None:
        """Label one passage for one question (1 relevant, 0 not), or remove its label (None)."""
        with Session(self.engine) as s, s.begin():
            s.execute(delete(PassageLabelRow).where(
                PassageLabelRow.eval_id == eval_id, PassageLabelRow.question_id == question_id,
                PassageLabelRow.passage_id == passage_id))
            if value is not None:
                s.add(PassageLabelRow(eval_id=eval_id, question_id=question_id,
                                      passage_id=passage_id, value=float(value)))

    def labels(self, eval_id: str, question_id: str | None = None) -> list[PassageLabel]:
        """An evaluation's passage labels (one question's with `question_id`), oldest first."""
        q = select(PassageLabelRow).where(PassageLabelRow.eval_id == eval_id)
        if question_id is not None:
            q = q.where(PassageLabelRow.question_id == question_id)
        with Session(self.engine) as s:
            return [PassageLabel(r.eval_id, r.question_id, r.passage_id, r.value)
                    for r in s.scalars(q.order_by(PassageLabelRow.id))]
