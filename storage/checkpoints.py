"""LangGraph's checkpointer on the workspace's database: where paused runs' state lives.

`open_checkpointer(url)` opens, for the time of one debug call, the saver that matches the store's
engine: SQLite -> `SqliteSaver` on the same database file (its tables `checkpoints` and `writes`
beside flowkit's), PostgreSQL -> `PostgresSaver` on the same server and database. Only runs with
breakpoints use it (flowkit.debug); its tables are created on first use. An in-memory SQLite URL
gets an `InMemorySaver` shared by the process (nothing survives it, as nothing of that store does).
"""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy.engine import make_url

from flowkit.errors import FlowkitError

_MEMORY: dict[str, InMemorySaver] = {}
_LOCK = threading.Lock()


@contextmanager
def open_checkpointer(url: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """The checkpointer on the database of SQLAlchemy `url`, closed when the block ends."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        path = u.database or ""
        if path in ("", ":memory:"):
            with _LOCK:
                mem = _MEMORY.setdefault(url, InMemorySaver())
            yield mem
            return
        from langgraph.checkpoint.sqlite import SqliteSaver
        conn = sqlite3.connect(path, check_same_thread=False, timeout=10)
        try:
            conn.execute("PRAGMA busy_timeout=10000")      # as the store's engine (storage.db)
            conn.execute("PRAGMA synchronous=NORMAL")
            saver = SqliteSaver(conn)
            saver.setup()
            yield saver
        finally:
            conn.close()
        return
    if u.get_backend_name() == "postgresql":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row
        dsn = u.set(drivername="postgresql").render_as_string(hide_password=False)
        with Connection.connect(dsn, autocommit=True, prepare_threshold=0,
                                row_factory=dict_row) as pgc:
            pg = PostgresSaver(pgc)
            pg.setup()
            yield pg
        return
    raise FlowkitError(f"pausing a run needs SQLite or PostgreSQL, not {u.get_backend_name()} "
                       f"(database_url {u.render_as_string(hide_password=True)})")
