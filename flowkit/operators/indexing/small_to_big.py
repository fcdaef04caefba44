"""Small-to-big retrieval: index small chunks, hand their larger parent passages to generation."""
from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from ...context import RunContext
from ...contract import OperatorParams, operator
from ...errors import OperatorInputError
from ...memory import Doc, MemoryView
from ...runtime.kb import Chunk
from ...text import split_sentences
from .chunking import Chunker
from .sentences import pack_sentences


@operator("indexing.small_to_big")
class SmallToBig(Chunker["SmallToBig.Params"]):
    """Small-to-big: search small chunks for precision, then give generation their parent passages
    for context.

    From the Modular RAG survey's indexing optimisations (Gao et al., 2024) and LlamaIndex's
    parent-document / auto-merging retrievers. At ingest each document is packed into parent
    passages of about `parent_words` words (whole sentences); each parent is cut into small chunks
    of `child_words` words, and only the small chunks are indexed, their metadata carrying the
    parent's id and text. In a flow, placed after retrieval, it replaces each retrieved small
    chunk by its parent passage: parents are deduplicated (keeping the best score), ranked by that
    score, and retrieved passages without a parent are kept as they are.
    """

    class Params(OperatorParams):
        parent_words: int = Field(200, ge=10, le=4000, description="Words per parent passage "
                                  "(whole sentences, packed up to this budget)")
        child_words: int = Field(40, ge=5, le=1000, description="Words per small indexed chunk")
        child_overlap: int = Field(10, ge=0, le=500, description="Words shared by consecutive "
                                   "small chunks of the same parent")
        top_k: int = Field(5, ge=1, le=100, description="Parent passages kept in a flow")

        @model_validator(mode="after")
        def _sizes(self) -> SmallToBig.Params:
            if self.child_words >= self.parent_words:
                raise ValueError(f"child_words ({self.child_words}) must be smaller than "
                                 f"parent_words ({self.parent_words})")
            if self.child_overlap >= self.child_words:
                raise ValueError(f"child_overlap ({self.child_overlap}) must be smaller than "
                                 f"child_words ({self.child_words})")
            return self

    reads = ("documents",)
    writes = ("documents",)

    def parents(self, text: str) -> list[str]:
        return pack_sentences(split_sentences(text), self.params.parent_words)

    def children(self, parent: str) -> list[str]:
        words = parent.split()
        size, step = self.params.child_words, self.params.child_words - self.params.child_overlap
        out = []
        for start in range(0, len(words), step):
            out.append(" ".join(words[start:start + size]))
            if start + size >= len(words):
                break
        return out

    def split(self, text: str) -> list[str]:
        """The small chunks of a text (what gets indexed)."""
        return [c for p in self.parents(text) for c in self.children(p)]

    def chunk(self, documents: list[dict[str, Any]]) -> list[Chunk]:
        """Small chunks '<doc>#<n>' whose metadata holds parent_id '<doc>#p<j>' and parent_text."""
        out: list[Chunk] = []
        for d in documents:
            base = {k: v for k, v in d.items() if k not in ("id", "text")}
            doc_id = str(d["id"])
            small: list[tuple[int, str, str]] = []
            for j, parent in enumerate(self.parents(str(d.get("text") or ""))):
                small += [(j, parent, child) for child in self.children(parent)]
            for n, (j, parent, child) in enumerate(small):
                meta = {**base, "doc_id": doc_id, "position": n, "chunks_in_doc": len(small),
                        "level": "small", "parent_id": f"{doc_id}#p{j}", "parent_position": j,
                        "parent_text": parent}
                out.append(Chunk(id=f"{doc_id}#{n}", text=child, meta=meta))
        return out

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = list(memory.get("documents") or [])
        if not docs:
            raise OperatorInputError("documents", "no retrieved chunks to expand; put a retrieval "
                                     "operator before this node")
        best: dict[str, Doc] = {}
        expanded = 0
        for d in docs:
            meta = dict(d.get("meta") or {})
            parent_id, parent_text = meta.get("parent_id"), meta.get("parent_text")
            score = float(d.get("score", 0.0))
            if parent_id and parent_text:
                expanded += 1
                key = str(parent_id)
                small_ids = [*(best[key]["meta"].get("small_ids", []) if key in best else []),
                             d.get("id")]
                keep = {k: v for k, v in meta.items() if k not in ("parent_text", "position",
                                                                    "chunks_in_doc", "level")}
                doc = Doc(id=key, text=str(parent_text), title=d.get("title", ""),
                          score=max(score, float(best[key]["score"])) if key in best else score,
                          meta={**keep, "level": "parent", "small_ids": small_ids})
            else:
                key = str(d.get("id"))
                doc = Doc(**d) if key not in best else Doc(**{**best[key], "score": max(
                    score, float(best[key]["score"]))})
            best[key] = doc
        if not expanded:
            raise OperatorInputError("documents", f"none of the {len(docs)} documents carries a "
                                     "parent passage (meta parent_id / parent_text); ingest the "
                                     "knowledge base with indexing.small_to_big")
        ranked = sorted(best.values(), key=lambda d: -float(d.get("score", 0.0)))
        return {"documents": ranked[: self.params.top_k]}
