"""Issue 47 finding 4: pulls a broken or hostile Hub could stretch. A Hub that announced 1,000
bytes and sent 200 MB had all of it written (and the part kept); a multi-GB pull started with no
free-space check; a server that ignores Range and closes early made the pull start again forever;
a 1-byte-per-5-s drip never timed out. Now the bytes, the tries and the time are bounded
(flowkit.runtime.hub's named bounds), and each end is one HubError line saying what the Hub did.

The hostile Hub here answers HEAD like the real one (a 302 with X-Linked-Etag/-Size) and then
misbehaves on GET as each test asks. The timing bounds are made small with monkeypatch; the
figures with the shipped bounds are stated in SECURITY.md."""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from flowkit.runtime import hub
from flowkit.runtime.hub import HubError, part_files, pull, pulled_models
from flowkit.testing.gguf import write_gguf

REPO, FILE = "owner/hostile-GGUF", "x.gguf"
MB = 1024 * 1024


@dataclass
class Hostile:
    """What the hostile Hub announces and how its GET answers (`body(handler, start)`)."""

    announced: int
    sha256: str
    body: Callable[[BaseHTTPRequestHandler, int], None]
    port: int = 0
    gets: int = 0
    ranges: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _handler(h: Hostile) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            if self.path.startswith("/cdn/"):
                self.send_response(200)
                self.send_header("Content-Length", str(h.announced))
                self.send_header("ETag", f'"{h.sha256}"')
                self.end_headers()
                return
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{h.port}/cdn/{FILE}")
            self.send_header("X-Repo-Commit", "ab" * 20)
            self.send_header("X-Linked-Etag", f'"{h.sha256}"')
            self.send_header("X-Linked-Size", str(h.announced))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            if not self.path.startswith("/cdn/"):
                _headers(self, 404, 0)
                return
            h.gets += 1
            wanted = self.headers.get("Range") or ""
            if wanted:
                h.ranges.append(wanted)
            start = int(wanted[6:].split("-")[0]) if wanted.startswith("bytes=") else 0
            self.close_connection = True
            try:
                h.body(self, start)
            except (BrokenPipeError, ConnectionResetError):
                pass                                  # the client gave up: what is tested
    return Handler


@contextmanager
def hostile(announced: int, body: Callable[[BaseHTTPRequestHandler, int], None],
            sha256: str = "0" * 64) -> Iterator[Hostile]:
    h = Hostile(announced, sha256, body)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(h))
    server.daemon_threads = True
    h.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield h
    finally:
        server.shutdown()
        server.server_close()


class Ended(NamedTuple):
    """How a pull run in a thread ended: its error (None: it returned) and its seconds."""

    error: BaseException | None
    seconds: float


def pull_within(limit_s: float, models: Path, endpoint: str, **kw: Any) -> Ended:
    """Run a pull in a thread; fail the test if it has not ended after `limit_s`."""
    got: list[BaseException | None] = []
    began = time.monotonic()

    def go() -> None:
        try:
            pull(REPO, FILE, models, endpoint=endpoint, **kw)
            got.append(None)
        except BaseException as err:  # noqa: BLE001 (handed to the test)
            got.append(err)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"the pull was still going after {limit_s:.0f} s"
    return Ended(got[0], time.monotonic() - began)


def _headers(handler: BaseHTTPRequestHandler, status: int, length: int | None) -> None:
    handler.send_response(status)
    if length is not None:
        handler.send_header("Content-Length", str(length))
    handler.end_headers()


