"""Rank fusion shared by hybrid retrieval and merge operators."""
from __future__ import annotations

from ..memory import Doc


def rrf(lists: list[list[Doc]], k: int = 60) -> list[Doc]:
    """Reciprocal rank fusion (Cormack et al., 2009): score = sum over lists of 1 / (k + rank)."""
    scores: dict[str, float] = {}
    docs: dict[str, Doc] = {}
    for lst in lists:
        for rank, d in enumerate(lst, 1):
            scores[d["id"]] = scores.get(d["id"], 0.0) + 1.0 / (k + rank)
            docs.setdefault(d["id"], d)
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    return [Doc(**{**docs[i], "score": round(scores[i], 6)}) for i in ranked]


def concat(lists: list[list[Doc]]) -> list[Doc]:
    """Lists one after another, first occurrence of each id kept."""
    seen: dict[str, Doc] = {}
    for lst in lists:
        for d in lst:
            seen.setdefault(d["id"], d)
    return list(seen.values())
