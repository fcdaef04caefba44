"""flowkit: Modular RAG flows as data, compiled to LangGraph, run on llama.cpp + Chroma, traced.

The public API is small: load/validate/compile a flow, run it, and the types you get back.
Each name is imported from its module when first used (PEP 562), so `import flowkit.errors` or
the `flowkit` command's start does not load LangGraph until a flow is compiled.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compile import CompiledFlow, compile_flow
    from .context import RunContext
    from .contract import Operator, OperatorParams, operator
    from .engine import run_flow
    from .errors import (
        FlowkitError,
        NodeError,
        OperatorInputError,
        Problem,
        ResourceError,
        SpecError,
        StaleSaveError,
        ValidationError,
    )
    from .memory import MemoryView
    from .registry import all_operators
    from .runtime.resources import Resources, Settings
    from .spec import EdgeSpec, FlowSpec, Limits, NodeSpec, dumps, load, loads
    from .trace import ListSink, RunEnd, StepEvent
    from .validate import check

#: each public name and the module that defines it
_WHERE = {
    "CompiledFlow": "compile", "compile_flow": "compile", "RunContext": "context",
    "Operator": "contract", "OperatorParams": "contract", "operator": "contract",
    "run_flow": "engine", "FlowkitError": "errors", "NodeError": "errors",
    "OperatorInputError": "errors", "Problem": "errors", "ResourceError": "errors",
    "SpecError": "errors", "StaleSaveError": "errors", "ValidationError": "errors",
    "MemoryView": "memory", "all_operators": "registry", "Resources": "runtime.resources",
    "Settings": "runtime.resources", "EdgeSpec": "spec", "FlowSpec": "spec", "Limits": "spec",
    "NodeSpec": "spec", "dumps": "spec", "load": "spec", "loads": "spec", "ListSink": "trace",
    "RunEnd": "trace", "StepEvent": "trace", "check": "validate",
}

__all__ = [
    "CompiledFlow", "EdgeSpec", "FlowSpec", "FlowkitError", "Limits", "ListSink", "MemoryView",
    "NodeError", "NodeSpec", "Operator", "OperatorInputError", "OperatorParams", "Problem",
    "ResourceError", "Resources", "RunContext", "RunEnd", "Settings", "SpecError",
    "StaleSaveError", "StepEvent", "ValidationError",
    "all_operators", "check", "compile_flow", "dumps", "load", "loads", "operator", "run_flow",
]


def __getattr__(name: str) -> Any:  # noqa: ANN401 (a module's attribute: any public name)
    """The public name `name`, imported from its module on first use."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'flowkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
