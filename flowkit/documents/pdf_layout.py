"""The layout half of the PDF reader: positioned words in, lines, headings and paragraphs out.

Nothing here opens a file; `pdf.py` feeds it one page at a time (`page_layout`) and then the
whole document (`drop_running_lines`, `font_headings`, `assemble`). Coordinates are pdfplumber's:
points from the top of the page, `top` < `bottom`.

The rules, each kept as simple as single-column manuals need:

1. Lines: words whose tops lie within half a font size of each other are one line, read left to
   right. A line's size is the size most of its characters are set in; it is bold when every word's
   font name says so.
2. Running lines: a line in the top or bottom `MARGIN_SHARE` of a page that recurs (digits
   ignored, so "3/12" matches "4/12") at the same height on at least `RUNNING_SHARE` of the pages
   (and on two or more), or that is only a page number there, is a running header or footer.
3. Headings without an outline: the body size is the size most characters are set in; a short
   line set at least `HEADING_RATIO` times larger is a heading, its level the rank of its size among
   heading sizes (largest first); a short, whole-paragraph bold line at body size ranks below them.
   Consecutive heading lines of one size are one heading (a title wrapped over two lines).
4. Paragraphs: a new one starts where the gap above a line exceeds half its font size, where the
   size changes, at a heading, a table or a page's end -- unless the page's last paragraph runs on
   into the next page's first one (no sentence end, same size, nothing between them).
5. Tables continued on the next page (the first thing there, the last thing before, same number
   of columns) are one table; a header row repeated on the new page is dropped.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .model import Block, Section, Table

#: Share of the page height at the top and at the bottom where running headers and footers live.
MARGIN_SHARE = 0.08
#: Share of the pages a line must recur on (at the same height) to count as a running line.
RUNNING_SHARE = 0.5
#: How much larger than the body text a line must be set to count as a heading.
HEADING_RATIO = 1.15
#: Longest heading, in words; a longer line set large is a lead paragraph, not a heading.
MAX_HEADING_WORDS = 30
#: Longest bold body-size line taken as a (lowest-level) heading, in words.
MAX_BOLD_HEADING_WORDS = 12
#: Lines whose tops differ by at most this share of the font size are one line.
LINE_TOLERANCE = 0.5
#: A gap above a line larger than this share of its font size starts a new paragraph.
PARAGRAPH_GAP = 0.5

_PAGE_NUMBER = re.compile(r"(?:page\s*)?\d{1,5}(?:\s*(?:/|of)\s*\d{1,5})?|[ivxlcdm]{1,8}", re.I)
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
_BOLD = ("bold", "black", "heavy", "semibold", "demi")
_SENTENCE_END = (".", "!", "?", ":", ";")


@dataclass
class Line:
    """One line of text on a page, with where it lies and how it is set."""

    text: str
    top: float
    bottom: float
    size: float
    bold: bool
    page: int
    #: the line's left and right ends (0, 0: not known)
    x0: float = 0.0
    x1: float = 0.0


@dataclass
class PageTable:
    """A table found on a page: its cleaned rows (the first is the header), its vertical extent
    and the pages it has spread over once continuations are joined."""

    rows: list[list[str]]
    top: float
    bottom: float
    pages: list[int]
    caption: str = ""
    #: the table's left and right edges (0, 0: not known)
    x0: float = 0.0
    x1: float = 0.0


@dataclass
class PageLayout:
    """One page's lines and tables in reading order (top to bottom)."""

    number: int
    height: float
    lines: list[Line]
    tables: list[PageTable] = field(default_factory=list)


@dataclass(frozen=True)
class Heading:
    """A heading found in the text: its level (1 = top) and its text."""

    level: int
    text: str


@dataclass(frozen=True)
class OutlineEntry:
    """One outline (bookmark) entry: its depth (1 = top), title and 1-based destination page."""

    level: int
    title: str
    page: int


@dataclass
class Headings:
    """Where headings go: `before[id(line)]` the headings that start just before that line, and
    `skip` the ids of the lines that are heading text (not paragraphs)."""

    before: dict[int, list[Heading]] = field(default_factory=dict)
    skip: set[int] = field(default_factory=set)


