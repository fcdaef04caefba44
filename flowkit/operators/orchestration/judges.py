"""Judges: decide whether a loop goes on ("continue") or ends ("done")."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._answers import real_answer

JUDGE_ROUTES = ("continue", "done")


@operator("orchestration.rule_judge")
class RuleJudge(Operator["RuleJudge.Params"]):
    """Rule-based judge: 'done' after `max_rounds` visits, or earlier when the best passage's score
    reaches `min_score` or an answer exists (if asked); otherwise 'continue'."""

    class Params(OperatorParams):
        max_rounds: int = Field(3, ge=1, le=10_000, description="Rounds before 'done'")
        min_score: float | None = Field(None, description="'done' once the top passage scores at "
                                        "least this (None: ignore scores)")
        stop_on_answer: bool = Field(False, description="'done' as soon as an answer exists (not "
                                     "an empty one, not a placeholder such as <answer>)")

    kind = "judge"
    routes = JUDGE_ROUTES
    optional_reads = ("documents", "answer")
    writes = ("route", "judgement")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        reason = ""
        if ctx.visit >= p.max_rounds:
            reason = f"round {ctx.visit} of {p.max_rounds}"
        docs = memory.get("documents") or []
        if not reason and p.min_score is not None and docs:
            top = max(float(d.get("score", 0.0)) for d in docs)
            if top >= p.min_score:
                reason = f"top score {top:.3f} >= {p.min_score}"
        if not reason and p.stop_on_answer and real_answer(memory.get("answer")):
            reason = "an answer exists"
        route = "done" if reason else "continue"
        return {"route": route, "judgement": {"by": self.node_id, "verdict": route,
                                              "reason": reason or f"round {ctx.visit}"}}
