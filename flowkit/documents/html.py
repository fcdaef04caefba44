"""HTML (.html, .htm): a saved web page or one page of a documentation site.

Keeps: the page's main content only: its <main> (or role="main"), else its <article>s, else its
<body>, with navigation and boilerplate left out (script, style, nav, aside, form, elements with
role navigation / banner / contentinfo / search, elements hidden, elements whose id or class names
mark navigation: navheader, navfooter, breadcrumb, sidebar, toc, menu, ...; a header or footer
unless it holds the page's heading). Headings h1-h6 make the section path (by level); paragraphs,
code listings (<pre>, kept as written), lists (an item a line, '- item', nested items indented)
and definition lists ('term: definition') become text blocks; a table becomes a table: its header
is its <thead> (rows merged column by column) or else its first row, every row padded to the
widest, a cell spanning columns or rows repeated in each, a table inside a cell flattened into the
cell's text ('a, b; c, d'), its <caption> (or a paragraph just before it reading 'Table 8.2. ...')
its caption. A table used for layout (one column, or holding headings) is read as the text it
holds. The title is the <title>, else the first <h1>, else the file name.

Loses: links' targets, images (and their alt text), emphasis, forms, anything drawn by scripts,
the column alignment and the styling of tables. HTML has no pages.

Decoding: a byte order mark, else the page's declared charset (<meta charset>, or the XML
declaration), undecodable bytes then shown as U+FFFD; a page that declares nothing is read as
UTF-8 and, when it is not, as Windows-1252, as browsers do. Its text is at most MAX_DOC_CHARS
characters.
"""
from __future__ import annotations

import codecs
import re
from collections.abc import Container, Iterable

import lxml.html
from lxml import etree

from .archive import Place, check_chars
from .markdown import MAX_TITLE_CHARS, Outline
from .model import Document, Table

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
#: Left out wherever they are.
_DROP_TAGS = frozenset({"script", "style", "noscript", "nav", "aside", "form", "template",
                        "svg", "iframe", "object", "embed", "button", "select", "textarea",
                        "input", "dialog", "head"})
#: Left out unless they hold a heading (an <article>'s <header> holds its <h1>).
_CHROME_TAGS = frozenset({"header", "footer"})
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
#: An id or class naming one of these (whole, or as a part between '-' and '_') is navigation.
_NAV_WORDS = frozenset({"nav", "navbar", "navigation", "navheader", "navfooter", "breadcrumb",
                        "breadcrumbs", "sidebar", "toc", "menu", "menubar", "mainmenu",
                        "sidenav", "topnav", "skiplink"})
#: An id or class naming one of these is left out unless it holds a heading.
_CHROME_WORDS = frozenset({"header", "footer", "masthead", "banner"})
#: ... and one containing these anywhere ('sphinxsidebar', 'wy-breadcrumbs').
_NAV_PARTS = ("navheader", "navfooter", "breadcrumb", "sidebar")
_KEEP = frozenset({"html", "body", "main", "article"})
_INLINE = frozenset({"a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data",
                     "del", "dfn", "em", "font", "i", "ins", "kbd", "label", "mark", "nobr",
                     "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup",
                     "time", "tt", "u", "var", "wbr", "img"})
#: Most columns or rows one cell may span (a hostile colspan="100000" is cut to this).
MAX_SPAN = 100
#: Deepest nesting of tables and lists rendered with their structure; deeper is flat text.
MAX_NESTING = 16

