"""Where runs are exported: the `telemetry` part of settings and the standard OTel variables.

Live export is on when settings say so (`telemetry.enabled`), or when the environment names a
collector (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`), unless
`OTEL_SDK_DISABLED=true`. The endpoint is `telemetry.otlp_endpoint`, else the environment's, else
`http://localhost:4318`; headers are `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,key2=value2`) with
`telemetry.headers` over them. A base URL (no path) gets OTLP's `/v1/traces` added.

Export never fails a run (issue 47, finding 7): a settings file whose `telemetry` block cannot be
used (`settings_or_off`) or an `OTEL_*` variable naming no usable collector (`sink.Telemetry`) is
one warning line, once per process, and the run goes on with export off. Where a collector is
asked for by name (`flowkit trace --otlp URL`, the Settings page's form) a bad one is refused.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from ..errors import FlowkitError

DEFAULT_ENDPOINT = "http://localhost:4318"
TRACES_PATH = "/v1/traces"
#: what is logged where telemetry that cannot be used is passed over
OFF = "trace export is off"

log = logging.getLogger(__name__)


class TelemetryError(FlowkitError):
    """A telemetry setting that cannot be used, or a collector that refused the spans."""


@dataclass
class TelemetrySettings:
    """The settings' `telemetry` part: on/off, the collector's OTLP/HTTP URL and its headers."""

    enabled: bool = False
    otlp_endpoint: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: object) -> TelemetrySettings:
        """Read `telemetry` from settings.json; a wrong field or type is a one-line error."""
        if isinstance(data, TelemetrySettings):
            return data
        if not isinstance(data, dict):
            raise TelemetryError(f"settings: telemetry must be an object, not {type(data).__name__}")
        bad = [k for k in data if k not in cls.__dataclass_fields__]
        if bad:
            raise TelemetryError(f"settings: unknown telemetry field(s) {bad}")
        enabled = data.get("enabled", False)
        endpoint = data.get("otlp_endpoint", "")
        headers = data.get("headers", {})
        if not isinstance(enabled, bool):
            raise TelemetryError("settings: telemetry.enabled must be true or false")
        if not isinstance(endpoint, str):
            raise TelemetryError("settings: telemetry.otlp_endpoint must be a string")
        if not isinstance(headers, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            raise TelemetryError("settings: telemetry.headers must map names to strings")
        if endpoint.strip():
            traces_url(endpoint)
        return cls(enabled=enabled, otlp_endpoint=endpoint.strip(), headers=dict(headers))


@dataclass(frozen=True)
class ExportTarget:
    """A collector to send spans to: the full traces URL and the request headers."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for `endpoint`: a base URL gets `/v1/traces`, a path is kept."""
    text = endpoint.strip()
    try:
        parts = urlsplit(text)
    except ValueError:                      # 'http://[::1': an unclosed IPv6 bracket
        raise TelemetryError(f"OTLP endpoint is not a URL: {text[:80]!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TelemetryError(f"OTLP endpoint must be an http(s) URL like "
                             f"http://localhost:6006; got {text[:80]!r}")
    try:
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise TelemetryError(f"OTLP endpoint has a bad port: {text[:80]!r}") from None
    if parts.path in ("", "/"):
        return text.rstrip("/") + TRACES_PATH
    return text


def parse_headers(text: str) -> dict[str, str]:
    """`OTEL_EXPORTER_OTLP_HEADERS`'s form, `key=value,key2=value2` (values URL-encoded)."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TelemetryError(f"OTLP headers must read key=value,key2=value2; got {item[:60]!r}")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def _env_endpoint(environ: Mapping[str, str]) -> str:
    """The collector the environment names ('' for none); TelemetryError naming the variable."""
    specific = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" if specific else "OTEL_EXPORTER_OTLP_ENDPOINT"
    try:
        if specific:
            traces_url(specific)
            return specific
        return traces_url(base.rstrip("/") + "/") if base else ""
    except TelemetryError as err:
        raise TelemetryError(f"{name}: {err}") from None


def _env_headers(environ: Mapping[str, str]) -> dict[str, str]:
    """The headers the environment gives; TelemetryError naming the variable."""
    name = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS" if environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            else "OTEL_EXPORTER_OTLP_HEADERS")
    try:
        return parse_headers(environ.get(name, ""))
    except TelemetryError as err:
        raise TelemetryError(f"{name}: {err}") from None


def target_for(settings: TelemetrySettings, environ: Mapping[str, str] | None = None,
               url: str | None = None) -> ExportTarget:
    """The collector for an explicit send: `url`, else settings, else environment, else the
    default localhost:4318."""
    env = os.environ if environ is None else environ
    endpoint = (url or "").strip() or settings.otlp_endpoint or _env_endpoint(env) or DEFAULT_ENDPOINT
    headers = _env_headers(env)
    headers.update(settings.headers)
    return ExportTarget(traces_url(endpoint), tuple(sorted(headers.items())))


def live_target(settings: TelemetrySettings,
                environ: Mapping[str, str] | None = None) -> ExportTarget | None:
    """The collector runs are exported to as they end, or None when live export is off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if not settings.enabled and not _env_endpoint(env):
        return None
    return target_for(settings, env)


class WarnOnce:
    """Warnings said once per process each (settings are read again at every page run and
    command: a bad block must not fill the log). Thread-safe."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def warn(self, message: str) -> None:
        """Log `message` as a warning (one line; stderr where nothing else is set up) unless it
        was said already."""
        with self._lock:
            if message in self._said:
                return
            self._said.add(message)
        log.warning("%s", " ".join(message.split()))

    def forget(self) -> None:
        """Say each warning again (tests)."""
        with self._lock:
            self._said.clear()


WARNED = WarnOnce()


def settings_or_off(data: object, source: str) -> TelemetrySettings:
    """The `telemetry` block of the settings file `source`, or export off (with one warning
    naming the file and what is wrong) when it cannot be used: a bad block never refuses a
    command. The Settings page's form checks with `TelemetrySettings.from_dict`, which refuses."""
    try:
        return TelemetrySettings.from_dict(data)
    except TelemetryError as err:
        WARNED.warn(f"{source}: {err}; {OFF} until it is fixed (the Settings page's Trace export)")
        return TelemetrySettings()
