"""A finished run as plain data: what the span builder reads, from storage or from a live run.

A stored run (storage's RunInfo and its steps) and a run that has just ended (the sink's RunStart,
StepEvents and RunEnd) both become a `RunRecord`, so one code path builds the spans of both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from ..cost import Cost
from ..trace import RunEnd, RunStart, StepEvent
from .events import MemoryEdit, PauseMark


class StoredRun(Protocol):
    """What `RunRecord.from_stored` reads of storage's RunInfo (this package never imports
    storage)."""

    id: str
    flow_name: str
    flow_version: int | None
    question: str
    answer: str
    status: str
    started_at: datetime
    ended_at: datetime | None
    kb: str
    model_id: str
    model_hash: str
    error: str | None
    halt_reason: str | None
    tokens: int
    llm_calls: int
    cached_calls: int
    citations: list[str]
    parent_run_id: str | None
    parent_step: int | None
    eval_id: str | None
    ms: float
    wall_ms: float | None


@dataclass
class RunRecord:
    """One run: what ran, how it ended, its steps. Times are seconds since the epoch.

    A run sent in parts (a debug run, one part per segment between pauses; an exported package,
    one part per node) is several records of one run id: each names its `part` (its spans' ids
    derive from it) and one of them has `root` (the run's span, with `total_steps`: an exported
    package's last, a debug run's first); the others' spans hang under that root's id all the
    same, a `continuation`'s under a span of its own (a child of the root that carries the part's
    outcome: a debug run's segments after its first pause, flowkit.telemetry.debug_sink)."""

    run_id: str
    flow_name: str
    flow_version: int | None
    question: str
    answer: str
    status: str
    started_at: float
    ended_at: float
    steps: list[StepEvent] = field(default_factory=list)
    kb: str = ""
    model_id: str = ""
    model_hash: str = ""
    error: str | None = None
    halt_reason: str | None = None
    #: the run's model calls (those served from the cache among them), tokens and model ms
    cost: Cost = field(default_factory=Cost)
    citations: list[str] = field(default_factory=list)
    parent_run_id: str | None = None
    parent_step: int | None = None
    eval_id: str | None = None
    pauses: list[PauseMark] = field(default_factory=list)
    edits: list[MemoryEdit] = field(default_factory=list)
    root: bool = True
    part: str = ""
    total_steps: int | None = None
    continuation: bool = False

    @classmethod
    def from_live(cls, start: RunStart, steps: list[StepEvent], end: RunEnd,
                  eval_id: str | None = None) -> RunRecord:
        """The record of a run that has just ended, from what its sink was handed."""
        began = start.started_at or (steps[0].started_at if steps else 0.0)
        took = (end.wall_ms if end.wall_ms is not None else end.ms) / 1000.0
        return cls(run_id=start.run_id, flow_name=start.flow_name, flow_version=start.flow_version,
                   question=start.question, answer=end.answer, status=end.status,
                   started_at=began, ended_at=max(began + took, _last_step_end(steps, began)),
                   steps=sorted(steps, key=lambda s: s.index), kb=start.kb,
                   model_id=start.model_id, model_hash=start.model_hash, error=end.error,
                   halt_reason=end.halt_reason,
                   cost=Cost(end.llm_calls, end.cached_calls, end.tokens, end.ms),
                   citations=list(end.citations),
                   parent_run_id=start.parent_run_id, parent_step=start.parent_step,
                   eval_id=eval_id)

    @classmethod
    def from_stored(cls, run: StoredRun, steps: list[StepEvent]) -> RunRecord:
        """The record of a stored run (storage's RunInfo) and its steps."""
        began = epoch(run.started_at)
        ended = epoch(run.ended_at) if run.ended_at else began + (run.wall_ms or run.ms) / 1000.0
        return cls(run_id=run.id, flow_name=run.flow_name, flow_version=run.flow_version,
                   question=run.question, answer=run.answer, status=run.status,
                   started_at=began, ended_at=max(ended, _last_step_end(steps, began)),
                   steps=list(steps), kb=run.kb, model_id=run.model_id,
                   model_hash=run.model_hash, error=run.error, halt_reason=run.halt_reason,
                   cost=Cost(run.llm_calls, run.cached_calls, run.tokens, run.ms),
                   citations=list(run.citations), parent_run_id=run.parent_run_id,
                   parent_step=run.parent_step, eval_id=run.eval_id)


def epoch(when: datetime) -> float:
    """Seconds since the epoch of a stored time (a naive one is UTC)."""
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _last_step_end(steps: list[StepEvent], began: float) -> float:
    return max((s.started_at + s.ms / 1000.0 for s in steps if s.started_at), default=began)
