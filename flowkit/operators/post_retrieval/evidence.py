"""The evidence reflector of an agent loop (Agent-UniRAG, Pham et al. 2025)."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._text import fill, first_line, passages

REFLECT_PROMPT = ("{passages}\n\nQuestion: {question}\nWrite the one fact from the passages that "
                  "helps answer the question. If none helps, write: No information found.\nFact:")
NONE = "No information found"


@operator("post_retrieval.evidence_reflector")
class EvidenceReflector(Operator["EvidenceReflector.Params"]):
    """Read the passages just retrieved and keep only what matters for the current search, as one
    short evidence note in working memory, or "No information found" (Agent-UniRAG's evidence
    reflector). A search that found nothing gives that note without an LLM call."""

    class Params(OperatorParams):
        top_n: int = Field(3, ge=1, le=20, description="Passages read")
        max_tokens: int = Field(48, ge=8, le=512, description="Longest note in tokens")
        passage_chars: int = Field(500, ge=50, le=4000, description="Characters kept per passage")

    reads = ("question", "documents")
    optional_reads = ("queries", "evidence")
    writes = ("evidence", "history")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        target = (memory.get("queries") or [memory["question"]])[-1]
        docs = list(memory.get("documents") or [])
        if not docs:   # the search found nothing: that is the note, and no LLM call is spent
            return {"evidence": [*(memory.get("evidence") or []), NONE],
                    "history": [{"evidence": NONE, "query": target}]}
        prompt = fill(REFLECT_PROMPT, "prompt", question=target,
                      passages=passages(docs, self.params.top_n, self.params.passage_chars))
        note = first_line(ctx.llm.complete(prompt, max_tokens=self.params.max_tokens).text)
        if not note or "no information" in note.lower():
            note = NONE
        return {"evidence": [*(memory.get("evidence") or []), note],
                "history": [{"evidence": note, "query": target}]}
