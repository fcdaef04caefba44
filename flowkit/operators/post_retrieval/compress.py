"""Context compression: LLM sentence extraction (RECOMP-style) and Selective Context."""
from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import NotFoundError, ResourceError
from ...memory import Doc, MemoryView
from ...text import split_sentences, tokens
from .._text import fill, require_docs
from ._util import shown_text, spans, word_overlap

EXTRACT_PROMPT = ("Passage: {passage}\n\nQuestion: {question}\n"
                  "Copy the sentences of the passage that help answer the question, word for "
                  "word. If none helps, write None.\nSentences:")
SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*\s+|\n+")
PHRASE_END = re.compile(r"[.!?]+[\"')\]]*\s+|\n+|[,;:]\s+|\s(?=(?:and|but|which|who|whose|while|"
                        r"because|although|where|when|after|before|since)\b)")
WORD_END = re.compile(r"\s+")


def _norm(text: str) -> str:
    return " ".join(tokens(text))


def matched_sentences(sentences: Sequence[str], reply: str, min_match: float) -> list[int]:
    """Indices of the passage's sentences that the reply repeats: contained in the reply, or
    similar (difflib ratio >= min_match) to one of the reply's sentences."""
    said = _norm(reply)
    pieces = [_norm(s) for s in split_sentences(reply) if len(tokens(s)) >= 3]
    keep = []
    for i, s in enumerate(sentences):
        n = _norm(s)
        if not n:
            continue
        if f" {n} " in f" {said} " or any(difflib.SequenceMatcher(None, n, p).ratio() >= min_match
                            for p in pieces):
            keep.append(i)
    return keep


def compressed(d: Doc, text: str, **meta: object) -> Doc:
    original = d.get("text") or ""
    return Doc(**{**d, "text": text, "meta": {**(d.get("meta") or {}), **meta,
                                              "original_chars": len(original)}})


def _stats(before: list[Doc], after: list[Doc]) -> dict[str, Any]:
    b = sum(len(d.get("text") or "") for d in before)
    a = sum(len(d.get("text") or "") for d in after)
    return {"chars_before": b, "chars_after": a, "ratio": round(a / b, 4) if b else 1.0}


@operator("post_retrieval.llm_compress")
class LLMCompress(Operator["LLMCompress.Params"]):
    """Compress each passage to the sentences that matter for the question, chosen by the LLM.

    Extractive compression in the style of RECOMP (Xu et al. 2023) and LongLLMLingua (Jiang et al.
    2023): the model is asked to copy the helpful sentences of each passage. Only sentences that
    really occur in the passage are kept (fuzzy match of the reply against the passage's
    sentences, in the passage's order), so the model cannot add words. When it matches none, or
    says "None", the passage keeps its one sentence sharing most words with the question.
    Single-sentence passages are kept as they are without a call. Passages after top_n are dropped.
    """

    class Params(OperatorParams):
        top_n: int = Field(5, ge=1, le=50, description="Passages compressed (later ones dropped)")
        max_tokens: int = Field(64, ge=8, le=1024, description="Longest reply in tokens")
        passage_chars: int = Field(1200, ge=100, le=8000, description="Characters shown per "
                                   "passage (the text compressed is the whole passage)")
        min_match: float = Field(0.8, ge=0.3, le=1.0, description="How close a reply sentence "
                                 "must be to a passage sentence (difflib ratio) to keep it")

    reads = ("question", "documents")
    optional_reads = ("scratch",)
    writes = ("documents", "scratch")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        docs = require_docs(memory)[: p.top_n]
        question = memory["question"]
        out: list[Doc] = []
        fallbacks = 0
        for d in docs:
            sentences = split_sentences(d.get("text") or "")
            if len(sentences) <= 1:
                out.append(compressed(d, d.get("text") or "", kept_sentences=len(sentences),
                                      of_sentences=len(sentences)))
                continue
            prompt = fill(EXTRACT_PROMPT, "prompt", question=question,
                          passage=shown_text(d, p.passage_chars))
            reply = ctx.llm.complete(prompt, max_tokens=p.max_tokens).text
            keep = matched_sentences(sentences, reply, p.min_match)
            if not keep:
                fallbacks += 1
                keep = [max(range(len(sentences)),
                            key=lambda i: (word_overlap(question, sentences[i]), -i))]
            out.append(compressed(d, " ".join(sentences[i] for i in keep),
                                  kept_sentences=len(keep), of_sentences=len(sentences)))
        scratch = {**(memory.get("scratch") or {}),
                   "compression": {**_stats(docs, out), "fallbacks": fallbacks}}
        return {"documents": out, "scratch": scratch}


def document_frequency(texts: Sequence[str]) -> tuple[dict[str, int], int]:
    df: dict[str, int] = {}
    for t in texts:
        for w in set(tokens(t)):
            df[w] = df.get(w, 0) + 1
    return df, len(texts)


