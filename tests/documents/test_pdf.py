"""The PDF reader on PDFs the tests print themselves with Chromium: a manual with headings, prose
and an 80-row bordered table that crosses two page breaks; the same page printed with Chromium's
header and footer (date, title, URL, page numbers) and without an outline; and broken files."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from flowkit.documents import pdf as pdf_reader
from flowkit.documents.model import Document
from flowkit.documents.pdf import read_pdf
from flowkit.errors import DocumentError

CHROMIUM = "/usr/bin/chromium"
ROWS = 80
TITLE = "Widget Handbook"
INSTALL = ("To install the widget, unpack the archive into a folder of your choice and run the "
           "setup program from there. The setup asks no questions.")
AFTER = "The sizes above are measured in bytes and never change between releases."


def _paragraph(topic: str, n: int) -> str:
    return " ".join(f"This is sentence {i} about {topic}, which explains it in plain words."
                    for i in range(n))


def _html() -> str:
    rows = "\n".join(f"<tr><td>item{i}</td><td>{i}</td><td>description of item {i}</td></tr>"
                     for i in range(1, ROWS + 1))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{TITLE}</title>
<style>body{{font-family:sans-serif;font-size:12pt}} table{{border-collapse:collapse}}
td,th{{border:1px solid #000;padding:2px 6px}}</style></head><body>
<h1>1 Getting Started</h1>
<p>{_paragraph("the widget", 4)}</p>
<h2>1.1 Installation</h2>
<p>{INSTALL}</p>
<p>{_paragraph("installing", 12)}</p>
<h2>1.2 Configuration</h2>
<p>{_paragraph("configuration", 10)}</p>
<h1>2 Reference</h1>
<h2>2.1 Item Sizes</h2>
<p>Every item and its size are listed below.</p>
<table><caption>Table 1: Items and their sizes</caption>
<thead><tr><th>Name</th><th>Size</th><th>Description</th></tr></thead>
<tbody>
{rows}
</tbody></table>
<p>{AFTER}</p>
<h2>2.2 Troubleshooting</h2>
<p>{_paragraph("troubleshooting", 6)}</p>
</body></html>"""


PATHS = [("1 Getting Started",), ("1 Getting Started", "1.1 Installation"),
         ("1 Getting Started", "1.2 Configuration"), ("2 Reference", "2.1 Item Sizes"),
         ("2 Reference", "2.2 Troubleshooting")]


def _print(html: Path, out: Path, *flags: str) -> Path:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
           f"--user-data-dir={out.parent / (out.stem + '-profile')}", *flags,
           f"--print-to-pdf={out}", html.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)
    assert out.exists() and out.stat().st_size > 0, f"chromium printed nothing: {done.stderr[-2000:]}"
    shutil.rmtree(out.parent / (out.stem + "-profile"), ignore_errors=True)
    return out


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The manual printed twice: clean with an outline, and with Chromium's header and footer
    but no outline (headings then come from the type)."""
    folder = tmp_path_factory.mktemp("pdf")
    html = folder / "manual.html"
    html.write_text(_html(), encoding="utf-8")
    return {"clean": _print(html, folder / "manual.pdf", "--no-pdf-header-footer",
                            "--generate-pdf-document-outline"),
            "framed": _print(html, folder / "framed.pdf")}


@pytest.fixture(scope="module")
def manual(printed: dict[str, Path]) -> Document:
    docs = read_pdf(printed["clean"], "docs/manual.pdf", "manual")
    assert len(docs) == 1
    return docs[0]


def _texts(doc: Document) -> list[str]:
    return [b.text for s in doc.sections for b in s.blocks if b.kind == "text"]


def test_document_fields(manual: Document) -> None:
    assert (manual.id, manual.source, manual.format, manual.title) == \
        ("manual", "docs/manual.pdf", "pdf", TITLE)
    assert manual.pages >= 3


def test_sections_follow_the_headings(manual: Document) -> None:
    assert [s.path for s in manual.sections] == PATHS
    install = manual.sections[1]
    assert install.blocks[0].text == INSTALL
    assert install.blocks[0].pages == (1,)


def test_the_long_table_is_one_table_with_every_row_intact(manual: Document) -> None:
    tables = manual.tables()
    assert len(tables) == 1
    section, table = tables[0]
    assert section.path == ("2 Reference", "2.1 Item Sizes")
    assert table.caption == "Table 1: Items and their sizes"
    assert table.header == ("Name", "Size", "Description")
    assert len(table.rows) == ROWS      # the header Chromium repeats on each page is not a row
    assert table.rows[56] == ("item57", "57", "description of item 57")
    assert all(row == (f"item{i}", str(i), f"description of item {i}")
               for i, row in enumerate(table.rows, 1))
    # no word of the table is text as well, and the caption is not a paragraph
    assert not any("item57" in t or t.startswith("Table 1") for t in _texts(manual))


def test_pages(manual: Document) -> None:
    blocks = [b for s in manual.sections for b in s.blocks]
    assert all(b.pages for b in blocks)
    firsts = [b.pages[0] for b in blocks]
    assert firsts == sorted(firsts)
    assert blocks[0].pages == (1,)
    table = next(b for b in blocks if b.table is not None)
    assert len(table.pages) >= 2 and table.pages == tuple(range(table.pages[0], table.pages[-1] + 1))
    after = next(b for b in blocks if b.text == AFTER)
    assert after.pages == (table.pages[-1],)
    assert blocks[-1].pages[-1] == manual.pages


def test_running_header_footer_and_page_numbers_are_not_text(printed: dict[str, Path],
                                                            manual: Document) -> None:
    doc = read_pdf(printed["framed"], "framed.pdf", "framed")[0]
    texts = _texts(doc)
    assert not any(TITLE in t or "file:" in t or ".html" in t for t in texts)
    assert not any(re.search(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b|^\d+\s*/\s*\d+$", t) for t in texts)
    # without an outline the headings come from the type, and the text is the same
    assert [s.path for s in doc.sections] == PATHS
    assert texts == _texts(manual)
    assert [t for _, t in doc.tables()] == [t for _, t in manual.tables()]


def test_limits(printed: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_reader, "MAX_PAGES", 2)
    with pytest.raises(DocumentError, match=r"pages, more than .* \(2\)"):
        read_pdf(printed["clean"], "manual.pdf", "m")
    monkeypatch.setattr(pdf_reader, "MAX_PAGES", 5_000)
    monkeypatch.setattr(pdf_reader, "MAX_PAGE_CHARS", 100)
    with pytest.raises(DocumentError, match=r"page 1 holds [\d,]+ characters"):
        read_pdf(printed["clean"], "manual.pdf", "m")
    monkeypatch.setattr(pdf_reader, "MAX_PAGE_CHARS", 2_000_000)
    monkeypatch.setattr(pdf_reader, "MAX_DOC_CHARS", 3_000)
    with pytest.raises(DocumentError, match=r"more than 3,000 characters"):
        read_pdf(printed["clean"], "manual.pdf", "m")


def test_a_page_of_a_gigabyte_is_refused_before_parsing(tmp_path: Path) -> None:
    """A page whose compressed drawing instructions unpack to more than MAX_PAGE_BYTES (here 14
    MB from ~30 KB; a real attack would unpack to gigabytes)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject
    writer = PdfWriter()
    page = writer.add_blank_page(200, 200)
    content = DecodedStreamObject()
    content.set_data(b"BT /F1 1 Tf " + b"(aaaaaaaaaa) Tj " * 900_000 + b"ET")
    page.replace_contents(content.flate_encode())
    bomb = tmp_path / "bomb.pdf"
    with bomb.open("wb") as fh:
        writer.write(fh)
    assert bomb.stat().st_size < 100_000
    _refused(bomb, r"page 1 holds [\d,]+ bytes of drawing instructions")


