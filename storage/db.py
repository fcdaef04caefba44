"""One engine per database URL; SQLite in WAL mode with a busy timeout and foreign keys on."""
from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, text

from .models import Base

_ENGINES: dict[str, Engine] = {}
_LOCK = threading.Lock()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def engine_for(url: str) -> Engine:
    """The process-wide engine for a URL, tables created on first use."""
    with _LOCK:
        if url not in _ENGINES:
            kwargs: dict[str, Any] = {}
            if url.startswith("sqlite"):
                kwargs["connect_args"] = {"check_same_thread": False, "timeout": 10}
            engine = create_engine(url, **kwargs)
            if url.startswith("sqlite"):
                event.listen(engine, "connect", _sqlite_pragmas)
            Base.metadata.create_all(engine)
            _add_missing_columns(engine)
            _ENGINES[url] = engine
        return _ENGINES[url]


def _add_missing_columns(engine: Engine) -> None:
    """Columns added to a model after a database was created (nullable ones only) are added to it."""
    insp = inspect(engine)
    with engine.begin() as conn:
        for table in Base.metadata.sorted_tables:
            have = {c["name"] for c in insp.get_columns(table.name)}
            for col in table.columns:
                if col.name not in have and col.nullable:
                    kind = col.type.compile(dialect=engine.dialect)
                    conn.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{col.name}" {kind}'))
