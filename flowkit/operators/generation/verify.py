"""Answer verification against the retrieved documents: per claim (knowledge-based) or as a whole
(model-based, with bounded regeneration)."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import OperatorInputError
from ...memory import Doc, MemoryView
from ...text import CLAIM_STOPWORDS, content_words, split_sentences, tokens
from .._text import cited_ids, fill, first_line, passages, require_docs, strip_citations

CLAIM_PROMPT = ("{passages}\n\nQuestion: {question}\nClaim: {claim}\n"
                "Do the passages support the claim? Reply with one label: SUPPORTED, REFUTED or "
                "NOT ENOUGH INFO.\nLabel:")
JUDGE_PROMPT = ("{passages}\n\nQuestion: {question}\nAnswer: {answer}\n"
                "Is the answer supported by the passages? Reply yes or no.\nReply:")
RETRY_PROMPT = ("Answer the question using only the passages. The previous answer \"{answer}\" "
                "is not supported by the passages. Write a better answer, the shortest one "
                "(a few words)."
                "\n\n{passages}\n\nQuestion: {question}\nAnswer:")
LABELS = ("SUPPORTED", "NOT ENOUGH INFO", "REFUTED")       # from best to worst


def overlap(text: str, docs: Sequence[Doc]) -> float:
    """Share of the text's content words that occur in the documents (1.0 when it has none)."""
    words = content_words(text, CLAIM_STOPWORDS)
    if not words:
        return 1.0
    seen = set(tokens(" ".join(f"{d.get('title', '')} {d.get('text', '')}" for d in docs)))
    return len(words & seen) / len(words)


def parse_label(text: str) -> str | None:
    """SUPPORTED / REFUTED / NOT ENOUGH INFO from a free reply, or None when it names none."""
    t = " ".join(re.sub(r"[^A-Za-z ]", " ", text).upper().split())
    if re.search(r"NOT ENOUGH|\bNEI\b|INSUFFICIENT|UNKNOWN|UNVERIFIABLE|CANNOT|NOT SUPPORT|"
                 r"UNSUPPORT|NOT MENTION|NO INFO", t):
        return "NOT ENOUGH INFO"
    if re.search(r"REFUT|CONTRADICT|\bFALSE\b|INCORRECT|WRONG", t):
        return "REFUTED"
    if re.search(r"SUPPORT|\bTRUE\b|\bCORRECT\b|\bYES\b|CONFIRM", t):
        return "SUPPORTED"
    return None


def parse_yes_no(text: str) -> bool | None:
    """True for yes / supported, False for no / not supported, None when the reply says neither."""
    label = parse_label(text)
    if label == "SUPPORTED":
        return True
    if label in ("REFUTED", "NOT ENOUGH INFO") or re.match(r"\W*no\b", text, re.I):
        return False
    return None


@operator("generation.verify_knowledge")
class VerifyKnowledge(Operator["VerifyKnowledge.Params"]):
    """Knowledge-based verification: split the answer into claims and check each against the
    retrieved documents (SUPPORTED / REFUTED / NOT ENOUGH INFO).

    Post-generation verification with external knowledge from the Modular RAG survey (Gao et al.,
    2024), in the style of FEVER labels and RARR / CoVe claim checking. Each sentence of the answer
    is a claim; the model labels it given the top `top_n` passages. When the reply names no label,
    word overlap decides (all content words found: SUPPORTED, otherwise NOT ENOUGH INFO; never
    REFUTED). The verdict is the worst claim label; each labelled claim is added to evidence.
    """

    class Params(OperatorParams):
        prompt: str = Field(CLAIM_PROMPT, min_length=10, description="Template with {passages}, "
                            "{question} and {claim} slots (plain replacement)")
        top_n: int = Field(3, ge=1, le=20, description="Passages shown per claim")
        passage_chars: int = Field(400, ge=50, le=4000, description="Characters kept per passage")
        max_claims: int = Field(5, ge=1, le=50, description="Claims checked (the first ones)")
        max_tokens: int = Field(8, ge=1, le=64, description="Longest label reply in tokens")

    reads = ("answer", "documents")
    optional_reads = ("question", "evidence")
    writes = ("judgement", "evidence")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        answer = strip_citations(str(memory.get("answer") or ""))
        if not answer:
            raise OperatorInputError("answer", "no answer to verify; put a generation operator "
                                     "before this node")
        docs = require_docs(memory)[: p.top_n]
        shown = passages(docs, p.top_n, p.passage_chars)
        claims = (split_sentences(answer) or [answer])[: p.max_claims]
        results: list[dict[str, Any]] = []
        for claim in claims:
            out = ctx.llm.complete(fill(p.prompt, "params.prompt", passages=shown, claim=claim,
                                        question=str(memory.get("question") or "")),
                                   max_tokens=p.max_tokens)
            label, by = parse_label(out.text), "llm"
            if label is None:
                label = "SUPPORTED" if overlap(claim, docs) >= 1.0 else "NOT ENOUGH INFO"
                by = "overlap"
            results.append({"claim": claim, "label": label, "by": by, "raw": out.text[:200]})
        verdict = max((r["label"] for r in results), key=LABELS.index)
        supported = sum(r["label"] == "SUPPORTED" for r in results)
        judgement = {"by": self.node_id, "verdict": verdict, "claims": results,
                     "score": round(supported / len(results), 4)}
        notes = [f"{r['label']}: {r['claim']}" for r in results]
        return {"judgement": judgement, "evidence": [*(memory.get("evidence") or []), *notes]}


