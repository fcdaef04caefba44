"""The Settings page's trace export form (AppTest): saved to settings.json, bad values refused in
one line, and the line saying where runs go."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowkit.runtime.resources import Settings, load_settings
from flowkit.telemetry.settings import TelemetrySettings
from flowkit.testing import FakeLLM
from service.workspace import Workspace
from studio.common.workspace import use_workspace
from studio.settings.telemetry_panel import build, where_runs_go

ROOT = Path(__file__).resolve().parents[2]
SAVE = "FormSubmitter:settings_telemetry_form-Save trace export"


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path))
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    workspace = Workspace(tmp_path)
    workspace.resources.set_llm(FakeLLM())
    use_workspace(workspace)
    yield workspace
    use_workspace(None)


def _page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/settings.py")
    return at.run()


def _texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in [*at.caption, *at.success, *at.error])


def test_the_form_saves_the_collector_and_says_where_runs_go(ws):
    at = _page()
    assert not at.exception
    assert "Runs are not exported" in _texts(at)
    at.toggle(key="settings_telemetry_enabled").set_value(True)
    at.text_input(key="settings_telemetry_endpoint").input("http://phoenix.local:6006")
    at.text_input(key="settings_telemetry_headers").input("api_key=s3cret")
    at = at.button(key=SAVE).click().run()
    assert not at.exception
    saved = load_settings(ws.data_dir).telemetry
    assert saved == TelemetrySettings(True, "http://phoenix.local:6006", {"api_key": "s3cret"})
    assert "sent to http://phoenix.local:6006/v1/traces" in _texts(at)


def test_a_bad_url_is_refused_and_nothing_saved(ws):
    at = _page()
    at.toggle(key="settings_telemetry_enabled").set_value(True)
    at.text_input(key="settings_telemetry_endpoint").input("phoenix:6006")
    at = at.button(key=SAVE).click().run()
    assert "http(s) URL" in "\n".join(e.value for e in at.error)
    assert not (ws.data_dir / "settings.json").exists()


def test_build_and_the_line_on_where_runs_go(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    new, problems = build(Settings(), True, " http://c:4318 ", "a=1,b=2")
    assert problems == [] and new is not None
    assert new.telemetry == TelemetrySettings(True, "http://c:4318", {"a": "1", "b": "2"})
    assert build(Settings(), True, "", "nokey")[1] == [
        "OTLP headers must read key=value,key2=value2; got 'nokey'"]
    assert "Runs are not exported" in where_runs_go(Settings())
