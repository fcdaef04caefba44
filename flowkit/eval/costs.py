"""What one run of an evaluation spent here: calls computed, calls served from the cache, seconds
(the runner's progress and the Ray workers both report it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class RunCost:
    """What one run of an evaluation spent here: calls computed, calls from the cache, seconds."""

    computed_calls: int = 0
    cached_calls: int = 0
    wall_s: float = 0.0

    @classmethod
    def of(cls, result: Any) -> RunCost:
        cached = int(getattr(result, "cached_calls", 0) or 0)
        wall = getattr(result, "wall_ms", None)
        wall = float(wall if wall is not None else getattr(result, "ms", 0.0)) / 1000.0
        return cls(max(0, int(getattr(result, "llm_calls", 0)) - cached), cached, wall)
