"""Hierarchical index: one LLM summary per document on top of its chunks; search summaries first."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from ...context import ModelLLM, Resources, RunContext
from ...contract import operator
from ...errors import OperatorInputError, ResourceError
from ...memory import Doc, MemoryView
from ...runtime.kb import Chunk, KnowledgeBase
from ...text import split_sentences
from .._text import fill
from .chunking import FixedChunker

SUMMARY_PROMPT = ("Summarise this article in one short sentence.\n\n"
                  "Title: {title}\n{text}\n\nSummary:")
SUMMARIES_FILE = "summaries.json"


def load_summaries(kb_dir: Path | str) -> dict[str, dict[str, str]]:
    """The summaries written at ingest, {doc_id: {"title", "summary"}} ({} when there are none)."""
    path = Path(kb_dir) / SUMMARIES_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ResourceError(f"{path}: not valid JSON ({err.msg}); ingest again") from None
    return {str(k): dict(v) for k, v in (data.get("summaries") or {}).items()}


@operator("indexing.hierarchical")
class Hierarchical(FixedChunker):
    """Hierarchical index: search document summaries first, then the chunks of the documents found.

    The hierarchical index structure of the Modular RAG survey (Gao et al., 2024), as in
    LlamaIndex's document-summary index and RAPTOR's summary tree (Sarthi et al., 2024), here with
    two levels. At ingest the documents are chunked like `indexing.chunk_fixed` (meta
    level="chunk"); then the LLM writes a one-sentence summary per document (stored in
    summaries.json in the knowledge base's folder) and the summaries are indexed too, as chunks with
    meta level="summary". In a flow it searches the summaries (dense, where level="summary"), takes
    the `top_docs` best documents and searches within each (where doc_id=...), writing their best
    `top_k` chunks as documents.
    """

    class Params(FixedChunker.Params):
        summary_prompt: str = Field(SUMMARY_PROMPT, min_length=10, description="Summary template "
                                    "with {title} and {text} slots (plain replacement)")
        summary_tokens: int = Field(48, ge=8, le=256, description="Longest summary in tokens")
        summary_chars: int = Field(800, ge=100, le=8000, description="Characters of each document "
                                   "shown to the summariser")
        top_docs: int = Field(2, ge=1, le=20, description="Documents chosen from the summaries")
        top_k: int = Field(3, ge=1, le=50, description="Chunks kept per chosen document")
        include_summaries: bool = Field(False, description="Also write the chosen summaries as "
                                        "documents, before each document's chunks")

    params: Hierarchical.Params   # the fixed-size params plus this chunker's own

    reads = ("question",)
    writes = ("documents",)

    def chunk(self, documents: list[dict[str, Any]]) -> list[Chunk]:
        return [Chunk(id=c.id, text=c.text, meta={**c.meta, "level": "chunk"})
                for c in super().chunk(documents)]

    def summarise(self, llm: ModelLLM, doc: Mapping[str, Any]) -> str:
        """One short summary; the document's first sentence when the model writes nothing usable."""
        p = self.params
        text = str(doc.get("text") or "")
        prompt = fill(p.summary_prompt, "params.summary_prompt", title=str(doc.get("title") or ""),
                      text=text[: p.summary_chars])
        out = llm.complete(prompt, max_tokens=p.summary_tokens, stop=["\n\n"])
        summary = " ".join(out.text.split())
        if len(summary.split()) < 3:
            sents = split_sentences(text)
            summary = sents[0] if sents else text[:200]
        return summary

    def after_ingest(self, kb: KnowledgeBase, resources: Resources,
                     documents: list[dict[str, Any]]) -> None:
        """Summarise every document, save summaries.json in kb.dir and index the summaries."""
        summaries = load_summaries(kb.dir)
        chunks: list[Chunk] = []
        for d in documents:
            doc_id, title = str(d["id"]), str(d.get("title") or "")
            summary = self.summarise(resources.llm, d)
            summaries[doc_id] = {"title": title, "summary": summary}
            meta = {k: v for k, v in d.items() if k not in ("id", "text")}
            meta.update(doc_id=doc_id, level="summary", position=-1)
            text = f"{title}: {summary}" if title and not summary.startswith(title) else summary
            chunks.append(Chunk(id=f"{doc_id}#summary", text=text, meta=meta))
        Path(kb.dir).mkdir(parents=True, exist_ok=True)
        path = Path(kb.dir) / SUMMARIES_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"model": str(getattr(resources.llm, "model_id", "llm")),
                                   "summaries": summaries}, indent=2), encoding="utf-8")
        tmp.replace(path)
        kb.add(chunks)

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        question = str(memory.get("question") or "").strip()
        if not question:
            raise OperatorInputError("question", "the question is empty")
        tops = ctx.kb.dense(question, p.top_docs, {"level": "summary"})
        ctx.record_retrieval(question, "dense:summaries", tops)
        if not tops:
            raise ResourceError(f"knowledge base '{ctx.kb_name}' has no document summaries; "
                                "ingest it with the indexing.hierarchical chunker")
        out: list[Doc] = []
        for s in tops:
            doc_id = str((s.get("meta") or {}).get("doc_id") or "")
            if not doc_id:
                continue
            if p.include_summaries:
                out.append(s)
            hits = ctx.kb.dense(question, p.top_k + 1, {"doc_id": doc_id})
            hits = [h for h in hits if (h.get("meta") or {}).get("level") != "summary"][: p.top_k]
            ctx.record_retrieval(question, f"dense:doc_id={doc_id}", hits)
            out += hits
        return {"documents": out}
