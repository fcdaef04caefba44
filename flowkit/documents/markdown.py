"""Markdown (.md) and plain text (.txt), and the outline every structured reader fills.

Markdown keeps: ATX headings ('#' to '######') as the section path, paragraphs (split at blank
lines), fenced code blocks (``` or ~~~) as text blocks of their own, their lines as written (a
'#' inside a fence is not a heading), pipe tables ('| a | b |' over a '|---|---|' line) as tables
(a paragraph just before one that reads 'Table 3: ...' is its caption), lists as the lines they
are. It loses: Setext headings ('Title' over '====', read as a paragraph), emphasis and link
targets (kept as the Markdown text), the alignment of table columns, HTML inside the Markdown
(kept as text). Markdown has no pages.

Plain text keeps paragraphs (split at blank lines) in one section without a heading; its title is
the file name without the extension. A .md file's title is its first line when that is a heading
('# Title'), else its file name. Both must be UTF-8 (undecodable bytes are refused, not replaced)
and at most MAX_DOC_CHARS characters; a file too large to be that is refused by its size before
it is read.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import SpecError
from ..jsonread import decode_utf8
from .archive import Place, check_chars
from .model import Block, Document, Section, Table

#: Longest title taken from a Markdown heading, in characters.
MAX_TITLE_CHARS = 200
#: Longest paragraph taken as a table's caption.
MAX_CAPTION_CHARS = 300

_CAPTION = re.compile(r"^(Table|TABLE)(\s+[A-Z]?\d+(\.\d+)*[.:]?|\s*[:.])(\s|$)")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_PIPE = re.compile(r"(?<!\\)\|")


def is_caption(text: str) -> bool:
    """Whether a paragraph reads as a table's caption ('Table 8.2. Numeric Types', 'Table: x')."""
    return len(text) <= MAX_CAPTION_CHARS and "\n" not in text and bool(_CAPTION.match(text))


class Outline:
    """A document's sections, built as a reader meets headings and blocks in reading order.

    A heading of level n ends the section before it and replaces every heading of level >= n on
    the path; a section without blocks (a heading right before its first subheading) is left
    out, since its heading lives on in its subsections' paths. A table without a caption takes
    the text block just before it as its caption when that reads as one (`is_caption`) or was
    marked as one (a DOCX 'Caption' paragraph)."""

    def __init__(self) -> None:
        self._heads: list[tuple[int, str]] = []
        self._blocks: list[Block] = []
        self._sections: list[Section] = []
        self._caption_marked = False

    def heading(self, level: int, text: str) -> None:
        text = " ".join(text.split())
        if not text:
            return
        self._close()
        while self._heads and self._heads[-1][0] >= level:
            self._heads.pop()
        self._heads.append((level, text))

    def text(self, text: str, pages: tuple[int, ...] = (), caption: bool = False) -> None:
        """A text block (blank text is dropped); `caption`: marked as a table's caption. A marked
        caption right after a table without one becomes that table's caption."""
        text = text.strip("\n").rstrip()
        if not text.strip():
            return
        last = self._blocks[-1] if self._blocks else None
        if caption and last is not None and last.table is not None and not last.table.caption:
            table = Table(last.table.header, last.table.rows, text.strip())
            self._blocks[-1] = Block("table", table=table, pages=last.pages)
            self._caption_marked = False
            return
        self._blocks.append(Block("text", text, pages=pages))
        self._caption_marked = caption

    def table(self, table: Table, pages: tuple[int, ...] = ()) -> None:
        """A table block (one without a header or rows is dropped)."""
        if not table.rows and not any(table.header):
            return
        last = self._blocks[-1] if self._blocks else None
        if not table.caption and last is not None and last.table is None and \
                (self._caption_marked or is_caption(last.text.strip())):
            self._blocks.pop()
            table = Table(table.header, table.rows, last.text.strip())
            pages = tuple(sorted(set(pages) | set(last.pages)))
        self._blocks.append(Block("table", table=table, pages=pages))
        self._caption_marked = False

    def sections(self) -> tuple[Section, ...]:
        self._close()
        return tuple(self._sections)

    def _close(self) -> None:
        if self._blocks:
            path = tuple(t for _, t in self._heads)
            self._sections.append(Section(f"s{len(self._sections)}", path, tuple(self._blocks)))
        self._blocks = []
        self._caption_marked = False


