"""half_split_taus: how steady a ranking of flows is across halves of a question set."""
from __future__ import annotations

import random

import pytest

from flowkit.eval.ranking import half_split_taus


def test_flows_far_apart_rank_the_same_on_every_half():
    # every question scores the flows in one order: any half orders them the same way
    scores = {"a": [1.0] * 20, "b": [0.6] * 20, "c": [0.2] * 20}
    taus = half_split_taus(scores, draws=50)
    assert len(taus) == 50 and all(t == 1.0 for t in taus)


def test_flows_of_equal_skill_rank_at_random():
    rng = random.Random(3)
    scores = {f: [float(rng.random() < 0.5) for _ in range(40)] for f in "abcdef"}
    taus = half_split_taus(scores, draws=300, seed=1)
    median = taus[len(taus) // 2]
    assert -0.35 < median < 0.35          # no true order: halves agree no better than chance
    assert taus == sorted(taus)


def test_a_closer_pair_is_less_steady_than_a_distant_one():
    rng = random.Random(5)

    def flows(gap: float) -> dict[str, list[float]]:
        return {f"f{k}": [float(rng.random() < 0.3 + gap * k) for _ in range(60)]
                for k in range(5)}
    near = half_split_taus(flows(0.02), draws=200)
    far = half_split_taus(flows(0.15), draws=200)
    assert far[len(far) // 2] > near[len(near) // 2]


def test_same_seed_same_taus_and_bad_input_refused():
    scores = {"a": [1.0, 0.0, 1.0, 0.5], "b": [0.0, 1.0, 0.5, 0.5]}
    assert half_split_taus(scores, seed=2) == half_split_taus(scores, seed=2)
    assert half_split_taus({"a": [1.0, 0.0]}) == []          # one flow: nothing to rank
    with pytest.raises(ValueError, match="one score per question"):
        half_split_taus({"a": [1.0, 0.0], "b": [1.0]})
