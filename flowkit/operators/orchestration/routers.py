"""Routers: pick one outgoing edge by its label."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field, field_validator

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from ...text import tokens


class RouterParams(OperatorParams):
    """Params of a LabelRouter: each subclass declares `routes` (label -> ...) and `default`."""

    if TYPE_CHECKING:   # declared for the type checker only: each router's Params defines them
        routes: Mapping[str, Any]
        default: str


RP = TypeVar("RP", bound=RouterParams)


class LabelRouter(Operator[RP]):
    """Base of the routers whose params have `routes` (label -> ...) and a `default` label: they
    read the question and write the route they pick (and why) to memory."""

    kind = "router"
    reads = ("question",)
    writes = ("route", "judgement")

    def route_labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.params.routes, self.params.default]))


@operator("orchestration.keyword_router")
class KeywordRouter(LabelRouter["KeywordRouter.Params"]):
    """Route by keywords: each route has keywords; the route whose keywords occur most often in the
    question wins (Modular RAG's metadata keyword score), else the default route."""

    class Params(RouterParams):
        routes: dict[str, list[str]] = Field(
            default_factory=lambda: {"retrieve": ["who", "which", "when", "where", "what"]},
            description="Route label -> keywords that vote for it")
        default: str = Field("direct", min_length=1, description="Route when no keyword matches")

        @field_validator("routes")
        @classmethod
        def _non_empty(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
            if not v:
                raise ValueError("needs at least one route")
            return v

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        words = tokens(memory["question"])
        text = " ".join(words)
        scores = {}
        for label, kws in self.params.routes.items():
            scores[label] = sum(text.count(kw.lower()) if " " in kw else words.count(kw.lower())
                                for kw in kws)
        best = max(scores, key=lambda k: scores[k])
        route = best if scores[best] > 0 else self.params.default
        return {"route": route, "judgement": {"by": self.node_id, "verdict": route,
                                              "scores": scores}}
