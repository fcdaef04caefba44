"""RunContext: what an operator gets besides memory; it counts and records every call it makes.

The resources an operator may use are typed by the Protocols below, so operators call them
directly instead of probing with getattr: `ctx.llm` (an `OperatorLLM`: complete, count_tokens,
n_ctx, token_logprobs), `ctx.embedder` (an `Embedder`), `ctx.kb` (a `KnowledgeBaseView`: dense,
lexical, by_ids, chunks, dir), `ctx.data_dir`, `ctx.usage` and `ctx.limits`. `Resources` is what
the engine is handed (flowkit.runtime.resources.Resources, or flowkit.testing's fakes).
"""
from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .documents.provenance import PROVENANCE_KEYS
from .errors import LLMServerError, ResourceError
from .memory import Doc
from .runtime.completion_cache import (
    CacheEntry,
    CompletionCache,
    Origin,
    cacheable,
    call_key,
    effective_temperature,
    model_identity,
)
from .runtime.llm_contract import LLM as ModelLLM
from .runtime.llm_contract import Completion, OnToken
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
        return count_tokens(self._inner, text, self._ctx.cache)

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None) -> Completion:
        self._ctx.check_budget()
        left = self._ctx.seconds_left()
        if left is not None:
            timeout_s = left if timeout_s is None else min(timeout_s, left)
        # A completion that stopped by itself (end of text or a stop string) after c tokens is the
        # same for any max_tokens >= c: it is stored without max_tokens in its key. One cut at
        # max_tokens ("length") is stored with it, and serves only that max_tokens.
        temp = effective_temperature(self._inner, temperature)
        call = {"prompt": prompt, "system": system, "stop": list(stop or []), "logprobs": logprobs}
        open_key = self._ctx.cache_key("complete", temp, **call)
        exact_key = self._ctx.cache_key("complete", temp, max_tokens=max_tokens, **call)
        t0 = time.perf_counter()
        hit = self._ctx.cache_get(open_key)
        if hit is not None and not (hit.finish_reason == "stop"
                                    and hit.completion_tokens <= max_tokens):
            hit = None
        if hit is None:
            hit = self._ctx.cache_get(exact_key)
        if hit is not None:
            wall = (time.perf_counter() - t0) * 1000
            out = Completion(prompt=hit.prompt, text=hit.text, prompt_tokens=hit.prompt_tokens,
                             completion_tokens=hit.completion_tokens, ms=hit.ms,
                             finish_reason=hit.finish_reason, logprobs=hit.logprobs)
            self._ctx.saved_ms += max(0.0, hit.ms - wall)
            self._record(out, cached_from=hit, wall_ms=wall)
            if self._ctx.on_token is not None and out.text:
                self._ctx.on_token(out.text)      # served whole: one piece
            return out
        on_token = self._ctx.on_token
        streams = on_token is not None and streams_tokens(self._inner)
        out = self._inner.complete(prompt, max_tokens=max_tokens, stop=stop, temperature=temperature,
                                   logprobs=logprobs, system=system, timeout_s=timeout_s,
                                   **({"on_token": on_token} if streams else {}))
        if on_token is not None and not streams and out.text:
            on_token(out.text)                    # a backend that does not stream: one piece
        key = open_key if out.finish_reason == "stop" else exact_key
        if key is not None and out.finish_reason in ("stop", "length"):
            self._ctx.cache_put(key, CacheEntry(
                text=out.text, prompt=out.prompt, prompt_tokens=out.prompt_tokens,
                completion_tokens=out.completion_tokens, ms=round(out.ms, 2),
                finish_reason=out.finish_reason, logprobs=out.logprobs))
        self._record(out)
        return out

    def _record(self, out: Completion, cached_from: CacheEntry | None = None,
                wall_ms: float | None = None) -> None:
        origin = cached_from.origin if cached_from is not None else None
        self._ctx.llm_calls.append(LLMCall(
            prompt=out.prompt, completion=out.text, prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens, ms=round(out.ms, 2),
            finish_reason=out.finish_reason, logprobs=out.logprobs,
            cached_from=(vars(origin).copy() if origin is not None
                         else ({} if cached_from is not None else None)),
            wall_ms=round(wall_ms, 2) if wall_ms is not None else None))

    def token_logprobs(self, text: str) -> list[tuple[str, float]] | None:
        """Each token of `text` with its log-probability, where the model can score a prompt
        (None where it cannot); recorded as an LLM call that generates nothing."""
        scorer = getattr(self._inner, "token_logprobs", None)
        if not callable(scorer):
            return None
        self._ctx.check_budget()
        key = self._ctx.cache_key("logprobs", 0.0, text=text)
        t0 = time.perf_counter()
        hit = self._ctx.cache_get(key)
        if hit is not None and hit.logprobs is not None:
            wall = (time.perf_counter() - t0) * 1000
            self._ctx.saved_ms += max(0.0, hit.ms - wall)
            self._ctx.llm_calls.append(LLMCall(
                prompt=text, completion="", prompt_tokens=hit.prompt_tokens, completion_tokens=0,
                ms=hit.ms, finish_reason="scored", logprobs=hit.logprobs,
                cached_from=vars(hit.origin).copy() if hit.origin is not None else {},
                wall_ms=round(wall, 2)))
            return hit.logprobs
        try:
            scored = [(str(t), float(lp)) for t, lp in scorer(text)]
        except LLMServerError:
            return None      # a server that cannot score prompts: the caller's fallback applies
        ms = round((time.perf_counter() - t0) * 1000, 2)
        if key is not None:
            self._ctx.cache_put(key, CacheEntry(text="", prompt=text, prompt_tokens=len(scored),
                                                ms=ms, finish_reason="scored", logprobs=scored))
        self._ctx.llm_calls.append(LLMCall(prompt=text, completion="", prompt_tokens=len(scored),
                                           completion_tokens=0, ms=ms,
                                           finish_reason="scored", logprobs=scored))
        return scored


