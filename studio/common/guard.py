"""The server-side gate: with FLOWKIT_STUDIO_TOKEN set, the studio's server answers nothing but its
login form and its health check until the browser holds the access cookie.

Streamlit (1.67+) serves with Starlette, and `st.App` takes routes and ASGI middleware that run
before any of Streamlit's own handlers. studio/serve.py builds that App with `Guard`:

- `/_flowkit/login`: a small HTML form. A right token sets the access cookie (HttpOnly,
  SameSite=Strict, an HMAC of the token with an expiry; studio/access.py) and goes on to the page
  asked for. A wrong one is refused, and its address (after many, the whole server) must wait
  twice as long after each one: 429 with the wait in the message, whatever it sends meanwhile.
- every other request without a valid cookie is refused before Streamlit sees it: a browser asking
  for a page is sent to the form; the websocket `/_stcore/stream` is closed before it is accepted
  (HTTP 403), so no BackMsg (a rerun, widget values, clear_cache) ever reaches the runtime; uploads,
  `/_stcore/metrics`, host-config, media, components and static files get 403.

Left open: `/_stcore/health` and `/healthz` (they answer "ok" and nothing else; Docker and the
tests wait on them). server.baseUrlPath is not supported with a token: everything stays refused.
"""
from __future__ import annotations

import hmac
import math
import re
from typing import Any
from urllib.parse import quote

from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from studio.common import access, assets

LOGIN = "/_flowkit/login"
LOGOUT = "/_flowkit/logout"
HEALTHZ = "/healthz"
OPEN = frozenset({"/_stcore/health", HEALTHZ, LOGIN, LOGOUT})

_state = {"installed": False}   # process-wide, set once when the server's Guard is made


def installed() -> bool:
    """Whether this process's server is guarded (started through studio/serve.py)."""
    return _state["installed"]


def _safe_next(value: str) -> str:
    """A same-site path to go on to after the login (never another host)."""
    if value.startswith("/") and not value.startswith("//") and "\\" not in value \
            and re.fullmatch(r"[\x21-\x7e]*", value):
        return value
    return "/"


_FORM = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>flowkit studio: log in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{style}</style></head>
<body><h1>flowkit studio</h1>
<form method="post" action="{action}">
<label for="token">Access token</label>
<input type="password" id="token" name="token" autocomplete="current-password" autofocus>
<input type="hidden" name="next" value="{next}">
<p class="msg" role="alert">{message}</p>
<button type="submit">Open the studio</button></form>
<p><small>The value of {env} on the server.</small></p></body></html>
"""


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


_NO_STORE = {"Cache-Control": "no-store", "X-Frame-Options": "DENY"}


class Guard:
    """The token, the throttle and the cookie check of one server; gives st.App its routes and
    middleware."""

    def __init__(self, token: str, throttle: access.Throttle | None = None) -> None:
        self.token = token
        self.throttle = throttle or access.Throttle()
        _state["installed"] = True

    # ---- the form -------------------------------------------------------------------------
    def _form(self, status: int, nxt: str, message: str = "",
              headers: dict[str, str] | None = None) -> HTMLResponse:
        body = _FORM.format(style=assets.css("login"), action=LOGIN, next=_escape(_safe_next(nxt)),
                            message=_escape(message), env=access.TOKEN_ENV)
        return HTMLResponse(body, status_code=status, headers={**_NO_STORE, **(headers or {})})

    async def login(self, request: Request) -> Response:
        """GET: the form. POST: check the token (throttled); a right one sets the cookie."""
        if request.method != "POST":
            return self._form(200, request.query_params.get("next", "/"))
        form = await request.form()
        nxt = str(form.get("next") or "/")
        client = request.client.host if request.client else "unknown"
        wait = self.throttle.wait_s(client)
        if wait > 0:
            return self._form(429, nxt, access.wait_message(wait),
                              {"Retry-After": str(int(wait) + 1)})
        given = str(form.get("token") or "")
        if not hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")):
            wait = self.throttle.failed(client)
            return self._form(401, nxt, f"Wrong token: wait {math.ceil(wait)} s before the next try.")
        self.throttle.passed(client)
        response = RedirectResponse(_safe_next(nxt), status_code=303)
        response.set_cookie(access.COOKIE_NAME, access.make_cookie(self.token),
                            max_age=access.COOKIE_DAYS * 86400, path="/", httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    async def logout(self, request: Request) -> Response:
        """Forget the access cookie and show the form."""
        response = RedirectResponse(LOGIN, status_code=303)
        response.delete_cookie(access.COOKIE_NAME, path="/")
        return response

    def routes(self) -> list[Route]:
        return [*health_routes(), Route(LOGIN, self.login, methods=["GET", "POST"]),
                Route(LOGOUT, self.logout, methods=["GET"])]

    # ---- the check in front of everything -------------------------------------------------
    def allows(self, scope: Scope) -> bool:
        """Whether a request may reach Streamlit: an open path, or a valid access cookie (any
        cookie value that is not one is refused, never an error)."""
        path = str(scope.get("path") or "/")
        if path.rstrip("/") in OPEN:
            return True
        try:
            cookie = HTTPConnection(scope).cookies.get(access.COOKIE_NAME)
            return access.cookie_valid(cookie, self.token)
        except (ValueError, UnicodeError):
            return False

    def middleware(self) -> Any:
        """The Starlette `Middleware` entry for st.App(middleware=[...])."""
        from starlette.middleware import Middleware

        return Middleware(AccessMiddleware, guard=self)


async def _health(request: Request) -> Response:
    return PlainTextResponse("ok", headers=_NO_STORE)


def health_routes() -> list[Route]:
    """`/healthz`: "ok" from the server itself (Streamlit has no such route and would serve its
    page); open with or without a token, as Docker and the tests wait on it."""
    return [Route(path, _health, methods=["GET", "HEAD"]) for path in (HEALTHZ, HEALTHZ + "/")]


class AccessMiddleware:
    """ASGI middleware: requests without the access cookie never reach Streamlit."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.guard.allows(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})   # not accepted: HTTP 403
            return
        await _refusal(scope)(scope, receive, send)


def _refusal(scope: Scope) -> Response:
    conn = HTTPConnection(scope)
    path = str(scope.get("path") or "/")
    wants_page = (scope.get("method") in ("GET", "HEAD") and not path.startswith("/_stcore/")
                  and "text/html" in conn.headers.get("accept", ""))
    if wants_page:
        query = scope.get("query_string", b"").decode("latin-1")
        target = path + (f"?{query}" if query else "")
        return RedirectResponse(f"{LOGIN}?next={quote(target, safe='')}", status_code=303)
    return PlainTextResponse(f"flowkit studio: log in first ({LOGIN}); {access.TOKEN_ENV} is set.\n",
                             status_code=403, headers=_NO_STORE)
