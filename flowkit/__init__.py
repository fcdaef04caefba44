"""flowkit: Modular RAG flows as data, compiled to LangGraph, run on llama.cpp + Chroma, traced.

The public API is small: load/validate/compile a flow, run it, and the types you get back.
"""
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

__all__ = [
    "CompiledFlow", "EdgeSpec", "FlowSpec", "FlowkitError", "Limits", "ListSink", "MemoryView",
    "NodeError", "NodeSpec", "Operator", "OperatorInputError", "OperatorParams", "Problem",
    "ResourceError", "Resources", "RunContext", "RunEnd", "Settings", "SpecError",
    "StaleSaveError", "StepEvent", "ValidationError",
    "all_operators", "check", "compile_flow", "dumps", "load", "loads", "operator", "run_flow",
]