def streams_tokens(llm: object) -> bool:
    """Whether `llm.complete` takes `on_token` (a `StreamingLLM`: the llama.cpp backends and
    OpenAI-compatible servers do; a backend that does not gets its text handed out whole)."""
    try:
        params = inspect.signature(llm.complete).parameters   # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return False
    return "on_token" in params        # not **kwargs: a wrapper may pass it to one that cannot


def count_tokens(llm: ModelLLM, text: str, cache: CompletionCache | None) -> int:
    """`llm.count_tokens(text)`, served from the completion cache where there is one (so a run
    whose model calls are all cached never starts the model)."""
    identity = model_identity(llm) if cache is not None else None
    if cache is None or identity is None:
        return int(llm.count_tokens(text))
    key = call_key(identity, "tokens", text=text)
    hit = cache.get(key)
    if hit is not None:
        return hit.prompt_tokens
    n = int(llm.count_tokens(text))
    cache.put(key, CacheEntry(text="", prompt_tokens=n, finish_reason="tokens"))
    return n


def _place(meta: object) -> dict[str, Any]:
    """{"meta": the chunk's doc_id and provenance keys} for a recorded retrieval, or {} when its
    chunk has none of them."""
    if not isinstance(meta, dict):
        return {}
    kept = {k: meta[k] for k in ("doc_id", *PROVENANCE_KEYS) if meta.get(k) not in (None, "")}
    return {"meta": kept} if kept else {}


class RunContext:
    """Per node visit: resources (llm, embedder, kb), the node's identity, and what it recorded."""

    def __init__(self, resources: Resources, kb_name: str, node_id: str, visit: int,
                 budget: Callable[[int, int], str] | None = None,
                 usage: dict[str, float] | None = None, limits: Limits | None = None,
                 cache: CompletionCache | None = None, run_id: str = "",
                 on_token: OnToken | None = None) -> None:
        self.resources = resources
        #: gets each piece of this visit's model calls' text as it is generated (a call served from
        #: the completion cache: its whole text as one piece), or None
        self.on_token = on_token
        #: the completion cache deterministic calls are served from (None: every call computes)
        self.cache = cache
        self.run_id = run_id
        #: model milliseconds that calls served from the cache did not spend here
        self.saved_ms = 0.0
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

    def cache_key(self, kind: str, temperature: float, **call: object) -> str | None:
        """The completion-cache key of a call, or None when there is no cache or the call's output
        is not fixed by its inputs (sampling without a seed, an unknown backend)."""
        if self.cache is None:
            return None
        identity = model_identity(self.resources.llm)
        if identity is None or not cacheable(identity, temperature):
            return None
        return call_key(identity, kind, temperature=temperature, **call)

    def cache_get(self, key: str | None) -> CacheEntry | None:
        if key is None or self.cache is None:
            return None
        return self.cache.get(key)

    def cache_put(self, key: str, entry: CacheEntry) -> None:
        if self.cache is not None:
            entry.origin = Origin(self.run_id, self.node_id, self.visit)
            self.cache.put(key, entry)

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
        """Keep what a search returned (ids, titles, scores, the start of the text) in the step,
        with `meta`: the chunk's doc_id and provenance keys where it has them (what a gold
        place of recall@k is matched against, and the line shown under a passage)."""
        self.retrievals.append(Retrieval(query=query, method=method, docs=[
            {"id": d.get("id"), "title": d.get("title", ""), "score": d.get("score", 0.0),
             "text": (d.get("text") or "")[:500], **_place(d.get("meta"))} for d in docs]))

    def now(self) -> float:
        return time.perf_counter()
