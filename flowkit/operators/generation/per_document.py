"""Post-retrieval branching: one answer per retrieved document, then a vote over the answers."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from ...text import normalize_answer
from .._text import fill, first_line, require_docs, strip_citations

PER_DOC_PROMPT = ("Answer the question using only the passage. Reply with the shortest answer "
                  "(a few words).\n\nPassage: {passage}\n\n"
                  "Question: {question}\nAnswer:")


@operator("generation.answer_per_document")
class AnswerPerDocument(Operator["AnswerPerDocument.Params"]):
    """Answer once per retrieved document, then keep the answer most drafts agree on.

    Post-retrieval branching from the Modular RAG survey (Gao et al., 2024), as in REPLUG (Shi et
    al., 2023): each of the top `top_n` documents is shown to the model alone, giving one draft per
    document (in document order); the drafts are normalised (case, punctuation, articles) and the
    most common one wins (`vote`="count"), or the one whose documents have the highest summed
    retrieval score (`vote`="score", closer to REPLUG's weighting). Ties go to the draft from the
    better-ranked document. The documents that gave the winning answer are its citations; every
    draft is kept in scratch["per_doc"].
    """

    class Params(OperatorParams):
        prompt: str = Field(PER_DOC_PROMPT, min_length=10, description="Template with {passage} "
                            "and {question} slots (plain replacement, no code)")
        top_n: int = Field(3, ge=1, le=20, description="Documents answered one by one")
        max_tokens: int = Field(32, ge=1, le=512, description="Longest draft in tokens")
        passage_chars: int = Field(600, ge=50, le=4000, description="Characters kept per passage")
        vote: Literal["count", "score"] = Field("count", description="Pick the most frequent "
                                                "answer, or the one with the highest summed "
                                                "retrieval score")

    reads = ("question", "documents")
    optional_reads = ("scratch",)
    writes = ("answer", "citations", "drafts", "scratch")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        docs = require_docs(memory)[: p.top_n]
        per_doc: list[dict[str, Any]] = []
        drafts: list[str] = []
        for d in docs:
            title = f"{d.get('title')}: " if d.get("title") else ""
            passage = title + (d.get("text") or "")[: p.passage_chars].strip()
            out = ctx.llm.complete(fill(p.prompt, "params.prompt", question=memory["question"],
                                        passage=passage), max_tokens=p.max_tokens)
            draft = first_line(strip_citations(out.text))
            drafts.append(draft)
            per_doc.append({"doc_id": d.get("id"), "answer": draft})
        tally: dict[str, float] = {}
        first: dict[str, int] = {}
        for i, (d, draft) in enumerate(zip(docs, drafts)):
            key = normalize_answer(draft)
            if not key:
                continue
            weight = 1.0 if p.vote == "count" else max(float(d.get("score", 0.0)), 1e-6)
            tally[key] = tally.get(key, 0.0) + weight
            first.setdefault(key, i)
        scratch = dict(memory.get("scratch") or {})
        scratch["per_doc"] = per_doc
        if not tally:
            return {"answer": "", "citations": [], "drafts": drafts, "scratch": scratch}
        win = min(tally, key=lambda k: (-tally[k], first[k]))
        scratch["vote"] = {"winner": win, "tally": {k: round(v, 6) for k, v in tally.items()}}
        cites = [str(d.get("id")) for d, draft in zip(docs, drafts)
                 if normalize_answer(draft) == win]
        return {"answer": drafts[first[win]], "citations": cites, "drafts": drafts,
                "scratch": scratch}
