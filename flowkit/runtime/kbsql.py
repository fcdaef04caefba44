"""The safety layer of text-to-SQL: the attached database's place, attaching one, and running
one model-written SELECT read-only.

Defence in depth: the file is opened with URI mode=ro plus query_only; extensions stay disabled;
the statement must be exactly one SELECT (or WITH ... SELECT) without comments (a '--' or '/*'
inside a string literal or quoted name is text, not a comment); an authorizer allows only SELECT,
READ of the main database's allowlisted tables (and columns), recursive CTEs, the table-valued
functions json_each/json_tree and functions other than load_extension and friends; rows are
capped with fetchmany and time with a progress handler.

The allowlist of a knowledge base's database is chosen when it is attached (default: every table
and view present then) and kept in the knowledge base's meta.json under `database_allow`.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OperatorInputError, ResourceError
from .kb import check_name

ATTACHED_FILE = "attached.sqlite"
SQLITE_HEADER = b"SQLite format 3\x00"
MAX_VALUE_BYTES = 10_000_000
#: Longest statement checked or run, in characters (a model writes at most 512 tokens of SQL);
#: SQLite's own limit on a statement's length is set to it as well, which bounds parsing time.
MAX_SQL_CHARS = 100_000
_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
            getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
_DENIED_FUNCTIONS = {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit",
                     "sqlite_dbpage", "zipfile", "sqlar_compress", "sqlar_uncompress"}
#: Table-valued functions that read no stored data; a query may call them like a table.
TABLE_FUNCTIONS = frozenset({"json_each", "json_tree"})
#: Where a knowledge base's meta.json keeps the allowlist of its attached database.
ALLOW_KEY = "database_allow"
_QUOTE_ENDS = {"'": "'", '"': '"', "`": "`", "[": "]"}
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
#: What can precede a statement-ending ';': a run of plain characters, or one string literal or
#: quoted name (a doubled quote inside is text; an unterminated one runs to the end). Each branch
#: is unambiguous, so matching is linear in the text.
_NOT_SEMICOLON = re.compile(r"""[^;'"`\[]+|'[^']*(?:''[^']*)*'?|"[^"]*(?:""[^"]*)*"?"""
                            r"""|`[^`]*(?:``[^`]*)*`?|\[[^\]]*\]?""")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ACTION_NAMES = {getattr(sqlite3, n): n[7:] for n in (
    "SQLITE_INSERT", "SQLITE_UPDATE", "SQLITE_DELETE", "SQLITE_PRAGMA", "SQLITE_ATTACH",
    "SQLITE_DETACH", "SQLITE_TRANSACTION", "SQLITE_CREATE_TABLE", "SQLITE_CREATE_TEMP_TABLE",
    "SQLITE_DROP_TABLE", "SQLITE_ALTER_TABLE", "SQLITE_CREATE_VIEW", "SQLITE_CREATE_INDEX",
    "SQLITE_CREATE_TRIGGER", "SQLITE_CREATE_VTABLE", "SQLITE_SAVEPOINT", "SQLITE_REINDEX",
    "SQLITE_ANALYZE") if hasattr(sqlite3, n)}


def attached_db_path(data_dir: Path | str, kb: str) -> Path:
    """Where the SQLite database attached to knowledge base `kb` lives."""
    return Path(data_dir) / "kb" / check_name(kb) / ATTACHED_FILE


def attach_database(data_dir: Path | str, kb: str, source_path: Path | str,
                    tables: Iterable[str] | None = None,
                    columns: Mapping[str, Iterable[str]] | None = None) -> Path:
    """Copy a SQLite database (a consistent snapshot through the backup API, journal mode DELETE)
    beside knowledge base `kb`, after checking it is a readable SQLite file with tables.

    `tables` / `columns` are the allowlist the caller will store (see `resolve_allowlist`); they
    are checked against the snapshot before it replaces an attached file, so a wrong name leaves
    the knowledge base as it was. Storing the allowlist is the caller's part (the studio keeps it
    in the knowledge base's meta.json)."""
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
            resolve_allowlist(target, tables, columns)
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


