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


def half_split_taus(scores: Mapping[str, Sequence[float]], draws: int = 200,
                    seed: int = 0) -> list[float]:
    """How steady a ranking of flows is on these questions: over `draws` random splits of the
    questions into two halves, Kendall's tau between the flows' mean scores on one half and on
    the other (sorted, lowest first; nan splits left out).

    `scores` maps each flow to its per-question scores, in one question order for every flow. A
    median near 1 says any half of the set orders the flows the same way; near 0, that the set
    is too small (or the flows too close) for its ranking to carry over to other questions. It
    is the ceiling for any other set's agreement with this one: two gold samples of the same
    size agree about as well as two halves of twice their size."""
    import random
    flows = list(scores)
    lengths = {len(scores[f]) for f in flows}
    if len(lengths) > 1:
        raise ValueError(f"half_split_taus needs one score per question for every flow; got "
                         f"lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    if len(flows) < 2 or n < 2:
        return []
    rng = random.Random(seed)
    order = list(range(n))
    taus: list[float] = []
    for _ in range(draws):
        rng.shuffle(order)
        one, two = order[: n // 2], order[n // 2:]
        tau = kendall_tau([sum(scores[f][i] for i in one) / len(one) for f in flows],
                          [sum(scores[f][i] for i in two) / len(two) for f in flows])
        if not math.isnan(tau):
            taus.append(tau)
    return sorted(taus)
