"""Live export of a debug run: one part a segment (from its start or a continue to its next pause
or its end), each sent when the segment ends.

Where the root goes. A run that pauses may stay paused for days, or for good, and OTLP cannot
change a span once sent, so the root span cannot wait for the run's end (a collector would hold
orphan node spans meanwhile) nor be sent twice. So the segment that ends at the first pause sends
the root (the run from its start to the pause, `flowkit.status` "paused", its node spans under
it), and every later segment is a continuation span under that root, `<flow> (continued)`, from
its continue to its next pause or the run's end, with its node spans under it and the run's
attributes as of its end: the last one carries how the run ended, its answer and totals (an error
status if it failed). In Phoenix the trace's row is the root (question, paused), its tree reads
segment by segment, the answer on the last continuation. An abort sends a continuation without
nodes (status cancelled, the pause it ended at as its event). A run that never pauses is sent as a
plain run (root at the end). After the fact (`flowkit trace --otlp`) a run has one root over all.

Segments may run in different processes (`flowkit debug start`, later `flowkit debug continue`),
so nothing is kept between them: a segment knows the pause it goes on from (the hook's `resume`:
where, why, when it paused) and the memory edits it sends with it. Its record becomes the `pause`
event (and the `memory edit` event) of the span of the node it resumes at.
"""
from __future__ import annotations

import time
from dataclasses import replace
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
    """The telemetry sink of one debug segment: `hook` is the segment's DebugHook."""

    def __init__(self, live: LiveExport, hook: DebugHook, eval_id: str | None = None) -> None:
        super().__init__(live, eval_id)
        self.hook = hook

    def record(self, result: RunEnd) -> RunRecord | None:
        record = super().record(result)
        if record is None or self.run is None:
            return record
        resumed = self.hook.resume
        if resumed is None and result.status != PAUSED:
            return record                     # never paused: a plain run
        began = self.run.started_at or time.time()
        record.total_steps = result.steps
        record.run = replace(record.run, ended_at=max(record.run.ended_at, time.time()))
        if resumed is None:                   # the first pause: the run's root, status paused
            return record
        record.root, record.continuation = False, True
        record.part = f"s{resumed.steps_done}"
        record.run = replace(record.run, started_at=began)
        record.pauses = [pause_mark(resumed, began, self.hook.mode)]
        if self.hook.edits:
            record.edits = [MemoryEdit(changes=dict(self.hook.edits), at=began,
                                       node=resumed.node, visit=resumed.visit)]
        return record
