"""The quality / cost front: the candidates no other candidate beats on quality (F1 or the
search's objective: `scoring.Metric`), tokens per question and seconds per question at once."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """One candidate's figures: its mean quality `score` (0..1, the search's objective), mean
    tokens and seconds per question."""

    cid: str
    score: float
    tokens: float
    seconds: float

    def dominates(self, other: Point) -> bool:
        """At least as good on every figure and better on one."""
        no_worse = (self.score >= other.score and self.tokens <= other.tokens
                    and self.seconds <= other.seconds)
        better = (self.score > other.score or self.tokens < other.tokens
                  or self.seconds < other.seconds)
        return no_worse and better


def pareto(points: Sequence[Point]) -> list[Point]:
    """The points no other point dominates, best score first. Points with the same score and
    tokens (in all likelihood the same answers) count once, as the first listed: their seconds
    differ by timing noise only, which would put both on the front."""
    firsts: dict[tuple[float, float], Point] = {}
    for p in points:
        firsts.setdefault((round(p.score, 9), round(p.tokens, 6)), p)
    points = list(firsts.values())
    front = [p for p in points if not any(q.dominates(p) for q in points if q is not p)]
    return sorted(front, key=lambda p: (-p.score, p.tokens, p.seconds, p.cid))


def front_layers(points: Sequence[Point]) -> list[list[Point]]:
    """Non-dominated sorting on score (up) and tokens (down), seconds left out (the race ranks
    on its two objectives): the first layer is the points no other beats on both, the next the
    same among the rest, and so on. Equal points share a layer (unlike `pareto`, which keeps
    one); within a layer best score first, then fewer tokens, then the id."""
    left, layers = list(points), []
    while left:
        flat = {p.cid: Point(p.cid, p.score, p.tokens, 0.0) for p in left}
        layer = [p for p in left
                 if not any(flat[o.cid].dominates(flat[p.cid]) for o in left if o is not p)]
        layer.sort(key=lambda p: (-p.score, p.tokens, p.cid))
        layers.append(layer)
        taken = {p.cid for p in layer}
        left = [p for p in left if p.cid not in taken]
    return layers
