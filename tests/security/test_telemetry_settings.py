"""Issue 47 finding 7: a malformed `telemetry` block in settings.json refused every command
(`flowkit kb` included), and `OTEL_EXPORTER_OTLP_ENDPOINT='http://[::1'` was a traceback, although
the README promises that export "never slows or fails a run". Each is now one warning line (once
per process, however often settings are read) and the command runs with export off."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from flowkit.runtime.resources import load_settings
from flowkit.telemetry.settings import TelemetryError, TelemetrySettings, live_target, traces_url
from flowkit.telemetry.sink import Telemetry
from service import cli
from tests.security.cliworld import flow_file, runner

BAD_BLOCKS = [
    {"enabled": "yes"},
    {"otlp_endpoint": "http://[::1"},
    {"otlp_endpoint": "http://x:99999"},
    {"endpoint": "http://x"},
    {"headers": ["a"]},
    "http://x",
    [1, 2],
]


@pytest.fixture(autouse=True)
def _fresh_warnings() -> None:
    from flowkit.telemetry import settings
    settings.WARNED.forget()          # each test sees its warning (once per process otherwise)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("flowkit.telemetry") and r.levelno == logging.WARNING]


@pytest.mark.parametrize("block", BAD_BLOCKS, ids=[json.dumps(b) for b in BAD_BLOCKS])
def test_a_bad_telemetry_block_leaves_every_command_running(
        block: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"telemetry": block}))
    caplog.set_level(logging.WARNING)
    code = cli.main(["--data-dir", str(home), "kb"])          # the real workspace, no fake
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err
    run = runner(home, monkeypatch, capsys)
    code, out, err = run("run", str(flow_file(tmp_path)), "--kb", "test",
                         "-q", "Who designed the Corren Lighthouse?")
    assert code == 0 and "Mara Velt" in out, err
    assert "Traceback" not in err
    said = _warnings(caplog)
    assert len(said) == 1, said                                 # once, however often read
    assert "trace export is off" in said[0] and "\n" not in said[0]
    assert load_settings(home).telemetry == TelemetrySettings()   # export off


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_ENDPOINT",
                                      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
@pytest.mark.parametrize("value", ["http://[::1", "http://x:99999", "localhost:4318"])
def test_a_bad_otel_variable_warns_and_runs_with_export_off(
        variable: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(variable, value)
    caplog.set_level(logging.WARNING)
    run = runner(tmp_path, monkeypatch, capsys)
    for _ in range(2):
        code, out, err = run("run", str(flow_file(tmp_path)), "--kb", "test",
                             "-q", "Who designed the Corren Lighthouse?")
        assert code == 0 and "Mara Velt" in out, err
        assert "Traceback" not in err
    said = _warnings(caplog)
    assert len(said) == 1 and variable in said[0] and "trace export is off" in said[0], said
    assert Telemetry().live(TelemetrySettings()) is None


def test_an_explicit_send_to_a_bad_url_is_still_a_one_line_refusal() -> None:
    """The control: where a collector is asked for by name (`--otlp URL`, the Settings form),
    a bad URL is refused, in one line, as before."""
    for value in ("http://[::1", "http://x:99999", "ftp://x"):
        with pytest.raises(TelemetryError) as err:
            traces_url(value)
        assert "\n" not in str(err.value)
    with pytest.raises(TelemetryError):
        live_target(TelemetrySettings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1"})
