"""The PDF reader: a .pdf file as one typed `Document` (sections, text blocks, tables, pages).

What it keeps:

- **Pages**: every block knows the 1-based page(s) it lies on; a paragraph or a table that runs
  on into the next page lists both.
- **Sections**: headings come from the PDF's outline (bookmarks) when it has one, each placed
  where its title is printed on its destination page; otherwise from the type: lines set clearly
  larger than the body text are headings, ranked by size, and a bold body-size line standing
  alone ranks below them. A section's path is its chain of headings from the top.
- **Tables** drawn with ruling lines (cell borders): a header row (the first row), body rows of
  the same width, cells on one line each, and the caption when the line just above the table reads
  like one ("Table 3: ..."). A table that runs on into the next page is one table (a header row
  printed again there is dropped, a row cut by the break is joined again).
- **Paragraphs** in reading order, top to bottom.

What it loses: running headers, footers and page numbers (lines that recur in the top or bottom
margin of most pages, or hold only a page number there); images and their text; tables without
ruling lines (their rows become paragraphs of text); the order of multi-column pages (read as one
column, line by line); fonts, lists' nesting and links. A scanned PDF without a text layer
yields no document (run OCR first).

Refused with a `DocumentError` naming the file: a file that is not a PDF, one cut short, one
that needs a password, more than `MAX_PAGES` pages, a page of more than `MAX_PAGE_BYTES` of
drawing instructions (checked before parsing: a compressed "1 GB page") or more than
`MAX_PAGE_CHARS` characters, and more than `MAX_DOC_CHARS` characters in all.

The outline, the title, the page count and the page sizes are read with pypdf (BSD); each page
is parsed once by pdfminer.six, its characters and ruling lines read from that, and tables found
by pdfplumber's table finder (both MIT); each page's objects are freed after it. The layout rules
are in `pdf_layout`.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import pdfplumber
from pdfminer.layout import LTChar, LTContainer, LTCurve
from pdfplumber.container import Container
from pdfplumber.table import TableFinder, TableSettings
from pdfplumber.utils import extract_words
from pypdf import PageObject, PdfReader
from pypdf.generic import Destination, StreamObject

from ..errors import DocumentError, short
from .archive import MAX_DOC_CHARS  # one bound on a document's characters, every format
from .model import Document
from .pdf_layout import (
    OutlineEntry,
    PageLayout,
    PageTable,
    assemble,
    clean,
    drop_running_lines,
    font_headings,
    lines_of,
    outline_headings,
    outside,
    table_rows,
    take_caption,
)
from .pdf_tables import repair

if TYPE_CHECKING:
    from pdfplumber.page import Page

#: Most pages read from one PDF (a longer one is refused; split it).
MAX_PAGES = 5_000
#: Most characters on one page: more is a damaged or hostile file (a "1 GB page"), not a manual.
MAX_PAGE_CHARS = 2_000_000
#: Most bytes of drawing instructions (decompressed) on one page; a page of text has ~10 per
#: character, a manual's page 10-100 KB. Checked before parsing, which keeps every character.
MAX_PAGE_BYTES = 10_000_000
#: Most outline entries used; a longer outline is hostile, and the type's headings are used.
MAX_OUTLINE_ENTRIES = 20_000
#: A vertical rule starting within this share of the page's top may be a table continued from the
#: previous page (its top rule missing).
CONTINUED_SHARE = 0.15
#: Longest title taken from the PDF's metadata, in characters.
MAX_TITLE_CHARS = 200
#: How far from the start the '%PDF-' header may lie, and from the end the '%%EOF' marker.
HEADER_BYTES = 1024
TRAILER_BYTES = 4096

_NO_TITLE = {"untitled", "untitled document", "document", "title", "none", "unknown"}
_FILE_ENDINGS = (".pdf", ".html", ".htm", ".doc", ".docx", ".odt", ".txt", ".tex", ".md")


def read_pdf(path: Path, source: str, doc_id: str) -> list[Document]:
    """The PDF at `path` as one Document (format 'pdf'), or none when it holds no text."""
    _check_bytes(path)
    reader = _pypdf_reader(path)
    pages = _read_pages(path)
    drop_running_lines(pages)
    entries = _outline(reader)
    headings = outline_headings(pages, entries) if entries else font_headings(pages)
    sections = assemble(pages, headings)
    if not sections:
        return []
    return [Document(doc_id, _title(reader, path), source, "pdf", tuple(sections))]


def _check_bytes(path: Path) -> None:
    """A PDF starts with '%PDF-' and ends with '%%EOF'; anything else is refused before parsing."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEADER_BYTES)
            fh.seek(max(0, path.stat().st_size - TRAILER_BYTES))
            tail = fh.read(TRAILER_BYTES)
    except OSError as err:
        raise DocumentError(path, f"cannot read the file: {short(str(err))}") from err
    if b"%PDF-" not in head:
        raise DocumentError(path, "is not a PDF (it does not begin with '%PDF-'); "
                                  "check the file or give it its real extension")
    if b"%%EOF" not in tail:
        raise DocumentError(path, "is cut short (no '%%EOF' marker at its end); "
                                  "download or export the PDF again")


