"""A budget judge: end a loop once it has used a stated share of the run's budget."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from ...spec import Limits


def budget_shares(usage: Mapping[str, float], limits: Limits | None) -> dict[str, float]:
    """Used / allowed for each limit the flow sets (steps, LLM calls, tokens, seconds): each
    ctx.usage counter against its Limits field."""
    if limits is None:
        return {}
    allowed_by: dict[str, float] = {**limits.caps(), "elapsed_s": limits.timeout_s}
    return {counter: round(float(usage[counter]) / float(allowed), 4)
            for counter, allowed in allowed_by.items() if allowed and counter in usage}


@operator("orchestration.budget_judge")
class BudgetJudge(Operator["BudgetJudge.Params"]):
    """End a loop once it has used its share of the budget: rounds, evidence or flow limits.

    Budget-bounded loops of adaptive RAG (e.g. Agent-UniRAG's compute budget, Pham et al. 2025):
    'done' once the loop has run `max_visits` rounds, once `max_evidence` evidence notes (or,
    without notes, `max_evidence` distinct passages in the current documents) are collected, or
    once the run has used `budget_fraction` of any of the flow's limits (steps, LLM calls,
    tokens, seconds, as counted before this step); otherwise 'continue'. Unlike the flow's hard
    limits, which halt the run, this ends the loop cleanly with budget left for the answer."""

    class Params(OperatorParams):
        max_visits: int = Field(3, ge=1, le=10_000, description="Rounds of the loop before 'done'")
        max_evidence: int | None = Field(None, ge=1, le=10_000, description="'done' once this many "
                                         "evidence notes are collected (None: ignore)")
        budget_fraction: float | None = Field(0.75, gt=0.0, le=1.0, description="'done' once this "
                                              "share of any flow limit is used (None: ignore)")

    kind = "judge"
    routes = ("continue", "done")
    optional_reads = ("evidence", "documents")
    writes = ("route", "judgement")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        shares = budget_shares(ctx.usage, ctx.limits)
        notes = [e for e in memory.get("evidence") or [] if e]
        seen = {d.get("id") for d in memory.get("documents") or []}
        collected = len(notes) if notes else len(seen)
        reasons = []
        if ctx.visit >= p.max_visits:
            reasons.append(f"round {ctx.visit} of {p.max_visits}")
        if p.max_evidence is not None and collected >= p.max_evidence:
            reasons.append(f"{collected} {'notes' if notes else 'passages'} collected "
                           f">= {p.max_evidence}")
        if p.budget_fraction is not None:
            reasons += [f"{name} at {share:.0%} of the limit" for name, share in shares.items()
                        if share >= p.budget_fraction]
        route = "done" if reasons else "continue"
        return {"route": route, "judgement": {
            "by": self.node_id, "verdict": route, "round": ctx.visit, "collected": collected,
            "budget": shares, "score": max(shares.values(), default=0.0),
            "reason": "; ".join(reasons) or f"round {ctx.visit}, budget left"}}
