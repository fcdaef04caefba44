"""The quality / cost front: the candidates no other candidate beats on F1, tokens per question
and seconds per question at once."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """One candidate's figures (F1 in 0..1, mean tokens and seconds per question)."""

    cid: str
    f1: float
    tokens: float
    seconds: float

    def dominates(self, other: Point) -> bool:
        """At least as good on every figure and better on one."""
        no_worse = (self.f1 >= other.f1 and self.tokens <= other.tokens
                    and self.seconds <= other.seconds)
        better = (self.f1 > other.f1 or self.tokens < other.tokens
                  or self.seconds < other.seconds)
        return no_worse and better


def pareto(points: Sequence[Point]) -> list[Point]:
    """The points no other point dominates, best F1 first. Points with the same F1 and tokens
    (in all likelihood the same answers) count once, as the first listed: their seconds differ
    by timing noise only, which would put both on the front."""
    firsts: dict[tuple[float, float], Point] = {}
    for p in points:
        firsts.setdefault((round(p.f1, 9), round(p.tokens, 6)), p)
    points = list(firsts.values())
    front = [p for p in points if not any(q.dominates(p) for q in points if q is not p)]
    return sorted(front, key=lambda p: (-p.f1, p.tokens, p.seconds, p.cid))


def front_layers(points: Sequence[Point]) -> list[list[Point]]:
    """Non-dominated sorting on F1 (up) and tokens (down), seconds left out (the race ranks
    on its two objectives): the first layer is the points no other beats on both, the next the
    same among the rest, and so on. Equal points share a layer (unlike `pareto`, which keeps
    one); within a layer best F1 first, then fewer tokens, then the id."""
    left, layers = list(points), []
    while left:
        flat = {p.cid: Point(p.cid, p.f1, p.tokens, 0.0) for p in left}
        layer = [p for p in left
                 if not any(flat[o.cid].dominates(flat[p.cid]) for o in left if o is not p)]
        layer.sort(key=lambda p: (-p.f1, p.tokens, p.cid))
        layers.append(layer)
        taken = {p.cid for p in layer}
        left = [p for p in left if p.cid not in taken]
    return layers
