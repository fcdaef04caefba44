"""Structure-aware chunking: chunks cut along a document's sections and tables.

The chunker reads the typed document of each ingest record (`flowkit.documents.structure_of`), so
a record a reader made keeps its sections, pages and tables, and a plain record ({id, title,
text}) is one section of paragraphs. For each section, in reading order:

1. Text blocks are packed into a chunk until the next would pass `max_words`; a block longer
   than `max_words` is cut at sentence ends first, then (one sentence too long) at words.
2. A table that fits beside the text gathered so far joins it and ends that chunk (kind
   'text'); any other table ends the chunk before it and becomes chunks of its own (kind 'table'): caption line, header line, then as many whole rows as fit in
   `max_words` (at least one, however long), the caption and header repeated in each.
3. A text piece under `min_words` joins a neighbouring text piece of the same section when the
   two fit in `max_words` (the one before it first).

Invariant: a table row is a line of exactly one chunk, never cut. The chunk text starts with the
document's own words (no path prepended); the heading path is in the title and the metadata
(see `flowkit.documents.provenance` for the keys).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from ...contract import OperatorParams, operator
from ...documents.model import PATH_SEP, STRUCTURE_KEY, Block, Document, Section, Table, structure_of
from ...runtime.kb import Chunk
from ...text import split_sentences
from .chunking import Chunker


@dataclass(frozen=True)
class Piece:
    """A chunk before it has an id: its text, kind, the pages it lies on and its section."""

    text: str
    kind: Literal["text", "table"]
    pages: frozenset[int]
    section: Section | None = None

    @property
    def words(self) -> int:
        return len(self.text.split())


def _words(text: str) -> int:
    return len(text.split())


def cut_long(text: str, max_words: int) -> list[str]:
    """A text longer than `max_words` as pieces of at most `max_words`: whole sentences packed
    together, a sentence longer than that cut into runs of words."""
    if _words(text) <= max_words:
        return [text]
    units: list[str] = []
    for sentence in split_sentences(text):
        words = sentence.split()
        units.extend(" ".join(words[i:i + max_words]) for i in range(0, len(words), max_words))
    out: list[str] = []
    for unit in units:
        if out and _words(out[-1]) + _words(unit) <= max_words:
            out[-1] = f"{out[-1]} {unit}"
        else:
            out.append(unit)
    return out


def table_pieces(table: Table, pages: frozenset[int], max_words: int) -> list[Piece]:
    """The table as chunks of whole rows, each starting with the caption and header lines."""
    head = [line for line in (table.caption, table.header_text() if any(table.header) else "")
            if line.strip()]
    budget = max_words - _words(" ".join(head))
    groups: list[list[str]] = []
    for line in (table.row_text(r) for r in table.rows):
        if groups and sum(map(_words, groups[-1])) + _words(line) <= budget:
            groups[-1].append(line)
        else:
            groups.append([line])
    return [Piece("\n".join([*head, *rows]), "table", pages) for rows in groups or [[]]]


def merge_small(pieces: list[Piece], min_words: int, max_words: int) -> list[Piece]:
    """Join each text piece under `min_words` to the text piece before it, else after it, when
    both fit in `max_words`."""
    out = list(pieces)
    i = 0
    while i < len(out):
        p = out[i]
        if p.kind == "text" and p.words < min_words:
            for j in (i - 1, i + 1):
                q = out[j] if 0 <= j < len(out) else None
                if q is not None and q.kind == "text" and p.words + q.words <= max_words:
                    first, second = (q, p) if j < i else (p, q)
                    out[min(i, j)] = Piece(f"{first.text}\n\n{second.text}", "text",
                                           first.pages | second.pages, p.section)
                    del out[max(i, j)]
                    i = min(i, j) - 1
                    break
        i += 1
    return out


def section_pieces(blocks: tuple[Block, ...], max_words: int, min_words: int,
                   table_words: int | None = None) -> list[Piece]:
    """The pieces of one section's blocks (steps 1-3 of the module docstring); a table's chunks
    hold at most `table_words` (default `max_words`)."""
    table_words = table_words or max_words
    out: list[Piece] = []
    texts: list[str] = []
    pages: set[int] = set()

    def flush() -> None:
        if texts:
            out.append(Piece("\n\n".join(texts), "text", frozenset(pages)))
        texts.clear()
        pages.clear()

    for block in blocks:
        flat = block.flat().strip()
        if not flat:
            continue
        if block.table is not None:
            if texts and sum(map(_words, texts)) + _words(flat) <= max_words:
                texts.append(flat)               # a small table ends the text before it
                pages.update(block.pages)
                flush()
            else:
                flush()
                out.extend(table_pieces(block.table, frozenset(block.pages), table_words))
            continue
        for part in cut_long(flat, max_words):
            if texts and sum(map(_words, texts)) + _words(part) > max_words:
                flush()
            texts.append(part)
            pages.update(block.pages)
    flush()
    return merge_small(out, min_words, max_words)


def chunk_title(doc: Document, section: Section | None) -> str:
    """'document title > last heading'; the document title alone before the first heading."""
    heading = section.heading if section is not None else ""
    if heading and heading != doc.title:
        return f"{doc.title}{PATH_SEP}{heading}" if doc.title else heading
    return doc.title


def chunk_context(doc: Document, section: Section | None) -> str:
    """The line embedded before a chunk's text: 'document title > the whole heading path'."""
    path = [h for h in (section.path if section is not None else ()) if h != doc.title]
    return PATH_SEP.join([doc.title, *path] if doc.title else path)