def _fold(name: str) -> str:
    """`name` as SQLite compares identifiers: ASCII letters without case, the rest as is."""
    return name.translate(_ASCII_LOWER)


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))]


@dataclass(frozen=True)
class Allowlist:
    """The tables (and views) a model-written query may read, and for some of them the only
    columns it may read (a table absent from `columns` has all its columns allowed)."""

    tables: tuple[str, ...]
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def allows_table(self, table: str) -> bool:
        return _fold(table) in {_fold(t) for t in self.tables}

    def allows_column(self, table: str, column: str) -> bool:
        """True for a column of an allowlisted table the allowlist does not exclude; '' (a
        read of no column, as in count(*)) and ROWID are always allowed."""
        limited = {_fold(t): cols for t, cols in self.columns.items()}.get(_fold(table))
        if limited is None or column in ("", "ROWID"):
            return True
        return _fold(column) in {_fold(c) for c in limited}

    def to_meta(self) -> dict[str, Any]:
        """The JSON form kept in meta.json."""
        return {"tables": list(self.tables),
                "columns": {t: list(cols) for t, cols in self.columns.items()}}

    @classmethod
    def from_meta(cls, data: object, where: str) -> Allowlist:
        """The allowlist of its JSON form; ResourceError names `where` when the shape is wrong."""
        tables = data.get("tables") if isinstance(data, dict) else None
        columns = data.get("columns", {}) if isinstance(data, dict) else None
        if not (isinstance(tables, list) and all(isinstance(t, str) for t in tables)):
            raise ResourceError(f"{where}: '{ALLOW_KEY}.tables' must be a list of table names")
        if not (isinstance(columns, dict) and all(
                isinstance(c, list) and all(isinstance(x, str) for x in c)
                for c in columns.values())):
            raise ResourceError(f"{where}: '{ALLOW_KEY}.columns' must map table names to lists "
                                "of column names")
        return cls(tuple(tables), {str(t): tuple(c) for t, c in columns.items()})


def _pick(wanted: Iterable[str], present: list[str], what: str) -> list[str]:
    """`wanted` names spelled as in `present` (duplicates dropped); ResourceError names the ones
    that are not there."""
    by_fold = {_fold(p): p for p in present}
    unknown = [w for w in wanted if _fold(w) not in by_fold]
    if unknown:
        raise ResourceError(f"allowlist: {what} {', '.join(repr(u) for u in unknown)} not found "
                            f"(there are: {', '.join(present) or 'none'})")
    return list(dict.fromkeys(by_fold[_fold(w)] for w in wanted))


def resolve_allowlist(conn: sqlite3.Connection, tables: Iterable[str] | None = None,
                      columns: Mapping[str, Iterable[str]] | None = None) -> Allowlist:
    """The allowlist of the database on `conn`: `tables` (default: every table and view in it)
    and, per table, the only `columns` to allow. A name that is not in the database, a table in
    `columns` that is not allowlisted, or an empty `tables` raises ResourceError naming it."""
    present = _tables(conn)
    chosen = present if tables is None else _pick(list(tables), present, "table(s)")
    if not chosen:
        raise ResourceError("allowlist: no table chosen; allow at least one")
    limited: dict[str, tuple[str, ...]] = {}
    for table, cols in (columns or {}).items():
        (name,) = _pick([table], chosen, "table (for columns, not allowlisted)")
        limited[name] = tuple(_pick(list(cols), _columns(conn, name), f"column(s) of '{name}'"))
    return Allowlist(tuple(chosen), limited)


def load_allowlist(data_dir: Path | str, kb: str) -> Allowlist | None:
    """The allowlist stored in knowledge base `kb`'s meta.json, or None when it stores none."""
    path = Path(data_dir) / "kb" / check_name(kb) / "meta.json"
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResourceError(f"cannot read {path}: {err}") from None
    if not isinstance(meta, dict) or ALLOW_KEY not in meta:
        return None
    return Allowlist.from_meta(meta[ALLOW_KEY], str(path))


