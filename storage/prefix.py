"""Find a row by its id or by a prefix of it, as people type run and evaluation ids.

A prefix is matched literally: `%` and `_` are not wildcards (they are escaped in the SQL LIKE
that `startswith` builds), an empty prefix names nothing, and a prefix that fits several ids is
refused with the candidates, so a command never acts on a row nobody named.
"""
from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import InstrumentedAttribute, Session

from flowkit.errors import NotFoundError

Row = TypeVar("Row")

#: How many candidates an ambiguous prefix names.
SHOWN = 5


class AmbiguousIdError(NotFoundError):
    """A prefix that fits more than one id (the message names some of them)."""


def by_id_or_prefix(s: Session, model: type[Row], column: InstrumentedAttribute[Any], key: str,
                    what: str) -> Row | None:
    """The row whose id is `key`, else the one row whose id starts with `key` (None when none
    does). NotFoundError for an empty key, AmbiguousIdError naming the candidates when several
    ids start with it."""
    if not isinstance(key, str) or not key.strip():
        raise NotFoundError(f"no {what} id given (an empty id names no {what})")
    row = s.get(model, key)
    if row is not None:
        return row
    rows = list(s.scalars(select(model).where(column.startswith(key, autoescape=True))
                          .order_by(column).limit(SHOWN + 1)))
    if len(rows) > 1:
        ids = [str(getattr(r, column.key)) for r in rows[:SHOWN]]
        more = ", ..." if len(rows) > SHOWN else ""
        raise AmbiguousIdError(f"{what} id '{key}' is ambiguous: it starts {', '.join(ids)}{more}; "
                               "give more characters")
    return rows[0] if rows else None
