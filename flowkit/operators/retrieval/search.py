"""Search operators: BM25 (bm25s), dense (Chroma + our embedder) and hybrid (weighted or RRF).

Each searches with the question, the rewritten queries or both; with several queries it keeps one
ranked list per query in `candidates` and fuses them into `documents` by reciprocal rank.
"""
from __future__ import annotations

from typing import Any, Literal, TypeVar, cast

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import Doc, MemoryView
from .._fuse import rrf
from .._text import QueryFrom, query_texts


class SearchParams(OperatorParams):
    top_k: int = Field(5, ge=1, le=100, description="How many passages to keep")
    query_from: QueryFrom = Field(
        "question", description="Search with the question, the rewritten queries, or both")
    add_last_answer: bool = Field(False, description="Append the last draft answer to each query "
                                  "(Iter-RetGen: retrieval guided by the previous generation)")
    where: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Metadata filter, e.g. {\"source\": \"guide.md\"}")
    keep_previous: int = Field(0, ge=0, le=100, description="In a loop: keep the first N "
                               "passages already in `documents` (the earliest rounds' best, e.g. "
                               "the question's own) ahead of the new ones, as IRCoT collects "
                               "paragraphs across steps; 0 replaces them")


SP = TypeVar("SP", bound=SearchParams)


class _Search(Operator[SP]):
    reads = ("question",)
    optional_reads = ("queries", "drafts", "documents")
    writes = ("documents", "candidates")
    method = ""

    @classmethod
    def active_reads(cls, params: OperatorParams) -> tuple[str, ...]:
        """The question; the rewritten queries only when `query_from` uses them, the last draft
        only with `add_last_answer`, the passages so far only with `keep_previous`."""
        p = cast(SearchParams, params)
        gated = {"queries": p.query_from in ("queries", "both"), "drafts": p.add_last_answer,
                 "documents": p.keep_previous > 0}
        return (*cls.reads, *(k for k in cls.optional_reads if gated[k]))

    def queries(self, memory: MemoryView) -> list[str]:
        p = self.params
        qs = query_texts(memory, p.query_from)
        if p.add_last_answer and memory.get("drafts"):
            qs = [f"{q} {memory['drafts'][-1]}" for q in qs]
        return qs

    def search(self, query: str, ctx: RunContext) -> list[Doc]:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        lists = []
        for q in self.queries(memory):
            docs = self.search(q, ctx)
            ctx.record_retrieval(q, self.method, docs)
            lists.append(docs)
        fused = lists[0] if len(lists) == 1 else rrf(lists, k=60)[: self.params.top_k]
        if self.params.keep_previous:
            fused = keep_ahead(list(memory.get("documents") or [])[: self.params.keep_previous],
                               fused)
        return {"documents": fused, "candidates": lists}


def keep_ahead(kept: list[Doc], new: list[Doc]) -> list[Doc]:
    """`kept` first, then the new passages that are not among them (by id)."""
    seen = {d["id"] for d in kept}
    return [*kept, *(d for d in new if d["id"] not in seen)]


@operator("retrieval.bm25")
class BM25Search(_Search[SearchParams]):
    """BM25 lexical search (bm25s) over the knowledge base's chunks: exact words, names, numbers."""

    Params = SearchParams
    method = "bm25"

    def search(self, query: str, ctx: RunContext) -> list[Doc]:
        return ctx.kb.lexical(query, self.params.top_k, self.params.where or None)


@operator("retrieval.dense")
class DenseSearch(_Search[SearchParams]):
    """Dense search: the query's sentence embedding against chunk embeddings in Chroma (cosine)."""

    Params = SearchParams
    method = "dense"

    def search(self, query: str, ctx: RunContext) -> list[Doc]:
        return ctx.kb.dense(query, self.params.top_k, self.params.where or None)


class HybridParams(SearchParams):
    fusion: Literal["rrf", "weighted"] = Field("rrf", description="Reciprocal rank fusion, or a "
                                               "weighted sum of min-max normalised scores")
    dense_weight: float = Field(0.5, ge=0.0, le=1.0, description="Weight of dense scores "
                                "(weighted fusion); BM25 gets 1 - this")
    pool: int = Field(20, ge=1, le=200, description="Candidates taken from each retriever")


@operator("retrieval.hybrid")
class HybridSearch(_Search[HybridParams]):
    """Hybrid search: BM25 and dense candidates fused by reciprocal rank or weighted scores."""

    Params = HybridParams
    method = "hybrid"

    def search(self, query: str, ctx: RunContext) -> list[Doc]:
        p = self.params
        lex = ctx.kb.lexical(query, p.pool, p.where or None)
        den = ctx.kb.dense(query, p.pool, p.where or None)
        if p.fusion == "rrf":
            return rrf([lex, den], k=60)[: p.top_k]
        return weighted([lex, den], [1 - p.dense_weight, p.dense_weight])[: p.top_k]


def weighted(lists: list[list[Doc]], weights: list[float]) -> list[Doc]:
    """Weighted sum of per-list min-max normalised scores."""
    scores: dict[str, float] = {}
    docs: dict[str, Doc] = {}
    for lst, w in zip(lists, weights):
        if not lst:
            continue
        vals = [float(d.get("score", 0.0)) for d in lst]
        lo, hi = min(vals), max(vals)
        for d, v in zip(lst, vals):
            norm = (v - lo) / (hi - lo) if hi > lo else 1.0
            scores[d["id"]] = scores.get(d["id"], 0.0) + w * norm
            docs.setdefault(d["id"], d)
    ranked = sorted(scores, key=lambda i: -scores[i])
    return [Doc(**{**docs[i], "score": round(scores[i], 6)}) for i in ranked]