def _refused(path: Path, words: str) -> None:
    with pytest.raises(DocumentError) as err:
        read_pdf(path, path.name, "x")
    assert err.value.path == path and path.name in str(err.value)
    assert re.search(words, err.value.reason), err.value.reason


def test_not_a_pdf(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pdf"
    bogus.write_bytes(bytes(range(256)) * 40)
    _refused(bogus, "is not a PDF")


def test_truncated_pdf(tmp_path: Path, printed: dict[str, Path]) -> None:
    data = printed["clean"].read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 2])
    _refused(cut, "cut short")


def test_encrypted_pdf(tmp_path: Path, printed: dict[str, Path]) -> None:
    from pypdf import PdfWriter
    writer = PdfWriter(clone_from=printed["clean"])
    writer.encrypt("secret")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as fh:
        writer.write(fh)
    _refused(locked, "needs a password")


def test_encrypted_without_user_password_is_read(tmp_path: Path, printed: dict[str, Path]) -> None:
    from pypdf import PdfWriter
    writer = PdfWriter(clone_from=printed["clean"])
    writer.encrypt("", owner_password="owner")
    open_pdf = tmp_path / "restricted.pdf"
    with open_pdf.open("wb") as fh:
        writer.write(fh)
    doc = read_pdf(open_pdf, open_pdf.name, "r")[0]
    assert [s.path for s in doc.sections] == PATHS


def test_a_row_cut_by_a_page_break_is_joined() -> None:
    from flowkit.documents.pdf_layout import Assembler, PageTable
    asm = Assembler()
    asm.add_table(PageTable([["Type", "Affinity", "Rule"], ["INT", "INTEGER", "1"],
                             ["NUMERIC DECIMAL", "NUMERIC", "5"]], 300, 700, [4]))
    asm.page_end()
    asm.add_table(PageTable([["DATE DATETIME", "", ""], ["TEXT", "TEXT", "2"]], 30, 80, [5]))
    table = asm.finish()[0].blocks[0]
    assert table.table is not None and table.pages == (4, 5)
    assert table.table.rows == (("INT", "INTEGER", "1"), ("NUMERIC DECIMAL DATE DATETIME", "NUMERIC", "5"),
                                ("TEXT", "TEXT", "2"))


def test_cells_wrapped_at_a_hyphen_and_spacer_columns() -> None:
    """A header cell wrapped after a hyphen ('MS-' / 'SQL', as Chromium prints SQLite's null
    table) is one word again; a column empty in every row (the ruling of a merged cell) goes."""
    from flowkit.documents.pdf_layout import cell_text, table_rows
    assert cell_text("MS-\nSQL") == "MS-SQL" and cell_text("two\nlines") == "two lines"
    assert table_rows([["", "A", None, "B"], ["k", "1", "", "2"], [None, None, None, None]]) == \
        [["", "A", "B"], ["k", "1", "2"]]