@operator("post_retrieval.selective_context")
class SelectiveContext(Operator["SelectiveContext.Params"]):
    """Drop the least informative sentences or phrases of each passage (Selective Context).

    Li et al. (2023), "Compressing Context to Enhance Inference Efficiency of Large Language
    Models": a lexical unit's self-information is the sum over its words of -log p(word); units
    with the least information per word are removed until keep_ratio of the words remain (at least
    one unit per passage is kept, in the passage's order). The question plays no part.

    Estimator: when the LLM offers `token_logprobs(text)` (each token's log-probability given the
    text before it), those are used, as in the paper. Otherwise -log p(word) comes from a smoothed
    document-frequency unigram model, p(w) = (df(w) + 1) / (N + 1), over the passages and
    candidate lists in working memory plus up to kb_sample chunks of the knowledge base: words
    found in every chunk carry no information, rare names and numbers carry the most.
    """

    class Params(OperatorParams):
        keep_ratio: float = Field(0.5, ge=0.05, le=1.0, description="Share of each passage's "
                                  "words kept")
        unit: Literal["sentence", "phrase", "word"] = Field("sentence", description="What is "
                                                            "kept or dropped as a whole")
        kb_sample: int = Field(200, ge=0, le=5000, description="Knowledge-base chunks read to "
                               "estimate word frequencies (unigram estimator; 0: memory only)")

    reads = ("documents",)
    optional_reads = ("candidates", "scratch")
    writes = ("documents", "scratch")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        docs = require_docs(memory)
        df: dict[str, int] | None = None
        n = 0
        boundary = {"sentence": SENTENCE_END, "phrase": PHRASE_END,
                    "word": WORD_END}[self.params.unit]
        out = []
        estimators: set[str] = set()
        for d in docs:
            text = d.get("text") or ""
            units = spans(text, boundary)
            infos = self.model_information(text, units, ctx.llm.token_logprobs(text))
            estimators.add("unigram-df" if infos is None else "llm")
            if infos is None:
                if df is None:
                    df, n = document_frequency(self.corpus(memory, docs, ctx))
                infos = [sum(math.log((n + 1) / (df.get(w, 0) + 1)) for w in tokens(text[a:b]))
                         for a, b in units]
            keep = self.select(text, units, infos)
            out.append(compressed(d, " ".join(text[a:b].strip() for a, b in keep),
                                  kept_units=len(keep), of_units=len(units)))
        stats = {**_stats(docs, out), "estimator": "+".join(sorted(estimators)),
                 "corpus_texts": n}
        return {"documents": out, "scratch": {**(memory.get("scratch") or {}),
                                              "compression": stats}}

    def corpus(self, memory: MemoryView, docs: list[Doc], ctx: RunContext) -> list[str]:
        seen: dict[str, str] = {}
        for d in [*docs, *(x for lst in memory.get("candidates") or [] for x in lst)]:
            seen.setdefault(str(d.get("id")), d.get("text") or "")
        if self.params.kb_sample and ctx.kb_name:
            try:
                for d in ctx.kb.chunks(limit=self.params.kb_sample):
                    seen.setdefault(str(d.get("id")), d.get("text") or "")
            except (ResourceError, NotFoundError):
                pass   # no knowledge base to sample: memory alone
        return list(seen.values())

    @staticmethod
    def model_information(text: str, units: list[tuple[int, int]],
                          logprobs: Sequence[tuple[str, float]] | None) -> list[float] | None:
        """Per unit, the sum of -logprob of the tokens starting inside it, from the LLM's
        `token_logprobs(text)`; None when the model cannot score or its tokens do not spell the
        text (the unigram estimator is used then)."""
        scored = [(str(t), float(lp)) for t, lp in logprobs or []]
        joined = "".join(t for t, _ in scored)
        if not scored or joined.strip() != text.strip():
            return None
        infos = [0.0] * len(units)
        # align: the same text, perhaps with different leading whitespace
        pos = (len(text) - len(text.lstrip())) - (len(joined) - len(joined.lstrip()))
        for tok, lp in scored:
            for k, (a, b) in enumerate(units):
                if a <= pos < b:
                    infos[k] -= lp
                    break
            pos += len(tok)
        return infos

    def select(self, text: str, units: list[tuple[int, int]],
               infos: list[float]) -> list[tuple[int, int]]:
        sizes = [max(1, len(tokens(text[a:b]))) for a, b in units]
        budget = self.params.keep_ratio * sum(sizes)
        order = sorted(range(len(units)), key=lambda i: (-infos[i] / sizes[i], i))
        kept: list[int] = []
        words = 0
        for i in order:
            if kept and words + sizes[i] > budget:
                continue
            kept.append(i)
            words += sizes[i]
        return [units[i] for i in sorted(kept)]
