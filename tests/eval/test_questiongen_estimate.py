"""The cost estimate printed before a generation starts follows the kinds and the tries."""
from __future__ import annotations

from flowkit.eval.questiongen.generate import Request, estimate


def test_the_hotpotqa_run_it_was_measured_on_is_estimated_within_a_quarter():
    # 100 questions of every kind: 2,043 calls measured (Gemma 3 270M, qgen-4)
    calls = estimate(Request(n=100), 4858).calls
    assert 0.75 * 2043 <= calls <= 1.25 * 2043


def test_more_questions_and_multi_hop_cost_more():
    assert estimate(Request(n=10), 100).calls < estimate(Request(n=100), 100).calls
    single = estimate(Request(n=50, kinds=("single",)), 100).calls
    comparison = estimate(Request(n=50, kinds=("comparison",)), 100).calls
    assert single < comparison


def test_the_estimate_never_goes_past_the_tries_allowed():
    few = Request(n=100, kinds=("bridge",), max_tries=40)
    est = estimate(few, 100)
    assert est.calls <= est.calls_max == 40 * 4
    assert "at most 160" in est.line()
