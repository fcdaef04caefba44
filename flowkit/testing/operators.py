"""Run one operator outside a flow: the helper operator tests share."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .. import registry
from ..context import Resources, RunContext
from ..spec import Limits
from .fakes import FakeLLM, fake_resources


def operator_instance(key: str, node_id: str = "node", **params: Any) -> registry.Operator[Any]:
    """The operator registered under `key`, built with `params` (validated: pydantic's
    ValidationError on a bad value, KeyError naming the key when none is registered)."""
    cls = registry.get(key)
    if cls is None:
        raise KeyError(f"no operator '{key}' is registered")
    return cls(node_id, cls.Params.model_validate(params))


def run_operator(key: str, memory: Mapping[str, Any], llm: FakeLLM | None = None, *,
                 resources: Resources | None = None, embedder: Any = None, kb: str = "test",
                 node_id: str = "node", visit: int = 1, usage: dict[str, float] | None = None,
                 limits: Limits | None = None, **params: Any) -> dict[str, Any]:
    """Build operator `key` with `params` and run it once on `memory`; returns what it writes.

    The context is a real RunContext over `resources` (default: `fake_resources(llm, embedder=
    embedder)`, a MemoryKB named "test" with three short facts), as node `node_id` on visit
    `visit`; memory is passed read-only, as the engine passes it."""
    op = operator_instance(key, node_id, **params)
    res = resources if resources is not None else fake_resources(llm or FakeLLM(),
                                                                  embedder=embedder)
    ctx = RunContext(res, kb, node_id, visit, usage=usage, limits=limits)
    return op.run(MappingProxyType(dict(memory)), ctx)
