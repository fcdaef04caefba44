"""What model calls cost, as one value: every record that counts calls, cache hits, tokens and model
time holds a `Cost` instead of its own copy of the four fields (tests/test_defined_once.py keeps
it so). A record's saved form keeps its own keys (`calls`, `cached_calls`, `computed_calls`, ...);
the value is what the code adds up and reads.

`ms` is the model's time computing the calls: a call served from the completion cache counts its
original's, since a flow's cost is what computing it costs, not what this run happened to spend.
The wall time a run or a batch took is a different figure and stays beside a Cost, never in it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .trace import LLMCall


@dataclass(frozen=True)
class Cost:
    """Model calls made (`cached` of them served from the completion cache), the tokens they
    read and wrote, and the model's milliseconds computing them. Added with `+`."""

    calls: int = 0
    cached: int = 0
    tokens: int = 0
    ms: float = 0.0

    @property
    def computed(self) -> int:
        """The calls the model computed (not served from the cache)."""
        return self.calls - self.cached

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.calls + other.calls, self.cached + other.cached,
                    self.tokens + other.tokens, self.ms + other.ms)

    @classmethod
    def of_calls(cls, calls: Iterable[LLMCall]) -> Cost:
        """The cost of these model calls (ms rounded to hundredths)."""
        listed = list(calls)
        return cls(len(listed), sum(1 for c in listed if c.cached_from is not None),
                   sum(c.prompt_tokens + c.completion_tokens for c in listed),
                   round(sum(c.ms for c in listed), 2))
