"""Word files written with python-docx's own writer: headings make the section path, a table keeps
its header row and caption, explicit page breaks number the pages."""
from __future__ import annotations

from pathlib import Path

import docx
import pytest
from docx.oxml import OxmlElement

from flowkit.documents.model import Table
from flowkit.documents.read import read_files


def _manual(path: Path, title: str = "Storage Manual") -> Path:
    word = docx.Document()
    word.core_properties.title = title
    word.add_heading("Data Types", level=1)
    word.add_paragraph("Every column has a data type.")
    word.add_heading("Numeric Types", level=2)
    word.add_paragraph("Table 8.2: Numeric Types", style="Caption")
    table = word.add_table(rows=3, cols=3)
    for row, cells in zip(table.rows, [("Name", "Storage Size", "Range"),
                                       ("smallint", "2 bytes", "-32768 to +32767"),
                                       ("bigint", "8 bytes", "")]):
        for cell, text in zip(row.cells, cells):
            cell.text = text
    word.add_paragraph("After the table, still page one.")
    word.add_page_break()
    word.add_heading("Monetary Types", level=2)
    word.add_paragraph("The money type stores a currency amount.")
    word.add_paragraph("first item", style="List Bullet")
    word.add_paragraph("second item", style="List Bullet")
    word.add_page_break()
    word.add_heading("Character Types", level=1)
    word.add_paragraph("Text on page three.")
    word.save(str(path))
    return path


def test_a_docx_keeps_headings_table_caption_and_pages(tmp_path: Path) -> None:
    [doc] = read_files([_manual(tmp_path / "manual.docx")])
    assert (doc.id, doc.title, doc.source, doc.format) == ("manual", "Storage Manual",
                                                           "manual.docx", "docx")
    assert [s.path for s in doc.sections] == [
        ("Data Types",), ("Data Types", "Numeric Types"), ("Data Types", "Monetary Types"),
        ("Character Types",)]
    [(section, table)] = doc.tables()
    assert section.path == ("Data Types", "Numeric Types")
    assert table == Table(("Name", "Storage Size", "Range"),
                          (("smallint", "2 bytes", "-32768 to +32767"), ("bigint", "8 bytes", "")),
                          "Table 8.2: Numeric Types")
    assert [s.pages for s in doc.sections] == [(1,), (1,), (2,), (3,)]
    assert doc.pages == 3
    monetary = [b.text for b in doc.sections[2].blocks]
    assert monetary == ["The money type stores a currency amount.",
                        "- first item\n- second item"]


def test_a_docx_without_a_title_or_page_breaks_has_its_name_and_no_pages(tmp_path: Path) -> None:
    word = docx.Document()
    word.add_paragraph("Just a line.")
    path = tmp_path / "plain.docx"
    word.save(str(path))
    [doc] = read_files([path])
    assert doc.title == "plain" and doc.pages == 0
    assert [(s.path, [b.text for b in s.blocks]) for s in doc.sections] == [((), ["Just a line."])]


@pytest.mark.parametrize("with_title", [True, False])
def test_an_empty_docx_holds_no_document(tmp_path: Path, with_title: bool) -> None:
    word = docx.Document()
    if with_title:
        word.core_properties.title = "Empty"
    path = tmp_path / "empty.docx"
    word.save(str(path))
    assert read_files([path]) == []


def test_rendered_page_breaks_count_and_a_caption_may_follow_its_table(tmp_path: Path) -> None:
    """Where Word saved where its pages broke (w:lastRenderedPageBreak), those are the pages; an
    explicit break is then not counted twice. A 'Caption' paragraph after a table captions it."""
    word = docx.Document()
    word.add_heading("One", level=1)
    table = word.add_table(rows=2, cols=2)
    for row, cells in zip(table.rows, [("Key", "Value"), ("port", "5432")]):
        for cell, text in zip(row.cells, cells):
            cell.text = text
    word.add_paragraph("Settings of the server", style="Caption")
    word.add_page_break()
    later = word.add_paragraph()
    run = later.add_run()
    run._r.append(OxmlElement("w:lastRenderedPageBreak"))
    run.add_text("On the second page.")
    path = tmp_path / "rendered.docx"
    word.save(str(path))
    [doc] = read_files([path])
    [(_, found)] = doc.tables()
    assert found == Table(("Key", "Value"), (("port", "5432"),), "Settings of the server")
    assert [(b.flat(), b.pages) for b in doc.sections[0].blocks] == [
        ("Settings of the server\nKey | Value\nport | 5432", (1,)),
        ("On the second page.", (2,))]
