"""Where a chunk came from, as chunk metadata and as the line shown under a passage.

The metadata keys a structure-aware chunker writes (all Chroma scalars):

- `source`: the file as its user named it ('manual/ddl.pdf', a path inside a folder or zip);
- `doc_title`: the document's title; `section`: its heading path joined by " > " ("" before the
  first heading); `section_id`: the section's id in its document ('s12');
- `page_start`, `page_end`: the first and last 1-based page the chunk's text lies on (0 where the
  format has no pages);
- `kind`: 'text' or 'table' (a chunk of one table's rows, its header and caption repeated).

`provenance(meta)` turns them into "ddl.pdf p. 23-24, 5.11 Table Partitioning > 5.11.2
Declarative Partitioning"; a chunk without them (older knowledge bases, .jsonl records) shows its
source or title alone. Gold passages may name a place the same way (`gold_place`): "file.pdf#p23",
"file.pdf#p23-24", "file.html#s4" (a section id), or a document id.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The chunk metadata keys of provenance, in the order they are shown.
PROVENANCE_KEYS = ("source", "doc_title", "section", "section_id", "page_start", "page_end", "kind")


def _page(value: object) -> int:
    """A page number from chunk metadata (an int, or text of one); 0 for anything else."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float, str)):
        try:
            return int(value or 0)
        except ValueError:
            return 0
    return 0


def pages_text(meta: Mapping[str, Any]) -> str:
    """'p. 23', 'pp. 23-24', or '' when the chunk has no pages."""
    start, end = _page(meta.get("page_start")), _page(meta.get("page_end"))
    if start <= 0:
        return ""
    return f"p. {start}" if end <= start else f"pp. {start}-{end}"


def provenance(meta: Mapping[str, Any] | None) -> str:
    """The line shown under a passage: file, pages and section path, as far as they are known."""
    meta = meta or {}
    source = str(meta.get("source") or "")
    head = " ".join(x for x in (source, pages_text(meta)) if x)
    section = str(meta.get("section") or "")
    if head and section:
        return f"{head}, {section}"
    return head or section or str(meta.get("title") or "")


@dataclass(frozen=True)
class GoldPlace:
    """A gold passage's place: a document (`doc`: its id or file name) and optionally a page range
    or a section id."""

    doc: str
    first_page: int = 0
    last_page: int = 0
    section_id: str = ""


_PAGES = re.compile(r"p(\d+)(?:-(\d+))?")
_SECTION = re.compile(r"s\d+")


def gold_place(text: str) -> GoldPlace:
    """'file.pdf#p23' -> pages 23..23; 'file.pdf#p23-25'; 'file.html#s4' -> section s4; anything
    else names a whole document (a doc id, a file name, a chunk id 'doc#3' of the old kind)."""
    doc, sep, frag = str(text).rpartition("#")
    if sep and (m := _PAGES.fullmatch(frag)):
        first = int(m.group(1))
        return GoldPlace(doc, first, int(m.group(2) or first))
    if sep and _SECTION.fullmatch(frag):
        return GoldPlace(doc, section_id=frag)
    return GoldPlace(str(text))


def chunk_at(place: GoldPlace, chunk_id: str, meta: Mapping[str, Any]) -> bool:
    """Whether a retrieved chunk overlaps a gold place: the same document (its doc id, source or
    the source's file name) and, where the place names pages or a section, overlapping pages or
    the same section; a place naming a whole document also matches the chunk id itself."""
    names = {str(meta.get("doc_id") or ""), str(meta.get("source") or ""),
             str(meta.get("source") or "").rsplit("/", 1)[-1]} - {""}
    if place.doc not in names:
        return place.first_page == 0 and not place.section_id and place.doc == chunk_id
    if place.section_id:
        return str(meta.get("section_id") or "") == place.section_id
    if place.first_page:
        start, end = _page(meta.get("page_start")), _page(meta.get("page_end"))
        return start > 0 and start <= place.last_page and max(end, start) >= place.first_page
    return True
