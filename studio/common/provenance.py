"""Where a shown passage came from: the small line under its title on the Run page, the replay,
the Compare page and the Knowledge page ("ddl.pdf p. 23, 5.11 Table Partitioning > 5.11.2 ...").
No Streamlit here: `provenance_panel.caption` draws the line.

The text itself is `flowkit.documents.provenance.provenance(meta)` (through service.knowledge); this module decides when it
is worth a line and finds a passage's metadata where the passage itself lacks it:

- a passage from a search or from working memory carries `meta` (a `Doc`);
- a passage in a step's recorded retrievals may carry only id, title, score and text, so its
  metadata is looked up by id in the documents of the run's working memory (`known_meta`).

A line is shown only when it adds something beyond the title: the chunk names pages or a section
(chunks of the structure-aware chunker do; a chunk of the older chunkers names only its file,
which its title already says), and the line is not the title itself.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from service.knowledge import pages_text, provenance

#: A passage's metadata by chunk id (built by `known_meta`).
MetaIndex = dict[str, Mapping[str, Any]]


def _documents(memory: Mapping[str, Any] | None) -> Iterable[Mapping[str, Any]]:
    for d in (memory or {}).get("documents") or []:
        if isinstance(d, Mapping) and d.get("id") and isinstance(d.get("meta"), Mapping):
            yield d


def known_meta(memories: Iterable[Mapping[str, Any] | None]) -> MetaIndex:
    """Chunk id -> metadata, from the `documents` of working memories (a run's final memory, its
    steps' memory before and after): the first one seen for an id is kept."""
    out: MetaIndex = {}
    for memory in memories:
        for d in _documents(memory):
            out.setdefault(str(d["id"]), d["meta"])
    return out


def meta_of(passage: Mapping[str, Any], known: Mapping[str, Mapping[str, Any]] | None = None
            ) -> Mapping[str, Any]:
    """The passage's own metadata, else what `known` holds for its id, else {}."""
    meta = passage.get("meta")
    if isinstance(meta, Mapping) and meta:
        return meta
    return (known or {}).get(str(passage.get("id") or ""), {})


def line(passage: Mapping[str, Any], known: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The provenance line of a passage, or "" when it would add nothing beyond its title (no
    pages and no section known, or the same text as the title)."""
    meta = meta_of(passage, known)
    if not (pages_text(meta) or str(meta.get("section") or "")):
        return ""
    text = provenance(meta)
    title = str(passage.get("title") or meta.get("title") or "")
    return "" if text.strip() == title.strip() else text
