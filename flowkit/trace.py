"""Step events: one record per node visit, written to a sink as the run goes.

The engine writes to any `TraceSink`; `storage.TraceStore` keeps them in SQLite, `ListSink` keeps
them in a list (tests). A record holds the working memory before and after the visit, every LLM
call (exact prompt, completion, tokens, ms), retrieved documents with scores, ms and the error.
"""
from __future__ import annotations

import copy
import json
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from .cost import Cost

#: the operator of a step that is a user's memory edit at a pause, not a node visit
#: (storage.debug records it; the Run page, the replay and the trace export read it)
USER_EDIT = "user.edit"


@dataclass
class LLMCall:
    """One model call inside a step."""

    prompt: str
    completion: str
    prompt_tokens: int
    completion_tokens: int
    ms: float
    finish_reason: str = "stop"
    logprobs: list[tuple[str, float]] | None = None
    #: served from the completion cache: the run, node and visit that computed it (else None);
    #: `ms` and the token counts are then the original call's cost
    cached_from: dict[str, Any] | None = None
    #: the milliseconds this call actually took here (a cache lookup for a hit), when it differs
    wall_ms: float | None = None


@dataclass
class Retrieval:
    """One search inside a step: the query, where it searched, what came back."""

    query: str
    method: str
    docs: list[dict[str, Any]]


@dataclass
class StepEvent:
    """One node visit."""

    run_id: str
    index: int
    node_id: str
    operator: str
    visit: int
    memory_before: dict[str, Any]
    memory_after: dict[str, Any]
    llm_calls: list[LLMCall] = field(default_factory=list)
    retrievals: list[Retrieval] = field(default_factory=list)
    ms: float = 0.0
    error: str | None = None
    branch: str | None = None
    started_at: float = 0.0

    @property
    def tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.llm_calls)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"tokens": self.tokens}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepEvent:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        d["llm_calls"] = [LLMCall(**c) for c in d.get("llm_calls") or []]
        d["retrievals"] = [Retrieval(**r) for r in d.get("retrievals") or []]
        return cls(**d)


@dataclass
class RunStart:
    """What a run is about to do: enough to know years later exactly what ran."""

    run_id: str
    flow_name: str
    spec: dict[str, Any]
    question: str
    kb: str
    model_id: str
    model_hash: str
    settings: dict[str, Any]
    operator_versions: dict[str, str]
    flow_version: int | None = None
    parent_run_id: str | None = None
    parent_step: int | None = None
    started_at: float = 0.0


@dataclass
class RunEnd:
    """How a run ended: status ok | budget_exceeded | error, the answer and the totals.

    `cost` is what the run costs to compute (flowkit.cost): its model calls, those of them served
    from the completion cache, tokens, and the wall time with every cached call counted at its
    original cost, so a flow's latency does not depend on the cache; `wall_ms` is the time it
    actually took. Its saved form (`to_dict`) keeps the flat keys it always had (`llm_calls`,
    `tokens`, `ms`, `cached_calls`), and `from_dict` reads them back."""

    run_id: str
    status: str
    answer: str
    citations: list[str]
    steps: int
    cost: Cost = field(default_factory=Cost)
    error: str | None = None
    halt_reason: str | None = None
    memory: dict[str, Any] = field(default_factory=dict)
    wall_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The saved form: the fields, the cost's parts under their flat keys."""
        cost = self.cost
        return {"run_id": self.run_id, "status": self.status, "answer": self.answer,
                "citations": list(self.citations), "steps": self.steps, "llm_calls": cost.calls,
                "tokens": cost.tokens, "ms": cost.ms, "error": self.error,
                "halt_reason": self.halt_reason, "memory": copy.deepcopy(self.memory),
                "wall_ms": self.wall_ms, "cached_calls": cost.cached}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunEnd:
        """A run's end from its saved form (`to_dict`'s flat keys; unknown keys ignored)."""
        cost = Cost(int(d.get("llm_calls") or 0), int(d.get("cached_calls") or 0),
                    int(d.get("tokens") or 0), float(d.get("ms") or 0.0))
        return cls(**{k: v for k, v in d.items()
                      if k in cls.__dataclass_fields__ and k != "cost"}, cost=cost)


class TraceSink(Protocol):
    """Where step events go."""

    def start(self, run: RunStart) -> None: ...

    def step(self, event: StepEvent) -> None: ...

    def end(self, result: RunEnd) -> None: ...


class ListSink:
    """Keeps everything in memory (tests, the CLI's --no-store)."""

    def __init__(self) -> None:
        self.run: RunStart | None = None
        self.steps: list[StepEvent] = []
        self.result: RunEnd | None = None
        self._lock = threading.Lock()

    def start(self, run: RunStart) -> None:
        self.run = run

    def step(self, event: StepEvent) -> None:
        with self._lock:
            self.steps.append(event)

    def end(self, result: RunEnd) -> None:
        self.result = result

    def sequence(self) -> list[tuple[str, int]]:
        """The (node, visit) pairs in the order they ran."""
        return [(s.node_id, s.visit) for s in self.steps]


class MultiSink:
    """Fan events out to several sinks (storage + a live progress display)."""

    def __init__(self, *sinks: TraceSink) -> None:
        self.sinks = [s for s in sinks if s is not None]

    def start(self, run: RunStart) -> None:
        for s in self.sinks:
            s.start(run)

    def step(self, event: StepEvent) -> None:
        for s in self.sinks:
            s.step(event)

    def end(self, result: RunEnd) -> None:
        for s in self.sinks:
            s.end(result)


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Keys whose values changed: {key: {"before": ..., "after": ...}}."""
    out = {}
    for k in sorted(set(before) | set(after)):
        if _canon(before.get(k)) != _canon(after.get(k)):
            out[k] = {"before": before.get(k), "after": after.get(k)}
    return out


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def jsonable(v: Any) -> Any:
    """Memory values as plain JSON (tuples to lists, unknown objects to strings)."""
    return json.loads(json.dumps(v, default=str))


class NullSink:
    """Drops every event (tracing off; benchmarks)."""

    def start(self, run: RunStart) -> None:
        pass

    def step(self, event: StepEvent) -> None:
        pass

    def end(self, result: RunEnd) -> None:
        pass
