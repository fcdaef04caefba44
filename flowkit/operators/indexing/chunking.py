"""Chunking operators. Each also offers `chunk(documents)` used by `flowkit ingest`."""
from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import Field, model_validator

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...documents.model import STRUCTURE_KEY
from ...errors import OperatorInputError
from ...memory import Doc, MemoryView
from ...runtime.kb import Chunk

META_KEYS = ("title", "source")


CP = TypeVar("CP", bound=OperatorParams)


class Chunker(Operator[CP]):
    """Base for chunkers: split each document's text, keep its metadata and position."""

    reads: ClassVar[tuple[str, ...]] = ("documents",)
    writes: ClassVar[tuple[str, ...]] = ("documents",)

    def split(self, text: str) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def chunk(self, documents: list[dict[str, Any]]) -> list[Chunk]:
        """Chunks for ingest: ids '<doc id>#<n>', metadata doc_id, title, source, position + extras
        (every record field but id, text and the typed document under STRUCTURE_KEY)."""
        out: list[Chunk] = []
        for d in documents:
            pieces = self.split(str(d.get("text") or ""))
            for i, piece in enumerate(pieces):
                meta = {k: v for k, v in d.items() if k not in ("id", "text", STRUCTURE_KEY)}
                meta.update(doc_id=str(d["id"]), position=i, chunks_in_doc=len(pieces))
                out.append(Chunk(id=f"{d['id']}#{i}", text=piece, meta=meta))
        return out

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = memory.get("documents") or []
        if not docs:
            raise OperatorInputError("documents", "nothing to chunk: no documents in memory")
        out: list[Doc] = []
        for d in docs:
            for i, piece in enumerate(self.split(d.get("text") or "")):
                out.append(Doc(id=f"{d.get('id')}/{i}", text=piece, title=d.get("title", ""),
                               score=float(d.get("score", 0.0)),
                               meta={**(d.get("meta") or {}), "parent_id": d.get("id"), "position": i}))
        return {"documents": out}


@operator("indexing.chunk_fixed")
class FixedChunker(Chunker["FixedChunker.Params"]):
    """Fixed-size chunking with overlap: windows of `size` words, each starting `size - overlap`
    words after the previous one. The simplest and most common indexing strategy."""

    class Params(OperatorParams):
        size: int = Field(120, ge=10, le=4000, description="Words per chunk")
        overlap: int = Field(20, ge=0, le=2000, description="Words shared with the previous chunk")

        @model_validator(mode="after")
        def _overlap_below_size(self) -> FixedChunker.Params:
            if self.overlap >= self.size:
                raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
            return self

    def split(self, text: str) -> list[str]:
        words = text.split()
        if not words:
            return []
        step = self.params.size - self.params.overlap
        out = []
        for start in range(0, len(words), step):
            out.append(" ".join(words[start:start + self.params.size]))
            if start + self.params.size >= len(words):
                break
        return out
