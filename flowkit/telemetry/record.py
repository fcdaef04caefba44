"""A finished run as plain data: what the span builder reads, from storage or from a live run.

A stored run (storage's RunInfo and its steps) and a run that has just ended (the sink's RunStart,
StepEvents and RunEnd) both become a `RunRecord`, so one code path builds the spans of both; what
ran and how it ended is its `FinishedRun` (flowkit.run_record), the description they share.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..run_record import FinishedRun, StoredRun
from ..trace import RunEnd, RunStart, StepEvent
from .events import MemoryEdit, PauseMark


@dataclass
class RunRecord:
    """One run (`run`: what ran and how it ended, flowkit.run_record) and its steps.

    A run sent in parts (a debug run, one part per segment between pauses; an exported package,
    one part per node) is several records of one run id: each names its `part` (its spans' ids
    derive from it) and one of them has `root` (the run's span, with `total_steps`: an exported
    package's last, a debug run's first); the others' spans hang under that root's id all the
    same, a `continuation`'s under a span of its own (a child of the root that carries the part's
    outcome: a debug run's segments after its first pause, flowkit.telemetry.debug_sink). A part's
    `run` (frozen: replaced, never
    changed) carries the part's own times."""

    run: FinishedRun
    steps: list[StepEvent] = field(default_factory=list)
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
        run = FinishedRun.of_live(start, end, eval_id, steps[0].started_at if steps else None)
        return cls(_ending_after(run, steps), steps=sorted(steps, key=lambda s: s.index))

    @classmethod
    def from_stored(cls, run: StoredRun, steps: list[StepEvent]) -> RunRecord:
        """The record of a stored run (storage's RunInfo) and its steps."""
        return cls(_ending_after(run.finished(), steps), steps=list(steps))


def _ending_after(run: FinishedRun, steps: list[StepEvent]) -> FinishedRun:
    """The run, ending no sooner than its last step did."""
    return replace(run, ended_at=max(run.ended_at, _last_step_end(steps, run.started_at)))


def _last_step_end(steps: list[StepEvent], began: float) -> float:
    return max((s.started_at + s.ms / 1000.0 for s in steps if s.started_at), default=began)
