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

A run killed mid-way. Its node spans are already sent, and its root would come only with its
end, so a collector would keep them as orphans. The tracer therefore remembers, per process, the
runs that sent node spans and no root yet (a LangGraph server runs one run's nodes in one worker
process; the table is bounded), and when the process ends first it sends each one's root with an
error status: `flowkit.status` "killed", the error saying how ("killed: SIGTERM before the run
ended", "killed: the process exited before the run ended"), the totals as far as they got. This runs at exit (`atexit`, before the exporter
closes; it then waits at most CLOSE_WAIT_S twice for the spans to go) and on SIGTERM, whose
default ends a process without exit handlers: where the process has the default SIGTERM action
or a handler of its own (set on the main thread when telemetry is first seen on), the tracer's
handler sends the roots and then does what was there before (the default: dies by SIGTERM). A run
killed by SIGKILL, or before its first node ended, sends no root.

OpenTelemetry is imported only once telemetry is on.
"""
from __future__ import annotations

import atexit
import json
import os
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cost import Cost
from ..run_record import FinishedRun
from ..telemetry.record import RunRecord
from ..telemetry.settings import WARNED, TelemetrySettings, settings_or_off
from ..telemetry.sink import Telemetry
from ..trace import StepEvent

if TYPE_CHECKING:
    from types import FrameType

    from ..telemetry.export import LiveExport

#: seconds closing the exporter waits for its last spans (flowkit.telemetry.export.CLOSE_WAIT_S;
#: not imported from there, which would load OpenTelemetry with telemetry off)
CLOSE_WAIT_S = 2.0

#: The key of flowkit_settings.json that holds the telemetry settings.
SETTINGS_KEY = "telemetry"


def read_telemetry(path: Path | None) -> TelemetrySettings:
    """The `telemetry` object of the settings file at `path` (off when the file or the object is
    missing). A file that is not JSON, or a block that cannot be used, turns export off with one
    warning naming the file (`settings_or_off`): export never fails a run of the package."""
    if path is None or not path.is_file():
        return TelemetrySettings()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        WARNED.warn(f"{path}: not valid JSON ({err}); trace export is off until it is fixed")
        return TelemetrySettings()
    if not isinstance(data, dict) or SETTINGS_KEY not in data:
        return TelemetrySettings()
    return settings_or_off(data[SETTINGS_KEY], str(path))


#: `flowkit.status` of a run whose process ended before it did
KILLED = "killed"
#: runs without a root remembered at once (the oldest is forgotten)
MAX_OPEN_RUNS = 1024


@dataclass
class _OpenRun:
    """What the root of a run that has sent node spans needs if its process ends first."""

    state: dict[str, Any]
    model: Any
    kb: str
    steps: int = 0
    tokens: int = 0
    llm_calls: int = 0


class PackageTracer:
    """The live export of one exported flow's runs (one exporter per collector and process)."""

    def __init__(self, flow: str, version: int | None, settings_file: Path | None) -> None:
        self.flow, self.version, self.settings_file = flow, version, settings_file
        self.telemetry = Telemetry()
        self._open: OrderedDict[str, _OpenRun] = OrderedDict()
        self._lock = threading.RLock()       # a SIGTERM handler may run inside a holder
        self._hooked: LiveExport | None = None
        self._signal_set = False

    def live(self) -> LiveExport | None:
        """The running exporter, or None when telemetry is off (settings file, environment):
        the workspace's `Telemetry.live`, read again at every node (no restart needed)."""
        live = self.telemetry.live(read_telemetry(self.settings_file))
        if live is not None and live is not self._hooked:
            self._hook(live)
        return live

    def _hook(self, live: LiveExport) -> None:
        """Send open runs' roots at exit and on SIGTERM (registered after `live`'s own exit
        handler, so it runs first while the exporter still sends)."""
        self._hooked = live
        atexit.unregister(self.kill_open)
        atexit.register(self.kill_open)
        if self._signal_set or threading.current_thread() is not threading.main_thread():
            return
        before = signal.getsignal(signal.SIGTERM)
        if before is signal.SIG_IGN or before is None:
            return                      # ignored, or set outside Python: not ours to change
        signal.signal(signal.SIGTERM, self._on_sigterm(before))
        self._signal_set = True

    def _on_sigterm(self, before: Any) -> Callable[[int, FrameType | None], None]:
        def handler(signum: int, frame: FrameType | None) -> None:
            # in a thread of its own: the interrupted main thread may hold a lock it needs
            worker = threading.Thread(target=self.kill_open, args=("SIGTERM",), daemon=True,
                                      name="flowkit-telemetry-killed")
            worker.start()
            worker.join(timeout=2 * CLOSE_WAIT_S + 1)
            if callable(before):
                before(signum, frame)
                return
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        return handler

    def kill_open(self, how: str = "the process exited") -> int:
        """Send the root of every run that sent node spans but no root (status `killed`, error
        `killed: <how>`) and close the exporter (its last spans sent, waiting at most
        CLOSE_WAIT_S). Returns how many runs."""
        with self._lock:
            runs, self._open = list(self._open.items()), OrderedDict()
        live = self._hooked
        if live is None:
            return 0
        for run_id, run in runs:
            record = self._record(run_id, run.state, [], run.model, run.kb)
            record.part, record.total_steps = "killed", run.steps
            record.run = replace(record.run, ended_at=max(record.run.ended_at, time.time()),
                                 status=KILLED, error=f"killed: {how} before the run ended",
                                 cost=Cost(calls=run.llm_calls, tokens=run.tokens))
            live.submit(record)
        self.telemetry.close()
        return len(runs)

    def _note(self, run_id: str, state: Mapping[str, Any], steps: Sequence[StepEvent], model: Any,
              kb: str) -> None:
        """Remember a run that sent node spans (its totals as far as this process saw them)."""
        with self._lock:
            run = self._open.pop(run_id, None) or _OpenRun(dict(state), model, kb)
            run.state = {**run.state, **{k: state[k] for k in ("question", "started")
                                         if state.get(k)}}
            done = int(state.get("steps") or 0)
            run.steps = max(run.steps, done, *(s.index + 1 for s in steps))
            run.tokens = max(run.tokens, int(state.get("tokens") or 0)) + sum(s.tokens
                                                                              for s in steps)
            run.llm_calls = max(run.llm_calls, int(state.get("llm_calls") or 0)) + sum(
                len(s.llm_calls) for s in steps)
            self._open[run_id] = run
            while len(self._open) > MAX_OPEN_RUNS:
                self._open.popitem(last=False)

    def node(self, live: LiveExport, run_id: str, state: Mapping[str, Any],
             steps: Sequence[StepEvent], model: Any, kb: str) -> None:
        """Send the spans of one node call's steps (under the run's root span id); `steps` carry
        their run-wide indices (flowkit.export.runtime.StepNumbers)."""
        if not steps:
            return
        record = self._record(run_id, state, steps, model, kb)
        record.root, record.part = False, f"{steps[0].node_id}@{steps[0].visit}"
        live.submit(record)
        self._note(run_id, state, steps, model, kb)

    def end(self, live: LiveExport, run_id: str, state: Mapping[str, Any],
            update: Mapping[str, Any], steps: Sequence[StepEvent], model: Any, kb: str, *,
            error: str | None = None) -> None:
        """Send the run's root span (and the spans of `steps`, the last call's): the run ended
        at `finish` (`update`: what it wrote) or with `error` at a node. The totals are the graph
        state's counters (deltas in `update`, as LangGraph adds them)."""
        with self._lock:
            self._open.pop(run_id, None)
        record = self._record(run_id, state, steps, model, kb)
        record.part = f"end@{steps[0].node_id}@{steps[0].visit}" if steps else "end"
        halt = str(state.get("halt") or update.get("halt") or "")
        record.total_steps = int(state.get("steps") or 0) + len(steps)
        record.run = replace(
            record.run, ended_at=max(record.run.ended_at, time.time()),
            status="error" if error else ("budget_exceeded" if halt else "ok"),
            error=error, halt_reason=halt or None,
            answer=str(update.get("answer") or state.get("answer") or ""),
            citations=tuple(str(c) for c in update.get("citations") or state.get("citations") or []),
            cost=Cost(calls=int(state.get("llm_calls") or 0) + int(update.get("llm_calls") or 0),
                      tokens=int(state.get("tokens") or 0) + int(update.get("tokens") or 0)))
        live.submit(record)

    def _record(self, run_id: str, state: Mapping[str, Any], steps: Sequence[StepEvent],
                model: Any, kb: str) -> RunRecord:
        began = float(state.get("started") or time.time())
        last = max((s.started_at + s.ms / 1000.0 for s in steps if s.started_at), default=began)
        run = FinishedRun(run_id=run_id, flow_name=self.flow, flow_version=self.version,
                          question=str(state.get("question") or ""), answer="", status="running",
                          started_at=began, ended_at=max(last, began), kb=kb,
                          model_id=str(getattr(model, "model_id", "") or ""),
                          model_hash=str(getattr(model, "model_hash", "") or ""))
        return RunRecord(run, steps=list(steps))
