"""The Settings page's trace export form (AppTest): saved to settings.json after a check that the
collector answers (one that does not is saved with a warning naming what was tried and the
error), bad values refused in one line, and the line saying where runs go."""
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
from tests.telemetry.telkit import free_port, start_receiver

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
    return "\n".join(str(e.value) for e in [*at.caption, *at.success, *at.warning, *at.error])


def _save(at: AppTest, endpoint: str, headers: str = "") -> AppTest:
    at.toggle(key="settings_telemetry_enabled").set_value(True)
    at.text_input(key="settings_telemetry_endpoint").input(endpoint)
    at.text_input(key="settings_telemetry_headers").input(headers)
    at = at.button(key=SAVE).click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_form_saves_the_collector_and_says_where_runs_go(ws):
    receiver = start_receiver()
    try:
        at = _page()
        assert not at.exception
        assert "Runs are not exported" in _texts(at)
        at = _save(at, receiver.url, "api_key=s3cret")
    finally:
        receiver.close()
    saved = load_settings(ws.data_dir).telemetry
    assert saved == TelemetrySettings(True, receiver.url, {"api_key": "s3cret"})
    assert f"sent to {receiver.url}/v1/traces" in _texts(at)
    assert f"The collector at {receiver.url}/v1/traces answered" in _texts(at)
    assert receiver.requests == 1 and not receiver.spans       # the check: an empty export
    assert not at.warning


def test_an_unreachable_collector_is_saved_with_a_warning_saying_what_was_tried(ws):
    """Issue 48 item 9: a collector that does not answer was saved with no word on the page
    (its failure only in the server log); it is saved (the user may start it later) and the
    page says what was tried and what went wrong."""
    url = f"http://127.0.0.1:{free_port()}"
    at = _save(_page(), url)
    assert load_settings(ws.data_dir).telemetry == TelemetrySettings(True, url, {})
    warned = "\n".join(str(w.value) for w in at.warning)
    assert f"The collector at {url}/v1/traces did not answer" in warned, _texts(at)
    assert "refused" in warned.lower(), warned           # the error itself
    assert "runs' traces are dropped until it answers" in warned, warned


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


def test_the_check_names_a_collector_that_answers_but_refuses():
    """A server that answers 404 at the URL (not its traces path) is named as refusing, with
    where the traces URL usually is; a port nothing listens on as not answering."""
    import http.server
    import threading

    from flowkit.telemetry.probe import probe
    from flowkit.telemetry.settings import ExportTarget

    class NotHere(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotHere)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        found = probe(ExportTarget(url))
    finally:
        server.shutdown()
        server.server_close()
    assert not found.ok and found.status == 404
    assert found.line().startswith(f"The collector at {url} refused an empty OTLP export")
    assert "HTTP 404" in found.line() and "traces URL" in found.line()
    gone = probe(ExportTarget(f"http://127.0.0.1:{free_port()}/v1/traces"))
    assert gone.status is None and "connection refused" in gone.line()
