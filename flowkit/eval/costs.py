"""What one run of an evaluation spent here: its model calls' cost and the seconds it took (the
runner's progress and the Ray workers both report it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cost import Cost


@dataclass
class RunCost:
    """What one run of an evaluation spent here: its calls' cost (computed and from the cache,
    tokens, model ms: flowkit.cost) and the wall seconds it took."""

    cost: Cost = field(default_factory=Cost)
    wall_s: float = 0.0

    @classmethod
    def of(cls, result: Any) -> RunCost:
        cached = int(getattr(result, "cached_calls", 0) or 0)
        calls = max(int(getattr(result, "llm_calls", 0) or 0), cached)
        ms = float(getattr(result, "ms", 0.0) or 0.0)
        wall = getattr(result, "wall_ms", None)
        wall = float(wall if wall is not None else ms) / 1000.0
        return cls(Cost(calls, cached, int(getattr(result, "tokens", 0) or 0), ms), wall)
