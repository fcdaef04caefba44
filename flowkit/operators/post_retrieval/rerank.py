"""Reranking by embeddings (cosine, maximal marginal relevance) and "lost in the middle" order."""
from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import numpy as np
from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import Doc, MemoryView
from .._text import QueryFrom, query_texts, require_docs
from ._util import doc_text, rescored


def relevance(memory: MemoryView, docs: list[Doc], query_from: QueryFrom,
              ctx: RunContext) -> tuple[np.ndarray, np.ndarray]:
    """(passage embeddings, cosine relevance of each passage: its best over the query texts)."""
    queries = query_texts(memory, query_from)
    vecs = np.asarray(ctx.embedder.embed(queries + [doc_text(d) for d in docs]), dtype=np.float64)
    q, p = vecs[: len(queries)], vecs[len(queries):]
    return p, (p @ q.T).max(axis=1)


#: The query_from param of the embedding rerankers.
RerankQueryFrom = Annotated[QueryFrom, Field(description="Compare passages with the question, "
                                             "the rewritten queries, or both (best of them)")]
RP = TypeVar("RP", bound=OperatorParams)


class _EmbeddingRerank(Operator[RP]):
    """What the embedding rerankers read and write: passages ranked by `relevance`."""

    reads = ("question", "documents")
    optional_reads = ("queries",)
    writes = ("documents",)


@operator("post_retrieval.embed_rerank")
class EmbedRerank(_EmbeddingRerank["EmbedRerank.Params"]):
    """Rerank passages by the cosine similarity of their embedding to the question's.

    A bi-encoder reranker: the question (and/or the rewritten queries; a passage keeps its best
    similarity over them) and every passage are embedded with the studio's sentence embedder, and
    passages are sorted by cosine similarity, which becomes their score (the old one is kept in
    meta.prior_score). Useful after BM25 or after fusion, whose scores are not comparable.
    """

    class Params(OperatorParams):
        top_k: int = Field(5, ge=1, le=100, description="Passages kept after reranking")
        query_from: RerankQueryFrom = "question"

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = require_docs(memory)
        _, rel = relevance(memory, docs, self.params.query_from, ctx)
        order = sorted(range(len(docs)), key=lambda i: (-rel[i], i))[: self.params.top_k]
        return {"documents": [rescored(docs[i], rel[i]) for i in order]}


@operator("post_retrieval.mmr")
class MMR(_EmbeddingRerank["MMR.Params"]):
    """Rerank by maximal marginal relevance: relevant passages that do not repeat each other.

    Carbonell & Goldstein (1998): passages are picked one at a time, each time the one maximising
    lambda * sim(question, passage) - (1 - lambda) * max sim(passage, already picked), with cosine
    similarities of the studio's embeddings. lambda = 1 is plain relevance ranking; lower values
    trade relevance for diversity. A passage's score becomes its relevance (cosine to the
    question); meta.mmr holds the marginal value it was picked with.
    """

    class Params(OperatorParams):
        lambda_mult: float = Field(0.7, ge=0.0, le=1.0, description="Relevance weight lambda: "
                                   "1 = relevance only, 0 = diversity only")
        top_k: int = Field(5, ge=1, le=100, description="Passages picked")
        query_from: RerankQueryFrom = "question"

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = require_docs(memory)
        lam = self.params.lambda_mult
        p, rel = relevance(memory, docs, self.params.query_from, ctx)
        sim = p @ p.T
        redundancy = np.zeros(len(docs))          # max similarity to the passages picked so far
        picked: list[int] = []
        values: list[float] = []
        left = list(range(len(docs)))
        while left and len(picked) < self.params.top_k:
            marginal = {i: float(lam * rel[i] - (1 - lam) * redundancy[i]) for i in left}
            best = max(left, key=lambda i: (marginal[i], -i))
            values.append(marginal[best])
            picked.append(best)
            left.remove(best)
            redundancy = np.maximum(redundancy, sim[best])
        return {"documents": [rescored(docs[i], rel[i], mmr=round(v, 6))
                              for i, v in zip(picked, values)]}


def lost_in_the_middle(n: int) -> list[int]:
    """Positions for ranks 0..n-1: ranks 0, 2, 4... fill the start, ranks 1, 3, 5... the end
    (backwards), so the weakest land in the middle. E.g. n=5 -> order [0, 2, 4, 3, 1]."""
    front = list(range(0, n, 2))
    back = list(range(1, n, 2))[::-1]
    return front + back


@operator("post_retrieval.reorder")
class Reorder(Operator["Reorder.Params"]):
    """Reorder passages so the best sit at the start and the end and the weakest in the middle.

    Liu et al. (2023), "Lost in the Middle": models use information at the beginning and the end
    of a long context best. Ranked passages 1..n are laid out as 1, 3, 5, ..., 6, 4, 2. Ranks come
    from the current order (as left by a reranker) or from the scores. Scores are not changed;
    meta.rank keeps each passage's rank.
    """

    class Params(OperatorParams):
        rank_by: Literal["order", "score"] = Field("order", description="Take ranks from the "
                                                   "current order or from the passages' scores")
        top_k: int = Field(20, ge=1, le=100, description="Passages kept (the best top_k) before "
                           "reordering")

    reads = ("documents",)
    writes = ("documents",)

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = require_docs(memory)
        ranked = list(range(len(docs)))
        if self.params.rank_by == "score":
            ranked.sort(key=lambda i: (-float(docs[i].get("score", 0.0)), i))
        ranked = ranked[: self.params.top_k]
        out: list[Doc] = []
        for pos in lost_in_the_middle(len(ranked)):
            d = docs[ranked[pos]]
            out.append(Doc(**{**d, "meta": {**(d.get("meta") or {}), "rank": pos + 1}}))
        return {"documents": out}
