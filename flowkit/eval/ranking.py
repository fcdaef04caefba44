"""Rank agreement: how far a ranking of flows on one question set agrees with another.

Kendall's tau-b over paired scores (ARES reports its judges' rankings of pipelines this way): +1
when every pair of flows is ordered the same way by both, -1 when every pair is reversed, 0 when
the orders are unrelated. Ties count as neither (the tau-b correction).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b between two equally long lists of scores (nan for fewer than 2 items or
    when either list is constant)."""
    if len(a) != len(b):
        raise ValueError(f"kendall_tau needs lists of one length; got {len(a)} and {len(b)}")
    concordant = discordant = ties_a = ties_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b))
    return (concordant - discordant) / denom if denom else float("nan")


def ranks(scores: Mapping[str, float]) -> list[str]:
    """Names from best to worst score (name order breaks ties)."""
    return sorted(scores, key=lambda k: (-scores[k], k))
