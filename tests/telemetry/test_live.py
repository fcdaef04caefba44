"""Live export as runs end: spans reach a collector after the run, off its path; a collector that
is down or hangs never slows or fails a run, and is said once in the log."""
from __future__ import annotations

import logging
import threading
import time

import pytest
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from telkit import Q, fake_workspace, free_port, start_receiver

from flowkit.run_request import RunHooks, RunRequest
from flowkit.telemetry.export import LiveExport, build_spans
from flowkit.telemetry.record import RunRecord
from flowkit.telemetry.settings import ExportTarget
from flowkit.templates import load_template


@pytest.fixture
def receiver():
    r = start_receiver()
    yield r
    r.close()


def test_a_run_reaches_the_collector_when_it_ends(tmp_path, receiver):
    ws = fake_workspace(tmp_path, receiver.url)
    result = ws.run(load_template("self_rag"), RunRequest(Q, kb="test"))
    assert result.status == "ok"
    live = ws.telemetry.live(ws.resources.settings.telemetry)
    assert live is not None and live.flush(10)
    stored = RunRecord.from_stored(ws.store.get_run(result.run_id), ws.store.steps(result.run_id))
    expected = build_spans([stored])
    assert len(receiver.spans) == len(expected)
    assert sorted(s.name for s in receiver.spans) == sorted(s.name for s in expected)
    root = next(s for s in receiver.spans if not s.parent_span_id)
    attrs = {a.key: a.value for a in root.attributes}
    assert attrs["flowkit.run_id"].string_value == result.run_id
    assert attrs["output.value"].string_value == result.answer
    assert abs(root.start_time_unix_nano - stored.run.started_at * 1e9) < 1000   # stored: in µs


class _Hanging(SpanExporter):
    """A collector that never answers (until released)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def export(self, spans):
        self.calls += 1
        self.release.wait(30)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.release.set()


def test_a_hanging_collector_does_not_hold_runs(tmp_path):
    ws = fake_workspace(tmp_path, None)
    hanging = _Hanging()
    live = LiveExport(ExportTarget("http://127.0.0.1:9/v1/traces"), exporter=hanging,
                      schedule_delay_ms=10)
    from flowkit.telemetry.sink import TelemetrySink
    try:
        took = []
        for _ in range(3):
            t = time.perf_counter()
            result = ws.run(load_template("self_rag"), RunRequest(Q, kb="test"),
                            RunHooks(sink=TelemetrySink(live)))
            took.append(time.perf_counter() - t)
            assert result.status == "ok" and result.error is None
        deadline = time.time() + 5
        while hanging.calls == 0 and time.time() < deadline:
            time.sleep(0.01)
        assert hanging.calls >= 1              # the exporter is stuck in a call...
        assert max(took) < 5                   # ...and no run waited for it
    finally:
        hanging.release.set()
        live.close()


def test_a_collector_that_is_down_is_said_once(tmp_path, caplog):
    ws = fake_workspace(tmp_path, f"http://127.0.0.1:{free_port()}")
    caplog.set_level(logging.WARNING, logger="flowkit.telemetry")
    live = ws.telemetry.live(ws.resources.settings.telemetry)
    assert live is not None
    for _ in range(3):
        result = ws.run(load_template("self_rag"), RunRequest(Q, kb="test"))
        assert result.status == "ok" and result.error is None
        live.flush(15)                       # each run's spans in its own export request
    assert live.exporter.failures >= 3
    said = [r for r in caplog.records if r.name == "flowkit.telemetry"]
    assert len(said) == 1 and "cannot be reached" in said[0].getMessage()
    assert ws.store.get_run(result.run_id).record.status == "ok"
