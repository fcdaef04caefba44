"""A finished run, described once (issue 49, item 5): what ran, how it ended, what it cost.

A run is seen in several places: the engine's trace events (`trace.RunStart` as it starts,
`trace.RunEnd` as it ends), storage's `RunInfo` (a stored run read back), telemetry's `RunRecord`
(what the spans are built from) and the evaluation's scored rows. `FinishedRun` is the one
description they share: a live run's is joined from its two events (`of_live`); storage's
`RunInfo` holds one (its `record`; a run still going ends there at its start plus the time it
has taken) beside what storage keeps of it, and so does telemetry's record, neither with a copy
of the fields (tests/test_run_record.py keeps it so).

Times are seconds since the epoch. `cost` is what computing the run costs (calls served from the
completion cache counted at their original cost, flowkit.cost); `wall_ms` the time it took here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from .cost import Cost
from .trace import RunEnd, RunStart


@dataclass(frozen=True)
class FinishedRun:
    """One run as it ended: its id, the flow, question, knowledge base and model that ran, its
    status, answer and error, its cost, where it was forked from and the evaluation it is part of."""

    run_id: str
    flow_name: str
    flow_version: int | None
    question: str
    answer: str
    status: str
    started_at: float
    ended_at: float
    kb: str = ""
    model_id: str = ""
    model_hash: str = ""
    error: str | None = None
    halt_reason: str | None = None
    #: the run's model calls (those served from the cache among them), tokens and model ms
    cost: Cost = field(default_factory=Cost)
    #: the wall time the run took (None: as its cost's ms)
    wall_ms: float | None = None
    citations: tuple[str, ...] = ()
    parent_run_id: str | None = None
    parent_step: int | None = None
    eval_id: str | None = None

    @classmethod
    def of_live(cls, start: RunStart, end: RunEnd, eval_id: str | None = None,
                began: float | None = None) -> FinishedRun:
        """A run that has just ended, from its start and end events; `began` where the start
        event has no time (the first step's)."""
        began = start.started_at or began or 0.0
        took = (end.wall_ms if end.wall_ms is not None else end.cost.ms) / 1000.0
        return cls(run_id=start.run_id, flow_name=start.flow_name, flow_version=start.flow_version,
                   question=start.question, answer=end.answer, status=end.status,
                   started_at=began, ended_at=began + took, kb=start.kb,
                   model_id=start.model_id, model_hash=start.model_hash, error=end.error,
                   halt_reason=end.halt_reason,
                   cost=end.cost,
                   wall_ms=end.wall_ms, citations=tuple(end.citations),
                   parent_run_id=start.parent_run_id, parent_step=start.parent_step,
                   eval_id=eval_id)


class StoredRun(Protocol):
    """A stored run (storage's RunInfo; flowkit never imports storage): telemetry and the
    evaluation read it as its FinishedRun."""

    def finished(self) -> FinishedRun: ...


def epoch(when: datetime) -> float:
    """Seconds since the epoch of a stored time (a naive one is UTC)."""
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
