"""Metadata attachment: chunks carry title, source, position, size and user fields for filtering."""
from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from ...context import RunContext
from ...contract import operator
from ...errors import OperatorInputError
from ...memory import Doc, MemoryView
from ...runtime.kb import Chunk
from .chunking import FixedChunker

#: metadata names the indexing operators own; user fields may not overwrite them
RESERVED = ("doc_id", "title", "source", "position", "chunks_in_doc", "word_count", "level",
            "parent_id", "parent_text", "parent_position")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")
Value = str | int | float | bool


@operator("indexing.metadata")
class MetadataChunker(FixedChunker):
    """Attach metadata to every chunk (title, source, position, word count and your own fields)
    so that retrieval can filter on it with the `where` param.

    Metadata-enriched indexing from the Modular RAG survey (Gao et al., 2024) and LlamaIndex's
    metadata extractors: chunks are cut like `indexing.chunk_fixed`; each keeps doc_id, title,
    source, position (0-based within its document), chunks_in_doc and word_count, plus the `fields`
    you give (for example {"shelf": "history"}), which `retrieval.dense` / `retrieval.bm25` can
    filter on (`where`). With `title_prefix` the title is also written in front of the chunk text
    (a contextual chunk header), so the embedding knows what the chunk is about. In a flow it
    re-chunks the documents in memory and attaches the same metadata to them.
    """

    class Params(FixedChunker.Params):
        fields: dict[str, Value] = Field(
            default_factory=dict, max_length=20,
            description="Metadata added to every chunk, e.g. {\"shelf\": \"history\", \"year\": "
                        "1990}; names are letters, digits and '_' (not a built-in name)")
        title_prefix: bool = Field(False, description="Write '<title>: ' in front of each chunk's "
                                   "text (contextual chunk header)")

        @field_validator("fields")
        @classmethod
        def _field_names(cls, v: dict[str, Value]) -> dict[str, Value]:
            for name, value in v.items():
                if not _FIELD_NAME.match(name):
                    raise ValueError(f"field name '{name}' must be letters, digits or '_' "
                                     "(at most 40, not starting with a digit)")
                if name in RESERVED:
                    raise ValueError(f"field name '{name}' is built in; choose another name")
                if isinstance(value, str) and len(value) > 200:
                    raise ValueError(f"field '{name}': values are at most 200 characters")
            return v

    params: MetadataChunker.Params   # the fixed-size params plus this chunker's own

    def enrich(self, text: str, meta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The chunk text (maybe title-prefixed) and its metadata with the fields attached."""
        title = str(meta.get("title") or "")
        out = {**meta, "word_count": len(text.split()), **self.params.fields}
        if self.params.title_prefix and title and not text.startswith(title):
            text = f"{title}: {text}"
        return text, out

    def chunk(self, documents: list[dict[str, Any]]) -> list[Chunk]:
        out: list[Chunk] = []
        for c in super().chunk(documents):
            meta = {"title": "", "source": "", **c.meta}
            text, meta = self.enrich(c.text, meta)
            out.append(Chunk(id=c.id, text=text, meta=meta))
        return out

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = memory.get("documents") or []
        if not docs:
            raise OperatorInputError("documents", "nothing to attach metadata to: no documents "
                                     "in memory; put a retrieval operator before this node")
        out: list[Doc] = []
        for d in docs:
            base = dict(d.get("meta") or {})
            pieces = self.split(d.get("text") or "")
            for i, piece in enumerate(pieces):
                meta = {**base, "doc_id": str(base.get("doc_id") or d.get("id")),
                        "title": d.get("title", "") or str(base.get("title") or ""),
                        "source": str(base.get("source") or ""), "parent_id": d.get("id"),
                        "position": i, "chunks_in_doc": len(pieces)}
                text, meta = self.enrich(piece, meta)
                out.append(Doc(id=f"{d.get('id')}/{i}", text=text, title=meta["title"],
                               score=float(d.get("score", 0.0)), meta=meta))
        return {"documents": out}
