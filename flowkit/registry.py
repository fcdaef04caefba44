"""The closed operator registry: `@operator("module.name")` and lookups by that stable key.

Flow files name operators only by key; nothing is ever imported by a path taken from a file.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

from .memory import OPERATOR_KEYS


class Params(BaseModel):
    """Base of every operator's params: unknown fields are errors, values are frozen after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

MODULES: tuple[str, ...] = ("indexing", "pre_retrieval", "retrieval", "post_retrieval",
                            "generation", "orchestration")
KINDS: tuple[str, ...] = ("step", "router", "judge", "merge")


class Operator:
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

    Params: ClassVar[type[BaseModel]] = Params

    def __init__(self, node_id: str, params: BaseModel):
        self.node_id = node_id
        self.params = params

    def route_labels(self) -> tuple[str, ...]:
        """The edge labels this node can choose (routers may derive them from params)."""
        return self.routes

    def run(self, memory: Mapping[str, Any], ctx: Any) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def help(cls) -> str:
        """The docstring, cleaned: the palette's help text."""
        import inspect
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        return cls.help().split("\n\n")[0].replace("\n", " ")


_REGISTRY: dict[str, type[Operator]] = {}
T = TypeVar("T", bound=type[Operator])


def operator(key: str, *, version: str = "1") -> Callable[[T], T]:
    """Register an operator class under a stable key 'module.name'."""
    module, _, name = key.partition(".")
    if module not in MODULES or not name:
        raise ValueError(f"operator key '{key}' must be '<module>.<name>' with module in {MODULES}")

    def deco(cls: T) -> T:
        if key in _REGISTRY and _REGISTRY[key] is not cls:
            raise ValueError(f"operator '{key}' is registered twice")
        if cls.kind not in KINDS:
            raise ValueError(f"operator '{key}': kind must be one of {KINDS}")
        for k in (*cls.reads, *cls.optional_reads, *cls.writes):
            if k not in OPERATOR_KEYS:
                raise ValueError(f"operator '{key}' declares unknown memory key '{k}'")
        if not issubclass(cls.Params, Params):
            raise ValueError(f"operator '{key}': Params must subclass flowkit.registry.Params")
        if not (cls.__doc__ or "").strip():
            raise ValueError(f"operator '{key}' needs a docstring (it is the palette help)")
        cls.key, cls.module, cls.version = key, module, version
        _REGISTRY[key] = cls
        return cls

    return deco


def _load_builtin() -> None:
    from . import operators  # noqa: F401  (registers the built-in catalog)


def get(key: str) -> type[Operator] | None:
    """The operator class registered under key, or None."""
    _load_builtin()
    return _REGISTRY.get(key)


def all_operators() -> dict[str, type[Operator]]:
    """Every registered operator, sorted by module then key."""
    _load_builtin()
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (MODULES.index(kv[1].module), kv[0])))


def describe(cls: type[Operator]) -> dict[str, Any]:
    """A JSON-able description (CLI `operators --json`, the canvas palette, forms)."""
    return {
        "key": cls.key, "module": cls.module, "version": cls.version, "kind": cls.kind,
        "summary": cls.summary(), "help": cls.help(), "reads": list(cls.reads),
        "optional_reads": list(cls.optional_reads), "writes": list(cls.writes),
        "routes": list(cls.routes), "params": cls.Params.model_json_schema(),
    }
