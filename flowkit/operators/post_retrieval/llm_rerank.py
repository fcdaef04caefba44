"""LLM reranking: pointwise relevance (yes/no or 0-10) or a listwise permutation (RankGPT)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import Doc, MemoryView
from .._text import fill, passages, require_docs
from ._util import (
    parse_ranking,
    parse_score,
    rescored,
    shown_text,
    word_overlap,
    yes_probability,
)

YES_NO_PROMPT = ("Question: {question}\n\nPassage: {passage}\n\n"
                 "Does the passage contain the answer to the question? Reply Yes or No.")
SCALE_PROMPT = ("Question: {question}\n\nPassage: {passage}\n\n"
                "How well does the passage answer the question, from 0 (not at all) to 10 "
                "(fully)? Reply with one number.")
LIST_PROMPT = ("{passages}\n\nQuestion: {question}\n"
               "Rank the {n} passages from most to least relevant to the question. Reply only "
               "with passage numbers, like 2 > 1 > 3.\nRanking:")


@operator("post_retrieval.llm_rerank")
class LLMRerank(Operator["LLMRerank.Params"]):
    """Rerank passages with the LLM, pointwise (a relevance grade per passage) or listwise.

    Pointwise (relevance generation, Liang et al. 2022 / Sachan et al. 2022): the model is asked
    per passage whether it helps answer the question; the score is the probability of the "Yes"
    token when log-probabilities are available (1 - P("No") for a "No"), or a 0-10 grade scaled to
    0..1 with scale "0-10". Listwise (RankGPT, Sun et al. 2023): the model sees the numbered
    passages and writes an order like "2 > 1 > 3"; numbers it leaves out keep their original
    order, and windows slide from the bottom up when there are more passages than fit one window.
    A reply that cannot be parsed leaves the passage's place to the question's word overlap
    (pointwise) or to the original order (listwise). Only the first top_n passages are reranked;
    the rest follow them, and top_k are kept.
    """

    class Params(OperatorParams):
        mode: Literal["pointwise", "listwise"] = Field("pointwise", description="A grade per "
                                                       "passage, or one ranking of them all")
        scale: Literal["yes_no", "0-10"] = Field("yes_no", description="Pointwise grade: P(Yes) "
                                                 "from log-probabilities, or a 0-10 number")
        top_n: int = Field(10, ge=1, le=50, description="Passages reranked (the rest follow)")
        top_k: int = Field(5, ge=1, le=100, description="Passages kept after reranking")
        window: int = Field(10, ge=2, le=20, description="Listwise: passages shown per call; "
                            "windows slide by half of this")
        passage_chars: int = Field(400, ge=50, le=4000, description="Characters shown per passage")
        max_tokens: int = Field(4, ge=1, le=256, description="Pointwise: longest reply in tokens "
                                "(listwise gets 4 per passage)")

    reads = ("question", "documents")
    writes = ("documents", "scratch")
    optional_reads = ("scratch",)

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        docs = require_docs(memory)
        head, tail = docs[: p.top_n], docs[p.top_n:]
        question = memory["question"]
        if p.mode == "pointwise":
            ranked, info = self.pointwise(question, head, ctx)
        else:
            ranked, info = self.listwise(question, head, ctx)
        kept = (ranked + tail)[: p.top_k]
        scratch = {**(memory.get("scratch") or {}), "llm_rerank": info}
        return {"documents": kept, "scratch": scratch}

    def pointwise(self, question: str, docs: list[Doc],
                  ctx: RunContext) -> tuple[list[Doc], dict[str, Any]]:
        p = self.params
        template = YES_NO_PROMPT if p.scale == "yes_no" else SCALE_PROMPT
        scores: list[float] = []
        parsed: list[bool] = []
        for d in docs:
            prompt = fill(template, "prompt", question=question,
                          passage=shown_text(d, p.passage_chars))
            out = ctx.llm.complete(prompt, max_tokens=p.max_tokens, logprobs=p.scale == "yes_no")
            grade = (yes_probability(out.text, out.logprobs) if p.scale == "yes_no"
                     else parse_score(out.text))
            parsed.append(grade is not None)
            # unparsed replies rank by word overlap, below every passage the model graded yes
            scores.append(grade if grade is not None
                          else 0.5 * word_overlap(question, d.get("text") or ""))
        order = sorted(range(len(docs)), key=lambda i: (-scores[i], i))
        ranked = [rescored(docs[i], scores[i], llm_parsed=parsed[i]) for i in order]
        return ranked, {"mode": "pointwise", "scores": {docs[i]["id"]: round(scores[i], 6)
                                                        for i in order},
                        "unparsed": parsed.count(False)}

    def listwise(self, question: str, docs: list[Doc],
                 ctx: RunContext) -> tuple[list[Doc], dict[str, Any]]:
        p = self.params
        order = list(range(len(docs)))
        replies: list[str] = []
        size = min(p.window, len(docs))
        step = max(1, size // 2)
        start = max(0, len(docs) - size)
        while True:
            window = order[start:start + size]
            shown = [docs[i] for i in window]
            prompt = fill(LIST_PROMPT, "prompt", question=question, n=str(len(shown)),
                          passages=passages(shown, len(shown), p.passage_chars))
            out = ctx.llm.complete(prompt, max_tokens=4 * len(shown) + 4)
            replies.append(out.text)
            order[start:start + size] = [window[j] for j in parse_ranking(out.text, len(shown))]
            if start == 0:
                break
            start = max(0, start - step)
        n = len(order)
        ranked = [rescored(docs[i], (n - r) / n, llm_rank=r + 1) for r, i in enumerate(order)]
        return ranked, {"mode": "listwise", "order": [docs[i]["id"] for i in order],
                        "replies": replies}
