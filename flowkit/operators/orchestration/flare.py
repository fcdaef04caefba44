"""FLARE as a judge: look ahead one sentence and retrieve again when the model is unsure of it."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._text import fill, first_line, passages, strip_citations

FLARE_PROMPT = ("{passages}\n\nAnswer the question using the passages.\nQuestion: {question}\n"
                "Answer so far: {answer}\nWrite the next sentence of the answer.\nNext sentence:")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_LABEL = re.compile(r"^(?:next sentence|answer|sentence)\s*:\s*", re.I)


def first_sentence(text: str, titles: Sequence[str] = ()) -> tuple[str, int, int]:
    """The first sentence of the first line of `text` without a leading label ("Answer:") or
    passage title ("Corren Lighthouse:", copied from the prompt's passages), and where it starts
    and ends in `text`."""
    line = first_line(text)
    begin = text.find(line) if line else 0
    m = _SENTENCE_END.search(line)
    raw = line[: m.end() if m else len(line)]
    cut = 0
    label = _LABEL.match(raw)
    if label:
        cut = label.end()
    for title in titles:
        if title and raw[cut:].lower().startswith(title.lower() + ":"):
            cut += len(title) + 1
            break
    cut += len(raw[cut:]) - len(raw[cut:].lstrip())
    return strip_citations(raw[cut:]).strip(), begin + cut, begin + len(raw)


def token_words(text: str, logprobs: list[tuple[str, float]], start: int,
                end: int) -> list[tuple[str, float]]:
    """The words of text[start:end], each with the lowest probability among its tokens. Tokens
    are found in the text in order; touching tokens form one word (a masked word goes whole)."""
    words: list[tuple[str, float]] = []
    pos, last_end = 0, -1
    for piece, lp in logprobs:
        core = piece.strip()
        if not core:
            continue
        i = text.find(core, pos)
        if i < 0 or i >= end:
            break
        pos = i + len(core)
        if i < start:
            continue
        prob = math.exp(lp)
        if words and i == last_end:
            word, p = words[-1]
            words[-1] = (word + core, min(p, prob))
        else:
            words.append((core, prob))
        pos = last_end = i + len(core)
    return words


@operator("orchestration.flare_judge")
class FlareJudge(Operator["FlareJudge.Params"]):
    """Active retrieval by look-ahead (FLARE): draft the next sentence, retrieve again if unsure.

    FLARE, Jiang et al. 2023. The judge drafts the next sentence of the answer from the current
    passages, with token probabilities. When every word is at least `threshold` likely the
    sentence is kept; once the answer has `max_sentences` sentences (or the model ends it) the
    judge says 'done' and writes the answer. When some word is less likely, the sentence is not
    kept: the judge says 'continue' and writes it, with the unsure words masked out, to `queries`,
    so the retrieval the 'continue' edge leads to searches with it (set that search's query_from
    to "queries" or "both"); the next visit drafts the sentence again from the new passages.
    Every draft goes to `drafts` and each look-ahead to `history`. After `max_rounds` visits the
    sentence is kept whatever its probabilities."""

    class Params(OperatorParams):
        threshold: float = Field(0.4, ge=0.0, le=1.0, description="Lowest token probability "
                                 "accepted without retrieving again (FLARE's theta)")
        max_sentences: int = Field(1, ge=1, le=20, description="Sentences in a finished answer")
        max_rounds: int = Field(3, ge=1, le=100, description="Visits after which the sentence is "
                                "kept whatever its probabilities")
        add_question: bool = Field(False, description="Put the question before the masked sentence "
                                   "in the query")
        top_n: int = Field(3, ge=1, le=20, description="Passages shown to the model")
        passage_chars: int = Field(400, ge=50, le=4000, description="Characters kept per passage")
        max_tokens: int = Field(32, ge=4, le=256, description="Longest look-ahead in tokens")
        prompt: str = Field(FLARE_PROMPT, min_length=10, description="Template with {passages}, "
                            "{question} and {answer} (the answer so far) slots")

    kind = "judge"
    routes = ("continue", "done")
    reads = ("question",)
    optional_reads = ("documents", "drafts", "history")
    writes = ("route", "judgement", "drafts", "queries", "answer", "history")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p, question = self.params, memory["question"]
        kept = [h["sentence"] for h in memory.get("history") or []
                if h.get("flare") == self.node_id and h.get("accepted")]
        prefix = " ".join(kept)
        docs = list(memory.get("documents") or [])
        prompt = fill(p.prompt, "params.prompt", question=question,
                      answer=prefix or "(nothing yet)",
                      passages=passages(docs, p.top_n, p.passage_chars) or "(no passages)")
        out = ctx.llm.complete(prompt, max_tokens=p.max_tokens, logprobs=True)
        sentence, start, end = first_sentence(out.text, [str(d.get("title") or "")
                                                         for d in docs[: p.top_n]])
        drafts = list(memory.get("drafts") or [])
        last_round = ctx.visit >= p.max_rounds
        if not sentence or sentence.lower() in {k.lower() for k in kept}:
            if prefix or last_round:   # the model has nothing new to add: the answer is finished
                return self._out("done", "no new sentence", drafts, "",
                                 answer=prefix or (drafts[-1] if drafts else ""))
            return self._out("continue", "empty look-ahead: search with the question", drafts, "",
                             queries=[question])
        draft = f"{prefix} {sentence}".strip()
        if out.logprobs is None:
            words, low, min_prob = [], [], None
        else:
            words = token_words(out.text, out.logprobs, start, end)
            low = [w for w, pr in words if pr < p.threshold and re.search(r"\w", w)]
            min_prob = min((pr for _, pr in words), default=1.0)
        step: dict[str, Any] = {"flare": self.node_id, "sentence": sentence,
                                "min_prob": None if min_prob is None else round(min_prob, 4),
                                "low_tokens": low}
        if low and not last_round:
            masked = strip_citations(" ".join(w for w, pr in words
                                              if not (pr < p.threshold and re.search(r"\w", w))))
            if len(re.findall(r"\w+", masked)) < 2:
                masked = ""
            query = " ".join(x for x in (question if p.add_question or not masked else "", masked)
                             if x)
            return self._out("continue", f"{len(low)} word(s) below p={p.threshold}",
                             [*drafts, draft], sentence, queries=[query],
                             history={**step, "accepted": False, "query": query},
                             min_prob=min_prob, low=low)
        reason = ("no token probabilities from this backend" if min_prob is None else
                  f"kept after {ctx.visit} round(s)" if low else f"every word p >= {p.threshold}")
        finished = len(kept) + 1 >= p.max_sentences or (
            out.finish_reason == "stop" and not out.text[end:].strip())
        step = {**step, "accepted": True}
        if finished:
            return self._out("done", reason, [*drafts, draft], sentence, answer=draft,
                             history=step, min_prob=min_prob, low=low)
        return self._out("continue", reason + "; the answer goes on", [*drafts, draft], sentence,
                         queries=[sentence], history=step, min_prob=min_prob, low=low)

    def _out(self, route: str, reason: str, drafts: list[str], sentence: str, *,
             queries: list[str] | None = None, answer: str | None = None,
             history: dict[str, Any] | None = None, min_prob: float | None = None,
             low: list[str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"route": route, "drafts": drafts, "judgement": {
            "by": self.node_id, "verdict": route, "reason": reason, "sentence": sentence,
            "score": None if min_prob is None else round(min_prob, 4), "low_tokens": low or []}}
        if queries is not None:
            out["queries"] = queries
            out["judgement"]["query"] = queries[0]
        if answer is not None:
            out["answer"] = answer
        if history is not None:
            out["history"] = [history]
        return out
