"""`flowkit models pull` with the real huggingface_hub client against a local stand-in Hub (issue 40
item 3): the packaged default GGUF served as an LFS file (a 302 from /resolve/ carrying
X-Repo-Commit, X-Linked-Etag = its sha256 and X-Linked-Size, the bytes from another host with
Range support), listed after the pull, resumed after an interruption, refused on a sha256
mismatch with nothing listed, and a clear error when the Hub is unreachable."""
from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flowkit.runtime.hub import HubError, PullCancelled, pull, pulled_models
from flowkit.runtime.llama_cpp_backend import default_model_path
from flowkit.testing.gguf import write_gguf
from service.cli import main

REPO, FILE, COMMIT = "flowkit-test/gemma-3-270m-GGUF", "gemma-3-270m-q4_k_m.gguf", "c0ffee" * 6 + "ab12"


@dataclass
class StandIn:
    """What the stand-in Hub serves and what it saw."""

    blob: Path
    sha256: str
    port: int = 0
    ranges: list[str] = field(default_factory=list)
    gets: int = 0
    drop_first_at: int = 0      # > 0: the first whole-file GET stops after this many bytes

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _handler(hub: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            size = hub.blob.stat().st_size
            if self.path.startswith(f"/{REPO}/resolve/"):
                if not self.path.endswith(f"/{FILE}"):
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(302)          # an LFS file: the bytes live on another host
                self.send_header("Location", f"http://localhost:{hub.port}/cdn/{FILE}")
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("X-Linked-Etag", f'"{hub.sha256}"')
                self.send_header("X-Linked-Size", str(size))
                self.send_header("ETag", '"0123456789abcdef0123456789abcdef01234567"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path != f"/cdn/{FILE}":
                self.send_response(404)
                self.send_header("X-Error-Code", "RepoNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = 0
            wanted = self.headers.get("Range")
            if body:
                hub.gets += 1
                if wanted:
                    hub.ranges.append(wanted)
            if wanted and wanted.startswith("bytes="):
                start = int(wanted[6:].split("-")[0])
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(size - start))
            self.send_header("ETag", f'"{hub.sha256}"')
            self.end_headers()
            if body:
                left = size - start
                if hub.drop_first_at and not wanted:
                    left, hub.drop_first_at = hub.drop_first_at, 0      # the connection drops
                    self.close_connection = True
                with hub.blob.open("rb") as f:
                    f.seek(start)
                    try:
                        while left > 0 and (chunk := f.read(min(1 << 20, left))):
                            self.wfile.write(chunk)
                            left -= len(chunk)
                    except (BrokenPipeError, ConnectionResetError):
                        pass                     # the client stopped (a cancelled pull)
    return Handler


def _serve(blob: Path, sha256: str) -> Iterator[StandIn]:
    hub = StandIn(blob, sha256)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def default_sha() -> str:
    h = hashlib.sha256()
    with default_model_path().open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@pytest.fixture
def hub(default_sha: str) -> Iterator[StandIn]:
    yield from _serve(default_model_path(), default_sha)


def test_pull_checks_and_lists_the_packaged_gguf(hub: StandIn, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    assert main(["--data-dir", str(tmp_path), "models", "pull", REPO, FILE]) == 0
    target = tmp_path / "models" / "flowkit-test--gemma-3-270m-GGUF" / FILE
    out = capsys.readouterr().out
    assert f"sha256 {hub.sha256[:12]}" in out and str(target) in out
    assert target.read_bytes()[:4] == b"GGUF" and target.stat().st_size == \
        hub.blob.stat().st_size
    assert pulled_models(tmp_path / "models") == [target]
    assert main(["--data-dir", str(tmp_path), "models", "--json"]) == 0
    listed = capsys.readouterr().out
    assert str(target) in listed
    gets = hub.gets
    again = pull(REPO, FILE, tmp_path / "models", endpoint=hub.endpoint)
    assert again.path == target and again.commit == COMMIT and hub.gets == gets  # no download


def test_a_dropped_connection_resumes_and_a_stopped_pull_lists_nothing(hub: StandIn,
                                                                      tmp_path: Path) -> None:
    size = hub.blob.stat().st_size
    hub.drop_first_at = size // 2
    seen: list[int] = []
    got = pull(REPO, FILE, tmp_path, endpoint=hub.endpoint,
               on_progress=lambda done, total: seen.append(done))
    assert got.sha256 == hub.sha256 and pulled_models(tmp_path) == [got.path]
    assert len(hub.ranges) == 1 and hub.ranges[0].endswith("-")   # resumed, not started over:
    resumed_at = int(hub.ranges[0].removeprefix("bytes=")[:-1])    # from the last whole chunk
    assert size // 4 < resumed_at <= size // 2                     # written before the drop
    assert seen and seen[-1] == size and hub.gets == 2

    def stop_at_a_quarter(done: int, total: int | None) -> None:
        if total and done >= total // 4:
            raise PullCancelled("stopped by the test")

    with pytest.raises(PullCancelled):
        pull(REPO, FILE, tmp_path / "other", endpoint=hub.endpoint, on_progress=stop_at_a_quarter)
    assert pulled_models(tmp_path / "other") == []


def test_a_sha256_mismatch_is_refused_and_nothing_listed(tmp_path: Path) -> None:
    small = write_gguf(tmp_path / "small.gguf")
    for served in _serve(small, "0" * 64):
        with pytest.raises(HubError, match="sha256 is .* the Hub says 000000000000"):
            pull(REPO, FILE, tmp_path / "models", endpoint=served.endpoint)
    assert pulled_models(tmp_path / "models") == []
    assert not (tmp_path / "models" / ".download" / "flowkit-test--gemma-3-270m-GGUF").exists()


def test_an_unreachable_hub_and_a_missing_file_say_so(tmp_path: Path, hub: StandIn,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]            # a port nothing listens on
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed}")
    assert main(["--data-dir", str(tmp_path), "models", "pull", REPO, FILE]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Hugging Face Hub at http://127.0.0.1:" in err and "(offline?)" in err
    with pytest.raises(HubError, match=f"{REPO} has no file other.gguf"):
        pull(REPO, "other.gguf", tmp_path, endpoint=hub.endpoint)
    with pytest.raises(HubError, match="give it as owner/name"):
        pull("no-owner", FILE, tmp_path, endpoint=hub.endpoint)
    with pytest.raises(HubError, match="is not a .gguf file"):
        pull(REPO, "README.md", tmp_path, endpoint=hub.endpoint)
    assert main(["--data-dir", str(tmp_path), "models", "pull", REPO]) == 2
    assert "give the Hub repository (owner/name) and the GGUF file's name" in \
        capsys.readouterr().err
    assert pulled_models(tmp_path) == []


def test_the_settings_page_pulls_a_model_and_lists_it(hub: StandIn, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    from flowkit.testing import FakeLLM
    from service.workspace import Workspace
    from studio.common.workspace import use_workspace

    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path))
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    ws = Workspace(tmp_path)
    ws.resources.set_llm(FakeLLM())
    use_workspace(ws)
    try:
        at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"),
                               default_timeout=120)
        at.switch_page("pages/settings.py")
        at.run()
        at.text_input(key="settings_pull_repo").input(REPO)
        at.text_input(key="settings_pull_file").input("missing.gguf")
        at.button(key="settings_pull_go").click().run()
        assert [e.value for e in at.error] == [f"{REPO} has no file missing.gguf (check the name "
                                               "on the repository's 'Files' tab)"]
        at.text_input(key="settings_pull_file").input(FILE)
        at.button(key="settings_pull_go").click().run()
        assert not at.exception
        target = tmp_path / "models" / "flowkit-test--gemma-3-270m-GGUF" / FILE
        assert any(f"Pulled {REPO}/{FILE} (sha256 checked): {target}" in str(e.value)
                   for e in at.success)
        assert any(str(target) in str(c.value) for c in at.code)
        assert target.is_file()
    finally:
        use_workspace(None)
        ws.close()
