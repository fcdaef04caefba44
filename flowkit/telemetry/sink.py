"""The live path: a trace sink that hands each finished run to `LiveExport`, and the one place
that decides, from settings and the environment, whether runs are exported as they end
(`Telemetry`: the workspace's, and an exported package's through flowkit.export.tracing).

The OpenTelemetry SDK is imported only when an exporter is started (telemetry on), so a process
with telemetry off (an exported package, a CLI) never loads it.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..trace import ListSink, RunEnd
from .events import MemoryEdit
from .record import RunRecord
from .settings import OFF, WARNED, ExportTarget, TelemetryError, TelemetrySettings, live_target

if TYPE_CHECKING:
    from .export import LiveExport


class TelemetrySink(ListSink):
    """Keeps a run's start and steps (as ListSink does); at its end queues the run for export
    (nothing else) and lets go of the steps. `edits`: memory edits the run starts with (a
    fork's), events of its root span."""

    def __init__(self, live: LiveExport, eval_id: str | None = None,
                 edits: Sequence[MemoryEdit] = ()) -> None:
        super().__init__()
        self.live, self.eval_id, self.edits = live, eval_id, list(edits)

    def end(self, result: RunEnd) -> None:
        super().end(result)
        record = self.record(result)
        if record is not None:
            self.live.submit(record)

    def record(self, result: RunEnd) -> RunRecord | None:
        """The run's record at its end (taking the steps out of the sink)."""
        if self.run is None:
            return None
        with self._lock:
            steps, self.steps = self.steps, []
        record = RunRecord.from_live(self.run, steps, result, self.eval_id)
        record.edits = list(self.edits)
        return record


class Telemetry:
    """Live export for one workspace: started when settings (or the environment) turn it on,
    started again when the collector changes, closed with the workspace."""

    def __init__(self) -> None:
        self._live: LiveExport | None = None
        self._lock = threading.Lock()

    def live(self, settings: TelemetrySettings,
             environ: Mapping[str, str] | None = None) -> LiveExport | None:
        """The running exporter for these settings, or None when live export is off (also when
        the environment names a collector that cannot be one: one warning, and the run goes on)."""
        target: ExportTarget | None
        try:
            target = live_target(settings, environ)
        except TelemetryError as err:
            WARNED.warn(f"{err}; {OFF}")
            target = None
        with self._lock:
            if self._live is not None and (target is None or self._live.target != target):
                self._live.close()
                self._live = None
            if target is not None and self._live is None:
                from .export import LiveExport  # the SDK: only once telemetry is on
                self._live = LiveExport(target)
            return self._live

    def sinks(self, settings: TelemetrySettings, eval_id: str | None = None,
              edits: Sequence[MemoryEdit] = ()) -> list[TelemetrySink]:
        """A sink for one run (empty when live export is off), for a MultiSink; `edits`: the
        memory edits a fork starts with."""
        live = self.live(settings)
        return [TelemetrySink(live, eval_id, edits)] if live else []

    def outcome(self, run_id: str) -> tuple[str, str] | None:
        """(what became of the run's spans: sending, sent or failed; the collector's URL), or
        None when this process's exporter does not know the run (export off, another process,
        an older exporter). Starts nothing."""
        with self._lock:
            live = self._live
        status = live.outcome(run_id) if live is not None else None
        return (status, live.target.url) if live is not None and status else None

    def close(self, wait: bool = True) -> None:
        """Send what is queued and stop the exporter's threads (in the background unless
        `wait`: a collector that is down may take a few seconds to give up)."""
        with self._lock:
            live, self._live = self._live, None
        if live is None:
            return
        if wait:
            live.close()
        else:
            threading.Thread(target=live.close, name="flowkit-telemetry-close", daemon=True).start()
