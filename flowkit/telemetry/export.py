"""Sending runs' spans to an OTLP/HTTP collector: now (a stored run) or as runs end (live).

`send` builds the spans of stored runs and exports them in one request, raising TelemetryError
with the collector's answer when it refuses or cannot be reached (the CLI's `--otlp`).

`LiveExport` is the live path and never stands in a run's way: `submit` only queues the finished
run; a background thread builds its spans and hands them to a BatchSpanProcessor, whose own thread
exports them. A collector that is down is said once in the log (`flowkit.telemetry` logger) and
the spans are dropped; the run has long ended by then. What became of each run's spans (sending,
sent, failed) is kept (`LiveExport.outcome`), so the Run page can say a run's trace was not sent.
A process that exits (a CLI, an exported package's run) waits at most CLOSE_WAIT_S for its last
spans, and says so once when they could not be sent in that time.
"""
from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from openinference.semconv.resource import ResourceAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .bounds import Limits
from .ids import RunIds
from .record import RunRecord
from .settings import ExportTarget, TelemetryError
from .spans import emit_run

log = logging.getLogger("flowkit.telemetry")

#: seconds one export request may take (the default 10 s would hold a CLI's exit longer)
EXPORT_TIMEOUT_S = 5.0
#: seconds closing (a process's exit) waits for queued spans to be sent
CLOSE_WAIT_S = 2.0
#: attributes a span may carry: a RETRIEVER span holds 4 per document (Limits.docs of them)
MAX_ATTRIBUTES = 4 * Limits().docs + 64
#: seconds a run's spans are said to be on their way; after that nothing is said of them (spans
#: the batch processor dropped never come back)
SENDING_S = 30.0
#: runs whose outcome is kept (the latest)
KEEP_OUTCOMES = 1000
#: what became of a run's spans (`Outcomes.of`)
SENDING, SENT, FAILED = "sending", "sent", "failed"
#: the root span's attribute naming its run
RUN_ID_ATTRIBUTE = "flowkit.run_id"
#: the OTLP exporter logs every failed try; flowkit says it once itself
_OTLP_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter",
                 "opentelemetry.exporter.otlp.common.http")


def _quiet_otlp_loggers() -> None:
    for name in _OTLP_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def provider(ids: RunIds, name: str = "flowkit") -> TracerProvider:
    """A TracerProvider for flowkit's spans (its own, never the process's global one) with ids
    from `ids`; `name` is the service and the Phoenix project the spans land in."""
    return TracerProvider(resource=Resource.create({"service.name": name,
                                                    ResourceAttributes.PROJECT_NAME: name}),
                          span_limits=SpanLimits(max_span_attributes=MAX_ATTRIBUTES),
                          id_generator=ids, shutdown_on_exit=False)


def otlp_exporter(target: ExportTarget) -> OTLPSpanExporter:
    """The OTLP/HTTP (protobuf) exporter for `target`."""
    return OTLPSpanExporter(endpoint=target.url, headers=dict(target.headers),
                            timeout=EXPORT_TIMEOUT_S)


