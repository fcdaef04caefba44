"""Issue 28, low finding: the SQL guard's statement check is linear in its input (it used to ask
SQLite whether every prefix ending in ';' was a complete statement: quadratic in the number of
semicolons), refuses a statement longer than MAX_SQL_CHARS, and its time limit counts from the
start of the call, so slow work before the statement runs is not added on top of it."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from flowkit.errors import OperatorInputError
from flowkit.runtime import kbsql as sql_guard
from flowkit.runtime.kbsql import (
    MAX_SQL_CHARS,
    QueryFailed,
    check_select,
    run_select,
    statement_end,
)


@pytest.fixture()
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Characters handed to sqlite3.complete_statement (SQLite scans each whole)."""
    seen: list[int] = []
    real = sqlite3.complete_statement

    def counting(text: str) -> bool:
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(sqlite3, "complete_statement", counting)
    return seen


def test_many_semicolons_are_scanned_once(scanned: list[int]) -> None:
    body = "SELECT '" + ";" * 5_000 + "' AS s, \"a;b\" AS [c;d]"
    assert check_select(body + " ;  ") == body
    assert sum(scanned) <= 2 * len(body), f"{sum(scanned)} characters scanned for {len(body)}"
    with pytest.raises(OperatorInputError, match="only one statement"):
        check_select("SELECT ';'" + "; SELECT 1" * 5_000)
    assert sum(scanned) <= 2 * (len(body) + 60_000)


@pytest.mark.parametrize("sql,end", [("SELECT 1", -1), ("SELECT 1;", 8), ("SELECT ';';", 10),
                                     ("SELECT 'it''s;'; x", 15), ('SELECT "a;";', 11),
                                     ("SELECT [a;b];", 12), ("SELECT `a;``;`;", 14),
                                     ("SELECT 'open;", -1)])
def test_statement_end_agrees_with_sqlite(sql: str, end: int) -> None:
    assert statement_end(sql) == end
    if end != -1:
        assert sqlite3.complete_statement(sql[: end + 1])
        assert not any(sqlite3.complete_statement(sql[: i + 1]) for i in range(end))


def test_an_overlong_statement_is_refused_before_it_is_scanned() -> None:
    with pytest.raises(OperatorInputError, match=f"at most {MAX_SQL_CHARS}"):
        check_select("SELECT " + "1 + " * MAX_SQL_CHARS + "1")


def test_the_time_limit_counts_from_the_start_of_the_call(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Work before the statement (here made slow on purpose: longer than the whole limit) uses
    up the limit: a statement that needs many steps is then stopped with the guard's error."""
    db = tmp_path / "d.sqlite"
    sqlite3.connect(db).close()
    conn = sql_guard.open_readonly(db)
    counted = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
               "SELECT count(*) FROM c")
    assert run_select(conn, counted, 5, timeout_s=5.0)[1] == [(20000,)]

    real = sql_guard.table_functions

    def slow(sql: str) -> set[str]:
        time.sleep(0.3)
        return real(sql)

    monkeypatch.setattr(sql_guard, "table_functions", slow)
    with pytest.raises(QueryFailed, match="longer than 0.2s"):
        run_select(conn, counted, 5, timeout_s=0.2)
    forever = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    with pytest.raises(QueryFailed, match="longer than 0.2s"):
        run_select(conn, forever, 5, timeout_s=0.2)
    conn.close()