def schema_text(conn: sqlite3.Connection, max_chars: int, allow: Allowlist | None = None) -> str:
    """Compact CREATE TABLE lines (table, columns, types) for the prompt; with `allow`, only the
    tables and columns it allows."""
    lines = []
    for table in _tables(conn):
        if allow is not None and not allow.allows_table(table):
            continue
        cols = [(c, t) for c, t in conn.execute(
            "SELECT name, type FROM pragma_table_info(?)", (table,)).fetchall()
            if allow is None or allow.allows_column(table, c)]
        body = ", ".join(f"{_ident(c)} {t}".strip() for c, t in cols)
        lines.append(f"CREATE TABLE {_ident(table)} ({body});")
    return "\n".join(lines)[:max_chars]


def code_only(sql: str) -> str:
    """`sql` with the inside of every string literal and quoted name ('..', "..", `..`, [..])
    removed, the quotes kept; an unterminated quote runs to the end (SQLite refuses it later)."""
    out, i = [], 0
    while i < len(sql):
        end = _QUOTE_ENDS.get(sql[i])
        if end is None:
            out.append(sql[i])
            i += 1
            continue
        j = i + 1
        while True:
            j = sql.find(end, j)
            if j == -1 or end == "]" or not sql.startswith(end * 2, j):
                break
            j += 2                                     # a doubled quote is part of the text
        out.append(sql[i] + end)
        i = len(sql) if j == -1 else j + 1
    return "".join(out)


def table_functions(sql: str) -> set[str]:
    """The TABLE_FUNCTIONS that `sql` calls (outside literals), lower case."""
    return {m.group(1).lower() for m in _CALL.finditer(code_only(sql))} & TABLE_FUNCTIONS


def statement_end(sql: str) -> int:
    """The index of the first ';' outside string literals and quoted names, or -1 when there is
    none. One pass over `sql` (comments are refused before this is asked)."""
    pos, n = 0, len(sql)
    while pos < n:
        m = _NOT_SEMICOLON.match(sql, pos)
        if m is None:
            return pos                                 # the character at pos is a ';'
        pos = m.end()
    return -1


def check_select(sql: str) -> str:
    """Exactly one SELECT (or WITH ... SELECT) statement without comments, a trailing ';'
    removed; anything else raises OperatorInputError("sql", ...). A '--' or '/*' inside a string
    literal or a quoted name is text and allowed. Linear in the length of `sql`, which is at
    most MAX_SQL_CHARS."""
    text = sql.strip()
    if not text:
        raise OperatorInputError("sql", "the model wrote no SQL")
    if len(text) > MAX_SQL_CHARS:
        raise OperatorInputError("sql", f"the query has {len(text)} characters; at most "
                                 f"{MAX_SQL_CHARS} may run")
    code = code_only(text)
    if "\x00" in text or "--" in code or "/*" in code:
        raise OperatorInputError("sql", "comments and NUL characters are not allowed in the query")
    end = statement_end(text)
    if end != -1:
        rest = text[end + 1:].strip()
        if rest:
            raise OperatorInputError("sql", "only one statement may run; found more after the "
                                     f"first ';': {rest[:60]!r}")
        text = text[:end].rstrip()
    if not re.match(r"(?:select|with)\b", text, re.I):
        word = (text.split() or ["?"])[0][:20]
        raise OperatorInputError("sql", f"only a SELECT query may run; the model wrote a "
                                 f"'{word.upper()}' statement")
    return text


class QueryFailed(Exception):
    """The SELECT was safe but did not run (syntax error, unknown column, time limit)."""

    def __init__(self, message: str, retry: bool) -> None:
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
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_CHARS * 4)   # bytes, UTF-8
    return conn


