"""Issue 39 item 5: the studio's gate (studio/common/guard.py) in front of a stand-in for
Streamlit, whose catch-all answers every path with its page as the real one does.

Before: a cookie value '²' passed `str.isdigit()` and `int()` raised ValueError inside the
middleware (HTTP 500 and a traceback in the log); `/healthz` was let through to Streamlit,
which served its page instead of "ok"."""
from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from studio.common import access
from studio.common.guard import Guard

TOKEN = "gate-token-1234"
PAGE = "<!doctype html><title>Streamlit</title>"


async def _streamlit(request: Request) -> Response:
    return HTMLResponse(PAGE)


@pytest.fixture()
def client() -> TestClient:
    guard = Guard(TOKEN, access.Throttle())
    app = Starlette(routes=[*guard.routes(), Route("/{path:path}", _streamlit)],
                    middleware=[guard.middleware()])
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize("value", ["².abc", "²³.abc", "１２.x", "٣.٣", "9" * 13 + ".x", "½.½",
                                   "1.ÿ", ".", "..", "-1.x"])
def test_odd_cookie_values_are_refused_not_errors(client: TestClient, value: str) -> None:
    assert access.cookie_valid(value, TOKEN) is False
    for encoding in ("latin-1", "utf-8"):        # the server reads header bytes as latin-1
        raw = f"{access.COOKIE_NAME}={value}".encode(encoding, "replace")
        r = client.get("/_stcore/host-config", headers=[(b"cookie", raw)])
        assert r.status_code == 403 and "log in first" in r.text, (encoding, r.status_code)


def test_a_valid_cookie_still_opens(client: TestClient) -> None:
    client.cookies.set(access.COOKIE_NAME, access.make_cookie(TOKEN))
    r = client.get("/_stcore/host-config")
    assert r.status_code == 200 and r.text == PAGE


@pytest.mark.parametrize("path", ["/healthz", "/healthz/"])
def test_healthz_answers_ok_without_the_token(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 200 and r.text == "ok"
