"""The Settings page's 'Pull a model' as a background job (issue 40 item 3), against the stand-in Hub
of tests/runtime/test_models_pull.py serving a 48 MB GGUF: the page run ends while the file
downloads, the bar says how far it got, a refresh (a new session with ?pull=<job>) finds it again,
a second Pull of the same file is refused, Stop keeps the bytes and the next Pull goes on from
them, the model is listed at the end; an offline Hub, a missing file and a sha256 mismatch each
end the job with its line."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowkit.testing.gguf import write_gguf
from service.workspace import Workspace
from studio.common.jobs import JobManager, get_jobs
from studio.settings import tasks
from tests.app._runkit import page
from tests.runtime.test_models_pull import CHUNK, FILE, REPO, StandIn, serve_hub, sha256_of

TARGET = Path("models") / "flowkit-test--gemma-3-270m-GGUF" / FILE
STALL = 25 * 1024 * 1024            # the stand-in holds the rest back here: 20 MB reach the disk


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = write_gguf(tmp_path_factory.mktemp("blob") / "big.gguf", tensors=2, floats=6_000_000)
    return path, sha256_of(path)


@pytest.fixture
def hub(blob: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    with serve_hub(*blob, stall_at=STALL) as served:
        monkeypatch.setenv("HF_ENDPOINT", served.endpoint)
        yield served


def settings(**query: str) -> AppTest:
    return page("pages/settings.py", **query).run()


def pull_clicked(at: AppTest, repo: str = REPO, filename: str = FILE) -> AppTest:
    at.text_input(key="settings_pull_repo").input(repo)
    at.text_input(key="settings_pull_file").input(filename)
    return at.button(key="settings_pull_go").click().run()


def bars(at: AppTest) -> list[tuple[int, str]]:
    return [(p.value, p.text) for p in at.get("progress")]


def wait_for_bytes(job_id: str, n: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while (get_jobs().get(job_id).meta.get("done") or 0) < n:
        assert time.monotonic() < deadline, get_jobs().get(job_id)
        time.sleep(0.05)


def test_a_pull_job_runs_beside_the_queue_and_is_never_ahead_of_a_run() -> None:
    jobs = JobManager()
    release = threading.Event()
    blocker = jobs.submit("run", "a long run", lambda report: release.wait(10) and None)
    side = jobs.submit(tasks.PULL, "a download", lambda report: {"ok": True}, own_thread=True)
    queued = jobs.submit("run", "the next run", lambda report: None)
    assert jobs.wait(side, 5).status == "done"          # not behind the run holding the queue
    until = time.monotonic() + 10                       # the queue's thread picks the run up
    while jobs.get(blocker).status == "queued" and time.monotonic() < until:
        time.sleep(0.01)
    assert jobs.get(blocker).status == "running" and jobs.ahead_of(queued) == 1
    release.set()
    assert jobs.wait(queued, 5).status == "done"


def test_pull_in_the_background_progress_refresh_refusal_then_listed(ws: Workspace,
                                                                      hub: StandIn) -> None:
    at = pull_clicked(settings())
    assert not at.exception
    job_id = at.query_params["pull"]
    wait_for_bytes(job_id, 2 * CHUNK)
    at.run()                                      # the page's run ends while the file downloads
    assert get_jobs().get(job_id).status == "running"
    assert bars(at) == [(43, f"Pulling {REPO}/{FILE}: 21 of 48 MB")]
    assert at.button(key=f"settings_pull_go_stop_{job_id}")        # Stop, while it runs

    pull_clicked(at)                              # the same file again: refused, not started
    assert [w.value for w in at.warning] == [f"{REPO}/{FILE} is already being pulled (21 of 48 "
                                             "MB so far); it was not started again"]
    assert at.query_params["pull"] == job_id
    assert [j.id for j in tasks.pull_jobs(get_jobs(), active_only=True)
            if j.meta["folder"] == str(ws.data_dir / "models")] == [job_id]

    fresh = settings(pull=job_id)                 # a refresh: a new session, the same address
    assert bars(fresh) == [(43, f"Pulling {REPO}/{FILE}: 21 of 48 MB")]

    hub.release.set()
    assert get_jobs().wait(job_id, 60).status == "done"
    fresh.run()
    target = ws.data_dir / TARGET
    assert [s.value for s in fresh.success] == [
        f"Pulled {REPO}/{FILE} (sha256 checked): {target}. To use it, choose 'A GGUF file on this "
        "machine' above and give this path."]
    assert any(str(target) in str(c.value) for c in fresh.code) and bars(fresh) == []
    assert sha256_of(target) == hub.sha256 and hub.gets == 1


def test_stop_keeps_the_bytes_and_the_next_pull_goes_on_from_them(ws: Workspace,
                                                                  hub: StandIn) -> None:
    at = pull_clicked(settings())
    job_id = at.query_params["pull"]
    wait_for_bytes(job_id, 2 * CHUNK)
    at.run()
    at.button(key=f"settings_pull_go_stop_{job_id}").click().run()
    hub.stall_at = 0
    hub.release.set()                             # the next bytes reach the job: it stops there
    job = get_jobs().wait(job_id, 60)
    assert job.status == "cancelled" and job.result["kept"] == 2 * CHUNK
    at.run()
    assert [w.value for w in at.warning] == [f"Stopped pulling {REPO}/{FILE} after 21 of 48 MB; "
                                             "press Pull to go on from there."]
    assert "A pull of this file stopped after 21 MB: Pull goes on from there." in \
        [c.value for c in at.caption]
    assert not (ws.data_dir / TARGET).exists()

    at.button(key="settings_pull_go").click().run()
    again = at.query_params["pull"]
    assert again != job_id and get_jobs().wait(again, 60).status == "done"
    assert hub.ranges == [f"bytes={2 * CHUNK}-"]                   # went on, did not start over
    at.run()
    assert [s.value for s in at.success][0].startswith(f"Pulled {REPO}/{FILE} (sha256 checked)")
    assert sha256_of(ws.data_dir / TARGET) == hub.sha256


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("case", ["offline", "missing", "mismatch"])
def test_a_failed_pull_says_why_and_lists_nothing(ws: Workspace, blob: tuple[Path, str],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  case: str) -> None:
    expected = {
        "offline": f"Pulling {REPO}/{FILE} failed: cannot reach the Hugging Face Hub at "
                   "http://127.0.0.1:",
        "missing": f"Pulling {REPO}/missing.gguf failed: {REPO} has no file missing.gguf (check "
                   "the name on the repository's 'Files' tab)",
        "mismatch": f"Pulling {REPO}/{FILE} failed: {REPO}/{FILE}: the downloaded file's sha256 "
                    "is ",
    }[case]
    with serve_hub(blob[0], "0" * 64 if case == "mismatch" else blob[1]) as served:
        endpoint = f"http://127.0.0.1:{_closed_port()}" if case == "offline" else served.endpoint
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        at = pull_clicked(settings(), filename="missing.gguf" if case == "missing" else FILE)
        job = get_jobs().wait(at.query_params["pull"], 60)
    assert job.status == "error"
    at.run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(expected), errors
    if case == "offline":
        assert "(offline?)" in errors[0]
    if case == "mismatch":
        assert "deleted, nothing pulled" in errors[0]
    assert not (ws.data_dir / "models" / "flowkit-test--gemma-3-270m-GGUF").exists() or \
        not list((ws.data_dir / "models" / "flowkit-test--gemma-3-270m-GGUF").glob("*.gguf"))
    assert not at.code and bars(at) == []


def test_a_request_that_cannot_be_one_is_refused_before_any_job(ws: Workspace) -> None:
    before = len(tasks.pull_jobs(get_jobs()))
    at = pull_clicked(settings(), repo="no-owner")
    assert [e.value for e in at.error] == ["repository 'no-owner': give it as owner/name, e.g. "
                                           "ggml-org/gemma-3-1b-it-GGUF"]
    assert "pull" not in at.query_params and len(tasks.pull_jobs(get_jobs())) == before