@operator("generation.verify_model")
class VerifyModel(Operator["VerifyModel.Params"]):
    """Model-based verification: the LLM judges whether the answer is supported by the documents;
    if not, it regenerates with that feedback, at most `max_retries` times.

    Self-verification / self-refinement from the Modular RAG survey (Gao et al., 2024), in the
    style of Self-Refine (Madaan et al., 2023) and Self-RAG's support critique (Asai et al., 2023).
    The judge replies yes or no (free replies are parsed; without a yes/no, word overlap with the
    passages decides). Each retry is a new LLM call whose prompt names the rejected answer; every
    new answer is appended to drafts. The judgement lists every round. If no answer is judged
    supported, the last one is kept and the verdict is "unsupported".
    """

    class Params(OperatorParams):
        judge_prompt: str = Field(JUDGE_PROMPT, min_length=10, description="Judge template with "
                                  "{passages}, {question} and {answer} slots")
        retry_prompt: str = Field(RETRY_PROMPT, min_length=10, description="Regeneration template "
                                  "with {passages}, {question} and {answer} (the rejected one)")
        max_retries: int = Field(1, ge=0, le=5, description="Regenerations allowed after a 'no'")
        top_n: int = Field(3, ge=1, le=20, description="Passages shown to judge and generator")
        passage_chars: int = Field(500, ge=50, le=4000, description="Characters kept per passage")
        judge_tokens: int = Field(4, ge=1, le=32, description="Longest judge reply in tokens")
        max_tokens: int = Field(48, ge=1, le=512, description="Longest regenerated answer in tokens")
        min_overlap: float = Field(0.5, ge=0.0, le=1.0, description="Fallback when the judge says "
                                   "neither yes nor no: supported if this share of the answer's "
                                   "words occurs in the passages")

    reads = ("question", "answer", "documents")
    optional_reads = ("drafts",)
    writes = ("answer", "citations", "drafts", "judgement")

    def judge(self, ctx: RunContext, question: str, answer: str, shown: str,
              docs: list[Doc]) -> dict[str, Any]:
        out = ctx.llm.complete(fill(self.params.judge_prompt, "params.judge_prompt",
                                    passages=shown, question=question, answer=answer),
                               max_tokens=self.params.judge_tokens)
        ok, by = parse_yes_no(out.text), "llm"
        if ok is None:
            ok, by = overlap(answer, docs) >= self.params.min_overlap, "overlap"
        return {"answer": answer, "supported": ok, "by": by, "raw": out.text[:200]}

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        question = str(memory["question"])
        if "answer" not in memory:
            raise OperatorInputError("answer", "no answer to verify; put a generation operator "
                                     "before this node")
        answer = strip_citations(str(memory.get("answer") or "")).strip()
        docs = require_docs(memory)[: p.top_n]
        shown = passages(docs, p.top_n, p.passage_chars)
        drafts = list(memory.get("drafts") or [])
        # an empty answer (the generator wrote nothing) is unsupported: regenerate, no judge call
        rounds = [self.judge(ctx, question, answer, shown, docs) if answer else
                  {"answer": "", "supported": False, "by": "empty answer", "raw": ""}]
        citations: list[str] | None = None
        while not rounds[-1]["supported"] and len(rounds) <= p.max_retries:
            out = ctx.llm.complete(fill(p.retry_prompt, "params.retry_prompt", passages=shown,
                                        question=question, answer=answer), max_tokens=p.max_tokens)
            answer = first_line(strip_citations(out.text)) or answer
            citations = cited_ids(out.text, docs, p.top_n)
            drafts.append(answer)
            rounds.append(self.judge(ctx, question, answer, shown, docs))
        ok = bool(rounds[-1]["supported"])
        judgement = {"by": self.node_id, "verdict": "supported" if ok else "unsupported",
                     "score": 1.0 if ok else 0.0, "retries": len(rounds) - 1, "rounds": rounds}
        out_mem: dict[str, Any] = {"answer": answer, "drafts": drafts, "judgement": judgement}
        if citations is not None:
            out_mem["citations"] = citations
        return out_mem
