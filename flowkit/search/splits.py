"""Question ranges of a dataset: `101-300`, `1-100`, `5`, `1-10,21-30` (1-based, file order,
inclusive), and the search / confirmation split that must not overlap."""
from __future__ import annotations

from typing import Any

from ..errors import FlowkitError


def parse_range(text: str, n: int, what: str = "questions") -> list[int]:
    """0-based indices of the 1-based inclusive ranges in `text`, for a dataset of `n` questions."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        lo_s, _, hi_s = part.partition("-")
        try:
            lo, hi = int(lo_s), int(hi_s or lo_s)
        except ValueError:
            raise FlowkitError(f"--{what}: '{part}' is not a range like 101-300") from None
        if lo < 1 or hi < lo:
            raise FlowkitError(f"--{what}: bad range '{part}' (1-based, low <= high)")
        if hi > n:
            raise FlowkitError(f"--{what}: '{part}' goes past the dataset's {n} questions")
        out += [i for i in range(lo - 1, hi) if i not in out]
    return out


def split(questions: list[dict[str, Any]], search: str,
          confirm: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The search and confirmation questions; refused if they share a question."""
    s = parse_range(search, len(questions), "search-questions")
    c = parse_range(confirm, len(questions), "confirm-questions")
    shared = sorted(set(s) & set(c))
    if shared:
        raise FlowkitError(f"the confirmation questions must not overlap the search questions "
                           f"({len(shared)} shared, the first is number {shared[0] + 1})")
    return [questions[i] for i in s], [questions[i] for i in c]
