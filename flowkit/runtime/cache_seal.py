"""Sealed completion-cache entries: an HMAC-SHA256 under a secret kept outside the database.

What it guards against: someone who can write the cache table but cannot read the key file (a
PostgreSQL role shared by a team's evaluation workers, a database restored from a backup or
copied from elsewhere, a SQLite file others may write). Unsealed, an edited row was served as it
stood: a wrong answer, forged token counts and a run that never existed. Sealed, every entry
carries `seal = {v, kid, mac}`, the MAC taken over the cache key (itself a sha256 over the model's
identity and the whole request: prompt, system message, sampling parameters, stop strings), the
key id and every field of the entry (text, prompt, token counts, milliseconds, finish reason,
logprobs, tokens, origin run/node/visit). An entry is served only when its MAC checks for the key
it is looked up under, so an edited field, a row moved to another key (another request's answer)
or a row written before entries were sealed is a miss: recomputed, and the row replaced.

The stored prompt is checked against the request through the key: the key is the request's
digest and the MAC binds key and prompt, so an entry answers exactly the request it was sealed
for (the stored prompt itself is the backend's rendering, which need not equal the request text).

What it does not guard against: a process that can read the key file (the same user, root) can
forge entries; deleting rows (the cache then recomputes, which is only slower); putting back an
entry sealed earlier under the same key (a genuine result of that very call).

The key file: $FLOWKIT_CACHE_KEY_FILE, else $XDG_CONFIG_HOME/flowkit/cache.key (by default
~/.config/flowkit/cache.key): outside every data directory and database, created on first use
with 32 random bytes (hex) and mode 0600 in a 0700 folder. A key file that is a link, not a
regular file, another user's, readable or writable by others, or not 64 hex digits is not used:
the cache then seals with a key of this process alone (one warning; nothing stored earlier is
served). Every process that shares one cache (evaluation workers on several machines with one
PostgreSQL) must be given the same key file: copy it (mode 0600) and point FLOWKIT_CACHE_KEY_FILE
at it. An entry sealed under another key is a miss and replaced like any other, so a lost or new
key costs one recomputation per entry, never a wrong answer; two processes with different keys
replace each other's entries (a warning names the reason `other_key`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FlowkitError
from .completion_cache import CacheEntry, Origin

log = logging.getLogger(__name__)

KEY_ENV = "FLOWKIT_CACHE_KEY_FILE"
#: The seal format; a change to what the MAC covers changes it (older seals are then misses).
SEAL_VERSION = 1
_SECRET_BYTES = 32

#: Why an entry was not served (the `reason` of `Opened`).
UNSEALED, OTHER_KEY, BAD_MAC, MALFORMED = "unsealed", "other_key", "bad_mac", "malformed"


class SealKeyError(FlowkitError):
    """The key file cannot be used (its path and why are in the message)."""


@dataclass(frozen=True)
class Opened:
    """An entry read back: `entry` when its seal checks, else None and `reason` says why
    (unsealed, other_key, bad_mac, malformed); such a row makes way for the recomputed entry."""

    entry: CacheEntry | None
    reason: str = ""


def key_path() -> Path:
    """Where the cache's secret key lives (see the module's help)."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config).expanduser() / "flowkit" / "cache.key"


def load_secret(path: Path) -> bytes:
    """The secret in `path`, created (0600, written whole before it appears) when missing;
    SealKeyError when the file cannot be trusted."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        _create(path)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:        # ELOOP: a symbolic link
        raise SealKeyError(f"cache key file {path}: cannot open it ({err.strerror}); it must be "
                           "a regular file, not a link") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise SealKeyError(f"cache key file {path}: not a regular file")
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise SealKeyError(f"cache key file {path}: owned by another user (uid {st.st_uid})")
        if st.st_mode & 0o077:
            raise SealKeyError(f"cache key file {path}: mode {stat.S_IMODE(st.st_mode):04o} lets "
                               f"others read or write it; run: chmod 600 {path}")
        text = fh.read(4 * _SECRET_BYTES).strip()
    try:
        secret = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(secret) != _SECRET_BYTES:
        raise SealKeyError(f"cache key file {path}: not {2 * _SECRET_BYTES} hex digits; delete "
                           "it and a new key is made (every cached entry is then recomputed)")
    return secret


def _create(path: Path) -> None:
    """Write a new secret to a private temporary file, then link it into place: a reader never
    sees a half-written key, and of two processes creating it at once the first one wins."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(_SECRET_BYTES) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass                   # another process made it first: use theirs
    finally:
        tmp.unlink(missing_ok=True)