def _pypdf_reader(path: Path) -> PdfReader:
    """pypdf's reader, with an encrypted file opened if it needs no password; checks the page count."""
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(path, "is encrypted and needs a password; "
                                      "save an unprotected copy and ingest that")
        count = len(reader.pages)
    except DocumentError:
        raise
    except Exception as err:  # pypdf raises several kinds for a broken file
        raise DocumentError(path, f"is not a readable PDF: {short(str(err))}") from err
    if count > MAX_PAGES:
        raise DocumentError(path, f"has {count:,} pages, more than one document may have "
                                  f"({MAX_PAGES:,}); split it into smaller files")
    for number, page in enumerate(reader.pages, 1):
        _check_page_bytes(path, page, number)
    return reader


def _check_page_bytes(path: Path, page: PageObject, number: int) -> None:
    """Refuses a page whose drawing instructions (its content streams and the forms it draws),
    decompressed, exceed MAX_PAGE_BYTES, before pdfminer builds an object per character."""
    try:
        contents = page.get_contents()
        size = len(contents.get_data()) if contents is not None else 0
        resources = page.get("/Resources")
        forms = resources.get_object().get("/XObject") if resources is not None else None
        for form in (forms.get_object().values() if forms is not None else ()):
            form = form.get_object()
            if isinstance(form, StreamObject) and form.get("/Subtype") == "/Form":
                size += len(form.get_data())
    except Exception as err:  # pypdf's own bound on a stream (LimitReachedError), a bad filter
        raise DocumentError(path, f"cannot read page {number}: {short(str(err))}") from err
    if size > MAX_PAGE_BYTES:
        raise DocumentError(path, f"page {number} holds {size:,} bytes of drawing instructions, "
                                  f"more than a page may ({MAX_PAGE_BYTES:,}); the file is damaged "
                                  "or not a document")


def _read_pages(path: Path) -> list[PageLayout]:
    """Every page's lines and tables, reading each page once and freeing it after."""
    pages: list[PageLayout] = []
    total = 0
    try:
        pdf = pdfplumber.open(path)
    except Exception as err:  # pdfminer's syntax and password errors, among others
        raise DocumentError(path, f"is not a readable PDF: {short(str(err))}") from err
    with pdf:
        for number, page in enumerate(pdf.pages, 1):
            try:
                objects = _objects(page)
                count = len(objects["char"])
                if count > MAX_PAGE_CHARS:
                    raise DocumentError(path, f"page {number} holds {count:,} characters, "
                                              f"more than a page may ({MAX_PAGE_CHARS:,}); the "
                                              "file is damaged or not a document")
                total += count
                if total > MAX_DOC_CHARS:
                    raise DocumentError(path, f"holds more than {MAX_DOC_CHARS:,} characters of "
                                              "text; split it into smaller files")
                pages.append(_page_layout(page, number, objects))
            except DocumentError:
                raise
            except Exception as err:  # pdfminer fails in many ways on a damaged page
                raise DocumentError(path, f"cannot read page {number}: {short(str(err))}") from err
            finally:
                page.close()
    return pages


Obj = dict[str, object]


class _Objects(Container):
    """A page's characters and drawn lines as pdfplumber's table finder reads them."""

    def __init__(self, bbox: tuple[float, float, float, float], objects: dict[str, list[Obj]]) -> None:
        self.bbox, self._objs = bbox, objects

    @property
    def objects(self) -> dict[str, list[Obj]]:
        return self._objs


