"""Live export of a debug run: one part a segment (from its start or a continue to its next pause
or its end), each sent when the segment ends, so a run that pauses shows its node spans while it
waits and its root span once it ends.

Segments may run in different processes (`flowkit debug start`, later `flowkit debug continue`),
so nothing is kept between them: a segment knows the pause it goes on from (the hook's `resume`:
where, why, when it paused), the memory edits it sends with it, and from its caller when the run
started. Its record becomes the `pause` event (and the `memory edit` event) of the span of the
node it resumes at; the segment that ends the run also builds the root span, from the run's
first start to now, with the run's totals.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..trace import RunEnd
from .events import MemoryEdit, PauseMark
from .record import RunRecord
from .sink import TelemetrySink

if TYPE_CHECKING:
    from ..debug import DebugHook, Pause
    from .export import LiveExport

PAUSED = "paused"


def pause_mark(pause: Pause, resumed_at: float | None, mode: str) -> PauseMark:
    """The event record of `pause` (a flowkit.debug.Pause), gone on from at `resumed_at` (None:
    not yet; what the trace store keeps at the pause, storage.debug)."""
    return PauseMark(node=pause.node, visit=pause.visit, when=pause.when, reason=pause.reason,
                     paused_at=pause.paused_at, resumed_at=resumed_at, mode=mode,
                     breakpoint=pause.breakpoint, condition_error=pause.condition_error,
                     after_node=pause.after_node)


class DebugTelemetrySink(TelemetrySink):
    """The telemetry sink of one debug segment: `hook` is the segment's DebugHook;
    `run_started_at` (seconds since the epoch) is when the run first started (a continue's
    caller reads it from the trace store; a start's own start is used when None)."""

    def __init__(self, live: LiveExport, hook: DebugHook, run_started_at: float | None = None,
                 eval_id: str | None = None) -> None:
        super().__init__(live, eval_id)
        self.hook, self.run_started_at = hook, run_started_at

    def record(self, result: RunEnd) -> RunRecord | None:
        record = super().record(result)
        if record is None or self.run is None:
            return record
        resumed = self.hook.resume
        ended = result.status != PAUSED
        if resumed is None and ended:
            return record                     # never paused: a plain run
        began = self.run.started_at or time.time()
        record.root = ended
        record.part = f"s{resumed.steps_done}" if resumed is not None else ""
        record.total_steps = result.steps
        if resumed is not None:
            record.pauses = [pause_mark(resumed, began, self.hook.mode)]
            if self.hook.edits:
                record.edits = [MemoryEdit(changes=dict(self.hook.edits), at=began,
                                           node=resumed.node, visit=resumed.visit)]
        if ended:
            record.started_at = min(self.run_started_at or record.started_at, record.started_at)
            record.ended_at = max(record.ended_at, time.time())
        return record
