"""Routers by meaning: embedding similarity to example utterances, alone or mixed with keywords and
the LLM's own choice (semantic routing, as in Modular RAG's routing module)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import OperatorInputError
from ...memory import MemoryView
from ...text import tokens
from .llm_routers import ask_llm_for_route
from .routers import LabelRouter, RouterParams

DEFAULT_EXAMPLES: dict[str, list[str]] = {
    "retrieve": ["Who designed the lighthouse?", "In what year was the bridge built?",
                 "On which island was the engineer born?", "How high is the mountain?"],
    "direct": ["Hello, how are you?", "Thank you!", "Translate 'good morning' into French.",
               "What is 12 times 7?"],
}


def _check_routes(v: dict[str, Any]) -> dict[str, Any]:
    if not v:
        raise ValueError("needs at least one route: {label: [...]}")
    for label in v:
        if not label.strip():
            raise ValueError("a route label is empty")
    return v


def label_similarities(question: str, examples: Mapping[str, list[str]],
                       ctx: RunContext) -> dict[str, float]:
    """For each label, the highest cosine similarity between the question and one of its examples
    (one embedder call for everything); labels without examples get no entry."""
    flat = [(label, ex) for label, exs in examples.items() for ex in exs if ex.strip()]
    if not flat:
        return {}
    vecs = np.asarray(ctx.embedder.embed([question, *[ex for _, ex in flat]]), dtype=np.float64)
    sims = vecs[1:] @ vecs[0]
    best: dict[str, float] = {}
    for (label, _), s in zip(flat, sims):
        best[label] = max(best.get(label, -1.0), float(s))
    return best


def keyword_counts(question: str, keywords: Mapping[str, list[str]]) -> dict[str, int]:
    """How often each label's keywords occur in the question (phrases by substring, words whole)."""
    words = tokens(question)
    text = " ".join(words)
    return {label: sum(text.count(kw.lower()) if " " in kw.strip() else words.count(kw.lower())
                       for kw in kws if kw.strip())
            for label, kws in keywords.items()}


