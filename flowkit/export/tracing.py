"""OpenTelemetry traces of an exported package's runs: the same span tree as a studio run.

Switched on by the `telemetry` object of `flowkit_settings.json` next to graph.py
(``{"enabled": true, "otlp_endpoint": "http://localhost:6006", "headers": {}}``, the studio's
settings fields) or by the standard variables (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`; `OTEL_SDK_DISABLED=true` turns it
off), read as flowkit.telemetry.settings reads them.

An exported graph has no end-of-run hook and may run its nodes in several worker processes of a
LangGraph server, so nothing is kept per run in the process: each node visit is sent as it ends
(its span and its RETRIEVER and LLM spans, under the run's root span id, which derives from the
run id: flowkit.telemetry.ids; its `flowkit.step_index` is the visit's run-wide index, unique
also for the parallel branches of one superstep: flowkit.export.runtime.StepNumbers), and the
last step (`finish`) or a node's error sends the root
span: flow, version, question, answer, status, totals from the graph state. Sending is the live
exporter's (flowkit.telemetry.export.LiveExport): queued, off the run's path; a collector that
cannot be reached is said once in the log (`flowkit.telemetry`) and never fails a run.

OpenTelemetry is imported only once telemetry is on.
"""
from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ResourceError
from ..telemetry.record import RunRecord
from ..telemetry.settings import TelemetryError, TelemetrySettings
from ..telemetry.sink import Telemetry
from ..trace import StepEvent

if TYPE_CHECKING:
    from ..telemetry.export import LiveExport

#: The key of flowkit_settings.json that holds the telemetry settings.
SETTINGS_KEY = "telemetry"


def read_telemetry(path: Path | None) -> TelemetrySettings:
    """The `telemetry` object of the settings file at `path` (off when the file or the object is
    missing); ResourceError naming the file when it cannot be used."""
    if path is None or not path.is_file():
        return TelemetrySettings()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ResourceError(f"{path}: not valid JSON: {err}") from None
    if not isinstance(data, dict) or SETTINGS_KEY not in data:
        return TelemetrySettings()
    try:
        return TelemetrySettings.from_dict(data[SETTINGS_KEY])
    except TelemetryError as err:
        raise ResourceError(f"{path}: {err}") from None


class PackageTracer:
    """The live export of one exported flow's runs (one exporter per collector and process)."""

    def __init__(self, flow: str, version: int | None, settings_file: Path | None) -> None:
        self.flow, self.version, self.settings_file = flow, version, settings_file
        self.telemetry = Telemetry()

    def live(self) -> LiveExport | None:
        """The running exporter, or None when telemetry is off (settings file, environment):
        the workspace's `Telemetry.live`, read again at every node (no restart needed)."""
        return self.telemetry.live(read_telemetry(self.settings_file))

    def node(self, live: LiveExport, run_id: str, state: Mapping[str, Any],
             steps: Sequence[StepEvent], model: Any, kb: str) -> None:
        """Send the spans of one node call's steps (under the run's root span id); `steps` carry
        their run-wide indices (flowkit.export.runtime.StepNumbers)."""
        if not steps:
            return
        record = self._record(run_id, state, steps, model, kb)
        record.root, record.part = False, f"{steps[0].node_id}@{steps[0].visit}"
        live.submit(record)

    def end(self, live: LiveExport, run_id: str, state: Mapping[str, Any],
            update: Mapping[str, Any], steps: Sequence[StepEvent], model: Any, kb: str, *,
            error: str | None = None) -> None:
        """Send the run's root span (and the spans of `steps`, the last call's): the run ended
        at `finish` (`update`: what it wrote) or with `error` at a node. The totals are the graph
        state's counters (deltas in `update`, as LangGraph adds them)."""
        record = self._record(run_id, state, steps, model, kb)
        record.part = f"end@{steps[0].node_id}@{steps[0].visit}" if steps else "end"
        record.ended_at = max(record.ended_at, time.time())
        halt = str(state.get("halt") or update.get("halt") or "")
        record.status = "error" if error else ("budget_exceeded" if halt else "ok")
        record.error, record.halt_reason = error, halt or None
        record.answer = str(update.get("answer") or state.get("answer") or "")
        record.citations = [str(c) for c in
                            update.get("citations") or state.get("citations") or []]
        record.total_steps = int(state.get("steps") or 0) + len(steps)
        record.tokens = int(state.get("tokens") or 0) + int(update.get("tokens") or 0)
        record.llm_calls = int(state.get("llm_calls") or 0) + int(update.get("llm_calls") or 0)
        live.submit(record)

    def _record(self, run_id: str, state: Mapping[str, Any], steps: Sequence[StepEvent],
                model: Any, kb: str) -> RunRecord:
        began = float(state.get("started") or time.time())
        last = max((s.started_at + s.ms / 1000.0 for s in steps if s.started_at), default=began)
        return RunRecord(run_id=run_id, flow_name=self.flow, flow_version=self.version,
                         question=str(state.get("question") or ""), answer="", status="running",
                         started_at=began, ended_at=max(last, began), steps=list(steps), kb=kb,
                         model_id=str(getattr(model, "model_id", "") or ""),
                         model_hash=str(getattr(model, "model_hash", "") or ""))
