"""The completion cache in the workspace database (SQLite by default, PostgreSQL with the server
engines, so evaluation workers on other processes or machines share it).

Bounded to `max_entries`: when a put passes the bound, the least recently used entries go (a hit
moves an entry's `last_used` forward). A database error never fails a run: a lookup that cannot be
made is a miss, a store that cannot be made is skipped.

Every entry is sealed (`flowkit.runtime.cache_seal`: an HMAC under a key file outside the
database): a row whose seal does not check for the key it is looked up under (edited, moved to
another key, or stored before entries were sealed) is a miss, counted in `rejected`, logged once,
and deleted so that the recomputed entry takes its place.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from flowkit.runtime.cache_seal import EntrySeal
from flowkit.runtime.completion_cache import CacheEntry

from .db import engine_for
from .models import CompletionCacheRow

log = logging.getLogger(__name__)

_REASONS = {"unsealed": "no seal: stored before entries were sealed, or its seal was removed",
            "other_key": "sealed with another key file: give every process that shares this "
                         "cache the same FLOWKIT_CACHE_KEY_FILE",
            "bad_mac": "its seal does not match: edited in the database or moved from another key",
            "malformed": "fields of the wrong type"}

#: The default bound on entries (a Gemma call's entry is about 2-4 KB: ~0.5 GB at most).
DEFAULT_MAX_ENTRIES = 200_000


@dataclass(frozen=True)
class CacheStats:
    """What `flowkit cache stats` and Settings show."""

    entries: int
    max_entries: int
    bytes: int
    hits: int
    saved_ms: float
    oldest_use: float | None


class SqlCompletionCache:
    """`flowkit.runtime.completion_cache.CompletionCache` over the `completion_cache` table."""

    def __init__(self, url: str, max_entries: int = DEFAULT_MAX_ENTRIES,
                 seal: EntrySeal | None = None) -> None:
        self.engine = engine_for(url)
        self.max_entries = max(1, int(max_entries))
        #: seals entries (default: the key file of `cache_seal.key_path()`)
        self.seal = seal or EntrySeal.default()
        #: entries not served because their seal did not check, by reason (cache_seal.Opened)
        self.rejected: dict[str, int] = {}
        self._puts = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> CacheEntry | None:
        try:
            with Session(self.engine) as s, s.begin():
                row = s.get(CompletionCacheRow, key)
                if row is None:
                    return None
                opened = self.seal.open(key, dict(row.entry))
                if opened.entry is None:
                    self._reject(key, opened.reason)
                    s.delete(row)                # the recomputed entry takes its place
                    return None
                entry = opened.entry
                s.execute(update(CompletionCacheRow).where(CompletionCacheRow.key == key)
                          .values(hits=CompletionCacheRow.hits + 1, last_used=time.time()))
                return entry
        except (SQLAlchemyError, ValueError, TypeError) as err:
            log.warning("completion cache lookup failed (served as a miss): %s", err)
            return None

    def _reject(self, key: str, reason: str) -> None:
        """Count an entry not served; the first of each reason is logged."""
        with self._lock:
            self.rejected[reason] = self.rejected.get(reason, 0) + 1
            first = self.rejected[reason] == 1
        if first:
            log.warning("completion cache: entry %s… not served (%s: %s); it is recomputed, and "
                        "further entries like it are counted without a log line", key[:12], reason,
                        _REASONS.get(reason, reason))

    def put(self, key: str, entry: CacheEntry) -> None:
        data = self.seal.seal(key, entry)
        now = time.time()
        try:
            with Session(self.engine) as s, s.begin():
                s.add(CompletionCacheRow(
                    key=key, entry=data, size=len(json.dumps(data)), hits=0,
                    origin_run=entry.origin.run_id if entry.origin else "", created_at=now,
                    last_used=now))
        except IntegrityError:
            return          # computed twice at once (parallel branches, workers): same result
        except SQLAlchemyError as err:
            log.warning("completion cache store failed (not cached): %s", err)
            return
        with self._lock:
            self._puts += 1
            check = self._puts % 50 == 1
        if check:
            self.evict()

    def evict(self) -> int:
        """Drop the least recently used entries beyond `max_entries`; how many went."""
        try:
            with Session(self.engine) as s, s.begin():
                n = int(s.scalar(select(func.count()).select_from(CompletionCacheRow)) or 0)
                extra = n - self.max_entries
                if extra <= 0:
                    return 0
                cutoff = select(CompletionCacheRow.key).order_by(
                    CompletionCacheRow.last_used).limit(extra)
                keys = list(s.scalars(cutoff))
                s.execute(delete(CompletionCacheRow).where(CompletionCacheRow.key.in_(keys)))
                return len(keys)
        except SQLAlchemyError as err:
            log.warning("completion cache eviction failed: %s", err)
            return 0

    def stats(self) -> CacheStats:
        with Session(self.engine) as s:
            n, size, hits, oldest = s.execute(select(
                func.count(), func.coalesce(func.sum(CompletionCacheRow.size), 0),
                func.coalesce(func.sum(CompletionCacheRow.hits), 0),
                func.min(CompletionCacheRow.last_used))).one()
            saved = 0.0
            for entry, used in s.execute(select(CompletionCacheRow.entry, CompletionCacheRow.hits)
                                         .where(CompletionCacheRow.hits > 0)):
                saved += float((entry or {}).get("ms", 0.0)) * int(used)
        return CacheStats(entries=int(n), max_entries=self.max_entries, bytes=int(size),
                          hits=int(hits), saved_ms=round(saved, 1),
                          oldest_use=float(oldest) if oldest is not None else None)

    def clear(self) -> int:
        """Delete every entry; how many there were."""
        with Session(self.engine) as s, s.begin():
            n = int(s.scalar(select(func.count()).select_from(CompletionCacheRow)) or 0)
            s.execute(delete(CompletionCacheRow))
        return n