def _objects(page: Page) -> dict[str, list[Obj]]:
    """The page's characters (text, box, size, font) and its lines, rectangles and curves.

    pdfplumber's own `page.chars` resolves every attribute of every character (colours, matrix)
    and costs as much again as parsing the page; the few keys the words need are read straight
    from pdfminer's layout, and only the (few) drawn shapes go through pdfplumber."""
    height = float(page.height)
    mb_x0, mb_top = float(page.mediabox[0]), float(page.mediabox[1])
    found: dict[str, list[Obj]] = {"char": []}
    chars = found["char"]
    stack = [iter(page.layout)]
    while stack:
        obj = next(stack[-1], None)
        if obj is None:
            stack.pop()
        elif isinstance(obj, LTChar):
            name = obj.fontname
            top = height - obj.y1 + mb_top
            chars.append({"text": obj.get_text(), "x0": obj.x0 + mb_x0, "x1": obj.x1 + mb_x0,
                          "top": top, "bottom": height - obj.y0 + mb_top, "doctop": top,
                          "upright": obj.upright, "size": obj.size,
                          "fontname": name if isinstance(name, str) else str(name)})
        elif isinstance(obj, LTCurve):          # LTLine and LTRect are curves too
            shape = page.process_object(obj)
            found.setdefault(str(shape["object_type"]), []).append(shape)
        elif isinstance(obj, LTContainer):      # a form XObject (LTFigure) holds its own
            stack.append(iter(obj))
    return found


def _page_layout(page: Page, number: int, objects: dict[str, list[Obj]]) -> PageLayout:
    """One page: its tables (only where it draws lines) and the lines of the other words."""
    words = extract_words(objects["char"], extra_attrs=["size", "fontname"])
    tables: list[PageTable] = []
    if len(objects) > 1:
        x0, top, x1, bottom = (float(v) for v in page.bbox)
        # the finder reads only its page's chars, edges and bbox, which _Objects has
        ends = _open_ends(objects, float(page.height))
        settings = TableSettings.resolve({"explicit_horizontal_lines": ends})
        finder = TableFinder(cast("Page", _Objects((x0, top, x1, bottom), objects)), settings)
        for found in finder.tables:
            box = tuple(float(v) for v in found.bbox)
            parts = [rows for rows in repair(table_rows(found.extract()))
                     if len(rows) * len(rows[0]) >= 2]       # a framed box is not a table
            for k, rows in enumerate(parts):
                tables.append(PageTable(rows, box[1] + k * 1e-3, box[3], [number],
                                        x0=box[0], x1=box[2]))
            if parts:
                words = outside(words, [(box[0], box[1], box[2], box[3])])
    lines = lines_of(words, number)
    for table in tables:
        lines = take_caption(lines, table)
    return PageLayout(number, float(page.height), lines, tables)


def _open_ends(objects: dict[str, list[Obj]], height: float) -> list[float]:
    """Rules to close a table cut by a page break: the top of the highest vertical rule when it
    lies near the page's top, the bottom of the lowest when near its foot. A table with
    collapsed borders draws each row's rule on one side only, so its part after (or before) a
    break has no rule there, and pdfplumber would see no closed cell in that row."""
    spans = [(float(str(o["top"])), float(str(o["bottom"])))
             for kind in ("rect", "line") for o in objects.get(kind, ())
             if float(str(o["x1"])) - float(str(o["x0"])) <= 2 < float(str(o["bottom"])) - float(str(o["top"]))]
    if not spans:
        return []
    top, bottom = min(t for t, _ in spans), max(b for _, b in spans)
    return [y for y, near in ((top, top < height * CONTINUED_SHARE),
                              (bottom, bottom > height * (1 - CONTINUED_SHARE))) if near]


def _outline(reader: PdfReader) -> list[OutlineEntry]:
    """The outline's entries in order, with their depth and 1-based page ([] without one, or
    when it cannot be read: the type's headings are used then)."""
    entries: list[OutlineEntry] = []

    def walk(items: list[object], level: int) -> None:
        for item in items:
            if len(entries) >= MAX_OUTLINE_ENTRIES:
                return
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            if not isinstance(item, Destination):
                continue
            page = reader.get_destination_page_number(item)
            title = clean(str(item.title or ""))
            if page is not None and page >= 0 and title:
                entries.append(OutlineEntry(level, title, page + 1))

    try:
        walk(list(reader.outline), 1)
    except Exception:  # noqa: BLE001 - a broken outline: the type's headings are used instead
        return []
    return entries


def _title(reader: PdfReader, path: Path) -> str:
    """The metadata title when it names the document, else the file name without extension."""
    try:
        meta = reader.metadata
        title = clean(str(meta.title or "")) if meta is not None else ""
    except Exception:  # noqa: BLE001 - a damaged info dictionary: the file name will do
        title = ""
    if title.lower().startswith("microsoft word - "):
        title = title[len("microsoft word - "):]
    meaningful = title and title.lower() not in _NO_TITLE and "://" not in title and \
        not title.lower().endswith(_FILE_ENDINGS) and any(c.isalpha() for c in title)
    return title[:MAX_TITLE_CHARS] if meaningful else path.stem
