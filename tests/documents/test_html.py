"""HTML pages and a folder of them (a documentation site): the main content by its headings, tables
as header + rows + caption, navigation and boilerplate left out."""
from __future__ import annotations

from pathlib import Path

from flowkit.documents.html import decode_html
from flowkit.documents.model import Table
from flowkit.documents.read import read_files
from flowkit.runtime.docfiles import read_documents

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Numeric Types - Manual</title>
<style>body { color: red }</style><script>var navText = "SCRIPT TEXT";</script></head>
<body>
<header><a href="/">SiteLogo HEADER TEXT</a></header>
<nav><ul><li><a href="a.html">NAV LINK ONE</a></li><li>NAV LINK TWO</li></ul></nav>
<div class="breadcrumb">Home &gt; BREADCRUMB TEXT</div>
<h1>Data Types</h1>
<p>PostgreSQL has a rich set of
   native data types.</p>
<h2 id="num"><a class="header" href="#num">Numeric Types</a></h2>
<p>Numeric types consist of integers.</p>
<table>
  <caption>Table 8.2. Numeric Types</caption>
  <thead><tr><th>Name</th><th>Storage Size</th><th>Range</th></tr></thead>
  <tbody>
    <tr><td>smallint</td><td>2 bytes</td><td>-32768 to +32767</td></tr>
    <tr><td>bigint</td><td>8 bytes</td></tr>
  </tbody>
</table>
<h3>Integer Types</h3>
<ul><li>smallint <ul><li>two bytes</li></ul></li><li>integer</li></ul>
<pre>SELECT 1;
  -- indented</pre>
<dl><dt>int8</dt><dd>an alias of bigint</dd></dl>
<h2>Monetary Types</h2>
<p>The money type stores a currency amount.</p>
<aside>ASIDE TEXT</aside>
<footer>FOOTER TEXT Copyright</footer>
</body></html>
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_page_keeps_its_sections_and_table_and_leaves_out_navigation(tmp_path: Path) -> None:
    [doc] = read_files([_write(tmp_path / "types.html", PAGE)])
    assert (doc.id, doc.title, doc.source, doc.format) == (
        "types", "Numeric Types - Manual", "types.html", "html")
    text = doc.text
    for gone in ("NAV LINK", "HEADER TEXT", "FOOTER TEXT", "BREADCRUMB", "ASIDE TEXT",
                 "SCRIPT TEXT", "color: red"):
        assert gone not in text, gone
    assert [s.path for s in doc.sections] == [
        ("Data Types",), ("Data Types", "Numeric Types"),
        ("Data Types", "Numeric Types", "Integer Types"), ("Data Types", "Monetary Types")]
    assert [s.id for s in doc.sections] == ["s0", "s1", "s2", "s3"]
    assert doc.sections[0].blocks[0].text == "PostgreSQL has a rich set of native data types."
    [(section, table)] = doc.tables()
    assert section.path == ("Data Types", "Numeric Types")
    assert table == Table(("Name", "Storage Size", "Range"),
                          (("smallint", "2 bytes", "-32768 to +32767"), ("bigint", "8 bytes", "")),
                          "Table 8.2. Numeric Types")
    blocks = [b.text for b in doc.sections[2].blocks]
    assert blocks == ["- smallint\n  - two bytes\n- integer", "SELECT 1;\n  -- indented",
                      "int8: an alias of bigint"]
    assert doc.pages == 0 and all(not b.pages for s in doc.sections for b in s.blocks)


def test_the_record_ingest_reads_holds_the_table_a_row_per_line(tmp_path: Path) -> None:
    [record] = read_documents([_write(tmp_path / "types.html", PAGE)])
    assert "smallint | 2 bytes | -32768 to +32767" in record["text"]
    assert record["title"] == "Numeric Types - Manual" and record["format"] == "html"


