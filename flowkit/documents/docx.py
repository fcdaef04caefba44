"""Word (.docx), read with python-docx: the body in reading order.

Keeps: headings from the paragraph styles 'Title' (level 0) and 'Heading 1' to 'Heading 9' (or
a paragraph's own outline level) as the section path; paragraphs as text blocks (tabs and line
breaks kept); list paragraphs as '- item' lines (indented by their level), a run of them one
block; tables as tables: the first row their header, a cell merged across columns or rows repeated
in each, a table inside a cell flattened into the cell's text ('a, b; c, d'); a table's caption
from a paragraph just before it styled 'Caption' or reading 'Table 3: ...', or just after it
styled 'Caption'. Pages: a .docx stores none; where Word saved where its pages broke
(`w:lastRenderedPageBreak`) those are counted, else explicit page breaks (a page break, or a
paragraph set to start a page); with neither, blocks have no pages. The title is the document's
core property 'title', else the file name.

Loses: headers, footers, footnotes, comments, text boxes and shapes, images, tracked deletions
(tracked insertions are read as text), fields' codes (their last shown result is kept), a table
of contents (its 'TOC' paragraphs are navigation), styling.

Safety: a .docx is a zip: it is held to the zip bounds (archive.check_zip: members, unpacked size,
ratio) before python-docx opens it; python-docx parses its XML without resolving entities and
never fetches a relationship marked external (an attached template, a linked image, a
hyperlink): they are not read at all. A file that is not a Word document is one DocumentError.
"""
from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import docx
from docx.opc.exceptions import PackageNotFoundError
from lxml import etree

from ..errors import DocumentError, short
from .archive import Place, check_chars, check_zip
from .markdown import MAX_TITLE_CHARS, Outline
from .model import Document, Table

_NS = {"w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main"}
_W = f"{{{_NS['w']}}}"
_RUNS = etree.XPath(".//w:r[not(ancestor::w:txbxContent)]", namespaces=_NS)
_RUN_PARTS = frozenset(f"{_W}{n}" for n in ("t", "tab", "br", "cr", "lastRenderedPageBreak"))
_HEADING = re.compile(r"^heading\s*([1-9])$", re.I)
#: Deepest table inside a table read with its rows; deeper is dropped.
MAX_NESTING = 16
#: What python-docx and its XML parser raise on a broken or foreign file.
_UNREADABLE = (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile, etree.LxmlError,
               AttributeError, IndexError, TypeError, EOFError, zlib.error, NotImplementedError)


def read_docx(data: bytes, place: Place) -> list[Document]:
    """The document's body as one document ([] when it holds no text)."""
    _check_package(data, place)
    try:
        word = docx.Document(io.BytesIO(data))
        styles = {s.style_id: s.name or "" for s in word.styles}
        title = (word.core_properties.title or "").strip()
        body = word.element.body
    except _UNREADABLE as err:
        raise place.error(f"not a readable Word .docx file ({short(str(err) or type(err).__name__)})"
                          ) from None
    outline = Outline()
    _Body(outline, styles, _Pager.of(body)).read(body)
    sections = outline.sections()
    if not sections:
        return []
    doc = Document(place.doc_id, " ".join(title.split())[:MAX_TITLE_CHARS] or place.stem,
                   place.source, "docx", sections)
    check_chars(place, len(doc.text))
    return [doc]


