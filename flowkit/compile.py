"""The compiler: a validated FlowSpec becomes a frozen LangGraph state machine over working memory.

A pure function of the spec: it builds operator instances from their params (cheap: no model is
loaded) and wires LangGraph nodes and edges:
- a plain edge is a direct transition; several out of one plain node fan out in parallel, each
  branch writing into its own scope of memory until a merge node joins them (it waits for all);
- a router's or judge's edges are conditional on the label it writes to `route`;
- every node checks the flow's limits first; once one is hit the remaining nodes are skipped and
  the run goes to the finishing step, which still leaves an answer from what is in memory.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from . import registry
from .memory import Memory
from .spec import FlowSpec, canonical
from .topology import Topology, analyse
from .validate import ensure_valid

FINISH = "_finish"


@dataclass(frozen=True)
class CompiledFlow:
    """A flow ready to run: its spec, operator instances, topology and the compiled graph."""

    spec: FlowSpec
    operators: Mapping[str, registry.Operator]
    topology: Topology
    graph: Any
    warnings: tuple[Any, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    def operator_versions(self) -> dict[str, str]:
        return {op.key: op.version for op in self.operators.values()}

    def resolved_spec(self) -> dict[str, Any]:
        """The spec with every param filled in with its default: what exactly ran."""
        data = canonical(self.spec)
        for n in data["nodes"]:
            n["params"] = self.operators[n["id"]].params.model_dump(mode="json")
        return data


def compile_flow(spec: FlowSpec) -> CompiledFlow:
    """Validate (raising ValidationError with every problem) and build the state machine."""
    warnings = ensure_valid(spec)
    ops: dict[str, registry.Operator] = {}
    for n in spec.nodes:
        cls = registry.get(n.operator)
        assert cls is not None  # guaranteed by ensure_valid
        ops[n.id] = cls(n.id, cls.Params.model_validate(n.params))
    kinds = {nid: op.kind for nid, op in ops.items()}
    topo = analyse(spec, kinds)

    from .engine import make_finish, make_node   # the node wrappers live beside the runner

    builder: StateGraph = StateGraph(Memory)
    for nid, op in ops.items():
        inputs = tuple(sorted({topo.branch_of[p] for p in topo.predecessors(nid)
                               if p in topo.branch_of})) if op.kind == "merge" else ()
        builder.add_node(nid, make_node(op, topo.branch_of.get(nid), inputs))
    builder.add_node(FINISH, make_finish())
    builder.add_conditional_edges(START, _start_router(topo.entry or spec.nodes[0].id),
                                  [*ops.keys()])
    builder.add_edge(FINISH, END)

    joins: dict[str, list[str]] = {}
    for nid, op in ops.items():
        succ = topo.successors(nid)
        in_branch = nid in topo.branch_of
        if op.kind in ("router", "judge"):
            table: dict[str, list[str]] = {}
            for _, tgt, data in topo.graph.out_edges(nid, data=True):
                table.setdefault(data.get("label") or "", []).append(tgt)
            targets = sorted({t for ts in table.values() for t in ts} | {FINISH})
            builder.add_conditional_edges(nid, _label_router(nid, table, topo.branch_of.get(nid)),
                                          targets)
            continue
        plain, to_merge = [], []
        for s in succ:
            if kinds[s] == "merge" and in_branch and topo.branch_of.get(nid) != topo.branch_of.get(s):
                to_merge.append(s)
            else:
                plain.append(s)
        for m in to_merge:
            joins.setdefault(m, []).append(nid)
        if plain or not to_merge:
            builder.add_conditional_edges(nid, _plain_router(plain, in_branch),
                                          sorted(set(plain) | {FINISH}))
    for merge, preds in joins.items():
        builder.add_edge(sorted(preds) if len(preds) > 1 else preds[0], merge)

    graph = builder.compile()
    return CompiledFlow(spec=spec, operators=MappingProxyType(ops), topology=topo, graph=graph,
                        warnings=tuple(warnings))


def _start_router(entry: str) -> Any:
    def start(state: dict[str, Any], config: RunnableConfig) -> str:
        return (config.get("configurable") or {}).get("flowkit_start") or entry
    return start


def _plain_router(targets: list[str], in_branch: bool) -> Any:
    def route(state: dict[str, Any]) -> list[str] | str:
        if not targets or (state.get("halt") and not in_branch):
            return FINISH
        return targets if len(targets) > 1 else targets[0]
    return route


def _label_router(node: str, table: dict[str, list[str]], branch: str | None) -> Any:
    def route(state: dict[str, Any]) -> list[str] | str:
        if state.get("halt") and branch is None:
            return FINISH
        scope = (state.get("branches") or {}).get(branch, {}) if branch else state
        label = scope.get("route") or ""
        targets = table.get(label)
        if not targets:
            return FINISH   # an unwired route ends the run (validation warned about it)
        return targets if len(targets) > 1 else targets[0]
    return route
