"""Where export is switched on: settings' telemetry part and the standard OTEL_* variables."""
from __future__ import annotations

import pytest

from flowkit.runtime.resources import Settings, load_settings, save_settings
from flowkit.telemetry.settings import (
    TelemetryError,
    TelemetrySettings,
    live_target,
    parse_headers,
    target_for,
    traces_url,
)


def test_off_unless_settings_or_the_environment_say_so():
    assert live_target(TelemetrySettings(), {}) is None
    on = live_target(TelemetrySettings(enabled=True), {})
    assert on is not None and on.url == "http://localhost:4318/v1/traces"
    env = live_target(TelemetrySettings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4318"})
    assert env is not None and env.url == "http://col:4318/v1/traces"
    specific = live_target(TelemetrySettings(),
                           {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://col:9/custom/path"})
    assert specific is not None and specific.url == "http://col:9/custom/path"
    assert live_target(TelemetrySettings(enabled=True),
                       {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}) is None


def test_settings_win_over_the_environment_and_headers_merge():
    s = TelemetrySettings(enabled=True, otlp_endpoint="http://phoenix:6006",
                          headers={"authorization": "Bearer s"})
    t = target_for(s, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318",
                       "OTEL_EXPORTER_OTLP_HEADERS": "api_key=a%20b,authorization=env"})
    assert t.url == "http://phoenix:6006/v1/traces"
    assert dict(t.headers) == {"api_key": "a b", "authorization": "Bearer s"}
    assert target_for(s, {}, url="http://cli:1/").url == "http://cli:1/v1/traces"


def test_settings_json_round_trip(tmp_path):
    s = Settings(telemetry=TelemetrySettings(enabled=True, otlp_endpoint="http://x:6006",
                                             headers={"k": "v"}))
    save_settings(tmp_path, s)
    assert load_settings(tmp_path).telemetry == s.telemetry
    assert Settings.from_dict({}).telemetry == TelemetrySettings()


@pytest.mark.parametrize("bad, words", [
    ({"otlp_endpoint": "localhost:6006"}, "http(s) URL"),
    ({"otlp_endpoint": "ftp://x"}, "http(s) URL"),
    ({"enabled": "yes"}, "true or false"),
    ({"headers": {"a": 1}}, "headers"),
    ({"endpoint": "http://x"}, "unknown telemetry field"),
    ("http://x", "must be an object"),
])
def test_bad_telemetry_settings_are_one_line_errors(bad, words):
    with pytest.raises(TelemetryError) as err:
        Settings.from_dict({"telemetry": bad})
    assert words in str(err.value) and "\n" not in str(err.value)


def test_bad_urls_and_headers():
    with pytest.raises(TelemetryError, match="bad port"):
        traces_url("http://x:99999")
    with pytest.raises(TelemetryError, match="key=value"):
        parse_headers("novalue")
    assert parse_headers(" a=1 , ,b=x%3Dy") == {"a": "1", "b": "x=y"}
