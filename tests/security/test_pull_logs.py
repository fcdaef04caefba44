"""Issue 47 finding 10: every failed pull on the Settings page wrote a full traceback to the
studio's log (23 traceback blocks for 11 expected failures: the Hub offline, no such file, a
sha256 mismatch). An expected failure (a HubError: the Hub, not the studio, is at fault) is one
log line naming the job and saying why; an unexpected one (a bug) keeps its traceback."""
from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from flowkit.testing.gguf import write_gguf
from service import hub
from service.workspace import Workspace
from studio.common.jobs import JobManager
from studio.settings import tasks
from tests.runtime.test_models_pull import FILE, REPO, serve_hub, sha256_of


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _job_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("studio")]


def test_expected_pull_failures_are_one_log_line_each(tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Workspace(tmp_path / "data")
    small = write_gguf(tmp_path / "small.gguf")
    jobs = JobManager()
    caplog.set_level(logging.INFO)
    with serve_hub(small, sha256_of(small)) as good, serve_hub(small, "0" * 64) as wrong:
        cases = [(f"http://127.0.0.1:{_closed_port()}", FILE),     # the Hub offline
                 (good.endpoint, "other.gguf"),                     # no such file
                 (wrong.endpoint, FILE)]                            # a sha256 mismatch
        for endpoint, filename in cases:
            monkeypatch.setenv("HF_ENDPOINT", endpoint)
            job = jobs.wait(tasks.submit_pull(jobs, ws, REPO, filename), 60)
            assert job.status == "error" and job.error
    failed = [r for r in _job_records(caplog) if "pull" in r.getMessage()]
    assert len(failed) == len(cases), [r.getMessage() for r in failed]
    for record in failed:
        text = record.getMessage()
        assert record.exc_info is None and record.exc_text is None, text    # no traceback
        assert "\n" not in text and REPO in text, text
        assert record.levelno == logging.WARNING
    said = " | ".join(r.getMessage() for r in failed)
    assert "cannot reach the Hugging Face Hub" in said and "has no file other.gguf" in said
    assert "sha256 is" in said


def test_an_unexpected_pull_failure_keeps_its_traceback(tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: a bug in the pull (not a HubError) is still logged with its traceback."""
    def broken(*args: object, **kwargs: object) -> hub.Pulled:
        raise KeyError("a bug")

    monkeypatch.setattr(hub, "pull_into", broken)
    jobs = JobManager()
    caplog.set_level(logging.INFO)
    job = jobs.wait(tasks.submit_pull(jobs, Workspace(tmp_path / "data"), REPO, FILE), 60)
    assert job.status == "error"
    (record,) = [r for r in _job_records(caplog) if "pull" in r.getMessage()]
    assert record.exc_info is not None and record.levelno == logging.ERROR