_META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECL = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I)
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"),
         (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


def read_html(data: bytes, place: Place) -> list[Document]:
    """The page's main content as one document ([] when it holds no text)."""
    root = _parse(decode_html(data))
    if root is None:
        return []
    title = _text_of(root.find(".//title"))
    _drop_boilerplate(root)
    outline = Outline()
    scopes = _content(root)
    for scope in scopes:
        _Walker(outline).walk(scope)
    sections = outline.sections()
    if not sections:
        return []
    if not title:
        h1 = next((h for s in scopes for h in s.iter("h1")), None)
        title = _text_of(h1) if h1 is not None else ""
    doc = Document(place.doc_id, title[:MAX_TITLE_CHARS] or place.stem, place.source, "html",
                   sections)
    check_chars(place, len(doc.text))
    return [doc]


def decode_html(data: bytes) -> str:
    """The page's text: by its byte order mark, its declared charset, else UTF-8 or
    Windows-1252 (never an error: a browser shows such a page too)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    declared = _declared(data[:4096])
    if declared:
        return data.decode(declared, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return data.decode("latin-1")


def _declared(head: bytes) -> str:
    """The codec a page's head declares ('' for none, an unknown one, or a UTF-16/32 claim on
    bytes that passed as ASCII, which browsers ignore too)."""
    found = _XML_DECL.search(head) or _META.search(head)
    if not found:
        return ""
    try:
        name = codecs.lookup(found.group(1).decode("ascii")).name
    except LookupError:
        return ""
    return "" if name.startswith(("utf-16", "utf-32")) else name


def _parse(text: str) -> lxml.html.HtmlElement | None:
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    try:
        return lxml.html.document_fromstring(text.encode("utf-8", "replace"),
                                             parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None          # "Document is empty": nothing to read


# ---- what to read -----------------------------------------------------------------------------
def _drop_boilerplate(root: lxml.html.HtmlElement) -> None:
    for el in [e for e in root.iter() if isinstance(e.tag, str) and _boilerplate(e)]:
        if el.getparent() is not None:
            el.drop_tree()


def _boilerplate(el: lxml.html.HtmlElement) -> bool:
    tag = el.tag.lower()
    if tag in _KEEP:
        return False
    if tag in _DROP_TAGS or (el.get("role") or "").lower() in _DROP_ROLES:
        return True
    if el.get("hidden") is not None or "display:none" in (el.get("style") or "").replace(" ", ""):
        return True
    if tag in _INLINE:      # a link or span is never chrome by its class ('a.header' in a heading)
        return False
    names = f"{el.get('id') or ''} {el.get('class') or ''}".lower().split()
    if tag in _CHROME_TAGS or any(n in _CHROME_WORDS for n in names):
        return not _holds(el, _HEADINGS)
    return _names_navigation(names) and not _holds(el, ("main", "article"))


def _holds(el: lxml.html.HtmlElement, tags: Container[str]) -> bool:
    return any(isinstance(e.tag, str) and e.tag.lower() in tags for e in el.iter())


def _names_navigation(names: list[str]) -> bool:
    for token in names:
        if token in _NAV_WORDS or any(p in _NAV_WORDS for p in re.split(r"[-_]", token)) or \
                any(p in token for p in _NAV_PARTS):
            return True
    return False


def _content(root: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """Where the page's content is: its <main>, else its outermost <article>s, else its body."""
    main = root.xpath("//main | //*[@role='main']")
    if main:
        return [main[0]]
    articles = root.xpath("//article[not(ancestor::article)]")
    if articles:
        return list(articles)
    body = root.find("body")
    return [body if body is not None else root]


