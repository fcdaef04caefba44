"""Knowledge page (AppTest) with documents as users have them (issue 46): the upload types, the
parse preview of a document with a table (sections, the table's caption and header), and the
provenance line under a search result; the provenance line's rule and the passages' metadata
looked up for the replay and Compare views."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowkit.documents.model import Block, Document, Section, Table
from flowkit.runtime.kb import Chunk
from flowkit.trace import Retrieval, StepEvent
from service import knowledge as kbview
from studio.common import inert, provenance
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.compare import compare_data

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

PLACE = {"source": "ddl.pdf", "doc_title": "Data Definition", "page_start": 23, "page_end": 23,
         "section": "5.11 Table Partitioning > 5.11.2 Declarative Partitioning",
         "section_id": "s12", "kind": "text"}
LINE = "ddl.pdf p. 23, 5.11 Table Partitioning > 5.11.2 Declarative Partitioning"
HTML = b"""<html><head><title>Types</title></head><body>
<h1>Data Types</h1><p>Numbers come in several sizes.</p>
<h2>Integer Types</h2><p>Choose the smallest type that holds your values.</p>
<table><caption>Table 8.2. Integer Types</caption>
<tr><th>Name</th><th>Storage Size</th><th>Range</th></tr>
<tr><td>smallint</td><td>2 bytes</td><td>-32768 to +32767</td></tr>
<tr><td>bigint</td><td>8 bytes</td><td>large</td></tr>
</table></body></html>"""


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    w = kit.workspace(tmp_path_factory.mktemp("kb-docs"), sample=False)
    kb = w.resources.kb("manual")
    kb.add([Chunk("ddl#0", "Declarative partitioning splits a table into partitions by range.",
                  {"doc_id": "ddl", "title": "Data Definition > 5.11.2 Declarative Partitioning",
                   "position": 0, **PLACE}),
            Chunk("notes#0", "Partitioning notes without a place.",
                  {"doc_id": "notes", "title": "notes", "source": "notes.txt", "position": 0})])
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def _open(**query: str):
    at = kit.page("pages/knowledge.py", **query).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


# ---- the provenance line ----------------------------------------------------------------------
def test_the_line_is_shown_only_when_it_adds_pages_or_a_section():
    assert provenance.line({"title": "x", "meta": PLACE}) == LINE
    assert provenance.line({"title": "notes", "meta": {"source": "notes.txt"}}) == ""
    assert provenance.line({"title": "t", "meta": {}}) == ""
    same = {"section": "Intro"}
    assert provenance.line({"title": "Intro", "meta": same}) == ""
    # a recorded retrieval has no meta: looked up by id in working memory
    known = provenance.known_meta([{"documents": [{"id": "ddl#0", "meta": PLACE}]}])
    assert provenance.line({"id": "ddl#0", "title": "t"}, known) == LINE


def test_compare_passages_carry_the_metadata_working_memory_held():
    step = StepEvent("r1", 0, "retrieve", "retrieval.dense", 1, {},
                     {"documents": [{"id": "ddl#0", "text": "…", "meta": PLACE}]},
                     retrievals=[Retrieval("q", "dense", [{"id": "ddl#0", "title": "t",
                                                           "score": 0.5, "text": "…"}])])
    [p] = compare_data.passages([step], set())
    assert provenance.line(p) == LINE


# ---- the Knowledge page -----------------------------------------------------------------------
def test_upload_accepts_every_format_several_at_once_and_the_cli_names_them(ws):
    at = _open()
    up = at.file_uploader(key="kb_files")
    assert {t.lstrip(".") for t in up.proto.type} == {
        "pdf", "docx", "html", "htm", "md", "txt", "jsonl", "zip"} == set(kbview.UPLOAD_TYPES)
    assert up.proto.multiple_files
    from service.cli import kb as cli_kb
    from studio.knowledge import ingest_panel
    for t in kbview.UPLOAD_TYPES:                         # the labels name every type
        assert f".{t}" in cli_kb.FORMATS and f".{t}" in ingest_panel.FILES_LABEL


def test_search_results_show_where_a_passage_came_from(ws):
    at = _open(kb="manual")
    at.text_input(key="kb_search_q").input("declarative partitioning").run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert captions.count(inert.escape(LINE)) == 3        # BM25, dense and hybrid
    chunks = at.dataframe[-1].value
    assert set(chunks["from"]) == {LINE, ""}


def _preview_of_upload(ws, name: str, data: bytes, mime: str):
    at = _open(kb="manual")
    at.file_uploader(key="kb_files").set_value([(name, data, mime)]).run()
    at.button(key="kb_preview_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_parse_preview_shows_sections_and_a_table_with_caption_and_header(ws, monkeypatch):
    """The panel, fed a document made by hand (the readers' output type)."""
    table = Table(("Name", "Storage Size", ""), (("smallint", "2 bytes", "a"),
                                                  ("bigint", "8 bytes", "b")),
                  caption="Table 8.2. Integer Types")
    doc = Document("ddl", "Data Definition", "ddl.pdf", "pdf", (
        Section("s0", ("Data Types",), (Block("text", "Numbers.", pages=(22,)),)),
        Section("s12", ("Data Types", "Integer Types"),
                (Block("text", "Choose.", pages=(23,)), Block("table", table=table, pages=(23, 24)))),
    ))
    monkeypatch.setattr(kbview, "parse_preview", lambda paths: kbview.preview_documents([doc]))
    at = _preview_of_upload(ws, "ddl.pdf", b"%PDF-1.4 not read here", "application/pdf")
    [exp] = [e for e in at.expander if e.label.startswith("ddl.pdf")]
    assert exp.label == "ddl.pdf · pdf · 24 pages · 2 sections · 1 table"
    sections = exp.dataframe[0].value
    assert list(sections["section"]) == ["Data Types", "Data Types > Integer Types"]
    assert list(sections["pages"]) == ["22", "23-24"]
    assert any("Table 8.2. Integer Types" in m.value for m in exp.markdown)
    rows = exp.dataframe[1].value
    assert list(rows.columns) == ["Name", "Storage Size", "column 3"]
    assert list(rows["Name"]) == ["smallint", "bigint"]
    chunks = exp.dataframe[2].value                     # beside it: the KB's chunks of ddl.pdf
    assert list(chunks["id"]) == ["ddl#0"] and list(chunks["from"]) == [LINE]


def test_parse_preview_of_an_html_page_with_a_table(ws):
    """The real readers (flowkit.documents.read) on an HTML page: its headings and its table's
    caption and header as read."""
    at = _preview_of_upload(ws, "types.html", HTML, "text/html")
    [exp] = [e for e in at.expander if e.label.startswith("types.html")]
    assert "1 table" in exp.label
    sections = exp.dataframe[0].value
    assert any("Integer Types" in s for s in sections["section"])
    assert any("Table 8.2. Integer Types" in m.value for m in exp.markdown)
    table = exp.dataframe[1].value
    assert list(table.columns) == ["Name", "Storage Size", "Range"]
    assert "bigint" in list(table["Name"])
    assert any("None yet" in c.value for c in exp.caption)   # not ingested into 'manual'


def test_parse_preview_of_a_broken_file_is_one_error_naming_it(ws):
    before = ws.resources.kb("manual").count()
    at = _preview_of_upload(ws, "broken.pdf", b"this is not a PDF", "application/pdf")
    assert len(at.error) == 1 and "broken.pdf" in at.error[0].value
    assert not [e for e in at.expander if e.label.startswith("broken.pdf")]
    assert ws.resources.kb("manual").count() == before


def test_a_folder_upload_goes_in_as_one_zip_keeping_its_paths():
    out = kbview.upload_files([("a.md", b"# A"), ("site/x/index.html", b"<p>x</p>"),
                               ("site/y/index.html", b"<p>y</p>")])
    assert [n for n, _ in out] == ["a.md", "site.zip"]
    import io
    import zipfile
    with zipfile.ZipFile(io.BytesIO(out[1][1])) as zf:
        assert sorted(zf.namelist()) == ["x/index.html", "y/index.html"]
    for bad in ("../escape.md", "/etc/x.md", "a//b.md", "a\\..\\b.md", "a/../b.md"):
        assert kbview.upload_files([(bad, b"x")]) == [(bad, b"x")]   # refused by name later
