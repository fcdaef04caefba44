"""Answer generation with citations."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._answers import short_answer
from .._text import cited_ids, fill, first_line, passages, strip_citations

ANSWER_PROMPT = (
    "Answer the question using only the passages. Reply with the shortest answer: a name, a date, "
    "a number, or yes or no. Do not write a sentence.\n\n{passages}\n\n"
    "Question: {question}\nAnswer:")
CLOSED_BOOK_PROMPT = ("Answer the question with the shortest answer: a name, a date, a number, or "
                      "yes or no. Do not write a sentence.\n\nQuestion: {question}\nAnswer:")


@operator("generation.answer", version="2")
class Answer(Operator["Answer.Params"]):
    """Write the answer from the retrieved passages and cite them by id.

    Each passage shows at most `passage_chars` characters; a chunk of a document's structure
    (a table's rows, a section's prose) longer than that shows the part that bears on the
    question: a table its caption, header and the rows sharing most words with it, prose the run
    of sentences that does.
    Passages are shown numbered ([1], [2], ...); the numbers the model writes map back to
    document ids in `citations`. Without passages it answers closed-book. Each answer is also kept
    in `drafts`, so loops can build on the previous round.
    """

    class Params(OperatorParams):
        prompt: str = Field(ANSWER_PROMPT, min_length=10, description="Template with {passages} "
                            "and {question} slots (plain replacement, no code)")
        top_n: int = Field(5, ge=1, le=50, description="Passages shown to the model")
        max_tokens: int = Field(64, ge=1, le=2048, description="Longest answer in tokens")
        passage_chars: int = Field(600, ge=50, le=4000, description="Characters kept per passage")
        use_history: bool = Field(False, description="Show the chain so far (sub-questions and "
                                  "their answers, thoughts) before the passages")
        use_evidence: bool = Field(False, description="Show the evidence notes kept in working "
                                   "memory before the passages")
        max_history: int = Field(6, ge=1, le=50, description="Latest chain entries shown")

    reads = ("question",)
    optional_reads = ("documents", "drafts", "history", "evidence")
    writes = ("answer", "citations", "drafts")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        docs = list(memory.get("documents") or [])
        notes = known_facts(memory, p.use_history, p.use_evidence, p.max_history)
        if docs:
            shown = passages(docs, p.top_n, p.passage_chars, str(memory["question"]))
            prompt = fill(p.prompt, "params.prompt", question=memory["question"],
                          passages=f"{notes}\n\n{shown}" if notes else shown)
        elif notes:
            prompt = fill(p.prompt, "params.prompt", question=memory["question"], passages=notes)
        else:
            prompt = fill(CLOSED_BOOK_PROMPT, "params.prompt", question=memory["question"])
        out = ctx.llm.complete(prompt, max_tokens=p.max_tokens)
        # the first line without a lead-in; what the model wrote when that leaves nothing
        answer = short_answer(out.text) or first_line(strip_citations(out.text))
        return {"answer": answer, "citations": cited_ids(out.text, docs, p.top_n),
                "drafts": [*(memory.get("drafts") or []), answer]}


def known_facts(memory: MemoryView, use_history: bool, use_evidence: bool,
                limit: int) -> str:
    """'Known facts' lines from the chain (sub-question -> sub-answer) and the evidence notes."""
    lines: list[str] = []
    if use_history:
        for h in list(memory.get("history") or [])[-limit:]:
            if h.get("sub_question") and h.get("sub_answer"):
                lines.append(f"- {h['sub_question']} {h['sub_answer']}")
            elif h.get("thought"):
                lines.append(f"- {h['thought']}")
    if use_evidence:
        lines += [f"- {e}" for e in list(memory.get("evidence") or [])[-limit:]
                  if e and "no information found" not in e.lower()]
    return ("Known facts:\n" + "\n".join(lines)) if lines else ""