_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master",
                            "sqlite_temp_schema"})


def _stored_names(conn: sqlite3.Connection) -> frozenset[str]:
    """Every table and view of the database (SQLite's own included), folded."""
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return frozenset(_fold(r[0]) for r in rows) | _SCHEMA_TABLES


@dataclass(frozen=True)
class _ReadRules:
    """What the authorizer needs to judge one READ: the allowlist, the table-valued functions
    the query calls and the names of the stored tables and views."""

    allow: Allowlist | None
    called: set[str]
    stored: frozenset[str]

    def check(self, table: str, column: str, db: str | None) -> str:
        """'' when the read is allowed, else what is not allowed ("table 'x'")."""
        folded = _fold(table)
        if folded in self.called or (self.called and folded == "sqlite_master"
                                      and column == "ROWID"):
            return ""                   # a table-valued function (SQLite reads its schema row)
        if self.allow is None or not table or (db is None and folded not in self.stored):
            return ""                   # no allowlist, or a CTE's own rows (no stored data)
        if not self.allow.allows_table(table):
            return f"table '{table}'"
        if not self.allow.allows_column(table, column):
            return f"column '{column}' of table '{table}'"
        return ""


def run_select(conn: sqlite3.Connection, sql: str, max_rows: int, timeout_s: float,
               allow: Allowlist | None = None) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """Run one checked SELECT under the read-only authorizer, a row limit and a time limit.

    With `allow`, reading a table or column outside it is refused (OperatorInputError naming it).
    A call of json_each/json_tree is allowed: SQLite registers the function in the in-memory
    schema (reported as an UPDATE of sqlite_master, which is allowed only then; the connection
    is read-only and query_only, so nothing can be written).

    The time limit counts from this call (the checks and preparing the statement included): a
    progress handler stops SQLite's virtual machine once it has passed, and a statement still
    running then ends in QueryFailed("... ran longer than ...")."""
    deadline = time.perf_counter() + timeout_s
    denied: list[str] = []
    outside: list[str] = []
    called = table_functions(sql)
    rules = _ReadRules(allow, called, _stored_names(conn) if allow is not None else frozenset())

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None,
                  _src: str | None) -> int:
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
            denied.append(f"function {arg2}()")
        elif action == sqlite3.SQLITE_READ and db not in (None, "main", "temp"):
            denied.append(f"reading database '{db}'")
        elif (action == sqlite3.SQLITE_READ and db == "main" and _fold(arg1 or "").startswith("pragma_")
              and _fold(arg1 or "") not in rules.stored):
            denied.append(f"PRAGMA function {arg1}()")
        elif action == sqlite3.SQLITE_READ and (what := rules.check(arg1 or "", arg2 or "", db)):
            outside.append(what)
        elif (action == sqlite3.SQLITE_UPDATE and called and db == "main"
              and _fold(arg1 or "") == "sqlite_master"):
            return sqlite3.SQLITE_OK    # json_each(...) being registered, see above
        elif action in _ALLOWED:
            return sqlite3.SQLITE_OK
        else:
            target = " ".join(a for a in (arg1, arg2) if a)
            denied.append(f"{_ACTION_NAMES.get(action, f'action {action}')} {target}".strip())
        return sqlite3.SQLITE_DENY

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
        if outside and allow is not None:
            raise OperatorInputError("sql", _outside_message(outside, allow)) from None
        if time.perf_counter() > deadline:
            raise QueryFailed(f"the query ran longer than {timeout_s}s and was stopped",
                              retry=False) from None
        raise QueryFailed(f"the query failed: {err}", retry=True) from None
    finally:
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
    return columns, rows[:max_rows], len(rows) > max_rows


def _outside_message(outside: list[str], allow: Allowlist) -> str:
    names = ", ".join(dict.fromkeys(outside))
    return (f"the query was refused: it reads {names}, which the attached database's allowlist "
            f"does not include (allowed tables: {', '.join(allow.tables)})")
