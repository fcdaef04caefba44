"""Settings: trace export (OpenTelemetry, OpenInference conventions) — on/off, the collector's
URL and headers, in a small form of its own; and where runs go now (settings or environment)."""
from __future__ import annotations

from dataclasses import replace

import streamlit as st

from service.settings import Settings, save_settings
from service.telemetry import TelemetryError, TelemetrySettings, live_target, parse_headers
from service.workspace import Workspace
from studio.common.state import SettingsKeys as K
from studio.common.state import flash, show_flash
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
        flash(K.TELEMETRY_NOTICE, "Trace export saved. " + where_runs_go(new))
        st.rerun()
