"""Runs as OpenTelemetry traces in the OpenInference conventions (Arize Phoenix, Langfuse, any
OTLP collector).

`record.RunRecord` is a finished run as plain data (stored or live); `spans.emit_run` turns one
into spans; `export.send` sends stored runs now and `export.LiveExport` (through `sink.Telemetry`,
which the workspace holds) sends runs as they end, off their path. `settings` reads the
`telemetry` part of settings and the standard `OTEL_EXPORTER_OTLP_*` variables.

Only `settings` is imported here, so reading settings never loads OpenTelemetry.
"""
from __future__ import annotations

from .settings import ExportTarget, TelemetryError, TelemetrySettings, live_target, target_for

__all__ = ["ExportTarget", "TelemetryError", "TelemetrySettings", "live_target", "target_for"]