def build_spans(records: Sequence[RunRecord], limits: Limits | None = None,
                service_name: str = "flowkit") -> list[ReadableSpan]:
    """The finished spans of `records`, in memory (what `send` exports; tests read them)."""
    memory = InMemorySpanExporter()
    ids = RunIds()
    tp = provider(ids, service_name)
    tp.add_span_processor(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer("flowkit.telemetry")
    for record in records:
        emit_run(tracer, record, limits, ids)
    tp.shutdown()
    return list(memory.get_finished_spans())


def send(records: Sequence[RunRecord], target: ExportTarget,
         exporter: SpanExporter | None = None) -> int:
    """Export the spans of `records` to `target` now; the number of spans sent, or
    TelemetryError when the collector does not take them."""
    spans = build_spans(records)
    if not spans:
        return 0
    _quiet_otlp_loggers()
    out = exporter or otlp_exporter(target)
    try:
        result = out.export(spans)
    finally:
        out.shutdown()
    if result is not SpanExportResult.SUCCESS:
        raise TelemetryError(f"the collector at {target.url} did not take the spans "
                             "(is it running? see the log for its answer)")
    return len(spans)


class Outcomes:
    """What became of each run's spans as far as this process knows: `sending` from when the
    run is queued (for SENDING_S), then `sent` or `failed` as its root span's export went (a run
    with a failed part stays failed). The latest KEEP_OUTCOMES runs; thread-safe."""

    def __init__(self, keep: int = KEEP_OUTCOMES) -> None:
        self._runs: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()

    def queued(self, run_id: str) -> None:
        """The run's record was handed to the exporter."""
        self._set(run_id, SENDING)

    def done(self, run_ids: Iterable[str], ok: bool) -> None:
        """An export with these runs' root spans succeeded (`ok`) or failed."""
        for run_id in run_ids:
            with self._lock:
                was = self._runs.get(run_id, ("", 0.0))[0]
            if not (ok and was == FAILED):
                self._set(run_id, SENT if ok else FAILED)

    def of(self, run_id: str) -> str | None:
        """`sending`, `sent` or `failed`; None when unknown here (or sending for too long)."""
        with self._lock:
            status, at = self._runs.get(run_id, ("", 0.0))
        if not status or (status == SENDING and time.monotonic() - at > SENDING_S):
            return None
        return status

    def _set(self, run_id: str, status: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)
            self._runs[run_id] = (status, time.monotonic())
            while len(self._runs) > self._keep:
                self._runs.popitem(last=False)


def run_ids(spans: Sequence[ReadableSpan]) -> set[str]:
    """The runs whose root spans are among `spans`."""
    return {str(s.attributes[RUN_ID_ATTRIBUTE]) for s in spans
            if s.attributes and RUN_ID_ATTRIBUTE in s.attributes}


class OnceLoggedExporter(SpanExporter):
    """Wraps an exporter; the first failure is logged (one line), later ones silently dropped,
    and a success after a failure is logged once too. Each export's runs go in `outcomes`."""

    def __init__(self, inner: SpanExporter, url: str) -> None:
        self.inner, self.url = inner, url
        self.outcomes = Outcomes()
        self.failures = 0
        self._said_down = False
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        """The last export failed (the collector is down or refuses)."""
        return self._said_down

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as err:  # noqa: BLE001 (an exporter must never raise into its thread)
            log.debug("OTLP export raised: %s", err)
            result = SpanExportResult.FAILURE
        self.outcomes.done(run_ids(spans), result is SpanExportResult.SUCCESS)
        if result is SpanExportResult.SUCCESS:
            if self._said_down:
                log.warning("telemetry: the collector at %s takes spans again", self.url)
                self._said_down = False
            return result
        self.failures += 1
        self.say_down("telemetry: the collector at %s cannot be reached; spans are dropped "
                      "until it can (said once; runs are not affected)")
        return result

    def say_down(self, message: str) -> None:
        """Log `message` (its `%s`: the collector's URL) unless the collector was already said
        to be down; from then on it is."""
        with self._lock:
            said, self._said_down = self._said_down, True
        if not said:
            log.warning(message, self.url)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class LiveExport:
    """Exports runs as they end, off their path: a queue, a builder thread, a batch processor."""

    def __init__(self, target: ExportTarget, exporter: SpanExporter | None = None,
                 limits: Limits | None = None, schedule_delay_ms: int = 1000) -> None:
        self.target = target
        self.limits = limits
        _quiet_otlp_loggers()
        self.exporter = OnceLoggedExporter(exporter or otlp_exporter(target), target.url)
        self._ids = RunIds()
        self._provider = provider(self._ids)
        self._provider.add_span_processor(
            BatchSpanProcessor(self.exporter, schedule_delay_millis=schedule_delay_ms))
        self._tracer = self._provider.get_tracer("flowkit.telemetry")
        self._queue: queue.Queue[RunRecord | Callable[[], None] | None] = queue.Queue(maxsize=1000)
        self._thread = threading.Thread(target=self._work, name="flowkit-telemetry", daemon=True)
        self._thread.start()
        self._closed = False
        self.dropped = 0
        atexit.register(self.close)

    def submit(self, record: RunRecord) -> None:
        """Queue a finished run for export; never blocks (a full queue drops the run)."""
        self.exporter.outcomes.queued(record.run.run_id)
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1
            self.exporter.outcomes.done([record.run.run_id], ok=False)

    def outcome(self, run_id: str) -> str | None:
        """What became of the run's spans: `sending`, `sent`, `failed`, or None (not known)."""
        return self.exporter.outcomes.of(run_id)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if callable(item):
                item()
                continue
            try:
                emit_run(self._tracer, item, self.limits, self._ids)
            except Exception as err:  # noqa: BLE001 (a bad record must not stop the exporter)
                log.warning("telemetry: could not build the spans of run %s: %s", item.run.run_id, err)
                self.exporter.outcomes.done([item.run.run_id], ok=False)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued run has been built and exported (tests, the CLI's exit)."""
        done = threading.Event()
        self._queue.put(done.set)
        if not done.wait(timeout_s):
            return False
        return self._provider.force_flush(int(timeout_s * 1000))

    def close(self) -> None:
        """Stop the builder thread and the batch processor: what is queued is still sent, waiting
        at most CLOSE_WAIT_S (a process's exit is never held longer by a collector that is slow
        or down; one known to be down is not waited for)."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._queue.put(None)
        self._thread.join(timeout=CLOSE_WAIT_S)
        if self.exporter.down:
            self.exporter.shutdown()          # aborts the exporter's retries
        stopper = threading.Thread(target=self._provider.shutdown, name="flowkit-telemetry-stop",
                                   daemon=True)
        stopper.start()
        stopper.join(timeout=CLOSE_WAIT_S)
        if stopper.is_alive():      # a process's exit: a collector that is down is said here
            self.exporter.say_down("telemetry: the collector at %s did not take the last spans "
                                   f"within {CLOSE_WAIT_S:g} s of closing; they are dropped (is it "
                                   "running? said once; runs are not affected)")
