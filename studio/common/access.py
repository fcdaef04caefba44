"""The studio's access cookie and the throttle on wrong tokens (no Streamlit, no Tornado here).

With FLOWKIT_STUDIO_TOKEN set, the login form (studio/guard.py) gives a browser that typed the
token a cookie: `<expiry>.<hmac-sha256(token, expiry)>`. Only someone who knows the token can make
one, and changing the token invalidates every cookie given before. The server checks it on every
request and websocket; the page gate (studio/gate.py) accepts it as well, so the token is typed
once.

Wrong guesses are throttled per client address and for the whole server:

    throttle = Throttle()
    wait = throttle.wait_s(ip)        # > 0: refuse without checking the token
    throttle.failed(ip) / throttle.passed(ip)
"""
from __future__ import annotations

import hashlib
import hmac
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

#: The environment variable that holds the studio's access token.
TOKEN_ENV = "FLOWKIT_STUDIO_TOKEN"
COOKIE_NAME = "flowkit_studio_access"
COOKIE_DAYS = 7
_CONTEXT = b"flowkit-studio-access|"


_EXPIRY = re.compile(r"[0-9]{1,12}")


def _mac(token: str, expires: int) -> str:
    return hmac.new(token.encode("utf-8"), _CONTEXT + str(expires).encode(), hashlib.sha256).hexdigest()


def make_cookie(token: str, now: float | None = None, days: int = COOKIE_DAYS) -> str:
    """The cookie value that proves its holder typed `token` (valid for `days`)."""
    expires = int((time.time() if now is None else now) + days * 86400)
    return f"{expires}.{_mac(token, expires)}"


def cookie_valid(value: str | None, token: str, now: float | None = None) -> bool:
    """Whether `value` was made by make_cookie with this token and has not expired."""
    if not value or value.count(".") != 1:
        return False
    expires_text, mac = value.split(".")
    if _EXPIRY.fullmatch(expires_text) is None:     # ASCII digits only: '²'.isdigit() is True
        return False
    expires = int(expires_text)
    if expires < (time.time() if now is None else now):
        return False
    return hmac.compare_digest(mac.encode("ascii", "replace"), _mac(token, expires).encode())


@dataclass
class _Record:
    failures: int = 0
    locked_until: float = 0.0
    last_failure: float = 0.0


class Throttle:
    """Exponential backoff after wrong tokens: per client address, and for all clients together.

    After the n-th wrong token from an address, that address is refused for
    `base_s * 2**(n-1)` seconds (at most `max_s`), whatever it sends. The server as a whole
    allows `global_free` wrong tokens, then backs off the same way (at most `global_max_s`), so
    many addresses cannot share the guessing. A record is forgotten after `forget_s` seconds
    without a failure; a right token clears its address's record. Thread-safe.
    """

    GLOBAL = "*"

    def __init__(self, base_s: float = 1.0, max_s: float = 300.0, global_free: int = 20,
                 global_max_s: float = 60.0, forget_s: float = 900.0, max_clients: int = 10000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_s, self.max_s, self.global_free = base_s, max_s, global_free
        self.global_max_s, self.forget_s, self.max_clients = global_max_s, forget_s, max_clients
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._lock = threading.Lock()

    def _record(self, key: str, now: float) -> _Record:
        rec = self._records.get(key)
        if rec is not None and now - rec.last_failure > self.forget_s and now >= rec.locked_until:
            rec = None
            del self._records[key]
        if rec is None:
            rec = self._records[key] = _Record()
            while len(self._records) > self.max_clients:
                oldest = next(iter(self._records))
                if oldest == self.GLOBAL:
                    self._records.move_to_end(oldest)
                    oldest = next(iter(self._records))
                del self._records[oldest]
        self._records.move_to_end(key)
        return rec

    def wait_s(self, client: str) -> float:
        """Seconds `client` must wait before its next try (0: it may try now)."""
        now = self._clock()
        with self._lock:
            waits = [self._record(k, now).locked_until - now for k in (client, self.GLOBAL)]
        return max(0.0, *waits)

    def failed(self, client: str) -> float:
        """Record a wrong token from `client`; returns the seconds it must now wait."""
        now = self._clock()
        with self._lock:
            rec = self._record(client, now)
            rec.failures += 1
            rec.last_failure = now
            rec.locked_until = now + min(self.max_s, self.base_s * 2 ** min(rec.failures - 1, 30))
            glob = self._record(self.GLOBAL, now)
            glob.failures += 1
            glob.last_failure = now
            over = glob.failures - self.global_free
            if over > 0:
                glob.locked_until = now + min(self.global_max_s, self.base_s * 2 ** min(over - 1, 30))
            return max(rec.locked_until, glob.locked_until) - now

    def passed(self, client: str) -> None:
        """A right token from `client`: forget its failures (not the server-wide count)."""
        with self._lock:
            self._records.pop(client, None)


def wait_message(wait_s: float) -> str:
    """What a throttled client is told."""
    return (f"Too many wrong tokens: wait {math.ceil(wait_s)} s before trying again "
            "(each wrong token doubles the wait).")
