"""Attaching a SQLite file goes through the text-to-SQL operator's helper (the integrity check,
the tables check and the read-only snapshot), not a plain copy."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from flowkit.errors import ResourceError
from flowkit.runtime.resources import Resources
from flowkit.testing import HashEmbedder
from service import knowledge as kbview


@pytest.fixture
def kb(tmp_path: Path):
    res = Resources(tmp_path / "data")
    res.set_embedder(HashEmbedder())
    return res, kbview.create(res, "shop")


def _db(path: Path, tables: bool = True) -> Path:
    con = sqlite3.connect(path)
    if tables:
        con.execute("CREATE TABLE items (id INTEGER, name TEXT)")
        con.execute("INSERT INTO items VALUES (1, 'lamp')")
    con.execute("PRAGMA user_version=1")   # an empty file still gets a valid header
    con.commit()
    con.close()
    return path


def test_attach_takes_a_snapshot_through_the_sql_helper(kb, tmp_path: Path) -> None:
    res, base = kb
    src = _db(tmp_path / "shop.sqlite")
    where = kbview.attach(res.data_dir, base, src)
    assert where == base.dir / "attached.sqlite" and base.meta()["database"] == "attached.sqlite"
    assert kbview.sqlite_tables(where) == [("items", 1)]
    src.unlink()                                   # a copy, not a link to the upload
    assert kbview.sqlite_tables(where) == [("items", 1)]


def test_a_database_without_tables_is_refused(kb, tmp_path: Path) -> None:
    res, base = kb
    with pytest.raises(ResourceError, match="has no tables to query"):
        kbview.attach(res.data_dir, base, _db(tmp_path / "empty.sqlite", tables=False))
    assert kbview.attached_database(base) is None


def test_a_corrupt_database_is_refused(kb, tmp_path: Path) -> None:
    res, base = kb
    src = _db(tmp_path / "bad.sqlite")
    raw = bytearray(src.read_bytes())
    raw[100:4096] = b"\xff" * (4096 - 100)         # keep the header, break the first page
    src.write_bytes(bytes(raw))
    with pytest.raises(ResourceError):
        kbview.attach(res.data_dir, base, src)
    assert kbview.attached_database(base) is None


def test_attach_stores_the_allowlist_in_the_meta(kb, tmp_path: Path) -> None:
    res, base = kb
    src = _db(tmp_path / "shop.sqlite")
    con = sqlite3.connect(src)
    con.execute("CREATE TABLE staff (name TEXT, salary INTEGER)")
    con.commit()
    con.close()
    kbview.attach(res.data_dir, base, src)                       # default: every table
    assert base.meta()["database_allow"] == {"tables": ["items", "staff"], "columns": {}}
    assert kbview.allowed_tables(base) == ["items", "staff"]
    kbview.attach(res.data_dir, base, src, ["ITEMS"], {"items": ["name"]})
    assert base.meta()["database_allow"] == {"tables": ["items"], "columns": {"items": ["name"]}}
    with pytest.raises(ResourceError, match="'payroll' not found"):
        kbview.attach(res.data_dir, base, src, ["payroll"])
    assert kbview.allowed_tables(base) == ["items"]                # unchanged by the refusal
    assert kbview.upload_tables(src.read_bytes()) == ["items", "staff"]
    assert kbview.upload_tables(b"not a database") == []


@pytest.mark.parametrize(("name", "why"), [
    ("..", "'..' is not a file name"), ("a/b.sqlite", "contains '/'"),
    ("x\x00.sqlite", "NUL character"), ("d" * 300 + ".sqlite", "at most 255"), ("  ", "empty")])
def test_an_uploaded_database_with_a_bad_name_is_refused_before_anything(
        kb, tmp_path: Path, name: str, why: str) -> None:
    res, base = kb
    data = _db(tmp_path / "shop.sqlite").read_bytes()
    before = sorted(p.name for p in base.dir.iterdir())
    with pytest.raises(ResourceError, match=why):
        kbview.attach_upload(res.data_dir, base, name, data)
    assert sorted(p.name for p in base.dir.iterdir()) == before
    assert "database" not in base.meta()
    where = kbview.attach_upload(res.data_dir, base, "shop.sqlite", data, ["items"])
    assert where.name == "attached.sqlite" and kbview.allowed_tables(base) == ["items"]