def _flood(total: int, declare: bool) -> Callable[[BaseHTTPRequestHandler, int], None]:
    def body(handler: BaseHTTPRequestHandler, start: int) -> None:
        _headers(handler, 200, total if declare else None)
        block = b"\0" * MB
        for _ in range(total // MB):
            handler.wfile.write(block)
    return body


@pytest.mark.parametrize("declare", [True, False], ids=["content-length-200MB", "no-length"])
def test_never_more_than_the_announced_bytes(declare: bool, tmp_path: Path) -> None:
    """Announced 1,000 bytes, sends 200 MB (with a Content-Length saying so, or none)."""
    seen: list[int] = []
    models = tmp_path / "models"
    with hostile(1000, _flood(200 * MB, declare)) as h:
        ended = pull_within(60, models, h.endpoint, on_progress=lambda d, t: seen.append(d))
    assert isinstance(ended.error, HubError), ended.error
    said = str(ended.error)
    assert "\n" not in said and "1,000 bytes" in said and "announced" in said, said
    assert max(seen, default=0) <= 1000                  # never counted (or written) past it
    assert part_files(models, REPO, FILE) == [] and pulled_models(models) == []
    assert h.gets == 1                                   # not asked again


def test_no_room_for_the_file_is_refused_before_a_byte(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5 GB file, 1 GB free: refused with both figures, no GET made."""
    import shutil
    real = shutil.disk_usage

    def one_gb_free(path: Any) -> Any:
        usage = real(path)
        return type(usage)(usage.total, usage.total - 10**9, 10**9)

    monkeypatch.setattr(shutil, "disk_usage", one_gb_free)
    models = tmp_path / "models"
    with hostile(5 * 10**9, _flood(MB, True)) as h:
        ended = pull_within(30, models, h.endpoint)
    assert isinstance(ended.error, HubError), ended.error
    said = str(ended.error)
    assert "\n" not in said and "5.0 GB" in said and "1.0 GB free" in said, said
    assert h.gets == 0 and part_files(models, REPO, FILE) == []


def test_a_hub_that_ignores_range_and_closes_early_ends_the_pull(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every GET answers 200 from byte 0 (Range ignored) and closes at half the file (past one
    10 MB write block, which reset huggingface_hub's retry count: it started again forever): the
    pull ends after a bounded number of fruitless tries, saying so, with what it had kept."""
    monkeypatch.setattr(hub, "RETRY_WAIT_S", 0.05, raising=False)
    size = 24 * MB

    def half(handler: BaseHTTPRequestHandler, start: int) -> None:
        _headers(handler, 200, size)
        handler.wfile.write(b"\1" * (size // 2))          # then the connection closes

    models = tmp_path / "models"
    with hostile(size, half) as h:
        ended = pull_within(60, models, h.endpoint)
    assert isinstance(ended.error, HubError), ended.error
    said = str(ended.error)
    assert "\n" not in said and "no progress" in said and "ignores Range" in said, said
    assert h.gets == 1 + getattr(hub, "MAX_FRUITLESS_TRIES", -1)     # the first try progressed
    (part,) = part_files(models, REPO, FILE)
    assert part.stat().st_size == 10 * MB and pulled_models(models) == []


def test_a_drip_is_stopped_as_too_slow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One byte every 0.25 s (the finding's 1 byte per 5 s, sped up): the pull ends once a
    rate window has passed under the minimum rate, with a line saying how slow it was."""
    monkeypatch.setattr(hub, "RATE_WINDOW_S", 2.0, raising=False)
    size = 4096

    def drip(handler: BaseHTTPRequestHandler, start: int) -> None:
        _headers(handler, 200, size)
        for _ in range(120):                              # 30 s at most, then it stops
            handler.wfile.write(b"\2")
            handler.wfile.flush()
            time.sleep(0.25)

    models = tmp_path / "models"
    with hostile(size, drip) as h:
        ended = pull_within(60, models, h.endpoint)
    assert isinstance(ended.error, HubError), ended.error
    said = str(ended.error)
    assert "\n" not in said and "too slow" in said, said
    assert ended.seconds < 6, ended.seconds                # one 2 s window (and a drip's gap)
    assert h.gets == 1


def test_a_silent_hub_times_out_and_ends_after_bounded_tries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers, then nothing: each try ends after STALL_S without a byte; after
    MAX_FRUITLESS_TRIES the pull ends saying so."""
    monkeypatch.setattr(hub, "STALL_S", 0.5, raising=False)
    monkeypatch.setattr(hub, "RETRY_WAIT_S", 0.05, raising=False)
    release = threading.Event()

    def silent(handler: BaseHTTPRequestHandler, start: int) -> None:
        _headers(handler, 200, 4096)
        handler.wfile.flush()
        release.wait(30)

    models = tmp_path / "models"
    try:
        with hostile(4096, silent) as h:
            ended = pull_within(40, models, h.endpoint)
            release.set()
    finally:
        release.set()
    assert isinstance(ended.error, HubError), ended.error
    said = str(ended.error)
    assert "\n" not in said and "no progress" in said, said
    assert h.gets == getattr(hub, "MAX_FRUITLESS_TRIES", -1) and ended.seconds < 10


def test_a_range_ignoring_hub_that_does_send_the_file_still_gives_it(tmp_path: Path) -> None:
    """The control: a part on disk, a Hub that ignores Range but sends the whole file: the bytes
    already there are skipped (not written twice) and the file is pulled."""
    blob = write_gguf(tmp_path / "blob.gguf", tensors=1, floats=1000)
    data = blob.read_bytes()
    sha = hashlib.sha256(data).hexdigest()

    def whole(handler: BaseHTTPRequestHandler, start: int) -> None:
        _headers(handler, 200, len(data))
        handler.wfile.write(data)

    models = tmp_path / "models"
    part = models / ".download" / "owner--hostile-GGUF" / f"{FILE}.{sha[:16]}.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:100])
    with hostile(len(data), whole, sha) as h:
        ended = pull_within(30, models, h.endpoint)
    assert ended.error is None, ended.error
    assert h.ranges == ["bytes=100-"]
    (got,) = pulled_models(models)
    assert got.read_bytes() == data
