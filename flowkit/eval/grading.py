"""Grading a finished run from its stored trace: what the graders read, and the calls they make.

Nothing of the flow runs again. The answer is the run's answer; the passages are those the
answering node showed the model (the documents in its working memory whose text its prompt holds;
the first five when none is found). Grader calls go through the completion cache like any call,
and their cost is counted here, apart from the flow's own tokens, calls and time.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..context import Resources, RunContext
from ..cost import Cost
from ..trace import StepEvent
from .graders import GRADERS, VERDICT_TOKENS, Item, Judge, Verdict
from .pairwise import PairVerdict, pairwise

MAX_PASSAGES = 5


def answering_step(steps: Sequence[StepEvent]) -> StepEvent | None:
    """The last node visit that wrote the answer (not the engine's finish step)."""
    for s in reversed(steps):
        if s.operator == "engine.finish" or s.error:
            continue
        if "answer" in (s.memory_after or {}) and \
                (s.memory_after or {}).get("answer") != (s.memory_before or {}).get("answer"):
            return s
    return None


def read_passages(step: StepEvent | None) -> list[dict[str, Any]]:
    """The passages the answering node showed the model."""
    if step is None:
        return []
    docs = [d for d in (step.memory_before or {}).get("documents") or [] if isinstance(d, dict)]
    prompts = " ".join(c.prompt for c in step.llm_calls)
    shown = [d for d in docs if (d.get("text") or "")[:60].strip()
             and (d.get("text") or "")[:60].strip() in prompts]
    out = shown or docs
    return [{"id": str(d.get("id", "")), "title": str(d.get("title") or ""),
             "text": str(d.get("text") or "")} for d in out[:MAX_PASSAGES]]


def item_for(question: dict[str, Any], answer: str, steps: Sequence[StepEvent]) -> Item:
    """What a grader reads of one run."""
    return Item(question=str(question.get("question", "")), answer=answer or "",
                references=tuple(str(a) for a in question.get("answers") or []),
                passages=tuple(read_passages(answering_step(steps))))


@dataclass
class Graded:
    """A verdict and what it cost: calls computed and served from the cache, tokens, model ms."""

    verdict: Verdict
    cost: Cost


class GradingSession:
    """Grades items on one model through the completion cache, counting the cost apart."""

    def __init__(self, resources: Resources, cache: Any = None, run_id: str = "grading",
                 reword: Callable[[str], str] | None = None) -> None:
        """`reword`: every prompt is asked as this returns it (the spread of a judge's verdicts
        under another wording, `reliability.reorder_examples`)."""
        self.resources = resources
        self.cache = cache
        self.run_id = run_id
        self.reword = reword

    def _context(self, grader: str) -> RunContext:
        return RunContext(self.resources, "", f"grader:{grader}", 1, cache=self.cache,
                          run_id=self.run_id)

    def grade(self, grader: str, item: Item, judge: Judge | None = None) -> Graded:
        """`grader`'s verdict on `item` (`judge` in place of the built-in of that name: a
        criterion of the user's)."""
        ctx = self._context(grader)

        def ask(prompt: str) -> str:
            text = self.reword(prompt) if self.reword else prompt
            return ctx.llm.complete(text, max_tokens=VERDICT_TOKENS).text

        verdict = (judge or GRADERS[grader])(item, ask)
        # the grading's cost: what computing its calls costs (a cached call's original ms)
        return Graded(verdict, Cost.of_calls(ctx.llm_calls))

    def pairwise(self, a: Item, b: Item) -> tuple[PairVerdict, Cost]:
        """The pairwise verdict on A's and B's answers to one question (both orders) and what
        its calls cost."""
        ctx = self._context("pairwise")

        def ask(prompt: str) -> str:
            return ctx.llm.complete(prompt, max_tokens=VERDICT_TOKENS).text

        return pairwise(a, b, ask), Cost.of_calls(ctx.llm_calls)
