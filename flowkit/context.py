"""RunContext: what an operator gets besides memory; it counts and records every call it makes.

The resources an operator may use are typed by the Protocols below, so operators call them
directly instead of probing with getattr: `ctx.llm` (an `OperatorLLM`: complete, count_tokens,
n_ctx, token_logprobs), `ctx.embedder` (an `Embedder`), `ctx.kb` (a `KnowledgeBaseView`: dense,
lexical, by_ids, chunks, dir), `ctx.data_dir`, `ctx.usage` and `ctx.limits`. `Resources` is what
the engine is handed (flowkit.runtime.resources.Resources, or flowkit.testing's fakes).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .errors import LLMServerError, ResourceError
from .memory import Doc
from .runtime.llm import LLM as ModelLLM
from .runtime.llm import Completion
from .spec import Limits
from .trace import LLMCall, Retrieval

__all__ = ["BudgetHit", "Embedder", "KnowledgeBaseView", "ModelLLM", "OperatorLLM", "Resources",
           "RunContext"]


class OperatorLLM(Protocol):
    """The LLM as an operator sees it (`ctx.llm`): every call is recorded and budget-checked."""

    model_id: str

    @property
    def n_ctx(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None) -> Completion: ...

    def token_logprobs(self, text: str) -> list[tuple[str, float]] | None:
        """Each token of `text` with its log-probability, or None where the model cannot score."""
        ...


class Embedder(Protocol):
    """A sentence embedder: one row per text (the studio's is flowkit.runtime.embed.Embedder)."""

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


class KnowledgeBaseView(Protocol):
    """The searches and reads an operator may make on the run's knowledge base."""

    name: str

    @property
    def dir(self) -> Path | None:
        """The knowledge base's folder (graph.json, summaries.json), None for in-memory ones."""
        ...

    def dense(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Doc]: ...

    def lexical(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Doc]: ...

    def by_ids(self, ids: list[str]) -> list[Doc]: ...

    def chunks(self, limit: int = 50, offset: int = 0) -> list[Doc]: ...

    def require_ready(self) -> None: ...


class Resources(Protocol):
    """What a run is handed: the model, the embedder, the knowledge bases, the data folder."""

    @property
    def llm(self) -> ModelLLM: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def data_dir(self) -> Path: ...

    def kb(self, name: str) -> KnowledgeBaseView: ...


class BudgetHit(Exception):
    """Internal: an LLM call would pass the flow's limits; the node stops and the run halts."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class _RecordingLLM:
    """The LLM as an operator sees it: every call is recorded in the step and checked against limits."""

    def __init__(self, ctx: RunContext, inner: ModelLLM) -> None:
        self._ctx, self._inner = ctx, inner
        self.model_id: str = getattr(inner, "model_id", "llm")

    @property
    def n_ctx(self) -> int:
        return int(self._inner.n_ctx)

    def count_tokens(self, text: str) -> int:
        return int(self._inner.count_tokens(text))

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None) -> Completion:
        self._ctx.check_budget()
        left = self._ctx.seconds_left()
        if left is not None:
            timeout_s = left if timeout_s is None else min(timeout_s, left)
        out = self._inner.complete(prompt, max_tokens=max_tokens, stop=stop, temperature=temperature,
                                   logprobs=logprobs, system=system, timeout_s=timeout_s)
        self._ctx.llm_calls.append(LLMCall(prompt=out.prompt, completion=out.text,
                                           prompt_tokens=out.prompt_tokens,
                                           completion_tokens=out.completion_tokens, ms=round(out.ms, 2),
                                           finish_reason=out.finish_reason, logprobs=out.logprobs))
        return out

    def token_logprobs(self, text: str) -> list[tuple[str, float]] | None:
        """Each token of `text` with its log-probability, where the model can score a prompt
        (None where it cannot); recorded as an LLM call that generates nothing."""
        scorer = getattr(self._inner, "token_logprobs", None)
        if not callable(scorer):
            return None
        self._ctx.check_budget()
        t0 = time.perf_counter()
        try:
            scored = [(str(t), float(lp)) for t, lp in scorer(text)]
        except LLMServerError:
            return None      # a server that cannot score prompts: the caller's fallback applies
        self._ctx.llm_calls.append(LLMCall(prompt=text, completion="", prompt_tokens=len(scored),
                                           completion_tokens=0,
                                           ms=round((time.perf_counter() - t0) * 1000, 2),
                                           finish_reason="scored", logprobs=scored))
        return scored


class RunContext:
    """Per node visit: resources (llm, embedder, kb), the node's identity, and what it recorded."""

    def __init__(self, resources: Resources, kb_name: str, node_id: str, visit: int,
                 budget: Callable[[int, int], str] | None = None,
                 usage: dict[str, float] | None = None, limits: Limits | None = None) -> None:
        self.resources = resources
        #: the run's use so far before this step: steps, llm_calls, tokens, elapsed_s (read-only)
        self.usage: dict[str, float] = dict(usage or {})
        #: the flow's Limits (max_steps, max_llm_calls, max_tokens, timeout_s), or None
        self.limits: Limits | None = limits
        self.kb_name = kb_name
        self.node_id = node_id
        self.visit = visit
        self.llm_calls: list[LLMCall] = []
        self.retrievals: list[Retrieval] = []
        self._budget = budget
        self._llm: _RecordingLLM | None = None
        self._created = time.perf_counter()

    @property
    def llm(self) -> OperatorLLM:
        if self._llm is None:
            self._llm = _RecordingLLM(self, self.resources.llm)
        return self._llm

    @property
    def embedder(self) -> Embedder:
        return self.resources.embedder

    @property
    def data_dir(self) -> Path:
        """The studio's data folder (settings, trained judges, attached databases)."""
        return Path(self.resources.data_dir)

    @property
    def kb(self) -> KnowledgeBaseView:
        if not self.kb_name:
            raise ResourceError(f"node '{self.node_id}' needs a knowledge base; pass --kb NAME")
        return self.resources.kb(self.kb_name)

    @property
    def tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.llm_calls)

    def check_budget(self) -> None:
        if self._budget is not None:
            reason = self._budget(len(self.llm_calls), self.tokens)
            if reason:
                raise BudgetHit(reason)

    def seconds_left(self) -> float | None:
        """Seconds until the flow's timeout_s (at least 1), or None when the flow sets none."""
        timeout = self.limits.timeout_s if self.limits is not None else None
        if not timeout:
            return None
        spent = float(self.usage.get("elapsed_s", 0.0)) + time.perf_counter() - self._created
        return max(1.0, float(timeout) - spent)

    def record_retrieval(self, query: str, method: str, docs: list[Doc]) -> None:
        """Keep what a search returned (ids, titles, scores, the start of the text) in the step."""
        self.retrievals.append(Retrieval(query=query, method=method, docs=[
            {"id": d.get("id"), "title": d.get("title", ""), "score": d.get("score", 0.0),
             "text": (d.get("text") or "")[:500]} for d in docs]))

    def now(self) -> float:
        return time.perf_counter()
