"""Passage selection: LLM critique, score thresholds and near-duplicate removal."""
from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import OperatorInputError
from ...memory import Doc, MemoryView
from .._text import fill, require_docs
from ._util import (
    jaccard,
    rescored,
    shingles,
    shown_text,
    word_overlap,
    yes_probability,
)

CRITIQUE_PROMPT = ("Question: {question}\n\nPassage: {passage}\n\n"
                   "Is the passage relevant to the question? Reply Yes or No.")


@operator("post_retrieval.llm_critique")
class LLMCritique(Operator["LLMCritique.Params"]):
    """Keep only the passages the LLM judges relevant to the question.

    Selection by critique, as in Self-RAG's relevance reflection (Asai et al. 2023) and CRAG's
    retrieval evaluator (Yan et al. 2024): the model answers yes or no per passage; P(relevant)
    is the "Yes" token's probability when log-probabilities are available. Passages with
    P >= min_prob stay, in their original order; if fewer than min_keep remain, the best judged
    ones are kept anyway (an unparsable reply counts as the question's word overlap, at most 0.5).
    The judgement says "relevant" if any passage passed, else "irrelevant", so a router can fall
    back to another search. Passages after top_n are not judged and are dropped.
    """

    class Params(OperatorParams):
        top_n: int = Field(5, ge=1, le=50, description="Passages judged (later ones dropped)")
        min_prob: float = Field(0.5, ge=0.0, le=1.0, description="Least P(relevant) kept")
        min_keep: int = Field(1, ge=0, le=50, description="Passages kept even when judged "
                              "irrelevant (the best judged ones)")
        passage_chars: int = Field(400, ge=50, le=4000, description="Characters shown per passage")
        max_tokens: int = Field(3, ge=1, le=64, description="Longest reply in tokens")

    reads = ("question", "documents")
    optional_reads = ("scratch",)
    writes = ("documents", "judgement", "scratch")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        docs = require_docs(memory)[: p.top_n]
        question = memory["question"]
        probs: list[float] = []
        for d in docs:
            prompt = fill(CRITIQUE_PROMPT, "prompt", question=question,
                          passage=shown_text(d, p.passage_chars))
            out = ctx.llm.complete(prompt, max_tokens=p.max_tokens, logprobs=True)
            prob = yes_probability(out.text, out.logprobs)
            probs.append(prob if prob is not None
                         else 0.5 * word_overlap(question, d.get("text") or ""))
        passed = [i for i in range(len(docs)) if probs[i] >= p.min_prob]
        kept = set(passed)
        for i in sorted(range(len(docs)), key=lambda i: (-probs[i], i)):
            if len(kept) >= min(p.min_keep, len(docs)):
                break
            kept.add(i)
        out_docs = [rescored(docs[i], probs[i], relevant=i in passed) for i in sorted(kept)]
        critique = [{"id": d["id"], "p_relevant": round(probs[i], 6), "kept": i in kept}
                    for i, d in enumerate(docs)]
        verdict = "relevant" if passed else "irrelevant"
        judgement = {"by": self.node_id, "verdict": verdict,
                     "score": round(max(probs), 6) if probs else 0.0,
                     "reason": f"{len(passed)} of {len(docs)} passages judged relevant"}
        return {"documents": out_docs, "judgement": judgement,
                "scratch": {**(memory.get("scratch") or {}), "critique": critique}}


@operator("post_retrieval.score_threshold")
class ScoreThreshold(Operator["ScoreThreshold.Params"]):
    """Keep the passages whose score reaches a threshold, and/or the top fraction of them.

    A rule-based filter on the scores left by the last search or reranker. With scale "raw" the
    threshold applies to the scores as they are (cosine for dense search and embed_rerank, a
    probability after llm_rerank or llm_critique, unbounded for BM25); "minmax" rescales them to
    0..1 first, "max" divides them by the best score. Then only the best top_fraction (rounded
    up) stay, and at least min_keep of the best. Order and scores are unchanged.
    """

    class Params(OperatorParams):
        threshold: float = Field(0.3, ge=-1e6, le=1e6, description="Least score kept (after "
                                 "scaling)")
        scale: Literal["raw", "minmax", "max"] = Field("raw", description="Scores as they are, "
                                                       "min-max scaled to 0..1, or divided by the "
                                                       "best")
        top_fraction: float = Field(1.0, gt=0.0, le=1.0, description="Share of the passages "
                                    "kept at most (best first, rounded up)")
        min_keep: int = Field(1, ge=0, le=100, description="Best passages kept in any case")

    reads = ("documents",)
    writes = ("documents",)

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        docs = require_docs(memory)
        if not any(isinstance(d.get("score"), (int, float)) for d in docs):
            raise OperatorInputError("documents", "the passages carry no scores; put a search or "
                                     "a reranker before this node")
        raw = [float(d.get("score") or 0.0) for d in docs]
        lo, hi = min(raw), max(raw)
        if p.scale == "minmax":
            scaled = [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in raw]
        elif p.scale == "max":
            scaled = [s / hi if hi > 0 else 0.0 for s in raw]
        else:
            scaled = raw
        best = sorted(range(len(docs)), key=lambda i: (-raw[i], i))
        allowed = set(best[: math.ceil(p.top_fraction * len(docs))])
        kept = {i for i in allowed if scaled[i] >= p.threshold} | set(best[: p.min_keep])
        return {"documents": [docs[i] for i in range(len(docs)) if i in kept]}


@operator("post_retrieval.dedupe")
class Dedupe(Operator["Dedupe.Params"]):
    """Drop repeated and near-duplicate passages, keeping the first (best ranked) of each group.

    Two passages are duplicates when they have the same id, or when the Jaccard similarity of
    their word k-shingles (Broder 1997) reaches the threshold. Useful after fusing several
    searches or chunkings with overlap. Which passage each dropped one duplicated is kept in
    scratch.dedupe.
    """

    class Params(OperatorParams):
        threshold: float = Field(0.8, ge=0.1, le=1.0, description="Shingle Jaccard similarity "
                                 "from which two passages are duplicates")
        shingle: int = Field(3, ge=1, le=10, description="Words per shingle")

    reads = ("documents",)
    optional_reads = ("scratch",)
    writes = ("documents", "scratch")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = require_docs(memory)
        kept: list[tuple[Doc, set[tuple[str, ...]]]] = []
        dropped: list[dict[str, Any]] = []
        for d in docs:
            sh = shingles(d.get("text") or "", self.params.shingle)
            match = None
            for k, ksh in kept:
                sim = 1.0 if k.get("id") == d.get("id") else jaccard(sh, ksh)
                if sim >= self.params.threshold:
                    match = (k, sim)
                    break
            if match:
                dropped.append({"id": d.get("id"), "duplicate_of": match[0].get("id"),
                                "jaccard": round(match[1], 4)})
            else:
                kept.append((d, sh))
        return {"documents": [d for d, _ in kept],
                "scratch": {**(memory.get("scratch") or {}), "dedupe": dropped}}