def _check_package(data: bytes, place: Place) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            check_zip(place.path, package)
    except DocumentError as err:
        raise place.error(f"as a Word package: {err.reason}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError):
        raise place.error("not a Word .docx file (it is not a zip package); save it as .docx"
                          ) from None


class _Pager:
    """The page the reading is on. `known` False: the file says nothing of its pages."""

    def __init__(self, counts: str) -> None:
        self.counts, self.page = counts, 1

    @property
    def known(self) -> bool:
        return bool(self.counts)

    @classmethod
    def of(cls, body: etree._Element) -> _Pager:
        """Count Word's rendered page breaks when it saved them, else explicit ones."""
        if next(body.iter(f"{_W}lastRenderedPageBreak"), None) is not None:
            return cls("rendered")
        if any(_is_page_break(b) for b in body.iter(f"{_W}br")) or \
                any(_on(e) for e in body.iter(f"{_W}pageBreakBefore")):
            return cls("explicit")
        return cls("")

    def turn(self, node: etree._Element) -> bool:
        """Whether `node` starts a new page (and if so, turn it)."""
        if self.counts == "rendered":
            hit = node.tag == f"{_W}lastRenderedPageBreak"
        else:
            hit = self.counts == "explicit" and _is_page_break(node)
        self.page += hit
        return hit


def _is_page_break(node: etree._Element) -> bool:
    return node.tag == f"{_W}br" and node.get(f"{_W}type") == "page"


def _on(el: etree._Element) -> bool:
    """A Word on/off property ('<w:b/>', '<w:b w:val="true"/>', but not w:val="0")."""
    return el.get(f"{_W}val", "true").lower() not in ("0", "false", "off")


@dataclass
class _Text:
    """Text read from a run of XML, with the pages it lay on."""

    text: str
    pages: tuple[int, ...]


class _Body:
    """One pass over the body's paragraphs and tables, in order, into the outline."""

    def __init__(self, outline: Outline, styles: dict[str, str], pager: _Pager) -> None:
        self.outline, self.styles, self.pager = outline, styles, pager
        self.items: list[str] = []
        self.item_pages: set[int] = set()

    def read(self, container: etree._Element) -> None:
        for child in _blocks(container):
            if child.tag == f"{_W}tbl":
                self._end_list()
                self._table(child)
            else:
                self._paragraph(child)
        self._end_list()

    def _paragraph(self, p: etree._Element) -> None:
        style = self._style(p)
        if style.lower().startswith("toc"):
            return
        if self.pager.counts == "explicit" and any(_on(e) for e in _ppr(p, "pageBreakBefore")):
            self.pager.page += 1
        read = _read(p, self.pager)
        if (level := _list_level(p, style)) is not None:
            if read.text.strip():
                self.items.append(f"{'  ' * level}- {' '.join(read.text.split())}")
                self.item_pages.update(read.pages)
            return
        self._end_list()
        if (heading := self._heading_level(p, style)) is not None:
            self.outline.heading(heading, read.text)
        else:
            self.outline.text(read.text, read.pages, caption=style.lower() == "caption")

    def _table(self, tbl: etree._Element) -> None:
        rows, pages = _table_rows(tbl, self.pager, 0)
        rows = [r for r in rows if any(r)]
        if not rows:
            return
        width = max(len(r) for r in rows)
        padded = [tuple(r) + ("",) * (width - len(r)) for r in rows]
        self.outline.table(Table(padded[0], tuple(padded[1:])), pages)

    def _end_list(self) -> None:
        if self.items:
            self.outline.text("\n".join(self.items), tuple(sorted(self.item_pages)))
        self.items, self.item_pages = [], set()

    def _style(self, p: etree._Element) -> str:
        ids = [e.get(f"{_W}val", "") for e in _ppr(p, "pStyle")]
        return self.styles.get(ids[0], ids[0]) if ids else "Normal"

    @staticmethod
    def _heading_level(p: etree._Element, style: str) -> int | None:
        if style.lower() == "title":
            return 0
        if found := _HEADING.match(style):
            return int(found.group(1))
        for lvl in _ppr(p, "outlineLvl"):
            value = lvl.get(f"{_W}val", "")
            if value.isdigit() and int(value) < 9:
                return int(value) + 1
        return None


def _blocks(container: etree._Element) -> Iterator[etree._Element]:
    """The paragraphs and tables of a body or cell in order, looking into content controls."""
    for child in container:
        if child.tag in (f"{_W}p", f"{_W}tbl"):
            yield child
        elif child.tag == f"{_W}sdt":
            for content in child.iterchildren(f"{_W}sdtContent"):
                yield from _blocks(content)


def _ppr(p: etree._Element, name: str) -> list[etree._Element]:
    return list(p.iterfind(f"{_W}pPr/{_W}{name}"))


def _list_level(p: etree._Element, style: str) -> int | None:
    """A list paragraph's level (0 at the top), None for any other paragraph."""
    levels = list(p.iterfind(f"{_W}pPr/{_W}numPr/{_W}ilvl"))
    if levels:
        value = levels[0].get(f"{_W}val", "0")
        return min(int(value), 8) if value.isdigit() else 0
    if _ppr(p, "numPr") or style.lower().startswith("list"):
        return 0
    return None


def _read(el: etree._Element, pager: _Pager) -> _Text:
    """The text of a paragraph (tabs and line breaks kept) and the pages it lies on, turning
    the pager at each page break met."""
    parts: list[str] = []
    pages: set[int] = set()
    for node in _run_parts(el):
        if pager.turn(node):
            continue
        if node.tag == f"{_W}t" and node.text:
            parts.append(node.text)
            pages.add(pager.page)
        elif node.tag == f"{_W}tab":
            parts.append("\t")
        elif node.tag in (f"{_W}br", f"{_W}cr") and not _is_page_break(node):
            parts.append("\n")
    return _Text("".join(parts), tuple(sorted(pages)) if pager.known else ())


def _run_parts(p: etree._Element) -> Iterator[etree._Element]:
    """The text, tabs and breaks of a paragraph's runs in order, leaving out text boxes (Word
    stores each twice, for new and old readers) and tracked deletions."""
    for run in _RUNS(p):
        for node in run:
            if node.tag in _RUN_PARTS:
                yield node


def _table_rows(tbl: etree._Element, pager: _Pager,
                depth: int) -> tuple[list[list[str]], tuple[int, ...]]:
    """Each row's cell texts (a cell merged across n columns repeated n times, one merged down
    from the row above repeating its text) and the pages the table lies on."""
    rows: list[list[str]] = []
    pages: set[int] = set()
    for tr in tbl.iterchildren(f"{_W}tr"):
        row = [""] * _int_prop(tr, f"{_W}trPr/{_W}gridBefore")
        above = rows[-1] if rows else []
        for tc in tr.iter(f"{_W}tc"):
            if _parent_row(tc) is not tr:
                continue
            text, cell_pages = _cell(tc, pager, depth)
            pages.update(cell_pages)
            if _continues_merge(tc) and len(row) < len(above):
                text = above[len(row)]
            row.extend([text] * max(1, min(_int_prop(tc, f"{_W}tcPr/{_W}gridSpan"), 64)))
        rows.append(row)
    return rows, tuple(sorted(pages)) if pager.known else ()


def _parent_row(tc: etree._Element) -> etree._Element | None:
    node = tc.getparent()
    while node is not None and node.tag != f"{_W}tr":
        node = node.getparent()
    return node


def _cell(tc: etree._Element, pager: _Pager, depth: int) -> tuple[str, set[int]]:
    """A cell's text on one line (a table inside it as 'a, b; c, d') and its pages."""
    parts: list[str] = []
    pages: set[int] = set()
    for block in _blocks(tc):
        if block.tag == f"{_W}p":
            read = _read(block, pager)
            parts.append(read.text)
            pages.update(read.pages)
        elif depth < MAX_NESTING:
            rows, inner = _table_rows(block, pager, depth + 1)
            parts.append("; ".join(", ".join(c for c in r if c) for r in rows if any(r)))
            pages.update(inner)
    return " ".join(" ".join(parts).split()), pages


def _continues_merge(tc: etree._Element) -> bool:
    merges = list(tc.iterfind(f"{_W}tcPr/{_W}vMerge"))
    return bool(merges) and merges[0].get(f"{_W}val", "continue") == "continue"


def _int_prop(el: etree._Element, path: str) -> int:
    found = list(el.iterfind(path))
    value = found[0].get(f"{_W}val", "") if found else ""
    return int(value) if value.isdigit() else 0
