"""Issue 47 finding 1 (high): `flowkit models pull` sent the Hugging Face bearer token to whatever
host the Hub's redirect named. On the real Hub every LFS file redirects to a CDN, so every
logged-in pull handed the token to the CDN. The attack: a stand-in Hub (HF_ENDPOINT) whose
HEAD and GET answer 302 to another port; that port logs the Authorization header it receives.

The token must reach the endpoint's own origin (that is where a private repository checks it)
and nothing else."""
from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flowkit.runtime.hub import pull
from flowkit.testing.gguf import write_gguf

REPO, FILE = "owner/tiny-GGUF", "tiny.gguf"
TOKEN = "hf_secretsecretsecretsecretsecret1234"


class _Servers:
    """The Hub on one port, the bytes on `cdn_port` (or on the Hub's own port with same_origin),
    and every Authorization header each of them saw."""

    def __init__(self, blob: Path, same_origin: bool) -> None:
        self.blob, self.same_origin = blob, same_origin
        self.sha = hashlib.sha256(blob.read_bytes()).hexdigest()
        self.hub_auth: list[str] = []
        self.cdn_auth: list[str] = []
        self.hub_port = self.cdn_port = 0

    def handler(self, role: str) -> type[BaseHTTPRequestHandler]:
        servers = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                auth = self.headers.get("Authorization") or ""
                (servers.hub_auth if role == "hub" else servers.cdn_auth).append(auth)
                if role == "hub" and "/resolve/" in self.path:
                    port = servers.hub_port if servers.same_origin else servers.cdn_port
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.1:{port}/blob/{FILE}")
                    self.send_header("X-Repo-Commit", "ab" * 20)
                    self.send_header("X-Linked-Etag", f'"{servers.sha}"')
                    self.send_header("X-Linked-Size", str(servers.blob.stat().st_size))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if not self.path.startswith("/blob/"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = servers.blob.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", f'"{servers.sha}"')
                self.end_headers()
                if body:
                    self.wfile.write(data)
        return Handler


@contextmanager
def _serving(blob: Path, same_origin: bool) -> Iterator[_Servers]:
    state = _Servers(blob, same_origin)
    hub = ThreadingHTTPServer(("127.0.0.1", 0), state.handler("hub"))
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), state.handler("cdn"))
    state.hub_port, state.cdn_port = hub.server_address[1], cdn.server_address[1]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (hub, cdn)]
    for t in threads:
        t.start()
    try:
        yield state
    finally:
        for s in (hub, cdn):
            s.shutdown()
            s.server_close()


@pytest.fixture
def blob(tmp_path: Path) -> Path:
    return write_gguf(tmp_path / "blob.gguf", tensors=1, floats=1000)


def test_the_token_never_reaches_the_host_a_redirect_names(blob: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with _serving(blob, same_origin=False) as s:
        got = pull(REPO, FILE, tmp_path / "models", endpoint=f"http://127.0.0.1:{s.hub_port}")
    assert got.path.read_bytes() == blob.read_bytes()
    assert s.cdn_auth, "the bytes were fetched from the other host"
    assert not any(TOKEN in a for a in s.cdn_auth), s.cdn_auth
    assert any(TOKEN in a for a in s.hub_auth)      # the Hub itself still gets it (private repos)


def test_the_token_still_goes_where_the_bytes_are_on_the_hub_itself(
        blob: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the stand-in does see a token when one is due, so the test above could fail."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with _serving(blob, same_origin=True) as s:
        pull(REPO, FILE, tmp_path / "models", endpoint=f"http://127.0.0.1:{s.hub_port}")
    gets = [a for a in s.hub_auth]
    assert len(gets) >= 2 and all(TOKEN in a for a in gets)
