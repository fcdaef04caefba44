"""Chain and tree questions: the next sub-question of a retrieval chain (CoRAG), and clarifying
sub-questions derived from each answer (Tree of Clarifications)."""
from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._text import fill, first_line, parse_lines

NEXT_PROMPT = ("Main question: {question}\n{chain}\nWrite the next short search question that helps "
               "answer the main question. Write only the question.\nNext question:")
CLARIFY_PROMPT = ("Question: {question}\n{chain}\nWrite {n} short follow-up questions that would "
                  "check or complete this answer: {focus}\nOne per line.")


def chain_text(memory: MemoryView, limit: int = 6) -> str:
    """'Known so far' lines from the history's sub-question / sub-answer pairs."""
    pairs = [h for h in memory.get("history") or [] if h.get("sub_question")]
    if not pairs:
        return "Known so far: nothing yet."
    return "Known so far:\n" + "\n".join(f"- {h['sub_question']} {h.get('sub_answer', '')}"
                                        for h in pairs[-limit:])


def _clean_question(text: str) -> str:
    line = first_line(text)
    line = re.sub(r"^(next question|question|sub-question)\s*\d*\s*:\s*", "", line, flags=re.I)
    return line.strip().strip('"').strip()


@operator("pre_retrieval.next_subquestion")
class NextSubQuestion(Operator["NextSubQuestion.Params"]):
    """Write the next sub-question of a retrieval chain from the question and the chain so far
    (CoRAG, Wang et al. 2025: chain-of-retrieval, one sub-question, retrieval and sub-answer per
    step). The sub-question becomes the search query."""

    class Params(OperatorParams):
        prompt: str = Field(NEXT_PROMPT, min_length=10, description="Template with {question} and "
                            "{chain} slots")
        max_tokens: int = Field(40, ge=8, le=256, description="Longest sub-question in tokens")

    reads = ("question",)
    optional_reads = ("history", "sub_questions")
    writes = ("queries", "sub_questions")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        prompt = fill(self.params.prompt, "params.prompt", question=memory["question"],
                      chain=chain_text(memory))
        sub = _clean_question(ctx.llm.complete(prompt, max_tokens=self.params.max_tokens).text)
        asked = [q.lower() for q in memory.get("sub_questions") or []]
        if len(sub) < 5 or sub.lower() in asked:
            sub = memory["question"]              # the model repeated itself: search the question
        return {"queries": [sub], "sub_questions": [*(memory.get("sub_questions") or []), sub]}


@operator("pre_retrieval.clarify")
class Clarify(Operator["Clarify.Params"]):
    """Tree of clarifications (Kim et al. 2023): each round derives follow-up sub-questions from the
    latest answers (the question itself in the first round), `breadth` per answer. The new
    sub-questions become the search queries; a depth-limiting judge ends the recursion."""

    class Params(OperatorParams):
        breadth: int = Field(2, ge=1, le=5, description="Sub-questions derived from each answer")
        max_tokens: int = Field(60, ge=8, le=256, description="Tokens per expansion")

    reads = ("question",)
    optional_reads = ("history", "sub_questions")
    writes = ("queries", "sub_questions")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        hist = [h for h in memory.get("history") or [] if h.get("sub_question")]
        level = max((int(h.get("level", 1)) for h in hist), default=0)
        focus = [h.get("sub_answer", "") for h in hist if int(h.get("level", 1)) == level] \
            if hist else [memory["question"]]
        asked = {q.lower() for q in memory.get("sub_questions") or []}
        new: list[str] = []
        for f in focus[:3]:
            prompt = fill(CLARIFY_PROMPT, "prompt", question=memory["question"],
                          chain=chain_text(memory), n=str(self.params.breadth), focus=f or "(none)")
            text = ctx.llm.complete(prompt, max_tokens=self.params.max_tokens).text
            for q in parse_lines(text, self.params.breadth):
                if q.lower() not in asked and q not in new:
                    new.append(q)
        if not new:
            new = [memory["question"]] if memory["question"].lower() not in asked else []
        return {"queries": new or [memory["question"]],
                "sub_questions": [*(memory.get("sub_questions") or []), *new]}
