"""Routing by the LLM: the model reads the route labels with their descriptions and names one."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from ...context import RunContext
from ...contract import operator
from ...memory import MemoryView
from ...text import ROUTE_STOPWORDS, content_words
from .._text import fill
from .routers import LabelRouter, RouterParams

ROUTE_PROMPT = ("Message: {question}\n\nWhich route should handle this message?\n{routes}\n"
                "Answer with the route name.")


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.lower()).strip()


def parse_route(reply: str, labels: list[str],
                descriptions: Mapping[str, str] | None = None) -> str | None:
    """The label a reply names: an exact reply, else the label mentioned first (whole words, '_'
    and '-' read as spaces; longer labels win ties), else a route number ('2' -> the second
    label), else the route whose description the reply repeats (at least two of its content
    words, more than any other route's; small models often echo the description). None when
    the reply names no route."""
    text = _norm(reply).strip(" .:\"'`*")
    by_norm = {_norm(label): label for label in labels}
    if text in by_norm:
        return by_norm[text]
    hits: list[tuple[int, int, str]] = []
    for norm, label in by_norm.items():
        m = re.search(r"(?<!\w)" + re.escape(norm) + r"(?!\w)", text)
        if m:
            hits.append((m.start(), -len(norm), label))
    if hits:
        return min(hits)[2]
    num = re.match(r"^\(?(\d{1,2})\)?(?:\D|$)", text)
    if num and 1 <= int(num.group(1)) <= len(labels):
        return labels[int(num.group(1)) - 1]
    said = content_words(reply, ROUTE_STOPWORDS)
    overlap = sorted(((len(said & content_words(desc, ROUTE_STOPWORDS)), label)
                      for label, desc in (descriptions or {}).items() if label in labels),
                     reverse=True)
    if overlap and overlap[0][0] >= 2 and (len(overlap) == 1 or overlap[0][0] > overlap[1][0]):
        return overlap[0][1]
    return None


def route_list(descriptions: Mapping[str, str]) -> str:
    return "\n".join(f"{label}: {desc}" if desc and desc != label else label
                     for label, desc in descriptions.items())


def ask_llm_for_route(question: str, descriptions: Mapping[str, str], ctx: RunContext,
                      max_tokens: int,
                      prompt: str = ROUTE_PROMPT) -> tuple[str | None, str]:
    """One LLM call: (the label it chose or None, its raw reply)."""
    text = fill(prompt, "params.prompt", question=question, routes=route_list(descriptions))
    reply = ctx.llm.complete(text, max_tokens=max_tokens).text
    return parse_route(reply, list(descriptions), descriptions), reply


@operator("orchestration.llm_router")
class LLMRouter(LabelRouter["LLMRouter.Params"]):
    """Route by asking the LLM to name a route from their labels and descriptions.

    LLM-based routing (Modular RAG, Gao et al. 2024): the prompt lists the route labels with
    their descriptions and the model names one. The reply is parsed leniently (the label, a
    label inside a sentence, its number, or the words of its description); when it names no
    route the default route is taken."""

    class Params(RouterParams):
        routes: dict[str, str] = Field(
            default_factory=lambda: {
                "retrieve": "a question about facts that needs the knowledge base",
                "direct": "greetings, chit-chat or general tasks that need no documents"},
            description="Route label -> what questions it is for (shown to the model)")
        default: str = Field("retrieve", min_length=1, description="Route when the reply names "
                             "no route")
        prompt: str = Field(ROUTE_PROMPT, min_length=10, description="Template with {routes} and "
                            "{question} slots (plain replacement, no code)")
        max_tokens: int = Field(8, ge=1, le=64, description="Tokens for the reply")

        @field_validator("routes")
        @classmethod
        def _routes(cls, v: dict[str, str]) -> dict[str, str]:
            if not v:
                raise ValueError("needs at least one route: {label: description}")
            if any(not label.strip() for label in v):
                raise ValueError("a route label is empty")
            return v

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        chosen, reply = ask_llm_for_route(memory["question"], p.routes, ctx, p.max_tokens, p.prompt)
        route = chosen or p.default
        return {"route": route, "judgement": {
            "by": self.node_id, "verdict": route, "reply": reply,
            "reason": "named by the model" if chosen else "reply named no route: default"}}