# ---- walking the content ----------------------------------------------------------------------
class _Walker:
    """One pass over the content in document order (an explicit stack, so a deeply nested page
    cannot exhaust Python's recursion): inline text gathers into a paragraph that each block
    element ends."""

    def __init__(self, outline: Outline) -> None:
        self.outline = outline
        self.para: list[str] = []

    def walk(self, scope: lxml.html.HtmlElement) -> None:
        stack: list[tuple[str, lxml.html.HtmlElement]] = [("open", scope)]
        while stack:
            kind, el = stack.pop()
            if kind == "tail":
                self._add(el.tail)
            elif kind == "close":
                self._flush()
            elif isinstance(el.tag, str):
                stack.extend(self._open(el))
        self._flush()

    def _open(self, el: lxml.html.HtmlElement) -> list[tuple[str, lxml.html.HtmlElement]]:
        """Handle one element; what to push for its children (in reverse: the stack pops)."""
        tag = el.tag.lower()
        if tag == "br":
            self.para.append("\n")
            return []
        if tag in _HEADINGS:
            self._flush()
            self.outline.heading(_HEADINGS[tag], _text_of(el))
        elif tag == "pre":
            self._flush()
            self.outline.text(_pre_text(el))
        elif tag in ("ul", "ol"):
            self._flush()
            self.outline.text("\n".join(_list_lines(el, 0)))
        elif tag == "dl":
            self._flush()
            self.outline.text("\n".join(_dl_lines(el)))
        elif tag == "table" and not _is_layout(el):
            self._flush()
            self.outline.table(_table(el))
        else:
            return self._children(el, block=tag not in _INLINE)
        return []

    def _children(self, el: lxml.html.HtmlElement,
                  block: bool) -> list[tuple[str, lxml.html.HtmlElement]]:
        if block:
            self._flush()
        self._add(el.text)
        pushed: list[tuple[str, lxml.html.HtmlElement]] = [("close", el)] if block else []
        for child in reversed(el):
            pushed.extend((("tail", child), ("open", child)))
        return pushed

    def _add(self, text: str | None) -> None:
        if text:
            self.para.append(re.sub(r"\s+", " ", text))

    def _flush(self) -> None:
        lines = (" ".join(line.split()) for line in "".join(self.para).split("\n"))
        self.outline.text("\n".join(line for line in lines if line))
        self.para = []


def _text_of(el: lxml.html.HtmlElement | None, depth: int = 0) -> str:
    """An element's text on one line: whitespace collapsed, a table inside it flattened."""
    return " ".join(_flat(el, depth).split()) if el is not None else ""


def _flat(el: lxml.html.HtmlElement, depth: int, skip: frozenset[str] = frozenset()) -> str:
    """The text of `el` and what it holds, leaving out the subtrees tagged `skip`; a table inside
    it as its rows ('a, b; c, d')."""
    out: list[str] = []
    stack: list[tuple[bool, lxml.html.HtmlElement]] = [(False, el)]
    while stack:
        is_tail, node = stack.pop()
        if is_tail:
            out.append(node.tail or "")
            continue
        tag = node.tag.lower() if isinstance(node.tag, str) else ""
        if node is not el and (not tag or tag in skip):
            continue
        if node is not el and tag == "table" and depth < MAX_NESTING:
            out.append(f" {_nested_table(node, depth + 1)} ")
            continue
        out.append(" " if tag in ("br", "p", "div", "li", "td", "th", "tr") else "")
        out.append((node.text or "") if tag else "")
        for child in reversed(node):
            stack.extend(((True, child), (False, child)))
    return "".join(out)


def _nested_table(table: lxml.html.HtmlElement, depth: int) -> str:
    rows = _grid(_rows(table), depth)
    return "; ".join(", ".join(c for c in row if c) for row in rows if any(row))


def _pre_text(el: lxml.html.HtmlElement) -> str:
    lines = [line.rstrip() for line in el.text_content().split("\n")]
    return "\n".join(lines).strip("\n")


def _list_lines(el: lxml.html.HtmlElement, depth: int) -> list[str]:
    """'- item' per item, a nested list's items indented two spaces more."""
    lines: list[str] = []
    for li in el:
        if not isinstance(li.tag, str) or li.tag.lower() != "li":
            continue
        text = " ".join(_flat(li, depth, skip=frozenset({"ul", "ol"})).split())
        if text:
            lines.append(f"{'  ' * depth}- {text}")
        if depth < MAX_NESTING:
            for sub in li.xpath("./ul | ./ol | ./*/ul | ./*/ol"):
                lines.extend(_list_lines(sub, depth + 1))
    return lines


