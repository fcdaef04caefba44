"""A run whose trace export fails says so on the Run page (AppTest), not only in the server log
(issue 48 item 9): the finished run names the collector that did not take its spans."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
from flowkit.runtime.resources import Settings
from flowkit.telemetry.settings import TelemetrySettings
from flowkit.testing import HashEmbedder
from service.workspace import Workspace
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from tests.telemetry.telkit import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))   # _runkit
import _runkit as kit

LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"


@pytest.fixture
def down(tmp_path, monkeypatch):
    """A workspace exporting runs live to a collector nothing listens at; its URL."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    url = f"http://127.0.0.1:{free_port()}"
    ws = Workspace(tmp_path, Settings(telemetry=TelemetrySettings(True, url)))
    ws.resources.set_llm(kit.fake_llm())
    ws.resources.set_embedder(HashEmbedder())
    ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    use_workspace(ws)
    yield url
    get_jobs().wait_idle(60)
    use_workspace(None)


def test_a_run_whose_export_failed_says_so_on_the_run_page(down):
    at = kit.submit_run(LIGHTHOUSE)
    at = kit.until(at, lambda a: "Trace not exported" in kit.texts(a), timeout=60)
    warned = "\n".join(str(w.value) for w in at.warning)
    assert f"{down}/v1/traces" in warned and "did not take this run's spans" in warned, warned
    assert "1884" in kit.texts(at)                        # the run itself is not affected
