"""`flowkit models pull` with the real huggingface_hub client against a local stand-in Hub (issue 40
item 3): the packaged default GGUF served as an LFS file (a 302 from /resolve/ carrying
X-Repo-Commit, X-Linked-Etag = its sha256 and X-Linked-Size, the bytes from another host with
Range support), listed after the pull; a pull stopped part-way (a dropped connection, the Hub gone
for a while, the process killed, a cancel) goes on from the bytes on disk with a Range request;
refused on a sha256 mismatch with nothing listed; a clear error when the Hub is unreachable; a
second pull of a file being pulled is refused.

`serve_hub` is the stand-in; the Settings page's tests (tests/app, tests/e2e) use it too."""
from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flowkit.runtime.hub import HubError, PullCancelled, part_files, pull, pulled_models
from flowkit.runtime.llama_cpp_backend import default_model_path
from flowkit.testing.gguf import write_gguf
from service.cli import main

REPO, FILE, COMMIT = "flowkit-test/gemma-3-270m-GGUF", "gemma-3-270m-q4_k_m.gguf", "c0ffee" * 6 + "ab12"
ROOT = Path(__file__).resolve().parents[2]
CHUNK = 10 * 1024 * 1024          # huggingface_hub's DOWNLOAD_CHUNK_SIZE: what reaches the disk


@dataclass
class StandIn:
    """What the stand-in Hub serves, how it misbehaves, and what it saw."""

    blob: Path
    sha256: str
    port: int = 0
    ranges: list[str] = field(default_factory=list)
    gets: int = 0
    drop_first_at: int = 0      # > 0: the first whole-file GET stops after this many bytes
    outage: bool = False        # True: the file's GETs answer 503 (the Hub gone for a while)
    out_after_drop: bool = False   # True: the drop starts an outage
    stall_at: int = 0           # > 0: a GET stops sending here until `release` is set
    release: threading.Event = field(default_factory=threading.Event)
    rate: float = 0.0           # > 0: bytes per second (a slow link the progress can be seen on)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def size(self) -> int:
        return self.blob.stat().st_size


