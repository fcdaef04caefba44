"""The guarded studio server (studio/serve.py + studio/guard.py), started for real with a token:
without the access cookie nothing but the login form and the health check answers (no upload, no
metrics, no websocket, so no clear_cache or rerun message reaches the runtime), wrong tokens are
throttled, and with the token the studio works (the login, then a page rendered over the
websocket). Issue 28, finding "the gate covers pages, not the server"."""
from __future__ import annotations

import http.cookiejar
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2ekit import StudioServer

TOKEN = "guard-token-7f3a"


def _server(tmp: Path) -> StudioServer:
    return StudioServer(tmp, script="studio/serve.py", env={"FLOWKIT_STUDIO_TOKEN": TOKEN})


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _server(tmp_path_factory.mktemp("guarded")) as base:
        yield base


def _status(req: urllib.request.Request | str,
            opener: urllib.request.OpenerDirector | None = None) -> tuple[int, str]:
    try:
        with (opener or urllib.request.build_opener()).open(req, timeout=30) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")


def _login(url: str, token: str) -> tuple[int, str, http.cookiejar.CookieJar]:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    body = urllib.parse.urlencode({"token": token, "next": "/"}).encode()
    status, text = _status(urllib.request.Request(f"{url}/_flowkit/login", data=body), opener)
    return status, text, jar


def _ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/_stcore/stream"


def _rerun() -> bytes:
    msg = BackMsg()
    msg.rerun_script.query_string = ""
    msg.rerun_script.page_script_hash = ""
    return msg.SerializeToString()


def _clear_cache() -> bytes:
    msg = BackMsg()
    msg.clear_cache = True
    return msg.SerializeToString()


def test_an_upload_is_refused_without_the_cookie(url: str) -> None:
    body = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.txt\"\r\n"
            b"Content-Type: text/plain\r\n\r\n" + b"x" * 1024 + b"\r\n--b--\r\n")
    req = urllib.request.Request(f"{url}/_stcore/upload_file/some-session/some-file", data=body,
                                 method="PUT",
                                 headers={"Content-Type": "multipart/form-data; boundary=b"})
    for method in ("PUT", "POST"):
        req.method = method
        status, text = _status(req)
        assert status == 403 and "log in first" in text, (method, status, text)


@pytest.mark.parametrize("path", ["/_stcore/metrics", "/_stcore/host-config", "/st-metrics",
                                  "/_stcore/script-health-check", "/media/x.png", "/component/x",
                                  "/app/static/x.txt", "/static/js/main.js"])
def test_internal_endpoints_are_refused_without_the_cookie(url: str, path: str) -> None:
    status, text = _status(url + path)
    assert status == 403 and "log in first" in text


def test_a_page_sends_the_browser_to_the_login_form(url: str) -> None:
    req = urllib.request.Request(f"{url}/run?flow=x", headers={"Accept": "text/html"})
    status, text = _status(req)
    assert status == 200 and 'name="token"' in text        # followed the redirect to the form
    assert 'value="/run?flow=x"' in text                     # and it goes on there after
    assert _status(f"{url}/_stcore/health")[0] == 200        # the health check stays open


@pytest.mark.parametrize("message", [_clear_cache, _rerun], ids=["clear_cache", "rerun"])
def test_the_websocket_is_refused_so_no_message_reaches_the_runtime(
        url: str, message: Callable[[], bytes]) -> None:
    forged = {"Cookie": "flowkit_studio_access=99999999999.0000"}
    for headers in ({}, forged):
        with pytest.raises(InvalidStatus) as refused:
            with connect(_ws_url(url), subprotocols=["streamlit"],  # type: ignore[list-item]
                         additional_headers=headers, open_timeout=30) as ws:
                ws.send(message())
        assert refused.value.response.status_code == 403


def test_with_the_token_the_studio_works(url: str) -> None:
    status, text, jar = _login(url, TOKEN)
    assert status == 200 and 'name="token"' not in text     # went on to the studio's page
    cookie = next(c for c in jar if c.name == "flowkit_studio_access")
    assert cookie.has_nonstandard_attr("HttpOnly")
    headers = {"Cookie": f"{cookie.name}={cookie.value}"}
    assert _status(urllib.request.Request(f"{url}/_stcore/host-config", headers=headers))[0] == 200
    with connect(_ws_url(url), subprotocols=["streamlit"],  # type: ignore[list-item]
                 additional_headers=headers, open_timeout=30) as ws:
        ws.send(_rerun())
        seen = []
        for _ in range(500):
            msg = ForwardMsg()
            msg.ParseFromString(ws.recv(timeout=60))
            seen.append(str(msg))
            if "Flows" in seen[-1] and "heading" in seen[-1]:
                break
        else:
            pytest.fail("the Flows page did not render after the login")
    assert not any("Access token" in s for s in seen)     # the page gate took the cookie


def test_wrong_tokens_are_throttled(tmp_path: Path) -> None:
    with _server(tmp_path) as base:
        status, text, jar = _login(base, "wrong-1")
        assert status == 401 and "Wrong token" in text and not list(jar)
        answers = [_login(base, f"wrong-{n}")[:2] for n in range(2, 12)]
        throttled = [a for a in answers if a[0] == 429]
        assert throttled, [a[0] for a in answers]            # each failure doubles the wait: 1..512 s
        assert all("Too many wrong tokens: wait" in t for _, t in throttled)
        # while locked even the right token is refused unseen, so guessing gains nothing
        status, text, jar = _login(base, TOKEN)
        assert status == 429 and "Too many wrong tokens" in text and not list(jar)
