"""Merges that use the models: LLM fusion of the branches' passages, and a REPLUG-style weighted
vote over the answers the branches (or the documents) gave."""
from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import OperatorInputError
from ...memory import Doc, MemoryView
from ...text import normalize_answer
from .._fuse import concat
from .._text import fill, passages, strip_citations
from .fusion import ranked_lists

SUMMARY_PROMPT = ("{passages}\n\nSummarise what these passages say about the question in one or "
                  "two sentences.\nQuestion: {question}\nSummary:")
FUSE_PROMPT = ("Notes:\n{notes}\n\nCombine the notes into one short passage that answers the "
               "question.\nQuestion: {question}\nPassage:")


def _norm(answer: str) -> str:
    """The answer's normal form for voting: its citations dropped, then SQuAD-normalised."""
    return normalize_answer(strip_citations(answer))


@operator("orchestration.llm_fusion")
class LLMFusion(Operator["LLMFusion.Params"]):
    """Join branches by LLM fusion: summarise each branch's passages, then fuse the summaries.

    LLM-based fusion of branch outputs (Modular RAG, Gao et al. 2024; as RAG-Fusion's summary
    step). The LLM summarises each branch's top passages about the question, then fuses the
    summaries into one passage. `documents` becomes that passage (a Doc with id "fusion:<node>",
    its sources and summaries in meta) followed by the original passages, and the fused passage
    is appended to `drafts`. Without branches it fuses the `candidates` lists (or summarises the
    current documents)."""

    class Params(OperatorParams):
        top_n: int = Field(3, ge=1, le=20, description="Passages of each branch summarised")
        passage_chars: int = Field(400, ge=50, le=4000, description="Characters kept per passage")
        max_tokens: int = Field(64, ge=8, le=1024, description="Longest summary or fused passage")
        top_k: int = Field(10, ge=0, le=200, description="Original passages kept after the "
                           "fused one")
        summary_prompt: str = Field(SUMMARY_PROMPT, min_length=10, description="Template with "
                                    "{passages} and {question} slots")
        fuse_prompt: str = Field(FUSE_PROMPT, min_length=10, description="Template with {notes} "
                                 "and {question} slots")

    kind = "merge"
    reads = ("question",)
    optional_reads = ("documents", "candidates", "drafts")
    writes = ("documents", "candidates", "drafts")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p, question = self.params, memory["question"]
        lists = ranked_lists(memory)
        if not lists:
            raise OperatorInputError("documents", "nothing to fuse: the branches retrieved nothing")
        summaries = []
        for docs in lists:
            prompt = fill(p.summary_prompt, "params.summary_prompt", question=question,
                          passages=passages(docs, p.top_n, p.passage_chars))
            text = " ".join(ctx.llm.complete(prompt, max_tokens=p.max_tokens).text.split())
            summaries.append(strip_citations(text) or (docs[0].get("text") or "")[:p.passage_chars])
        if len(summaries) == 1:
            fused = summaries[0]
        else:
            notes = "\n".join(f"- {s}" for s in summaries)
            out = ctx.llm.complete(fill(p.fuse_prompt, "params.fuse_prompt", question=question,
                                        notes=notes), max_tokens=p.max_tokens)
            fused = strip_citations(" ".join(out.text.split())) or " ".join(summaries)
        sources = [str(d["id"]) for docs in lists for d in docs[: p.top_n]]
        fused_doc = Doc(id=f"fusion:{self.node_id}", title="Fused summary", text=fused, score=1.0,
                        meta={"sources": list(dict.fromkeys(sources)), "summaries": summaries})
        branch_drafts = [d for b in memory.get("branches") or [] for d in (b.get("drafts") or [])]
        return {"documents": [fused_doc, *concat(lists)[: p.top_k]], "candidates": [],
                "drafts": [*(memory.get("drafts") or []), *branch_drafts, fused]}


