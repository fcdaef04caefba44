"""Does a collector answer? One short OTLP/HTTP request to its traces URL: an empty export (no
spans, so nothing lands in it), POSTed as protobuf with the export's headers, given PROBE_TIMEOUT_S
seconds. The Settings page asks it when trace export is saved, so a collector that cannot be
reached is said on the page, not only in the server log when the first run's spans are dropped.

Standard library only: the OpenTelemetry SDK is not loaded for a check.
"""
from __future__ import annotations

import socket
import urllib.error
import urllib.request
from dataclasses import dataclass

from .settings import ExportTarget

#: seconds the check waits for the collector's answer
PROBE_TIMEOUT_S = 3.0
#: what the check sends: an empty ExportTraceServiceRequest
PROBE_BODY = b""

_HINTS = {
    401: "check the headers (an API key?)",
    403: "check the headers (an API key?)",
    404: "is this its OTLP/HTTP traces URL? (Phoenix: http://host:6006, an OpenTelemetry "
         "collector: http://host:4318)",
    405: "is this its OTLP/HTTP traces URL?",
}


@dataclass(frozen=True)
class Probe:
    """What the check found: the URL tried, the HTTP status it answered (None: no answer) and
    what it answered or what went wrong."""

    url: str
    status: int | None
    detail: str

    @property
    def ok(self) -> bool:
        """The collector took the empty export: it will take runs' spans."""
        return self.status is not None and 200 <= self.status < 300

    def line(self) -> str:
        """The check in one line, for the page: what was tried, and what came of it."""
        tried = f"an empty OTLP export, POST with a {PROBE_TIMEOUT_S:g} s timeout"
        if self.ok:
            return f"The collector at {self.url} answered HTTP {self.status} ({tried})."
        if self.status is not None:
            return f"The collector at {self.url} refused {tried}: {self.detail}."
        return f"The collector at {self.url} did not answer ({tried}): {self.detail}."


def _reason(err: BaseException) -> str:
    """The error as a user reads it: 'connection refused', 'no answer within 3 s', the DNS error."""
    reason = getattr(err, "reason", err)
    if isinstance(reason, TimeoutError):
        return f"no answer within {PROBE_TIMEOUT_S:g} s (timed out)"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (nothing listens there: is the collector running?)"
    if isinstance(reason, socket.gaierror):
        return f"the host name was not found ({reason.strerror or reason})"
    return str(reason) or type(reason).__name__


def probe(target: ExportTarget, timeout_s: float = PROBE_TIMEOUT_S) -> Probe:
    """Send `target` an empty export and say what came back (never raises)."""
    headers = {"Content-Type": "application/x-protobuf", **dict(target.headers)}
    request = urllib.request.Request(target.url, data=PROBE_BODY, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return Probe(target.url, int(answer.status), "")
    except urllib.error.HTTPError as err:
        hint = _HINTS.get(err.code, "it does not take OTLP traces there")
        return Probe(target.url, err.code, f"HTTP {err.code} {err.reason}; {hint}")
    except (urllib.error.URLError, OSError, ValueError) as err:
        return Probe(target.url, None, _reason(err))
