"""Text-to-SQL: attaching a database, the happy path, and hostile model output that must be
refused with a clear error while the database file stays byte-for-byte unchanged."""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.errors import OperatorInputError, ResourceError
from flowkit.operators.pre_retrieval.sql import (
    attach_database,
    attached_db_path,
    detach_database,
    extract_sql,
)
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.kbsql import check_select, resolve_allowlist
from flowkit.testing import FakeLLM, fake_resources, flow, run_operator

Q = "When was the Corren Lighthouse first lit?"


def make_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE lighthouses (name TEXT, island TEXT, first_lit INTEGER, "
                 "\"height m\" REAL, photo BLOB)")
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.executemany("INSERT INTO lighthouses VALUES (?, ?, ?, ?, ?)",
                     [("Corren Lighthouse", "Tessel", 1884, 31.5, b"\x89PNG"),
                      ("Skallow Light", "Skallow", 1902, 18.0, None),
                      ("Ede Beacon", "Little Ede", 1921, 9.5, None)])
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(200)])
    conn.commit()
    conn.close()
    return path


@pytest.fixture()
def attached(tmp_path: Path) -> Path:
    return attach_database(tmp_path / "data", "test", make_db(tmp_path / "source.db"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resources(llm: FakeLLM, data_dir: Path) -> Any:
    res = fake_resources(llm)
    res.data_dir = data_dir
    return res


def call(llm: FakeLLM, data_dir: Path, memory: dict[str, Any] | None = None,
         **params: Any) -> dict[str, Any]:
    return run_operator("pre_retrieval.text_to_sql", memory or {"question": Q},
                        resources=resources(llm, data_dir), node_id="sql", **params)


def test_attach_checks_and_copies(tmp_path: Path, attached: Path):
    data = tmp_path / "data"
    assert attached == attached_db_path(data, "test") == data / "kb" / "test" / "attached.sqlite"
    with sqlite3.connect(attached) as conn:
        assert conn.execute("SELECT count(*) FROM lighthouses").fetchone() == (3,)
    (tmp_path / "notes.txt").write_text("not a database")
    with pytest.raises(ResourceError, match="not a SQLite database"):
        attach_database(data, "test", tmp_path / "notes.txt")
    with pytest.raises(ResourceError, match="is not a file"):
        attach_database(data, "test", tmp_path / "missing.db")
    with pytest.raises(ResourceError, match="not allowed"):
        attached_db_path(data, "../etc")
    empty = sqlite3.connect(tmp_path / "empty.db")
    empty.execute("PRAGMA user_version = 7")
    empty.close()
    with pytest.raises(ResourceError, match="has no tables"):
        attach_database(data, "test", tmp_path / "empty.db")
    assert sorted(p.name for p in attached.parent.iterdir()) == ["attached.sqlite"]
    assert detach_database(data, "test") and not attached.exists()
    assert not detach_database(data, "test")


def test_happy_path_writes_rows_as_documents_and_scratch(tmp_path: Path, attached: Path):
    llm = FakeLLM([(r"Question: When was", "name, first_lit FROM lighthouses WHERE name LIKE "
                    "'%Corren%'")])
    out = call(llm, tmp_path / "data", {"question": Q, "scratch": {"kept": 1}})
    prompt = llm.prompts[0]
    assert "CREATE TABLE lighthouses (name TEXT, island TEXT, first_lit INTEGER, " \
           "\"height m\" REAL, photo BLOB);" in prompt and prompt.endswith("SQL: SELECT")
    sql = "SELECT name, first_lit FROM lighthouses WHERE name LIKE '%Corren%'"
    assert out["scratch"] == {"kept": 1, "sql": sql, "columns": ["name", "first_lit"],
                              "rows": [["Corren Lighthouse", 1884]], "truncated": False}
    assert out["documents"] == [{"id": "sql:1", "title": "SQL row 1", "score": 1.0,
                                 "text": "name: Corren Lighthouse; first_lit: 1884",
                                 "meta": {"source": "attached.sqlite", "sql": sql, "row": 1}}]


def test_fences_row_limit_table_layout_and_append(tmp_path: Path, attached: Path):
    llm = FakeLLM([(r"Question:", "```sql\nSELECT * FROM lighthouses ORDER BY first_lit;\n```")])
    docs = [{"id": "d1", "text": "old"}, {"id": "sql:9", "text": "stale row"}]
    out = call(llm, tmp_path / "data", {"question": Q, "documents": docs}, max_rows=2,
               layout="table", append=True)
    assert out["scratch"]["truncated"] is True and len(out["scratch"]["rows"]) == 2
    assert out["scratch"]["rows"][0] == ["Corren Lighthouse", "Tessel", 1884, 31.5, "<4 bytes>"]
    assert [d["id"] for d in out["documents"]] == ["d1", "sql:result"]
    assert out["documents"][1]["text"].splitlines()[1] == (
        "name: Skallow Light; island: Skallow; first_lit: 1902; height m: 18.0; photo: NULL")


def test_failed_query_is_retried_with_its_error(tmp_path: Path, attached: Path):
    replies = iter(["SELECT year FROM lighthouses", "SELECT first_lit FROM lighthouses LIMIT 1"])
    llm = FakeLLM([(r"Question:", lambda _p: next(replies))])
    out = call(llm, tmp_path / "data")
    assert out["scratch"]["rows"] == [[1884]]
    assert "This query failed: SELECT year FROM lighthouses" in llm.prompts[1]
    assert "no such column: year" in llm.prompts[1]
    bad = FakeLLM(default="SELECT nope FROM lighthouses")
    with pytest.raises(OperatorInputError, match="sql: the query failed: no such column: nope"):
        call(bad, tmp_path / "data", retries=0)
    assert len(bad.prompts) == 1
    out = call(bad, tmp_path / "data", on_error="empty")
    assert out["documents"] == [] and "no such column" in out["scratch"]["error"]
    assert len(bad.prompts) == 3


def test_time_limit_stops_a_runaway_query(tmp_path: Path, attached: Path):
    llm = FakeLLM(default="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                  "SELECT count(*) FROM c")
    with pytest.raises(OperatorInputError, match="longer than 0.2s"):
        call(llm, tmp_path / "data", timeout_s=0.2)
    assert len(llm.prompts) == 1             # never retried


def test_missing_database_and_statement_checks(tmp_path: Path):
    with pytest.raises(OperatorInputError, match="kb.attached_database: knowledge base 'test' "
                       "has no attached SQLite database"):
        call(FakeLLM(default="SELECT 1"), tmp_path / "data")
    assert check_select("  SELECT 'a;b' ;  ") == "SELECT 'a;b'"
    assert extract_sql("SQL: * FROM t", "SELECT") == "SELECT * FROM t"
    assert extract_sql("DROP TABLE t", "SELECT") == "DROP TABLE t"
    for sql, message in [("", "no SQL"), ("SELECT 1 -- ; DROP TABLE t", "comments"),
                         ("SELECT 1 /* x */", "comments"), ("SELECT 1;;", "only one statement"),
                         ("VACUUM INTO '/tmp/x.db'", "'VACUUM' statement")]:
        with pytest.raises(OperatorInputError, match=message):
            check_select(sql)


HOSTILE = [
    ("DROP TABLE x", "only a SELECT query may run; the model wrote a 'DROP' statement"),
    ("DROP TABLE lighthouses", "'DROP' statement"),
    ("ATTACH DATABASE '/tmp/x.db' AS y", "'ATTACH' statement"),
    ("SELECT 1; DELETE FROM t", "only one statement may run"),
    ("SELECT 1;\nDELETE FROM t;", "only one statement may run"),
    ("SELECT load_extension('x')", r"refused \(function load_extension\(\)\)"),
    ("PRAGMA writable_schema=1", "'PRAGMA' statement"),
    ("SELECT * FROM pragma_table_info('t')", r"refused \(PRAGMA"),
    ("WITH x AS (SELECT 1) DELETE FROM t", r"refused \(DELETE t\)"),
    ("WITH x AS (SELECT 1) INSERT INTO t VALUES (1)", r"refused \(INSERT t\)"),
    ("WITH x AS (SELECT 1) UPDATE t SET x = 0", r"refused \(UPDATE t x\)"),
    ("SELECT * FROM other.t", "no such table: other.t"),
    ("SELECT randomblob(100000000)", "too big"),
    ("INSERT INTO t VALUES (1)", "'INSERT' statement"),
    ("CREATE TEMP TABLE y AS SELECT 1", "'CREATE' statement"),
    ("SELECT 1 -- harmless\n; DELETE FROM t", "comments"),
]


@pytest.mark.parametrize("reply,message", HOSTILE)
def test_hostile_sql_is_refused_and_the_file_is_unchanged(tmp_path: Path, attached: Path,
                                                          reply: str, message: str):
    before = digest(attached)
    llm = FakeLLM([(r"SQL: SELECT", reply)])
    spec = flow("sql", [("sql_1", "pre_retrieval.text_to_sql", {"retries": 1}),
                        ("gen", "generation.answer")], ["sql_1>gen"])
    sink = ListSink()
    result = run_flow(compile_flow(spec), resources(llm, tmp_path / "data"),
                      RunRequest("How many rows are in t?", kb="test"), RunHooks(sink=sink))
    assert result.status == "error"
    assert "node 'sql_1' (pre_retrieval.text_to_sql" in result.error and "sql: " in result.error
    assert re.search(message, result.error), result.error
    assert sink.steps[-1].node_id == "sql_1" and sink.steps[-1].error
    assert digest(attached) == before
    assert sorted(p.name for p in attached.parent.iterdir()) == ["attached.sqlite"]


def test_another_file_stays_out_of_reach(tmp_path: Path, attached: Path):
    """An ATTACH attempt is refused, so a later read of the would-be schema finds nothing."""
    other = make_db(tmp_path / "other.db")
    before, other_before = digest(attached), digest(other)
    replies = iter([f"ATTACH DATABASE '{other}' AS other", "SELECT * FROM other.t",
                    "SELECT * FROM other.t"])
    llm = FakeLLM([(r"Question:", lambda _p: next(replies))])
    with pytest.raises(OperatorInputError, match="'ATTACH' statement"):
        call(llm, tmp_path / "data")
    with pytest.raises(OperatorInputError, match="no such table: other.t"):
        call(llm, tmp_path / "data")
    assert digest(attached) == before and digest(other) == other_before


# ---- allowlist of tables (and columns), json_each, '--' inside literals -----------------------

def allow_only(data_dir: Path, tables: list[str], columns: dict[str, list[str]] | None = None) -> None:
    """Store an allowlist in knowledge base 'test''s meta.json, as attaching in the studio does."""
    meta = data_dir / "kb" / "test" / "meta.json"
    meta.write_text(json.dumps({"database": "attached.sqlite",
                                "database_allow": {"tables": tables, "columns": columns or {}}}))


def test_an_allowlisted_table_is_read_and_the_prompt_shows_only_it(tmp_path: Path, attached: Path):
    allow_only(tmp_path / "data", ["lighthouses"])
    llm = FakeLLM([(r"Question:", "name FROM lighthouses WHERE first_lit = 1902")])
    out = call(llm, tmp_path / "data")
    assert out["scratch"]["rows"] == [["Skallow Light"]]
    assert "CREATE TABLE lighthouses" in llm.prompts[0]
    assert "CREATE TABLE t " not in llm.prompts[0]


@pytest.mark.parametrize("reply", [
    "SELECT count(*) FROM t",
    "SELECT name FROM lighthouses WHERE first_lit IN (SELECT x FROM t)",
    "WITH c AS (SELECT x FROM t) SELECT * FROM c",
    "SELECT name FROM lighthouses JOIN t ON t.x = 1",
])
def test_a_table_outside_the_allowlist_is_refused_by_name(tmp_path: Path, attached: Path,
                                                           reply: str):
    allow_only(tmp_path / "data", ["lighthouses"])
    before = digest(attached)
    llm = FakeLLM(default=reply)
    with pytest.raises(OperatorInputError, match=r"sql: the query was refused: it reads table "
                       r"'t', which the attached database's allowlist does not include "
                       r"\(allowed tables: lighthouses\)"):
        call(llm, tmp_path / "data")
    assert len(llm.prompts) == 1                    # refused, never retried
    assert digest(attached) == before


def test_the_schema_table_is_outside_every_allowlist(tmp_path: Path, attached: Path):
    allow_only(tmp_path / "data", ["lighthouses", "t"])
    with pytest.raises(OperatorInputError, match="table 'sqlite_master'"):
        call(FakeLLM(default="SELECT sql FROM sqlite_master"), tmp_path / "data")


def test_a_column_allowlist_hides_the_other_columns(tmp_path: Path, attached: Path):
    allow_only(tmp_path / "data", ["lighthouses"], {"lighthouses": ["name", "first_lit"]})
    llm = FakeLLM(default="SELECT name, first_lit FROM lighthouses ORDER BY first_lit LIMIT 1")
    assert call(llm, tmp_path / "data")["scratch"]["rows"] == [["Corren Lighthouse", 1884]]
    assert "CREATE TABLE lighthouses (name TEXT, first_lit INTEGER);" in llm.prompts[0]
    with pytest.raises(OperatorInputError, match="column 'island' of table 'lighthouses'"):
        call(FakeLLM(default="SELECT * FROM lighthouses"), tmp_path / "data")


def test_without_a_stored_allowlist_every_table_is_allowed(tmp_path: Path, attached: Path):
    out = call(FakeLLM(default="SELECT count(*) FROM t"), tmp_path / "data")
    assert out["scratch"]["rows"] == [[200]]


def test_a_recursive_cte_is_not_mistaken_for_a_table(tmp_path: Path, attached: Path):
    allow_only(tmp_path / "data", ["lighthouses"])
    llm = FakeLLM(default="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                  "LIMIT 4) SELECT sum(x) FROM c")
    assert call(llm, tmp_path / "data")["scratch"]["rows"] == [[10]]


def test_json_each_is_accepted(tmp_path: Path, attached: Path):
    allow_only(tmp_path / "data", ["lighthouses"])
    llm = FakeLLM(default="SELECT l.name FROM lighthouses AS l, json_each('[1902, 1921]') AS j "
                  "WHERE l.first_lit = j.value ORDER BY l.name")
    out = call(llm, tmp_path / "data")
    assert out["scratch"]["rows"] == [["Ede Beacon"], ["Skallow Light"]]
    tree = FakeLLM(default="SELECT count(*) FROM json_tree('{\"a\": [1, 2]}')")
    assert call(tree, tmp_path / "data")["scratch"]["rows"] == [[4]]


def test_a_write_is_still_refused_when_json_each_is_called(tmp_path: Path, attached: Path):
    before = digest(attached)
    llm = FakeLLM(default="WITH j AS (SELECT value FROM json_each('[1]')) DELETE FROM t")
    with pytest.raises(OperatorInputError, match=r"refused \(DELETE t\)"):
        call(llm, tmp_path / "data")
    assert digest(attached) == before


def test_dashes_inside_a_literal_are_text_but_a_real_comment_is_refused(tmp_path: Path,
                                                                         attached: Path):
    assert check_select("SELECT 'a -- b' AS s;") == "SELECT 'a -- b' AS s"
    assert check_select("SELECT 'it''s -- /* fine */' AS \"x--y\"") == \
        "SELECT 'it''s -- /* fine */' AS \"x--y\""
    out = call(FakeLLM(default="SELECT name || ' -- ' || island FROM lighthouses "
                       "WHERE name = 'Ede Beacon'"), tmp_path / "data")
    assert out["scratch"]["rows"] == [["Ede Beacon -- Little Ede"]]
    for sql in ["SELECT '--' -- hidden\n, 1", "SELECT 'x' /* hidden */", "SELECT 'a''' -- x",
                "SELECT [a--b] -- x", "SELECT 1 -- '\n; DELETE FROM t"]:
        with pytest.raises(OperatorInputError, match="comments"):
            check_select(sql)


def test_resolve_allowlist_names_what_is_wrong(tmp_path: Path):
    conn = sqlite3.connect(make_db(tmp_path / "db.sqlite"))
    assert resolve_allowlist(conn).tables == ("lighthouses", "t")
    allow = resolve_allowlist(conn, ["LIGHTHOUSES", "lighthouses"], {"Lighthouses": ["NAME"]})
    assert allow.tables == ("lighthouses",) and allow.columns == {"lighthouses": ("name",)}
    with pytest.raises(ResourceError, match=r"table\(s\) 'ferries' not found \(there are: "
                       r"lighthouses, t\)"):
        resolve_allowlist(conn, ["lighthouses", "ferries"])
    with pytest.raises(ResourceError, match=r"column\(s\) of 'lighthouses' 'year' not found"):
        resolve_allowlist(conn, ["lighthouses"], {"lighthouses": ["year"]})
    with pytest.raises(ResourceError, match="not allowlisted"):
        resolve_allowlist(conn, ["lighthouses"], {"t": ["x"]})
    with pytest.raises(ResourceError, match="no table chosen"):
        resolve_allowlist(conn, [])
    conn.close()


def test_attach_refuses_an_unknown_table_and_keeps_the_old_file(tmp_path: Path, attached: Path):
    before = digest(attached)
    with pytest.raises(ResourceError, match="'ferries' not found"):
        attach_database(tmp_path / "data", "test", make_db(tmp_path / "new.db"), ["ferries"])
    assert digest(attached) == before
    assert sorted(p.name for p in attached.parent.iterdir()) == ["attached.sqlite"]


def test_a_malformed_stored_allowlist_names_the_file(tmp_path: Path, attached: Path):
    meta = tmp_path / "data" / "kb" / "test" / "meta.json"
    meta.write_text(json.dumps({"database_allow": {"tables": "lighthouses"}}))
    with pytest.raises(ResourceError, match=r"meta.json: 'database_allow.tables' must be a list"):
        call(FakeLLM(default="SELECT 1"), tmp_path / "data")