@operator("indexing.chunk_structure")
class StructureChunker(Chunker["StructureChunker.Params"]):
    """Structure-aware chunking: keeps a section's text together up to `max_words`, never cuts a
    table row, and repeats a table's caption and header row in each of its chunks. Chunks carry
    their document, section path and pages (shown under a passage as "file.pdf p. 23, Section >
    Subsection"); a chunk's title is "document > section".

    Documents without structure (a .jsonl record, a text file) are cut into their paragraphs,
    packed up to `max_words`. The default chunker of a new knowledge base."""

    class Params(OperatorParams):
        max_words: int = Field(180, ge=20, le=4000,
                               description="Most words in a chunk (a single table row may pass it)")
        min_words: int = Field(40, ge=0, le=2000,
                               description="A piece of a section shorter than this joins its "
                                           "neighbour in the same section when both fit")
        table_words: int | None = Field(None, ge=10, le=4000,
                                        description="Most words in a chunk of a table's rows (its "
                                                    "caption and header repeated in each); empty: "
                                                    "max_words")
        context_header: bool = Field(True, description="Embed each chunk with its document and "
                                     "section path before its text (the text shown is unchanged)")

        @model_validator(mode="after")
        def _min_below_max(self) -> StructureChunker.Params:
            if self.min_words >= self.max_words:
                raise ValueError(f"min_words ({self.min_words}) must be smaller than max_words "
                                 f"({self.max_words})")
            return self

    def split(self, text: str) -> list[str]:
        """A flat text (in a flow) as its paragraphs packed up to `max_words`."""
        paras = tuple(Block("text", p.strip()) for p in text.replace("\r\n", "\n").split("\n\n")
                      if p.strip())
        return [p.text for p in section_pieces(paras, self.params.max_words,
                                               self.params.min_words)]

    def pieces(self, doc: Document) -> list[Piece]:
        """Every piece of a document, in reading order, each knowing its section."""
        p = self.params
        return [Piece(x.text, x.kind, x.pages, s) for s in doc.sections
                for x in section_pieces(s.blocks, p.max_words, p.min_words, p.table_words)]

    def chunk(self, documents: list[dict[str, Any]]) -> list[Chunk]:
        """Chunks for ingest: ids '<doc id>#<n>', the record's fields (never its typed
        document), doc_id, position, chunks_in_doc and the provenance keys."""
        out: list[Chunk] = []
        for record in documents:
            doc = structure_of(record)
            doc_id = str(record["id"])
            base = {k: v for k, v in record.items() if k not in ("id", "text", STRUCTURE_KEY)}
            pieces = self.pieces(doc)
            for i, piece in enumerate(pieces):
                section = piece.section
                meta = {**base, "doc_id": doc_id, "position": i, "chunks_in_doc": len(pieces),
                        "source": doc.source or str(base.get("source") or ""),
                        "doc_title": doc.title, "title": chunk_title(doc, section),
                        "section": section.path_text() if section is not None else "",
                        "section_id": section.id if section is not None else "",
                        "page_start": min(piece.pages, default=0),
                        "page_end": max(piece.pages, default=0), "kind": piece.kind}
                out.append(Chunk(id=f"{doc_id}#{i}", text=piece.text, meta=meta,
                                 context=chunk_context(doc, section)
                                 if self.params.context_header else ""))
        return out
