"""What one run of an evaluation spent here: its model calls' cost and the seconds it took (the
runner's progress and the Ray workers both report it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..cost import Cost

if TYPE_CHECKING:
    from ..trace import RunEnd


@dataclass
class RunCost:
    """What one run of an evaluation spent here: its calls' cost (computed and from the cache,
    tokens, model ms: flowkit.cost) and the wall seconds it took."""

    cost: Cost = field(default_factory=Cost)
    wall_s: float = 0.0

    @classmethod
    def of(cls, result: RunEnd) -> RunCost:
        """A run's cost and wall seconds from its end (wall: as its cost's ms where unknown)."""
        cost = result.cost
        cost = Cost(max(cost.calls, cost.cached), cost.cached, cost.tokens, cost.ms)
        wall = result.wall_ms if result.wall_ms is not None else cost.ms
        return cls(cost, float(wall) / 1000.0)