def _dl_lines(el: lxml.html.HtmlElement) -> list[str]:
    """'term: definition' per definition (a further definition of the same term indented)."""
    lines: list[str] = []
    terms: list[str] = []
    for child in el.xpath("./dt | ./dd | ./div/dt | ./div/dd"):
        text = _text_of(child)
        if child.tag.lower() == "dt":
            terms.append(text)
        elif terms:
            lines.append(f"{' / '.join(t for t in terms if t)}: {text}")
            terms = []
        elif text:
            lines.append(f"  {text}")
    lines.extend(t for t in terms if t)
    return lines


# ---- tables -----------------------------------------------------------------------------------
def _is_layout(table: lxml.html.HtmlElement) -> bool:
    """A table that lays out a page rather than holding data: role="presentation", a single
    column, or cells holding headings."""
    if (table.get("role") or "").lower() in ("presentation", "none"):
        return True
    rows = _rows(table)
    if all(len(tr.xpath("./td | ./th")) <= 1 for tr in rows):
        return True
    return bool(table.xpath(".//h1 | .//h2 | .//h3 | .//h4 | .//h5 | .//h6"))


def _rows(table: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """The table's own rows (not a nested table's): head, body, foot."""
    return list(table.xpath("./thead/tr")) + list(table.xpath("./tr | ./tbody/tr")) + \
        list(table.xpath("./tfoot/tr"))


def _table(table: lxml.html.HtmlElement) -> Table:
    grid = _grid(_rows(table), 0)
    grid = [row for row in grid if any(row)]
    if not grid:
        return Table((), ())
    heads = max(1, min(len(table.xpath("./thead/tr")), len(grid)))
    width = max(len(row) for row in grid)
    header = _merge_header([_padded(r, width) for r in grid[:heads]])
    caption = table.find("caption")
    return Table(header, tuple(_padded(r, width) for r in grid[heads:]),
                 _text_of(caption) if caption is not None else "")


def _grid(rows: list[lxml.html.HtmlElement], depth: int) -> list[list[str]]:
    """Each row's cell texts, a cell spanning n columns or rows repeated n times."""
    below: dict[int, tuple[str, int]] = {}          # column -> (text, rows it still spans)
    grid: list[list[str]] = []
    for tr in rows:
        row: list[str] = []
        for cell in tr.xpath("./td | ./th"):
            _fill_spanned(row, below, to_end=False)
            text = _text_of(cell, depth)
            down = _span(cell, "rowspan")
            for _ in range(_span(cell, "colspan")):
                if down > 1:
                    below[len(row)] = (text, down - 1)
                row.append(text)
        _fill_spanned(row, below, to_end=True)
        grid.append(row)
    return grid


def _fill_spanned(row: list[str], below: dict[int, tuple[str, int]], to_end: bool) -> None:
    """Put the cells spanning down from rows above into `row`, at its end: while the next
    column is one of theirs, or (`to_end`) every one still to come in this row."""
    while True:
        col = len(row)
        if col not in below:
            later = [c for c in below if c > col] if to_end else []
            if not later:
                return
            row.append("")
            continue
        text, left = below.pop(col)
        if left > 1:
            below[col] = (text, left - 1)
        row.append(text)


def _span(cell: lxml.html.HtmlElement, name: str) -> int:
    try:
        return max(1, min(int(cell.get(name) or 1), MAX_SPAN))
    except ValueError:
        return 1


def _padded(row: list[str], width: int) -> tuple[str, ...]:
    return tuple(row) + ("",) * (width - len(row))


def _merge_header(rows: list[tuple[str, ...]]) -> tuple[str, ...]:
    """Several header rows as one: each column's distinct texts, top to bottom."""
    return tuple(" ".join(_distinct(r[i] for r in rows)) for i in range(len(rows[0])))


def _distinct(texts: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for t in texts:
        if t and t not in seen:
            seen.append(t)
    return seen
