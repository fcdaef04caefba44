"""Step-wise generation for chains and loops: sub-answers (CoRAG, tree of clarifications) and
interleaved chain-of-thought sentences (IRCoT)."""
from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from ...text import split_sentences
from .._answers import real_answer
from .._text import fill, first_line, passages, strip_citations

SUB_PROMPT = ("{passages}\n\nAnswer the question using the passages. Reply with the shortest "
              "answer (a few words).\nQuestion: {question}\nAnswer:")
#: One made-up worked example (text written for flowkit) shows the shape of a reasoning step: a
#: small base model given only an instruction writes placeholders such as "(answer)" instead.
COT_EXAMPLE = (
    "[1] Harlan Mill: Harlan Mill is a watermill on the river Tove, built by Edda Rusk in 1840.\n"
    "[2] Edda Rusk: Edda Rusk (1811-1890) was an engineer born in the town of Pellham.\n"
    "Question: In which town was the builder of Harlan Mill born?\n"
    "Reasoning so far: Harlan Mill was built by Edda Rusk.\n"
    "Next sentence: Edda Rusk was born in Pellham. So the answer is Pellham.\n\n")
COT_PROMPT = ("Write the next sentence of reasoning from the passages. Once the reasoning gives the "
              "answer, end the sentence with \"So the answer is\" and the answer in a few words."
              "\n\n" + COT_EXAMPLE + "{passages}\nQuestion: {question}\n"
              "Reasoning so far: {reasoning}\nNext sentence:")
ANSWER_IS = re.compile(r"answer is\s*:?\s*(.+)", re.I)


def new_sentences(text: str, said: list[str]) -> str:
    """The sentences of `text` not already in `said` (a small model often repeats the reasoning
    so far before, or instead of, its next step)."""
    known = {s.strip().lower() for d in said for s in split_sentences(d)}
    return " ".join(s for s in split_sentences(text) if s.strip().lower() not in known)


@operator("generation.sub_answer")
class SubAnswer(Operator["SubAnswer.Params"]):
    """Answer each pending sub-question (asked but not yet answered) from the passages retrieved for
    it, and append (sub-question, sub-answer) to the chain in `history` (CoRAG's sub-answer step;
    the answer node of each level in a tree of clarifications)."""

    class Params(OperatorParams):
        top_n: int = Field(3, ge=1, le=20, description="Passages shown per sub-question")
        max_tokens: int = Field(32, ge=4, le=512, description="Longest sub-answer in tokens")
        passage_chars: int = Field(500, ge=50, le=4000, description="Characters kept per passage")

    reads = ("sub_questions",)
    optional_reads = ("documents", "candidates", "queries", "history", "drafts")
    writes = ("history", "drafts")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        # by position, not by text: a sub-question asked twice (a small model repeating itself)
        # is answered twice, so the chain still grows and its judge still sees each step
        answered = sum(1 for h in memory.get("history") or [] if h.get("sub_question"))
        pending = list(memory.get("sub_questions") or [])[answered:]
        queries = list(memory.get("queries") or [])
        cands = list(memory.get("candidates") or [])
        level = 1 + max((int(h.get("level", 0)) for h in memory.get("history") or []
                         if h.get("sub_question")), default=0)
        new, drafts = [], list(memory.get("drafts") or [])
        for q in pending:
            docs = cands[queries.index(q)] if q in queries and len(cands) == len(queries) \
                else list(memory.get("documents") or [])
            prompt = fill(SUB_PROMPT, "prompt", question=q,
                          passages=passages(docs, self.params.top_n, self.params.passage_chars)
                          or "(no passages)")
            ans = strip_citations(first_line(ctx.llm.complete(
                prompt, max_tokens=self.params.max_tokens).text))
            new.append({"sub_question": q, "sub_answer": ans, "level": level,
                        "doc_ids": [d["id"] for d in docs[: self.params.top_n]]})
            drafts.append(ans)
        return {"history": new, "drafts": drafts}


@operator("generation.cot_step")
class CoTStep(Operator["CoTStep.Params"]):
    """Write the next chain-of-thought sentence from the passages so far; the sentence becomes the
    next search query (IRCoT, Trivedi et al. 2023: interleave reasoning steps and retrieval).
    When the sentence says "the answer is X", X goes to `answer` so a judge can stop."""

    class Params(OperatorParams):
        top_n: int = Field(4, ge=1, le=20, description="Passages shown")
        max_tokens: int = Field(48, ge=8, le=512, description="Longest sentence in tokens")
        passage_chars: int = Field(400, ge=50, le=4000, description="Characters kept per passage")

    reads = ("question",)
    optional_reads = ("documents", "drafts")
    writes = ("drafts", "queries", "history", "answer")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        drafts = list(memory.get("drafts") or [])
        prompt = fill(COT_PROMPT, "prompt", question=memory["question"],
                      reasoning=" ".join(drafts) or "nothing yet.",
                      passages=passages(list(memory.get("documents") or []), self.params.top_n,
                                        self.params.passage_chars) or "(no passages)")
        sentence = new_sentences(strip_citations(first_line(ctx.llm.complete(
            prompt, max_tokens=self.params.max_tokens).text)), drafts)
        # a placeholder ("(answer)") or an empty line is no step: search with the question again
        query = sentence if real_answer(sentence) else memory["question"]
        # a step with nothing new adds nothing to the reasoning (the last draft stays the last)
        out: dict[str, Any] = {"drafts": [*drafts, sentence] if sentence else drafts,
                               "history": [{"thought": sentence}] if sentence else [],
                               "queries": [query]}
        m = ANSWER_IS.search(sentence)
        if m and real_answer(m.group(1)):     # never "<answer>" copied from a prompt, never ""
            out["answer"] = real_answer(m.group(1))
        return out
