"""LLM judges: a prompted yes/no sufficiency judge, scored by the probability of its reply."""
from __future__ import annotations

import math
import re
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._text import fill, passages

JUDGE_ROUTES = ("continue", "done")
JUDGE_PROMPT = ("{context}\n\nQuestion: {question}\n"
                "Is the information above enough to answer the question? Reply yes or no.\nReply:")
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)
_FIRST_YES = re.compile(r"(yes|yeah|yep)\b")
_FIRST_NO = re.compile(r"(no|not|nope)\b")


def parse_yes_no(reply: str) -> bool | None:
    """True for yes, False for no (the first one written), None when the reply has neither."""
    m = _YES_NO.search(reply)
    return None if m is None else m.group(1).lower() == "yes"


def yes_probability(logprobs: list[tuple[str, float]] | None) -> float | None:
    """P(yes) from the first token of the reply when it is yes or no. For 'yes' it is that
    token's probability; for 'no' it is bounded: the reply is decoded greedily, so 'yes' was at
    most as likely as 'no', and at most the mass 'no' left, min(p, 1 - p). None when there are
    no logprobs or the reply does not start with yes or no."""
    for piece, lp in logprobs or []:
        word = piece.strip().lower().lstrip("\"'*(")
        if not word:
            continue
        prob = math.exp(lp)
        if _FIRST_YES.match(word):
            return prob
        if _FIRST_NO.match(word):
            return min(prob, 1.0 - prob)
        return None
    return None


def judge_context(memory: MemoryView, top_n: int, chars: int, notes: int = 5) -> str:
    """What the judge reads: numbered passages, the latest evidence notes and the latest draft."""
    parts = []
    docs = list(memory.get("documents") or [])
    if docs:
        parts.append(passages(docs, top_n, chars))
    evidence = [e for e in memory.get("evidence") or [] if e][-notes:]
    if evidence:
        parts.append("Notes:\n" + "\n".join(f"- {e}" for e in evidence))
    drafts = [d for d in memory.get("drafts") or [] if d]
    if drafts:
        parts.append(f"Draft answer: {drafts[-1]}")
    return "\n\n".join(parts)


@operator("orchestration.llm_judge")
class LLMJudge(Operator["LLMJudge.Params"]):
    """Ask the LLM whether the information gathered is enough to answer: 'done' on yes.

    The self-judging step of adaptive retrieval (as Self-RAG's retrieval decision, Asai et al.
    2024, here with a plain prompt). The judge reads the question with the passages, the evidence
    notes and the latest draft. When the backend returns token log-probabilities, the probability
    of the yes/no token gives a score P(yes) (for a 'no' reply, an upper bound: decoding is greedy)
    and 'done' needs P(yes) >= `threshold`; otherwise the written yes/no decides. An unclear reply
    counts as no. After `max_rounds` visits the judge says 'done' whatever the model replies."""

    class Params(OperatorParams):
        prompt: str = Field(JUDGE_PROMPT, min_length=10, description="Template with {context} and "
                            "{question} slots (plain replacement, no code)")
        top_n: int = Field(3, ge=1, le=20, description="Passages shown to the judge")
        passage_chars: int = Field(400, ge=50, le=4000, description="Characters kept per passage")
        max_tokens: int = Field(3, ge=1, le=32, description="Tokens for the yes/no reply")
        use_logprobs: bool = Field(True, description="Score the reply by the probability of its "
                                   "yes/no token")
        threshold: float = Field(0.5, ge=0.0, le=1.0, description="P(yes) needed for 'done' when "
                                 "log-probabilities are available")
        max_rounds: int = Field(5, ge=1, le=1000, description="Visits after which the judge says "
                                "'done' anyway")

    kind = "judge"
    routes = JUDGE_ROUTES
    reads = ("question",)
    optional_reads = ("documents", "evidence", "drafts")
    writes = ("route", "judgement")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        if ctx.visit >= p.max_rounds:
            return self._verdict("done", f"round {ctx.visit} of {p.max_rounds}", None, "")
        context = judge_context(memory, p.top_n, p.passage_chars)
        if not context:
            return self._verdict("continue", "no information gathered yet", 0.0, "")
        prompt = fill(p.prompt, "params.prompt", question=memory["question"], context=context)
        out = ctx.llm.complete(prompt, max_tokens=p.max_tokens, logprobs=p.use_logprobs)
        score = yes_probability(out.logprobs) if p.use_logprobs else None
        if score is not None:
            route = "done" if score >= p.threshold else "continue"
            return self._verdict(route, f"P(yes) {score:.3f} vs threshold {p.threshold}", score,
                                 out.text, "logprobs")
        said = parse_yes_no(out.text)
        if said is None:
            return self._verdict("continue", "reply is neither yes nor no", None, out.text, "text")
        return self._verdict("done" if said else "continue", "the model said " +
                             ("yes" if said else "no"), 1.0 if said else 0.0, out.text, "text")

    def _verdict(self, route: str, reason: str, score: float | None, reply: str,
                 source: str = "rule") -> dict[str, Any]:
        return {"route": route, "judgement": {
            "by": self.node_id, "verdict": route, "reason": reason, "reply": reply,
            "score": None if score is None else round(score, 4), "source": source}}
