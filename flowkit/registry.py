"""The closed operator catalog: lookups by stable key, built on the contract in flowkit.contract.

Flow files name operators only by key; nothing is ever imported by a path taken from a file. The
built-in operators are found by walking the packages of flowkit.operators (every module file in
each module package is imported once, see `flowkit.operators.discover`).
"""
from __future__ import annotations

from typing import Any

from .contract import KINDS, MODULES, Operator, OperatorParams, operator, registered

__all__ = ["KINDS", "MODULES", "Operator", "OperatorParams", "all_operators", "describe", "get",
           "operator"]


def _load_builtin() -> None:
    from . import operators  # noqa: F401  (importing it registers the built-in catalog)


def get(key: str) -> type[Operator[Any]] | None:
    """The operator class registered under key, or None."""
    _load_builtin()
    return registered().get(key)


def all_operators() -> dict[str, type[Operator[Any]]]:
    """Every registered operator, sorted by module then key."""
    _load_builtin()
    return dict(sorted(registered().items(),
                       key=lambda kv: (MODULES.index(kv[1].module), kv[0])))


def describe(cls: type[Operator[Any]]) -> dict[str, Any]:
    """A JSON-able description (CLI `operators --json`, the canvas palette, forms)."""
    return {
        "key": cls.key, "module": cls.module, "version": cls.version, "kind": cls.kind,
        "summary": cls.summary(), "help": cls.help(), "reads": list(cls.reads),
        "optional_reads": list(cls.optional_reads), "writes": list(cls.writes),
        "routes": list(cls.routes), "params": cls.Params.model_json_schema(),
    }
