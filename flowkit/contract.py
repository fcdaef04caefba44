"""The operator contract: `Operator[P]`, its params base `OperatorParams`, and `@operator(key)`.

A leaf module: it imports nothing from the operator catalog, so every operator file imports it and
`flowkit.registry` (lookups, the catalog) builds on it without an import circle.

An operator is a class with a docstring (the palette help), a nested `Params` model, the memory
keys it reads and writes, and `run(memory, ctx)`:

    @operator("post_retrieval.example")
    class Example(Operator["Example.Params"]):
        '''One line of palette help.'''

        class Params(OperatorParams):
            top_k: int = Field(5, ge=1)

        reads = ("documents",)
        writes = ("documents",)

        def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
            return {"documents": list(memory["documents"])[: self.params.top_k]}

The type argument names the params class, so `self.params.top_k` is type-checked.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from .memory import MemoryView, check_key

if TYPE_CHECKING:
    from .context import RunContext

#: The Modular RAG modules, in palette order: an operator key is "<module>.<name>".
MODULES: tuple[str, ...] = ("indexing", "pre_retrieval", "retrieval", "post_retrieval",
                            "generation", "orchestration")
#: step (plain), router (picks an edge by label), judge (continue/done), merge (joins branches).
KINDS: tuple[str, ...] = ("step", "router", "judge", "merge")


class OperatorParams(BaseModel):
    """Base of every operator's params: unknown fields are errors, values are frozen after
    validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)


P = TypeVar("P", bound=OperatorParams)


class Operator(Generic[P]):
    """Base of every operator. Subclasses set Params, reads, writes and implement run().

    kind: "step" (plain), "router" (picks one outgoing edge by label), "judge" (picks "continue" or
    "done"; every loop passes through one) or "merge" (joins parallel branches).
    """

    key: ClassVar[str] = ""
    module: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    kind: ClassVar[str] = "step"
    reads: ClassVar[tuple[str, ...]] = ()
    optional_reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    routes: ClassVar[tuple[str, ...]] = ()

    Params: ClassVar[type[OperatorParams]] = OperatorParams

    def __init__(self, node_id: str, params: P) -> None:
        self.node_id = node_id
        self.params: P = params

    def route_labels(self) -> tuple[str, ...]:
        """The edge labels this node can choose (routers may derive them from params)."""
        return self.routes

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:  # pragma: no cover
        """Read `memory`, use `ctx` (LLM, embedder, knowledge base), return the keys written."""
        raise NotImplementedError

    @classmethod
    def active_reads(cls, params: OperatorParams) -> tuple[str, ...]:
        """The memory keys a node with these params reads: `reads`, then the `optional_reads`
        its params leave on. A False `use_<key>` param switches `<key>` off; an operator whose
        params gate a read in another way overrides this (the fork panel lists a node as a
        reader of a key only when it really reads it)."""
        off = {k for k in cls.optional_reads if getattr(params, f"use_{k}", True) is False}
        return tuple(dict.fromkeys(k for k in (*cls.reads, *cls.optional_reads) if k not in off))

    @classmethod
    def help(cls) -> str:
        """The docstring, cleaned: the palette's help text."""
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The first paragraph of the help, on one line."""
        return cls.help().split("\n\n")[0].replace("\n", " ")


#: Every registered operator class by key; written only by `@operator`, read by flowkit.registry.
_CATALOG: dict[str, type[Operator[Any]]] = {}
T = TypeVar("T", bound=type[Operator[Any]])


def operator(key: str, *, version: str = "1") -> Callable[[T], T]:
    """Register an operator class under a stable key 'module.name'."""
    module, _, name = key.partition(".")
    if module not in MODULES or not name:
        raise ValueError(f"operator key '{key}' must be '<module>.<name>' with module in {MODULES}")

    def deco(cls: T) -> T:
        if key in _CATALOG and _CATALOG[key] is not cls:
            raise ValueError(f"operator '{key}' is registered twice")
        if cls.kind not in KINDS:
            raise ValueError(f"operator '{key}': kind must be one of {KINDS}")
        for k in (*cls.reads, *cls.optional_reads, *cls.writes):
            check_key(k, lambda message: ValueError(f"operator '{key}' declares {message}"))
        if not issubclass(cls.Params, OperatorParams):
            raise ValueError(f"operator '{key}': Params must subclass "
                             "flowkit.contract.OperatorParams")
        if not (cls.__doc__ or "").strip():
            raise ValueError(f"operator '{key}' needs a docstring (it is the palette help)")
        cls.key, cls.module, cls.version = key, module, version
        _CATALOG[key] = cls
        return cls

    return deco


def registered() -> Mapping[str, type[Operator[Any]]]:
    """The operators registered so far (no discovery: see flowkit.registry for the catalog)."""
    return _CATALOG
