"""Query expansion: several phrasings (multi-query, RAG-Fusion), sub-question decomposition
(least-to-most) and verification questions for a draft answer (chain-of-verification)."""
from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._text import fill
from .rewrite import QueryWriter, QuestionPrompt, ask, first_sentence, norm, question_items

MULTI_PROMPT = ("Rephrase this question in {n} different ways, one per line.\n"
                "Question: {question}\nRephrased questions:\n")
ONE_PROMPT = "Rephrase the question in other words.\nQuestion: {question}\nRephrased question:"
DECOMPOSE_PROMPT = ("Split the question into simple sub-questions that can each be searched, one "
                    "per line, easiest first.\nQuestion: {question}\nSub-questions:\n")
VERIFY_PROMPT = ("Question: {question}\nDraft answer: {draft}\nWrite {n} short questions that "
                 "check the facts in the draft answer, one per line.\nQuestions:\n")
VERIFY_NO_DRAFT_PROMPT = ("Question: {question}\nWrite {n} short questions that check the facts "
                          "needed to answer it, one per line.\nQuestions:\n")


def latest_draft(memory: MemoryView) -> str:
    """The answer being checked: `answer`, else the last of `drafts`, else ''."""
    if memory.get("answer"):
        return str(memory["answer"]).strip()
    drafts = [d for d in memory.get("drafts") or [] if d and str(d).strip()]
    return str(drafts[-1]).strip() if drafts else ""


@operator("pre_retrieval.multi_query")
class MultiQuery(QueryWriter["MultiQuery.Params"]):
    """Write n alternative phrasings of the question and search with each (multi-query expansion).

    RAG-Fusion style: the model lists other ways to ask; a search node with query_from
    "queries" keeps one ranked list per phrasing and fuses them by reciprocal rank. When the list
    has fewer than n usable new phrasings (repeats, answers, off-topic lines), more are sampled one
    at a time at `temperature`, at most n extra calls.
    """

    class Params(OperatorParams):
        n: int = Field(3, ge=1, le=8, description="Alternative phrasings to write")
        prompt: str = Field(MULTI_PROMPT, min_length=10, description="Template with {question} and "
                            "{n} slots (plain replacement, no code)")
        max_tokens: int = Field(96, ge=16, le=512, description="Longest list in tokens")
        include_question: bool = Field(True, description="Search with the original question too")
        top_up: bool = Field(True, description="Sample single phrasings when the list is short")
        temperature: float = Field(0.8, ge=0.0, le=1.5, description="Sampling temperature of the "
                                   "top-up calls")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        question, text = ask(memory, ctx, p.prompt, p.max_tokens, n=str(p.n))
        found = question_items(text, p.n, [question], skip=[question])
        if p.top_up:
            one = fill(ONE_PROMPT, "prompt", question=question)
            for _ in range(p.n - len(found)):
                reply = ctx.llm.complete(one, max_tokens=min(p.max_tokens, 48),
                                         temperature=p.temperature).text
                found += question_items(reply, 1, [question], skip=[question, *found])
                if len(found) >= p.n:
                    break
        queries = ([question] if p.include_question or not found else []) + found[: p.n]
        return {"queries": queries}


@operator("pre_retrieval.decompose")
class Decompose(Operator["Decompose.Params"]):
    """Decompose the question into simpler sub-questions, easiest first (least-to-most prompting,
    Zhou et al. 2022).

    Writes `sub_questions` and the same list as `queries`, so a search with query_from "queries"
    keeps one candidate list per sub-question and generation.sub_answer answers them in order.
    A question the model cannot split stays one sub-question.
    """

    class Params(OperatorParams):
        max_subquestions: int = Field(3, ge=1, le=6, description="Most sub-questions kept")
        prompt: QuestionPrompt = DECOMPOSE_PROMPT
        max_tokens: int = Field(80, ge=16, le=512, description="Longest list in tokens")
        keep_question: bool = Field(False, description="Add the original question as the last "
                                    "sub-question (least-to-most solves it last)")

    reads = ("question",)
    writes = ("sub_questions", "queries")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        question, text = ask(memory, ctx, p.prompt, p.max_tokens)
        subs = question_items(text, p.max_subquestions, [question])
        if p.keep_question:
            subs = [s for s in subs if norm(s) != norm(question)][: max(0, p.max_subquestions - 1)]
            subs.append(question)
        if not subs:
            subs = [question]
        return {"sub_questions": subs, "queries": list(subs)}


@operator("pre_retrieval.verification_questions")
class VerificationQuestions(Operator["VerificationQuestions.Params"]):
    """Plan verification questions for the draft answer (chain-of-verification, Dhuliawala et al.
    2023).

    Given the question and the current draft (`answer`, else the last of `drafts`), the model
    writes short questions that check the draft's facts; each is searched and answered on its own
    so the draft can be revised. New questions are appended to `sub_questions` and become the
    `queries`. Without a draft it plans checks for the facts the answer needs. When the model writes
    none, the fallback asks whether the draft's first sentence is true.
    """

    class Params(OperatorParams):
        n: int = Field(3, ge=1, le=6, description="Verification questions to write")
        prompt: str = Field(VERIFY_PROMPT, min_length=10, description="Template with {question}, "
                            "{draft} and {n} slots (plain replacement, no code)")
        max_tokens: int = Field(80, ge=16, le=512, description="Longest list in tokens")

    reads = ("question",)
    optional_reads = ("answer", "drafts", "sub_questions")
    writes = ("queries", "sub_questions")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p, question = self.params, memory["question"]
        draft = latest_draft(memory)
        asked = list(memory.get("sub_questions") or [])
        template = p.prompt if draft or p.prompt != VERIFY_PROMPT else VERIFY_NO_DRAFT_PROMPT
        prompt = fill(template, "params.prompt", question=question, draft=draft or "(none)",
                      n=str(p.n))
        text = ctx.llm.complete(prompt, max_tokens=p.max_tokens).text
        new = question_items(text, p.n, [question, draft], skip=[question, *asked])
        if not new:
            claim = re.sub(r"[.!?]+$", "", first_sentence(draft)) if draft else ""
            fallback = f"Is it true that {claim}?" if len(claim) > 2 else question
            new = [fallback] if norm(fallback) not in {norm(a) for a in asked} else [question]
        return {"queries": new, "sub_questions": [*asked, *[q for q in new if q not in asked]]}
