"""Settings: trace export (OpenTelemetry, OpenInference conventions) — on/off, the collector's
URL and headers, in a small form of its own; and where runs go now (settings or environment).
Saving checks that the collector answers (an empty export, a few seconds at most): one that does
not is saved all the same (it may be started later), with a warning naming what was tried and
the error."""
from __future__ import annotations

from dataclasses import replace

import streamlit as st

from service.settings import Settings, save_settings
from service.telemetry import (
    TelemetryError,
    TelemetrySettings,
    check_collector,
    live_target,
    parse_headers,
)
from service.workspace import Workspace
from studio.common.state import FlashKind, flash, show_flash
from studio.common.state import SettingsKeys as K
from studio.common.workspace import reset_workspace


def headers_text(headers: dict[str, str]) -> str:
    """Headers as the form shows them: `key=value,key2=value2` (OTEL_EXPORTER_OTLP_HEADERS' form)."""
    return ",".join(f"{k}={v}" for k, v in headers.items())


def build(current: Settings, enabled: bool, endpoint: str, headers: str
          ) -> tuple[Settings | None, list[str]]:
    """New settings with the form's telemetry part, or None and what is wrong (one line each)."""
    try:
        parsed = parse_headers(headers)
        tel = TelemetrySettings.from_dict({"enabled": bool(enabled),
                                           "otlp_endpoint": endpoint.strip(), "headers": parsed})
    except TelemetryError as err:
        return None, [str(err)]
    return replace(current, telemetry=tel), []


def where_runs_go(settings: Settings) -> str:
    """One line: where runs are exported as they end, or how to switch it on."""
    try:
        target = live_target(settings.telemetry)
    except TelemetryError as err:
        return f"Not exported: {err}"
    if target is None:
        return ("Runs are not exported. Switch it on here, or set OTEL_EXPORTER_OTLP_ENDPOINT "
                "before starting the studio.")
    return f"Each run is sent to {target.url} when it ends (in the background)."


def saved_notice(new: Settings) -> tuple[str, FlashKind]:
    """What the page says once trace export is saved, and as what: where runs go and whether the
    collector answered the check; a warning when it did not (what was tried, the error)."""
    text = "Trace export saved. " + where_runs_go(new)
    try:
        checked = check_collector(new.telemetry)
    except TelemetryError:           # an OTEL_* variable naming no collector: where_runs_go says
        return text, "success"
    if checked is None:
        return text, "success"
    if checked.ok:
        return f"{text} {checked.line()}", "success"
    return (f"{text} {checked.line()} Saved all the same: runs' traces are dropped until it "
            "answers (the runs are not affected). Start the collector, or fix the URL and save "
            "again.", "warning")


def draw(ws: Workspace, current: Settings) -> None:
    """The 'Trace export' form; saving rebuilds the workspace like the main form."""
    st.subheader("Trace export (OpenTelemetry)")
    st.caption("Runs as traces in the OpenInference conventions, for Arize Phoenix, Langfuse or "
               "any OTLP/HTTP collector: a span per node visit, model call (prompt, completion, "
               "tokens) and search (documents). `flowkit trace RUN --otlp URL` sends a stored run.")
    tel = current.telemetry
    with st.form(K.TELEMETRY_FORM, border=True):
        enabled = st.toggle("Export runs as they end", value=tel.enabled, key=K.TELEMETRY_ENABLED)
        endpoint = st.text_input("Collector URL (OTLP/HTTP)", value=tel.otlp_endpoint,
                                 key=K.TELEMETRY_ENDPOINT, placeholder="http://localhost:6006",
                                 help="A base URL gets /v1/traces. Empty: "
                                      "OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318")
        headers = st.text_input("Headers", value=headers_text(tel.headers),
                                key=K.TELEMETRY_HEADERS, placeholder="api_key=...",
                                help="key=value,key2=value2; added to OTEL_EXPORTER_OTLP_HEADERS")
        save_col, outcome = st.columns([1, 3], vertical_alignment="center")
        submitted = save_col.form_submit_button("Save trace export")
        with outcome:
            show_flash(K.TELEMETRY_NOTICE)
    st.caption(where_runs_go(current))
    if submitted:
        new, problems = build(current, enabled, endpoint, headers)
        if new is None:
            with outcome:
                for p in problems:
                    st.error(p)
            return
        save_settings(ws.data_dir, new)
        reset_workspace()
        flash(K.TELEMETRY_NOTICE, *saved_notice(new))
        st.rerun()
