"""The texts of people's criteria (`flowkit.eval.criteria`), by grader name: a verdict stores only
the name ('criterion:<hash>'), so the Compare page and `flowkit judge` read the words back here
to show what was asked. A text is data, stored as written (one line, at most 500 characters).

The table is created here on first use, so older workspaces gain it on opening."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, Text, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from .models import Base, utcnow
from .repo import Store


class CriterionRow(Base):
    """One criterion's text under its grader name."""

    __tablename__ = "criteria"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CriterionRepo:
    """Criterion texts in the workspace's database."""

    def __init__(self, store: Store) -> None:
        self.engine = store.engine
        CriterionRow.__table__.create(self.engine, checkfirst=True)  # type: ignore[attr-defined]

    def put(self, name: str, text: str) -> None:
        """Keep `text` under `name` (the name is the text's hash: a second put is the same)."""
        with Session(self.engine) as s, s.begin():
            if s.get(CriterionRow, name) is None:
                s.add(CriterionRow(name=name, text=text))

    def texts(self, names: list[str] | None = None) -> dict[str, str]:
        """The texts by name (those of `names`, or all)."""
        q = select(CriterionRow)
        if names is not None:
            q = q.where(CriterionRow.name.in_(names))
        with Session(self.engine) as s:
            return {r.name: r.text for r in s.scalars(q)}