@operator("orchestration.semantic_router")
class SemanticRouter(LabelRouter["SemanticRouter.Params"]):
    """Route by meaning: the route whose example questions are closest to the question wins.

    Semantic routing (Modular RAG, Gao et al. 2024): the question is embedded and compared with
    example utterances of each route; the route with the highest cosine similarity to any of its
    examples wins, else the default route when even the best is below `min_similarity`."""

    class Params(RouterParams):
        routes: dict[str, list[str]] = Field(
            default_factory=lambda: {k: list(v) for k, v in DEFAULT_EXAMPLES.items()},
            description="Route label -> example questions that should take it")
        default: str = Field("retrieve", min_length=1, description="Route when no example is "
                             "similar enough")
        min_similarity: float = Field(0.3, ge=-1.0, le=1.0, description="Lowest cosine "
                                      "similarity that still picks a route")

        @field_validator("routes")
        @classmethod
        def _routes(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
            _check_routes(v)
            for label, exs in v.items():
                if not any(e.strip() for e in exs):
                    raise ValueError(f"route '{label}' needs at least one example utterance")
            return v

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        sims = label_similarities(memory["question"], self.params.routes, ctx)
        if not sims:
            raise OperatorInputError("params.routes", "no route has an example utterance")
        best = max(sims, key=lambda k: (sims[k], k == self.params.default))
        close = sims[best] >= self.params.min_similarity
        route = best if close else self.params.default
        return {"route": route, "judgement": {
            "by": self.node_id, "verdict": route, "score": round(sims[best], 4),
            "scores": {k: round(v, 4) for k, v in sims.items()},
            "reason": f"closest examples: '{best}'" if close else
            f"best similarity {sims[best]:.3f} < {self.params.min_similarity}: default"}}


class RouteDef(OperatorParams):
    """One route of the hybrid router."""

    keywords: list[str] = Field(default_factory=list, description="Words that vote for the route")
    examples: list[str] = Field(default_factory=list, description="Example questions for it")
    description: str = Field("", max_length=300, description="What the route is for (LLM prompt)")


@operator("orchestration.hybrid_router")
class HybridRouter(Operator["HybridRouter.Params"]):
    """Route by a weighted mix of keyword matches, semantic similarity and the LLM's choice.

    Hybrid routing (Modular RAG, Gao et al. 2024): keyword matches (as keyword_router, scaled so
    the best route scores 1), semantic similarity to example questions (as semantic_router), and
    optionally the LLM's choice (1 for the route it names). The route with the highest weighted
    score (divided by the weights' sum) wins, else the default route when it is below
    `min_score`."""

    class Params(OperatorParams):
        routes: dict[str, RouteDef] = Field(
            default_factory=lambda: {
                "retrieve": RouteDef(keywords=["who", "which", "when", "where", "what", "how"],
                                     examples=list(DEFAULT_EXAMPLES["retrieve"]),
                                     description="a question about facts in the knowledge base"),
                "direct": RouteDef(keywords=["hello", "thanks", "translate"],
                                   examples=list(DEFAULT_EXAMPLES["direct"]),
                                   description="chit-chat or a task that needs no documents")},
            description="Route label -> {keywords, examples, description}")
        default: str = Field("retrieve", min_length=1, description="Route when no score is high "
                             "enough")
        keyword_weight: float = Field(0.3, ge=0.0, le=10.0, description="Weight of the keyword "
                                      "score")
        semantic_weight: float = Field(0.7, ge=0.0, le=10.0, description="Weight of the embedding "
                                       "similarity")
        llm_weight: float = Field(0.0, ge=0.0, le=10.0, description="Weight of the LLM's choice "
                                  "(0: the LLM is not asked)")
        min_score: float = Field(0.2, ge=-1.0, le=1.0, description="Lowest weighted score (scaled "
                                 "to the weights' sum) that still picks a route")
        max_tokens: int = Field(8, ge=1, le=64, description="Tokens for the LLM's reply")

        @field_validator("routes")
        @classmethod
        def _routes(cls, v: dict[str, RouteDef]) -> dict[str, RouteDef]:
            return _check_routes(v)

    kind = "router"
    reads = ("question",)
    writes = ("route", "judgement")

    def route_labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.params.routes, self.params.default]))

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p, q = self.params, memory["question"]
        total = p.keyword_weight + p.semantic_weight + p.llm_weight
        if total <= 0:
            raise OperatorInputError("params.keyword_weight", "all three weights are 0")
        labels = list(p.routes)
        counts = keyword_counts(q, {k: r.keywords for k, r in p.routes.items()})
        top = max(counts.values(), default=0)
        kw = {k: (counts[k] / top if top else 0.0) for k in labels}
        sem: dict[str, float] = {}
        if p.semantic_weight > 0:
            sem = label_similarities(q, {k: r.examples for k, r in p.routes.items()}, ctx)
        chosen, reply = None, ""
        if p.llm_weight > 0:
            chosen, reply = ask_llm_for_route(
                q, {k: r.description or k for k, r in p.routes.items()}, ctx, p.max_tokens)
        scores = {k: (p.keyword_weight * kw[k] + p.semantic_weight * max(sem.get(k, 0.0), 0.0)
                      + p.llm_weight * (1.0 if chosen == k else 0.0)) / total for k in labels}
        best = max(labels, key=lambda k: (scores[k], k == p.default))
        route = best if scores[best] >= p.min_score else p.default
        judgement: dict[str, Any] = {
            "by": self.node_id, "verdict": route, "score": round(scores[best], 4),
            "scores": {k: round(v, 4) for k, v in scores.items()},
            "signals": {"keywords": counts, "semantic": {k: round(v, 4) for k, v in sem.items()},
                        "llm": chosen}}
        if p.llm_weight > 0:
            judgement["reply"] = reply
        return {"route": route, "judgement": judgement}