def _handler(hub: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _empty(self, status: int, error_code: str = "") -> None:
            self.send_response(status)
            if error_code:
                self.send_header("X-Error-Code", error_code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _answer(self, body: bool) -> None:
            size = hub.size
            if self.path.startswith(f"/{REPO}/resolve/"):
                if not self.path.endswith(f"/{FILE}"):
                    self._empty(404, "EntryNotFound")
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
                self._empty(404, "RepoNotFound")
                return
            if body and hub.outage:
                self._empty(503)
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
                self._send(start, size - start, dropping=bool(hub.drop_first_at and not wanted))

        def _send(self, start: int, left: int, dropping: bool) -> None:
            if dropping:
                left, hub.drop_first_at = hub.drop_first_at, 0      # the connection drops
                hub.outage = hub.out_after_drop
                self.close_connection = True
            sent, began = 0, time.monotonic()
            with hub.blob.open("rb") as f:
                f.seek(start)
                try:
                    while left > 0 and (chunk := f.read(min(1 << 20, left))):
                        if hub.stall_at and start + sent + len(chunk) > hub.stall_at:
                            cut = max(hub.stall_at - start - sent, 0)
                            self.wfile.write(chunk[:cut])
                            self.wfile.flush()
                            hub.release.wait(60)
                            chunk = chunk[cut:]
                            sent += cut
                        self.wfile.write(chunk)
                        left -= len(chunk)
                        sent += len(chunk)
                        if hub.rate:
                            time.sleep(max(0.0, began + sent / hub.rate - time.monotonic()))
                except (BrokenPipeError, ConnectionResetError):
                    pass                     # the client stopped (a cancelled or killed pull)
    return Handler


@contextmanager
def serve_hub(blob: Path, sha256: str, **misbehave: object) -> Iterator[StandIn]:
    """A stand-in Hub serving `blob` as REPO/FILE with `sha256` (StandIn's fields set from
    `misbehave`), on a free port; stopped (and any stalled answer released) on exit."""
    hub = StandIn(blob, sha256)
    for name, value in misbehave.items():
        setattr(hub, name, value)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        hub.release.set()
        server.shutdown()
        server.server_close()


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@pytest.fixture(scope="module")
def default_sha() -> str:
    return sha256_of(default_model_path())


@pytest.fixture
def packaged_hub(default_sha: str) -> Iterator[StandIn]:
    """The stand-in serving the packaged default GGUF (253 MB)."""
    with serve_hub(default_model_path(), default_sha) as served:
        yield served


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A 48 MB GGUF (two float tensors) and its sha256: more than four download chunks, quicker
    to serve and hash than the packaged model."""
    path = write_gguf(tmp_path_factory.mktemp("blob") / "big.gguf", tensors=2, floats=6_000_000)
    return path, sha256_of(path)


@pytest.fixture
def hub(blob: tuple[Path, str]) -> Iterator[StandIn]:
    with serve_hub(*blob) as served:
        yield served


def test_pull_checks_and_lists_the_packaged_gguf(packaged_hub: StandIn, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", packaged_hub.endpoint)
    assert main(["--data-dir", str(tmp_path), "models", "pull", REPO, FILE]) == 0
    target = tmp_path / "models" / "flowkit-test--gemma-3-270m-GGUF" / FILE
    out = capsys.readouterr().out
    assert f"sha256 {packaged_hub.sha256[:12]}" in out and str(target) in out
    assert target.read_bytes()[:4] == b"GGUF" and target.stat().st_size == packaged_hub.size
    assert pulled_models(tmp_path / "models") == [target]
    assert part_files(tmp_path / "models", REPO, FILE) == []      # the part became the file
    assert main(["--data-dir", str(tmp_path), "models", "--json"]) == 0
    listed = capsys.readouterr().out
    assert str(target) in listed
    gets = packaged_hub.gets
    again = pull(REPO, FILE, tmp_path / "models", endpoint=packaged_hub.endpoint)
    assert again.path == target and again.commit == COMMIT and packaged_hub.gets == gets  # no download


def test_a_dropped_connection_resumes_within_the_pull(hub: StandIn, tmp_path: Path) -> None:
    hub.drop_first_at = hub.size // 2
    seen: list[int] = []
    got = pull(REPO, FILE, tmp_path, endpoint=hub.endpoint,
               on_progress=lambda done, total: seen.append(done))
    assert got.sha256 == hub.sha256 and pulled_models(tmp_path) == [got.path]
    assert len(hub.ranges) == 1 and hub.ranges[0].endswith("-")   # resumed, not started over:
    resumed_at = int(hub.ranges[0].removeprefix("bytes=")[:-1])    # from the last whole chunk
    assert hub.size // 4 < resumed_at <= hub.size // 2             # written before the drop
    assert seen and seen[-1] == hub.size and hub.gets == 2


def test_the_next_pull_resumes_after_the_hub_went_away_mid_file(hub: StandIn,
                                                                tmp_path: Path) -> None:
    """The connection drops after 25 MB and the Hub answers 503 after it: the pull fails saying
    what it kept; the next pull asks only for the rest (Range from the bytes on disk)."""
    hub.drop_first_at, hub.out_after_drop = 25 * 1024 * 1024, True
    with pytest.raises(HubError, match=r"MB of it kept: pull again to go on from there"):
        pull(REPO, FILE, tmp_path, endpoint=hub.endpoint)
    (part,) = part_files(tmp_path, REPO, FILE)
    on_disk = part.stat().st_size
    assert on_disk == 2 * CHUNK and pulled_models(tmp_path) == []
    hub.outage, hub.ranges = False, []
    seen: list[int] = []
    got = pull(REPO, FILE, tmp_path, endpoint=hub.endpoint,
               on_progress=lambda done, total: seen.append(done))
    assert hub.ranges == [f"bytes={on_disk}-"]
    assert seen[0] == on_disk and seen[-1] == hub.size             # the bar starts where it was
    assert got.sha256 == hub.sha256 == sha256_of(got.path)
    assert pulled_models(tmp_path) == [got.path] and part_files(tmp_path, REPO, FILE) == []


def test_a_killed_pull_goes_on_from_the_bytes_on_disk(hub: StandIn, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`flowkit models pull` killed (SIGKILL) with 20 MB on disk: the next one resumes there."""
    hub.stall_at = 25 * 1024 * 1024
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "service.cli", "--data-dir", str(tmp_path),
                             "models", "pull", REPO, FILE], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    models = tmp_path / "models"
    try:
        deadline = time.monotonic() + 60
        while not (part_files(models, REPO, FILE)
                   and part_files(models, REPO, FILE)[0].stat().st_size >= 2 * CHUNK):
            assert proc.poll() is None and time.monotonic() < deadline, "no part file written"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    (part,) = part_files(models, REPO, FILE)
    on_disk = part.stat().st_size
    assert on_disk == 2 * CHUNK and pulled_models(models) == []
    hub.stall_at, hub.ranges = 0, []
    hub.release.set()
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    assert main(["--data-dir", str(tmp_path), "models", "pull", REPO, FILE]) == 0
    said = capsys.readouterr()
    assert f"going on from the 21 MB an earlier pull of {REPO}/{FILE} downloaded" in said.err
    assert hub.ranges == [f"bytes={on_disk}-"]
    (got,) = pulled_models(models)
    assert str(got) in said.out and sha256_of(got) == hub.sha256
    assert part_files(models, REPO, FILE) == []


def test_a_stopped_pull_keeps_its_part_and_a_second_pull_meanwhile_is_refused(
        hub: StandIn, tmp_path: Path) -> None:
    def stop_at_a_quarter(done: int, total: int | None) -> None:
        if total and done >= total // 4:
            raise PullCancelled("stopped by the test")

    with pytest.raises(PullCancelled):
        pull(REPO, FILE, tmp_path, endpoint=hub.endpoint, on_progress=stop_at_a_quarter)
    assert pulled_models(tmp_path) == []
    (part,) = part_files(tmp_path, REPO, FILE)
    kept = part.stat().st_size
    assert kept >= hub.size // 4 - CHUNK     # the chunk it was stopped on is not written

    from filelock import FileLock
    lock = FileLock(part.parent / f"{FILE}.lock")    # as another process's pull holds it
    with lock.acquire(timeout=1):
        with pytest.raises(HubError, match=f"{REPO}/{FILE} is already being pulled"):
            pull(REPO, FILE, tmp_path, endpoint=hub.endpoint)
    assert part.stat().st_size == kept                          # the refused pull wrote nothing
    hub.ranges = []
    got = pull(REPO, FILE, tmp_path, endpoint=hub.endpoint)
    assert hub.ranges == [f"bytes={kept}-"] and got.sha256 == sha256_of(got.path)


def test_a_sha256_mismatch_is_refused_and_nothing_listed_or_kept(tmp_path: Path) -> None:
    small = write_gguf(tmp_path / "small.gguf")
    with serve_hub(small, "0" * 64) as served:
        with pytest.raises(HubError, match="sha256 is .* the Hub says 000000000000"):
            pull(REPO, FILE, tmp_path / "models", endpoint=served.endpoint)
        assert pulled_models(tmp_path / "models") == []
        assert part_files(tmp_path / "models", REPO, FILE) == []    # never resumed
        with pytest.raises(HubError, match="sha256 is"):
            pull(REPO, FILE, tmp_path / "models", endpoint=served.endpoint)
        assert served.ranges == [] and served.gets == 2              # started over


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
