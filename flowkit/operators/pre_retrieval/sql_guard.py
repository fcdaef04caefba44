"""The safety layer of text-to-SQL: the attached database's place, attaching one, and running
one model-written SELECT read-only.

Defence in depth: the file is opened with URI mode=ro plus query_only; extensions stay disabled;
the statement must be exactly one SELECT (or WITH ... SELECT) without comments; an authorizer
allows only SELECT, READ of the main database, recursive CTEs and functions other than
load_extension and friends; rows are capped with fetchmany and time with a progress handler.
"""
from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from ...errors import OperatorInputError, ResourceError
from ...runtime.kb import check_name

ATTACHED_FILE = "attached.sqlite"
SQLITE_HEADER = b"SQLite format 3\x00"
MAX_VALUE_BYTES = 10_000_000
_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
            getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
_DENIED_FUNCTIONS = {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit",
                     "sqlite_dbpage", "zipfile", "sqlar_compress", "sqlar_uncompress"}
_ACTION_NAMES = {getattr(sqlite3, n): n[7:] for n in (
    "SQLITE_INSERT", "SQLITE_UPDATE", "SQLITE_DELETE", "SQLITE_PRAGMA", "SQLITE_ATTACH",
    "SQLITE_DETACH", "SQLITE_TRANSACTION", "SQLITE_CREATE_TABLE", "SQLITE_CREATE_TEMP_TABLE",
    "SQLITE_DROP_TABLE", "SQLITE_ALTER_TABLE", "SQLITE_CREATE_VIEW", "SQLITE_CREATE_INDEX",
    "SQLITE_CREATE_TRIGGER", "SQLITE_CREATE_VTABLE", "SQLITE_SAVEPOINT", "SQLITE_REINDEX",
    "SQLITE_ANALYZE") if hasattr(sqlite3, n)}


def attached_db_path(data_dir: Path | str, kb: str) -> Path:
    """Where the SQLite database attached to knowledge base `kb` lives."""
    return Path(data_dir) / "kb" / check_name(kb) / ATTACHED_FILE


def attach_database(data_dir: Path | str, kb: str, source_path: Path | str) -> Path:
    """Copy a SQLite database (a consistent snapshot through the backup API, journal mode DELETE)
    beside knowledge base `kb`, after checking it is a readable SQLite file with tables."""
    src = Path(source_path)
    if not src.is_file():
        raise ResourceError(f"'{src}' is not a file")
    with src.open("rb") as fh:
        if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise ResourceError(f"'{src}' is not a SQLite database (wrong file header)")
    dest = attached_db_path(data_dir, kb)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{ATTACHED_FILE}.{os.getpid()}.tmp")
    try:
        source = sqlite3.connect(src.resolve().as_uri() + "?mode=ro", uri=True)
        target = sqlite3.connect(tmp)
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            if target.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise ResourceError(f"'{src}' failed SQLite's integrity check")
            if not _tables(target):
                raise ResourceError(f"'{src}' has no tables to query")
        finally:
            source.close()
            target.close()
        os.replace(tmp, dest)
    except sqlite3.Error as err:
        raise ResourceError(f"'{src}' is not a readable SQLite database: {err}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return dest


def detach_database(data_dir: Path | str, kb: str) -> bool:
    """Remove the database attached to `kb`; False when there was none."""
    path = attached_db_path(data_dir, kb)
    if not path.is_file():
        return False
    path.unlink()
    path.with_name(ATTACHED_FILE + "-journal").unlink(missing_ok=True)
    return True


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                        "AND name NOT LIKE 'sqlite_%' ORDER BY name")
    return [r[0] for r in rows]


def _ident(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_]\w*", name) else '"' + name.replace('"', '""') + '"'


def schema_text(conn: sqlite3.Connection, max_chars: int) -> str:
    """Compact CREATE TABLE lines (table, columns, types) for the prompt."""
    lines = []
    for table in _tables(conn):
        cols = conn.execute("SELECT name, type FROM pragma_table_info(?)", (table,)).fetchall()
        body = ", ".join(f"{_ident(c)} {t}".strip() for c, t in cols)
        lines.append(f"CREATE TABLE {_ident(table)} ({body});")
    return "\n".join(lines)[:max_chars]


def check_select(sql: str) -> str:
    """Exactly one SELECT (or WITH ... SELECT) statement without comments, a trailing ';'
    removed; anything else raises OperatorInputError("sql", ...)."""
    text = sql.strip()
    if not text:
        raise OperatorInputError("sql", "the model wrote no SQL")
    if "\x00" in text or "--" in text or "/*" in text:
        raise OperatorInputError("sql", "comments and NUL characters are not allowed in the query")
    for i, ch in enumerate(text):
        if ch == ";" and sqlite3.complete_statement(text[: i + 1]):
            if text[i + 1:].strip():
                raise OperatorInputError("sql", "only one statement may run; found more after the "
                                         f"first ';': {text[i + 1:].strip()[:60]!r}")
            text = text[:i].rstrip()
            break
    if not re.match(r"(?:select|with)\b", text, re.I):
        word = (text.split() or ["?"])[0][:20]
        raise OperatorInputError("sql", f"only a SELECT query may run; the model wrote a "
                                 f"'{word.upper()}' statement")
    return text


class QueryFailed(Exception):
    """The SELECT was safe but did not run (syntax error, unknown column, time limit)."""

    def __init__(self, message: str, retry: bool):
        self.retry = retry
        super().__init__(message)


def open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection (URI mode=ro, query_only, no extensions, untrusted schema)."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=2.0)
    if hasattr(conn, "enable_load_extension"):
        conn.enable_load_extension(False)
    conn.execute("PRAGMA query_only=ON")
    conn.execute("PRAGMA trusted_schema=OFF")
    if hasattr(conn, "setlimit"):                   # Python 3.11+: no huge blobs, no ATTACH
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    return conn


def run_select(conn: sqlite3.Connection, sql: str, max_rows: int,
               timeout_s: float) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """Run one checked SELECT under the read-only authorizer, a row limit and a time limit."""
    denied: list[str] = []

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None,
                  _src: str | None) -> int:
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
            denied.append(f"function {arg2}()")
        elif action == sqlite3.SQLITE_READ and db not in (None, "main", "temp"):
            denied.append(f"reading database '{db}'")
        elif action in _ALLOWED:
            return sqlite3.SQLITE_OK
        else:
            target = " ".join(a for a in (arg1, arg2) if a)
            denied.append(f"{_ACTION_NAMES.get(action, f'action {action}')} {target}".strip())
        return sqlite3.SQLITE_DENY

    deadline = time.perf_counter() + timeout_s
    conn.set_authorizer(authorize)
    conn.set_progress_handler(lambda: int(time.perf_counter() > deadline), 1000)
    try:
        cur = conn.execute(sql)
        columns = [d[0] for d in cur.description or []]
        rows = cur.fetchmany(max_rows + 1)
    except sqlite3.Error as err:
        if denied:
            raise OperatorInputError("sql", f"the query was refused ({', '.join(denied[:3])}); "
                                     "only reading SELECT queries may run") from None
        if time.perf_counter() > deadline:
            raise QueryFailed(f"the query ran longer than {timeout_s}s and was stopped",
                              retry=False) from None
        raise QueryFailed(f"the query failed: {err}", retry=True) from None
    finally:
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
    return columns, rows[:max_rows], len(rows) > max_rows
