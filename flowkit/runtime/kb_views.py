"""Views of a chunk: the short texts a knowledge base searches besides the chunk itself.

A structure chunk holds up to ~180 words: a section's sentences, or a table's caption, header and
many rows. Searched whole, one row among twenty is a small part of the chunk's words (BM25) and of
its embedding, which also reads only its first 256 word pieces, so a table's later rows are not
embedded at all. On the SQLite manual bench the chunk holding "16 | 2 | The database page size in
bytes" ranked 13th for "At which byte offset of the database file header is the page size
stored?".

So a chunk of a structure-aware chunker with several rows or sentences is also indexed by views:
- each table **row** with the table's caption and header line before it (what the row means):
  in the BM25 index and embedded (in a dense index of its own, `kv_<name>`);
- each run of `SENTENCES` consecutive **sentences** of its prose (stride 1): in the BM25 index
  only (a chunk's prose is within what its own embedding reads; embedding every run would
  triple the ingest's time for one more question of 45 found on the bench).
A view stands for its chunk: a search returns chunks only, each at the rank and score of the best
of itself and its views (`best_of`). What a reader sees, and what is stored and listed as the
knowledge base's chunks, do not change. On the bench (45 questions, 406 chunks, 2,499 views of
which 133 rows) evidence recall@5 of the hybrid search went from 39 to 40 questions (41 in an
in-memory trial that embedded each view under the chunk's title instead of its section path).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..documents.model import table_runs
from ..text import split_sentences

#: sentences in one prose view
SENTENCES = 2
#: a caption is a short line right above a table's header
CAPTION_MAX_WORDS = 14
#: separator between a view's id and its chunk's id
VIEW_MARK = "::v"


@dataclass(frozen=True)
class View:
    """One view: its id (`<chunk id>::v<n>`), the chunk it stands for, its text, and whether it
    is a table row (row views are embedded as well; sentence views are searched by BM25 only)."""

    id: str
    parent: str
    text: str
    row: bool


def _table_views(lines: Sequence[str]) -> tuple[list[str], set[int]]:
    """Row views of every run of table lines in `lines` and the indexes of the lines used."""
    views: list[str] = []
    used: set[int] = set()
    for start, end in table_runs(lines):
        header, rows = lines[start], lines[start + 1:end]
        above = lines[start - 1].strip() if start > 0 else ""
        caption = above if above and len(above.split()) <= CAPTION_MAX_WORDS else ""
        head = f"{caption}\n{header}" if caption else header
        views.extend(f"{head}\n{row}" for row in rows if row.strip())
        used.update(range(start - (1 if caption else 0), end))
    return views, used


def view_texts(text: str) -> list[tuple[str, bool]]:
    """The views of one chunk's text as (text, is a row): a row view per table row, then the
    prose's runs of `SENTENCES` sentences. A chunk with a single row or at most `SENTENCES`
    sentences has none of that kind (the chunk is its own view)."""
    lines = text.split("\n")
    rows, used = _table_views(lines)
    prose = "\n".join(ln for i, ln in enumerate(lines) if i not in used)
    sentences = [s for s in split_sentences(prose) if s.strip()]
    runs = ([" ".join(sentences[i:i + SENTENCES]) for i in range(len(sentences) - SENTENCES + 1)]
            if len(sentences) > SENTENCES else [])
    return [(r, True) for r in (rows if len(rows) > 1 else [])] + [(r, False) for r in runs]


def has_views(meta: Mapping[str, Any] | None) -> bool:
    """Whether a chunk gets views: chunks of a structure-aware chunker (they carry `kind`);
    fixed windows (the sample knowledge base, datasets' corpora) are searched as they were."""
    return (meta or {}).get("kind") in ("text", "table")


def views_of(chunks: Iterable[tuple[str, str, Mapping[str, Any] | None]]) -> list[View]:
    """Views of (chunk id, text, metadata) triples whose chunk gets views, numbered per chunk."""
    return [View(f"{cid}{VIEW_MARK}{n}", cid, text, row)
            for cid, chunk_text, meta in chunks if has_views(meta)
            for n, (text, row) in enumerate(view_texts(chunk_text))]


def best_of(ranked: Iterable[tuple[str, float]], parents: Mapping[str, str],
            k: int) -> list[tuple[str, float]]:
    """Ranked (id, score) hits of chunks and views -> the first `k` distinct chunks, each at the
    rank and score of its best hit (`parents` maps a view id to its chunk's id)."""
    out: dict[str, float] = {}
    for hid, score in ranked:
        cid = parents.get(hid, hid)
        if cid not in out:
            out[cid] = score
            if len(out) == k:
                break
    return list(out.items())