@operator("orchestration.weighted_ensemble")
class WeightedEnsemble(Operator["WeightedEnsemble.Params"]):
    """Join answers by a REPLUG-style vote weighted by query-document similarity.

    REPLUG, Shi et al. 2023: each answer is weighted by softmax over the query-document
    similarities (our embedder, cosine / `temperature`) of the documents it was written from,
    and the answer with the highest total weight wins. Answers come from the joined branches
    (each branch's answer or last draft, with that branch's documents), or without branches from
    one draft per document (generation.answer_per_document: its scratch["per_doc"], else
    `drafts` in document order). Writes the answer, the documents it came from as citations,
    every document re-scored by its weight, and the weights in `judgement`."""

    class Params(OperatorParams):
        temperature: float = Field(0.1, gt=0.0, le=10.0, description="Softmax temperature over "
                                   "cosine similarities; lower favours the closest documents")
        top_n: int = Field(3, ge=1, le=20, description="Documents of each branch compared with "
                           "the question (the closest counts)")
        passage_chars: int = Field(500, ge=50, le=4000, description="Characters embedded per "
                                   "passage")
        top_k: int = Field(10, ge=1, le=200, description="Documents kept, by weight")

    kind = "merge"
    reads = ("question",)
    optional_reads = ("documents", "drafts", "scratch", "candidates")
    writes = ("answer", "citations", "documents", "candidates", "judgement")

    def items(self, memory: MemoryView) -> list[tuple[str, list[Doc]]]:
        """(answer, the documents it was written from) pairs to weigh."""
        branches = memory.get("branches") or []
        if branches:
            out = []
            for b in branches:
                drafts = [d for d in b.get("drafts") or [] if d]
                answer = b.get("answer") or (drafts[-1] if drafts else "")
                if answer.strip():
                    out.append((answer, list(b.get("documents") or [])[: self.params.top_n]))
            if out:
                return out
        docs = list(memory.get("documents") or [])
        per_doc = (memory.get("scratch") or {}).get("per_doc") or []
        by_id = {str(d.get("id")): d for d in docs}
        if per_doc and all(str(e.get("doc_id")) in by_id for e in per_doc):
            return [(str(e.get("answer") or ""), [by_id[str(e["doc_id"])]]) for e in per_doc
                    if str(e.get("answer") or "").strip()]
        drafts = list(memory.get("drafts") or [])
        if drafts and len(drafts) > len(docs):
            raise OperatorInputError("drafts", f"{len(drafts)} drafts for {len(docs)} documents: "
                                     "without branches the ensemble needs one draft per document")
        return [(a, [d]) for a, d in zip(drafts, docs) if a.strip()]

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p, question = self.params, memory["question"]
        items = self.items(memory)
        if not items:
            raise OperatorInputError("drafts", "no answers to weigh: put a generation step in each "
                                     "branch, or generation.answer_per_document before this merge")
        texts = [question]
        for answer, docs in items:   # a branch without documents is judged by its answer text
            texts += [(d.get("text") or "")[: p.passage_chars] for d in docs] or [answer]
        vecs = np.asarray(ctx.embedder.embed(texts), dtype=np.float64)
        sims, i = [], 1
        for _, docs in items:
            n = max(1, len(docs))
            sims.append(float(np.max(vecs[i:i + n] @ vecs[0])))
            i += n
        z = np.asarray(sims) / p.temperature
        weights = np.exp(z - z.max())
        weights = weights / weights.sum()
        tally: dict[str, float] = {}
        first: dict[str, int] = {}
        for k, ((answer, _), w) in enumerate(zip(items, weights)):
            key = _norm(answer) or answer.strip().lower()
            tally[key] = tally.get(key, 0.0) + float(w)
            first.setdefault(key, k)
        win = min(tally, key=lambda key: (-tally[key], first[key]))
        answer = strip_citations(items[first[win]][0]) or items[first[win]][0]
        scored: dict[str, Doc] = {}
        cites: list[str] = []
        for (ans, docs), w in zip(items, weights):
            for d in docs:
                if d["id"] not in scored or scored[d["id"]]["score"] < w:
                    scored[d["id"]] = Doc(**{**d, "score": round(float(w), 6)})
                if (_norm(ans) or ans.strip().lower()) == win:
                    cites.append(str(d["id"]))
        ranked = sorted(scored.values(), key=lambda d: -d["score"])[: p.top_k]
        return {"answer": answer, "citations": list(dict.fromkeys(cites)), "documents": ranked,
                "candidates": [], "judgement": {
                    "by": self.node_id, "verdict": answer, "score": round(tally[win], 4),
                    "tally": {k: round(v, 4) for k, v in tally.items()},
                    "weights": [{"answer": a, "doc_ids": [str(d["id"]) for d in docs],
                                 "similarity": round(s, 4), "weight": round(float(w), 4)}
                                for (a, docs), s, w in zip(items, sims, weights)]}}
