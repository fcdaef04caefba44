"""Repairs of the grid pdfplumber finds on one page, before a table is assembled.

Two shapes seen in real manuals printed from HTML (the SQLite manual's NULL-handling chart):
- **stacked tables**: one ruled grid holding two tables, the second starting with its own header
  row (an empty corner cell, then column names) set on other column lines than the rows above.
  Each becomes a table of its own, the header row its header.
- **spacer columns**: the column lines of both stacked tables (or of a merged cell) split the
  grid into more columns than either table has; a table's cells then alternate with empty
  columns. Two neighbouring columns that no row fills both of, and whose first row does not
  name both, are one column.
"""
from __future__ import annotations

from collections.abc import Sequence

Rows = list[list[str]]


def _used(row: Sequence[str]) -> frozenset[int]:
    return frozenset(j for j, cell in enumerate(row) if cell)


def _starts_a_table(rows: Rows, i: int) -> bool:
    """Whether row `i` is the header row of a second table stacked under the rows above it: its
    corner cell is empty, it names two or more columns, the row after it fills exactly those
    columns plus its own first cell, and the row before it fills other columns."""
    if i < 2 or i + 1 >= len(rows):
        return False
    row, after, before = rows[i], rows[i + 1], rows[i - 1]
    used = _used(row)
    if row[0] or len(used) < 2 or not after[0] or not before[0]:
        return False
    return _used(after) == used | {0} and _used(before) - {0} != used


def split_stacked(rows: Rows) -> list[Rows]:
    """`rows` cut before every row that starts a stacked table (see `_starts_a_table`)."""
    parts: list[Rows] = [[]]
    for i, row in enumerate(rows):
        if _starts_a_table(rows, i):
            parts.append([])
        parts[-1].append(row)
    return [p for p in parts if p]


def drop_empty_columns(rows: Rows) -> Rows:
    """Columns that no row fills, dropped."""
    width = max((len(r) for r in rows), default=0)
    keep = [j for j in range(width) if any(j < len(r) and r[j] for r in rows)]
    return [[r[j] if j < len(r) else "" for j in keep] for r in rows]


def merge_spacer_columns(rows: Rows) -> Rows:
    """Neighbouring columns that are one column split by a stray line, merged left to right: no
    row fills both, and the first row (the header, or the first row of a continued table) does
    not name both (a 'Yes' and a 'No' column of check marks stay two)."""
    if not rows:
        return rows
    cols = [list(col) for col in zip(*rows)]
    merged: list[list[str]] = []
    for col in cols:
        prev = merged[-1] if merged else None
        if prev is not None and not any(a and b for a, b in zip(prev, col)) and \
                not (prev[0] and col[0]):
            merged[-1] = [a or b for a, b in zip(prev, col)]
        else:
            merged.append(col)
    return [list(row) for row in zip(*merged)]


def repair(rows: Rows) -> list[Rows]:
    """A page's grid as the tables it holds: stacked tables split, then in each the columns no
    row fills dropped and spacer columns merged."""
    return [merge_spacer_columns(drop_empty_columns(part)) for part in split_stacked(rows)]