def test_main_alone_is_read_and_docbook_and_sqlite_navigation_is_left_out(tmp_path: Path) -> None:
    page = """<html><body>
    <div class="navheader"><table width="100%"><tr><th colspan="3">5.11. NAVHEADER</th></tr>
      <tr><td><a href="p.html">Prev</a></td><td>Up</td><td>Next</td></tr></table></div>
    <div class="menu mainmenu"><ul><li>MENU ITEM</li></ul></div>
    <div class="fancy_toc"><a href="#x">TOC ENTRY</a></div>
    <p>OUTSIDE MAIN</p>
    <main><h1>Pragmas</h1><p>PRAGMA text.</p>
      <div class="table"><p class="title"><b>Table 5.1. Limits</b></p>
      <table><tr><th>Limit</th><th>Value</th></tr><tr><td>pages</td><td>4294967294</td></tr>
      </table></div></main>
    <div class="navfooter">NAVFOOTER</div></body></html>"""
    [doc] = read_files([_write(tmp_path / "pragma.htm", page)])
    assert doc.title == "Pragmas"              # no <title>: the first h1
    for gone in ("NAVHEADER", "MENU ITEM", "TOC ENTRY", "OUTSIDE MAIN", "NAVFOOTER"):
        assert gone not in doc.text, gone
    [(_, table)] = doc.tables()
    assert table == Table(("Limit", "Value"), (("pages", "4294967294"),), "Table 5.1. Limits")


def test_spans_repeat_and_a_nested_table_is_flattened_into_its_cell(tmp_path: Path) -> None:
    page = """<html><body><h1>T</h1><table>
      <thead><tr><th rowspan="2">Type</th><th colspan="2">Range</th></tr>
             <tr><th>min</th><th>max</th></tr></thead>
      <tr><td rowspan="2">int</td><td>-2</td><td>2</td></tr>
      <tr><td colspan="2">any</td></tr>
      <tr><td>x</td><td><table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr>
      </table></td><td>z</td></tr></table></body></html>"""
    [doc] = read_files([_write(tmp_path / "spans.html", page)])
    [(_, table)] = doc.tables()
    assert table.header == ("Type", "Range min", "Range max")
    assert table.rows == (("int", "-2", "2"), ("int", "any", "any"), ("x", "a, b; c, d", "z"))


def test_a_page_declaring_latin1_and_one_declaring_nothing_are_decoded() -> None:
    declared = '<meta charset="iso-8859-1"><p>Caf\xe9</p>'.encode("latin-1")
    assert "Café" in decode_html(declared)
    assert "Café" in decode_html("<p>Caf\xe9</p>".encode("cp1252"))       # as browsers do
    assert "Café" in decode_html("\ufeff<p>Café</p>".encode("utf-8"))


def test_an_empty_page_holds_no_document(tmp_path: Path) -> None:
    assert read_files([_write(tmp_path / "empty.html", "")]) == []
    assert read_files([_write(tmp_path / "nav.html", "<nav>only nav</nav>")]) == []


def test_a_folder_of_pages_is_read_in_order_with_sources_and_ids(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _write(site / "index.html", "<title>Home</title><h1>Home</h1><p>Welcome.</p>")
    _write(site / "ch1" / "intro.html", "<title>Intro</title><h1>Intro</h1><p>First.</p>")
    _write(site / "ch1" / "types.html", PAGE)
    _write(site / "style.css", "body {}")                      # skipped: not a document
    _write(site / ".hidden.html", "<p>hidden</p>")             # skipped: hidden
    _write(site / "ch1" / "intro.txt", "Same stem as intro.html.")
    docs = read_files([site])
    assert [(d.source, d.id) for d in docs] == [
        ("site/ch1/intro.html", "site/ch1/intro"), ("site/ch1/intro.txt", "site/ch1/intro-2"),
        ("site/ch1/types.html", "site/ch1/types"), ("site/index.html", "site/index")]
    assert [d.title for d in docs] == ["Intro", "intro", "Numeric Types - Manual", "Home"]