def clean(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces."""
    return _SPACES.sub(" ", text).strip()


def key(text: str) -> str:
    """A line's text as compared with headings: cleaned and lower-cased."""
    return clean(text).lower()


# -- 1. lines -------------------------------------------------------------------------------------

def _bold(fontname: str) -> bool:
    name = fontname.lower().rsplit("+", 1)[-1]
    return any(b in name for b in _BOLD)


def _line(words: list[dict[str, Any]], page: int) -> Line:
    words.sort(key=lambda w: float(w["x0"]))
    sizes: Counter[float] = Counter()
    for w in words:
        sizes[round(float(w["size"]) * 2) / 2] += len(w["text"])
    return Line(" ".join(str(w["text"]) for w in words), min(float(w["top"]) for w in words),
                max(float(w["bottom"]) for w in words), sizes.most_common(1)[0][0],
                all(_bold(str(w.get("fontname", ""))) for w in words), page,
                min(float(w["x0"]) for w in words), max(float(w["x1"]) for w in words))


def lines_of(words: Iterable[dict[str, Any]], page: int) -> list[Line]:
    """Words (pdfplumber's `extract_words` with size and fontname) grouped into lines, top down."""
    ordered = sorted(words, key=lambda w: (float(w["top"]), float(w["x0"])))
    lines: list[Line] = []
    current: list[dict[str, Any]] = []
    for w in ordered:
        if current and float(w["top"]) - float(current[0]["top"]) > \
                LINE_TOLERANCE * float(current[0]["size"]):
            lines.append(_line(current, page))
            current = []
        current.append(w)
    if current:
        lines.append(_line(current, page))
    return lines


_WRAPPED_HYPHEN = re.compile(r"(?<=\w)-\s*\n\s*(?=\w)")


def cell_text(text: str | None) -> str:
    """A cell's text on one line: a line ending in a hyphen runs on into the next without a space
    ("MS-" + "SQL" -> "MS-SQL"), other line breaks become spaces."""
    return clean(_WRAPPED_HYPHEN.sub("-", text or ""))


def table_rows(raw: Sequence[Sequence[str | None]]) -> list[list[str]]:
    """pdfplumber's extracted cells cleaned (`cell_text`), empty rows dropped, every row padded
    to the widest row (the header included), and columns empty in every row dropped: the ruling
    lines of a cell merged across columns make pdfplumber see spacer columns, which a page's part
    of a table may have and the next page's not."""
    rows = [[cell_text(c) for c in r] for r in raw]
    rows = [r for r in rows if any(r)]
    width = max((len(r) for r in rows), default=0)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [j for j in range(width) if any(r[j] for r in rows)]
    return [[r[j] for j in keep] for r in rows]


def outside(words: list[dict[str, Any]],
            boxes: Sequence[tuple[float, float, float, float]]) -> list[dict[str, Any]]:
    """The words whose centre lies in none of the boxes (x0, top, x1, bottom)."""
    def inside(w: dict[str, Any]) -> bool:
        cx, cy = (float(w["x0"]) + float(w["x1"])) / 2, (float(w["top"]) + float(w["bottom"])) / 2
        return any(x0 <= cx <= x1 and top <= cy <= bottom for x0, top, x1, bottom in boxes)
    return [w for w in words if not inside(w)] if boxes else words


#: the most words a title set centred over a table has ("Database Header Format")
CAPTION_WORDS = 10


def _centred_title(line: Line, table: PageTable) -> bool:
    """A short line that ends no sentence, centred over the table (its middle within a tenth of
    the table's width of the table's middle): how HTML pages printed to PDF set a table's title
    (`<center><i>...</i></center>` above it)."""
    width = table.x1 - table.x0
    if width <= 0 or line.x1 <= line.x0:
        return False
    short = len(line.text.split()) <= CAPTION_WORDS and not line.text.endswith(_SENTENCE_END)
    offset = abs((line.x0 + line.x1) / 2 - (table.x0 + table.x1) / 2)
    return short and offset <= width / 10 and line.x1 - line.x0 < width


def take_caption(lines: list[Line], table: PageTable) -> list[Line]:
    """Moves the line just above `table` into its caption when it reads like one ("Table 3: ...",
    or a short title centred over the table); returns the remaining lines."""
    above = [ln for ln in lines if ln.bottom <= table.top + 1]
    if not above:
        return lines
    last = max(above, key=lambda ln: ln.bottom)
    near = table.top - last.bottom <= 2.5 * last.size
    if near and (re.match(r"(table|tab\.)\s*[\w.:-]*", last.text, re.I)
                 or _centred_title(last, table)):
        table.caption = last.text
        return [ln for ln in lines if ln is not last]
    return lines


# -- 2. running headers and footers ---------------------------------------------------------------

def _in_margin(line: Line, height: float) -> bool:
    return line.bottom <= height * MARGIN_SHARE or line.top >= height * (1 - MARGIN_SHARE)


def _running_key(line: Line) -> tuple[str, int]:
    return _DIGITS.sub("#", key(line.text)), round(line.top / 4)


def drop_running_lines(pages: list[PageLayout]) -> None:
    """Removes running headers, footers and page numbers from every page (rule 2), in place."""
    seen: Counter[tuple[str, int]] = Counter()
    for page in pages:
        seen.update({_running_key(ln) for ln in page.lines if _in_margin(ln, page.height)})
    need = max(2, int(len(pages) * RUNNING_SHARE + 0.999))
    for page in pages:
        page.lines = [ln for ln in page.lines if not _in_margin(ln, page.height) or not (
            seen[_running_key(ln)] >= need or _PAGE_NUMBER.fullmatch(clean(ln.text)))]


# -- 3. headings from font sizes ------------------------------------------------------------------

def body_size(pages: Sequence[PageLayout]) -> float:
    """The size most characters of the text are set in (0 without text)."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for ln in page.lines:
            sizes[ln.size] += len(ln.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _standalone(lines: list[Line], i: int) -> bool:
    """Whether line i is a paragraph by itself (a paragraph gap, or nothing, on both sides)."""
    def gap(a: Line, b: Line) -> bool:
        return b.top - a.bottom > PARAGRAPH_GAP * b.size
    return (i == 0 or gap(lines[i - 1], lines[i])) and \
        (i == len(lines) - 1 or gap(lines[i], lines[i + 1]))


def font_headings(pages: Sequence[PageLayout]) -> Headings:
    """Headings by size and weight (rule 3)."""
    body = body_size(pages)
    found = Headings()
    if not body:
        return found
    marked: list[tuple[Line, bool]] = []          # (line, set large) for every heading line
    for page in pages:
        for i, ln in enumerate(page.lines):
            words = len(ln.text.split())
            if ln.size >= body * HEADING_RATIO and words <= MAX_HEADING_WORDS and \
                    any(c.isalpha() for c in ln.text):
                marked.append((ln, True))
            elif ln.bold and abs(ln.size - body) < 0.6 and words <= MAX_BOLD_HEADING_WORDS and \
                    not ln.text.endswith(_SENTENCE_END) and _standalone(page.lines, i):
                marked.append((ln, False))
    ranks = sorted({ln.size for ln, big in marked if big}, reverse=True)
    first: Line | None = None                      # the first line of the heading being read
    previous: Line | None = None
    for ln, big in marked:
        found.skip.add(id(ln))
        if first is not None and previous is not None and previous.page == ln.page and \
                previous.size == ln.size and previous.bold == ln.bold and \
                ln.top - previous.bottom <= PARAGRAPH_GAP * ln.size:
            head = found.before[id(first)][-1]
            found.before[id(first)][-1] = Heading(head.level, f"{head.text} {clean(ln.text)}")
        else:
            level = ranks.index(ln.size) + 1 if big else len(ranks) + 1
            found.before[id(ln)] = [Heading(level, clean(ln.text))]
            first = ln
        previous = ln
    return found


def _squeeze(text: str) -> str:
    return _SPACES.sub("", text).lower()


def _match(lines: list[Line], start: int, title: str) -> tuple[int, int] | None:
    """The first run of lines from `start` whose text is `title` (spaces ignored): (first, end)."""
    want = _squeeze(title)
    if not want:
        return None
    for i in range(start, len(lines)):
        got = _squeeze(lines[i].text)
        j = i + 1
        while got != want and want.startswith(got) and j < len(lines):
            got += _squeeze(lines[j].text)
            j += 1
        if got == want:
            return i, j
    return None


def outline_headings(pages: Sequence[PageLayout], entries: Sequence[OutlineEntry]) -> Headings:
    """Headings from the PDF outline: each entry's heading is the run of lines on its page that
    reads as its title (those lines are then not text); an entry whose title is not found there
    starts its section after the previous entry's heading (at its page's top for the first)."""
    by_page: dict[int, list[OutlineEntry]] = {}
    for entry in entries:
        by_page.setdefault(entry.page, []).append(entry)
    found = Headings()
    carried: list[Heading] = []                    # unplaced: before the next line of text
    for page in pages:
        pos = 0
        for entry in by_page.get(page.number, []):
            head = Heading(entry.level, clean(entry.title))
            hit = _match(page.lines, pos, entry.title)
            if hit is not None:
                found.skip.update(id(ln) for ln in page.lines[hit[0]:hit[1]])
                pos = hit[1]
                found.before.setdefault(id(page.lines[hit[0]]), []).extend([*carried, head])
                carried = []
            elif pos < len(page.lines):
                found.before.setdefault(id(page.lines[pos]), []).extend([*carried, head])
                carried = []
            else:
                carried.append(head)
        if carried and page.lines:
            found.before.setdefault(id(page.lines[0]), []).extend(carried)
            carried = []
    return found


# -- 4. and 5. sections, paragraphs and tables ----------------------------------------------------

def _rest_of_row(last: list[str], first: list[str]) -> bool:
    """Whether a continued table's first row is the rest of the row the page broke: it leaves
    empty a cell the row before the break filled (a row whose every cell is filled is whole)."""
    return len(first) > 1 and any(a and not b for a, b in zip(last, first))


class Assembler:
    """Builds sections from a stream of headings, lines and tables in reading order."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []     # (level, heading) from the top
        self.blocks: list[Block] = []
        self.para: list[Line] = []
        self.table: PageTable | None = None       # the last block, while it may still continue

    def heading(self, heading: Heading) -> None:
        self._close_section()
        while self.path and self.path[-1][0] >= heading.level:
            self.path.pop()
        self.path.append((heading.level, heading.text))

    def line(self, ln: Line) -> None:
        if self.para and not self._same_paragraph(self.para[-1], ln):
            self._close_paragraph()
        self._close_table()
        self.para.append(ln)

    def add_table(self, table: PageTable) -> None:
        prev = self.table
        if prev is not None and not self.para and table.pages[0] == prev.pages[-1] + 1 and \
                len(table.rows[0]) == len(prev.rows[0]) and not table.caption:
            rows = table.rows[1:] if table.rows[0] == prev.rows[0] else table.rows
            if rows and _rest_of_row(prev.rows[-1], rows[0]):
                prev.rows[-1] = [clean(f"{a} {b}") for a, b in zip(prev.rows[-1], rows[0])]
                rows = rows[1:]
            prev.rows.extend(rows)
            prev.pages.append(table.pages[0])
            return
        self._close_paragraph()
        self._close_table()
        self.table = table

    def page_end(self) -> None:
        """Ends the page: a paragraph that ends a sentence (or a page-long one) is closed."""
        if self.para and self.para[-1].text.endswith(_SENTENCE_END):
            self._close_paragraph()

    def finish(self) -> list[Section]:
        self._close_section()
        return self.sections

    def _same_paragraph(self, prev: Line, ln: Line) -> bool:
        if abs(prev.size - ln.size) > 0.5:
            return False
        if ln.page != prev.page:                   # runs on into the next page
            return ln.page == prev.page + 1
        return ln.top - prev.bottom <= PARAGRAPH_GAP * ln.size

    def _close_paragraph(self) -> None:
        if self.para:
            text = " ".join(ln.text for ln in self.para)
            pages = tuple(sorted({ln.page for ln in self.para}))
            self.blocks.append(Block("text", clean(text), pages=pages))
            self.para = []

    def _close_table(self) -> None:
        t = self.table
        if t is not None:
            header, *rows = t.rows
            self.blocks.append(Block("table", table=Table(tuple(header), tuple(map(tuple, rows)),
                                                          t.caption), pages=tuple(t.pages)))
            self.table = None

    def _close_section(self) -> None:
        self._close_paragraph()
        self._close_table()
        if self.blocks:
            path = tuple(text for _, text in self.path)
            self.sections.append(Section(f"s{len(self.sections)}", path, tuple(self.blocks)))
            self.blocks = []


def assemble(pages: Sequence[PageLayout], headings: Headings) -> list[Section]:
    """The document's sections: every page's lines and tables top down, headings where found."""
    asm = Assembler()
    for page in pages:
        items: list[Line | PageTable] = [*page.lines, *page.tables]
        items.sort(key=lambda item: item.top)
        for item in items:
            if isinstance(item, PageTable):
                asm.add_table(item)
                continue
            for head in headings.before.get(id(item), ()):
                asm.heading(head)
            if id(item) not in headings.skip:
                asm.line(item)
        asm.page_end()
    return asm.finish()
