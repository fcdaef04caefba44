"""The typed document every reader returns and every chunker reads.

A file becomes one or more `Document`s; a document is a list of `Section`s in reading order, each
with its heading path ("5 Data Definition" > "5.11 Table Partitioning") and its `Block`s; a block
is either text (a paragraph, a list, a code listing) or a `Table` (a header row, body rows and a
caption). Every block knows the page(s) it lies on (1-based; empty for formats without pages:
HTML, Markdown, text). A new format is one reader that fills these types; a new chunker reads
them and never parses a file.

`Document.text` is the flat text for the chunkers that take text (each table row on its own line,
cells joined by " | "); `Document.record()` is the plain record {id, title, text, source, ...}
those chunkers and the rest of ingest have always read, with the document itself under
`STRUCTURE_KEY` for the chunkers that read structure.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

#: The key of a record (`Document.record()`) that holds the typed document itself; never stored
#: as chunk metadata.
STRUCTURE_KEY = "_document"
#: How a heading path is shown and how a chunk's title joins a document and its section.
PATH_SEP = " > "
CELL_SEP = " | "


def table_runs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """The runs of table lines in a chunk's `lines` (lines holding CELL_SEP, one after another),
    as (first, past the last) indexes; a run's first line is its header."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        if CELL_SEP not in lines[i]:
            i += 1
            continue
        start = i
        while i < len(lines) and CELL_SEP in lines[i]:
            i += 1
        runs.append((start, i))
    return runs


@dataclass(frozen=True)
class Table:
    """A table as its reader found it: the header cells, the body rows (each as many cells as
    the header, padded with ""), and its caption ("" when it has none)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def row_text(self, row: tuple[str, ...]) -> str:
        """One row as a line, its cells joined by CELL_SEP."""
        return CELL_SEP.join(row)

    def header_text(self) -> str:
        return CELL_SEP.join(self.header)

    def text(self) -> str:
        """The caption, the header and every row, a line each."""
        lines = [self.caption] if self.caption else []
        if any(self.header):
            lines.append(self.header_text())
        lines.extend(self.row_text(r) for r in self.rows)
        return "\n".join(lines)


@dataclass(frozen=True)
class Block:
    """A paragraph-like piece of text (`kind` "text") or a table (`kind` "table"), with the
    1-based pages it lies on (() where the format has no pages)."""

    kind: Literal["text", "table"]
    text: str = ""
    table: Table | None = None
    pages: tuple[int, ...] = ()

    def flat(self) -> str:
        """The block as plain text (a table: caption, header and rows, a line each)."""
        return self.table.text() if self.table is not None else self.text


@dataclass(frozen=True)
class Section:
    """The blocks under one heading. `path` is the heading path from the document's top
    (() for text before the first heading); `id` is stable within its document ('s0', 's1', ...)."""

    id: str
    path: tuple[str, ...]
    blocks: tuple[Block, ...]

    @property
    def pages(self) -> tuple[int, ...]:
        """Every page a block of this section lies on, in order."""
        return tuple(sorted({p for b in self.blocks for p in b.pages}))

    @property
    def heading(self) -> str:
        return self.path[-1] if self.path else ""

    def path_text(self) -> str:
        return PATH_SEP.join(self.path)


@dataclass(frozen=True)
class Document:
    """One document of a file: `id` (unique in one ingest), `title`, `source` (the file as its
    user names it; a path inside a folder or zip), `format` ('pdf', 'docx', 'html', 'md', 'txt',
    'jsonl'), its sections in reading order and any extra fields (a .jsonl line's own)."""

    id: str
    title: str
    source: str
    format: str
    sections: tuple[Section, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    #: The file's own text where it is plain text already (.txt, .md, a .jsonl line's `text`):
    #: the chunkers that take text read it unchanged (headings, spacing and all), as before
    #: documents had structure.
    source_text: str | None = None

    @property
    def text(self) -> str:
        """The flat text: the file's own where it has one (`source_text`), else every block, a
        paragraph each (tables a row per line)."""
        if self.source_text is not None:
            return self.source_text
        return "\n\n".join(b.flat() for s in self.sections for b in s.blocks if b.flat().strip())

    @property
    def pages(self) -> int:
        """The number of the last page any block lies on (0: no pages)."""
        return max((p for s in self.sections for b in s.blocks for p in b.pages), default=0)

    def tables(self) -> list[tuple[Section, Table]]:
        return [(s, b.table) for s in self.sections for b in s.blocks if b.table is not None]

    def record(self) -> dict[str, Any]:
        """The plain record ingest has always passed: {id, title, text, source, format, ...extra},
        with the document itself under STRUCTURE_KEY."""
        return {"id": self.id, "title": self.title, "text": self.text, "source": self.source,
                "format": self.format, **self.extra, STRUCTURE_KEY: self}


def plain_document(doc_id: str, title: str, source: str, fmt: str, text: str,
                   extra: dict[str, Any] | None = None) -> Document:
    """A document without headings: one section of paragraphs (split at blank lines)."""
    paras = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    blocks = tuple(Block("text", p) for p in paras)
    return Document(doc_id, title, source, fmt, (Section("s0", (), blocks),) if blocks else (),
                    dict(extra or {}), source_text=text)


def structure_of(record: dict[str, Any]) -> Document:
    """The typed document of an ingest record: the one its reader made, or one section of
    paragraphs built from its text (a record made by hand, a test's dict)."""
    doc = record.get(STRUCTURE_KEY)
    if isinstance(doc, Document):
        return doc
    extra = {k: v for k, v in record.items()
             if k not in ("id", "title", "text", "source", "format", STRUCTURE_KEY)}
    return plain_document(str(record.get("id", "")), str(record.get("title", "")),
                          str(record.get("source", "")), str(record.get("format", "")),
                          str(record.get("text", "")), extra)
