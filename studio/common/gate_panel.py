"""The studio's page gate: when FLOWKIT_STUDIO_TOKEN is set, each browser session must give that
token before any page renders.

This is the second layer. Started through `streamlit run studio/serve.py` (make run, Docker), the
server itself refuses every request and websocket without the access cookie (studio/guard.py), and
a session that arrives with the cookie has passed this gate too. Started by plain `streamlit run
app.py`, only this gate stands, and it says so.

The studio listens on localhost by default (.streamlit/config.toml). Serving it on another address
(the Docker image binds 0.0.0.0) requires the token, or a reverse proxy that does authentication.
"""
from __future__ import annotations

import hmac
import os

import streamlit as st

from studio.common import access
from studio.common.state import GateKeys

TOKEN_ENV = access.TOKEN_ENV
PASSED_KEY = GateKeys.PASSED
INPUT_KEY = GateKeys.TOKEN


def expected_token() -> str | None:
    """The token the studio asks for, or None when no gate is configured."""
    token = os.environ.get(TOKEN_ENV, "")
    return token or None


def token_matches(given: str, expected: str) -> bool:
    """Constant-time comparison of what was typed with the configured token."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def require_token() -> None:
    """Stop the script run (st.stop) unless this session has given the right token, or no token
    is configured. Shows the password box meanwhile."""
    expected = expected_token()
    if expected is None or PASSED_KEY.get():
        return
    if access.cookie_valid(st.context.cookies.get(access.COOKIE_NAME), expected):
        PASSED_KEY.set(True)     # the server's login form already checked it
        return
    from studio.common import guard

    st.title("flowkit studio")
    if not guard.installed():
        st.caption("Only the pages are guarded: start the studio with `streamlit run studio/serve.py` "
                   "(`make run`) to guard the server too.")
    given = st.text_input("Access token", type="password", key=INPUT_KEY,
                          help=f"The value of {TOKEN_ENV} on the server")
    if given:
        if token_matches(given, expected):
            PASSED_KEY.set(True)
            st.rerun()
        st.error("Wrong token.")
    st.stop()