class EntrySeal:
    """Seals cache entries with one secret and checks them; see the module's help."""

    def __init__(self, secret: bytes, persistent: bool = True) -> None:
        if len(secret) < 16:
            raise ValueError("a cache seal needs a secret of at least 16 bytes")
        self._secret = secret
        #: False for a key of this process alone (nothing another process stored is served)
        self.persistent = persistent
        #: names the key without giving it away (an entry sealed under another key says so)
        self.key_id = hashlib.sha256(b"flowkit cache key id\0" + secret).hexdigest()[:16]

    @classmethod
    def ephemeral(cls) -> EntrySeal:
        """A seal with a random key of this process alone."""
        return cls(secrets.token_bytes(_SECRET_BYTES), persistent=False)

    @classmethod
    def default(cls) -> EntrySeal:
        """The seal of `key_path()` (made on first use); where that file cannot be used, a key of
        this process alone, with one warning naming the file and why."""
        path = key_path()
        with _LOCK:
            seal = _DEFAULTS.get(path)
            if seal is None:
                try:
                    seal = cls(load_secret(path))
                except (SealKeyError, OSError) as err:
                    log.warning("completion cache: %s; cached entries are sealed with a key of "
                                "this process alone, so nothing stored before is served", err)
                    seal = cls.ephemeral()
                _DEFAULTS[path] = seal
        return seal

    def _mac(self, key: str, fields: Mapping[str, Any]) -> str:
        text = json.dumps([SEAL_VERSION, key, self.key_id, fields], sort_keys=True,
                          separators=(",", ":"), ensure_ascii=True)
        return hmac.new(self._secret, text.encode("ascii"), hashlib.sha256).hexdigest()

    def seal(self, key: str, entry: CacheEntry) -> dict[str, Any]:
        """`entry` as the dict to store under `key`, with its seal."""
        fields = _fields(CacheEntry.from_dict(entry.to_dict()))   # as it will read back
        return {**fields, "seal": {"v": SEAL_VERSION, "kid": self.key_id,
                                   "mac": self._mac(key, fields)}}

    def open(self, key: str, data: Mapping[str, Any]) -> Opened:
        """The entry stored under `key`, if its seal checks (see `Opened`)."""
        seal = data.get("seal")
        if not isinstance(seal, Mapping) or not isinstance(seal.get("mac"), str):
            return Opened(None, UNSEALED)
        if seal.get("v") != SEAL_VERSION:
            return Opened(None, UNSEALED)
        if seal.get("kid") != self.key_id:
            return Opened(None, OTHER_KEY)
        try:
            entry = CacheEntry.from_dict({k: v for k, v in data.items() if k != "seal"})
        except (TypeError, ValueError, KeyError):
            return Opened(None, MALFORMED)
        if not hmac.compare_digest(str(seal["mac"]), self._mac(key, _fields(entry))):
            return Opened(None, BAD_MAC)
        return Opened(entry)


def _fields(entry: CacheEntry) -> dict[str, Any]:
    """Every field of `entry` as JSON data: what the MAC covers and what is stored (the same data
    as `CacheEntry.to_dict`, built shallowly: `dataclasses.asdict` copies deeply and was most of
    the check's time on an entry with logprobs). A field added to CacheEntry is covered too."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(entry):
        value = getattr(entry, f.name)
        if isinstance(value, Origin):
            value = dict(vars(value))
        elif isinstance(value, list):
            value = [list(v) if isinstance(v, tuple) else v for v in value]
        out[f.name] = value
    return out


_LOCK = threading.Lock()
#: the default seal of each key file, read once a process (the file never changes under us)
_DEFAULTS: dict[Path, EntrySeal] = {}