def text_title(p: Path, text: str) -> str:
    """A .txt or .md file's title: a Markdown file's first line when it is a heading ('# Title',
    cut to MAX_TITLE_CHARS), else the file name without its extension ('lighthouses.txt' ->
    'lighthouses'); never a sentence of the text."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    if p.suffix.lower() == ".md" and first.startswith("#"):
        heading = first.lstrip("#").strip()[:MAX_TITLE_CHARS]
        if heading:
            return heading
    return p.stem


def decode_text(data: bytes, place: Place) -> str:
    """UTF-8 text without NUL characters, or DocumentError naming the first bad byte."""
    try:
        text = decode_utf8(data, place.source).replace("\x00", "")
    except SpecError as err:
        raise place.error(f"{err.detail} [{err.code}]; save it as UTF-8 text") from None
    check_chars(place, len(text))
    return text


def read_text(data: bytes, place: Place) -> list[Document]:
    """A .txt file: one section of paragraphs ([] when it holds no text)."""
    text = decode_text(data, place)
    if not text.strip():
        return []
    outline = Outline()
    for para in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        outline.text(para)
    return [Document(place.doc_id, text_title(Path(place.source), text), place.source, "txt",
                     outline.sections(), source_text=text)]


def read_markdown(data: bytes, place: Place) -> list[Document]:
    """A .md file: sections by its ATX headings ([] when it holds no text)."""
    text = decode_text(data, place)
    if not text.strip():
        return []
    outline = Outline()
    _MarkdownLines(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), outline).read()
    return [Document(place.doc_id, text_title(Path(place.source), text), place.source, "md",
                     outline.sections(), source_text=text)]


class _MarkdownLines:
    """One pass over a Markdown file's lines: each line closes, continues or opens a block."""

    def __init__(self, lines: list[str], outline: Outline) -> None:
        self.lines, self.outline, self.i = lines, outline, 0
        self.para: list[str] = []

    def read(self) -> None:
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if fence := _FENCE.match(line):
                self._flush()
                self._fence(fence.group(1))
            elif heading := _ATX.match(line):
                self._flush()
                self.outline.heading(len(heading.group(1)), heading.group(2) or "")
                self.i += 1
            elif "|" in line and self.i + 1 < len(self.lines) and \
                    _RULE.match(self.lines[self.i + 1]) and "-" in self.lines[self.i + 1]:
                self._flush()
                self._table()
            elif not line.strip():
                self._flush()
                self.i += 1
            else:
                self.para.append(line)
                self.i += 1
        self._flush()

    def _flush(self) -> None:
        if self.para:
            self.outline.text("\n".join(self.para))
        self.para = []

    def _fence(self, mark: str) -> None:
        """A fenced block up to its closing fence (or the end of the file), kept as written."""
        body: list[str] = []
        self.i += 1
        while self.i < len(self.lines):
            line = self.lines[self.i]
            self.i += 1
            if line.strip().startswith(mark[0] * len(mark)) and not line.strip().strip(mark[0]):
                break
            body.append(line)
        self.outline.text("\n".join(body))

    def _table(self) -> None:
        header = _cells(self.lines[self.i])
        self.i += 2
        rows: list[list[str]] = []
        while self.i < len(self.lines) and "|" in self.lines[self.i] and \
                self.lines[self.i].strip():
            rows.append(_cells(self.lines[self.i]))
            self.i += 1
        width = max([len(header), *(len(r) for r in rows)])
        self.outline.table(Table(_pad(header, width), tuple(_pad(r, width) for r in rows)))


def _cells(line: str) -> list[str]:
    """The cells of a pipe-table line: split at unescaped '|', the outer pipes dropped."""
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [c.strip().replace("\\|", "|") for c in _PIPE.split(inner)]


def _pad(cells: list[str], width: int) -> tuple[str, ...]:
    return tuple(cells) + ("",) * (width - len(cells))
