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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from . import registry
from .contract import Operator
from .memory import Memory
from .nodes import FINISH, _Run, make_finish, make_node
from .spec import FlowSpec, canonical
from .topology import Topology, analyse
from .validate import ensure_valid

__all__ = ["FINISH", "CompiledFlow", "Wiring", "build_operators", "compile_flow", "wiring"]


@dataclass(frozen=True)
class CompiledFlow:
    """A flow ready to run: its spec, operator instances, topology and the compiled graph."""

    spec: FlowSpec
    operators: Mapping[str, Operator[Any]]
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


@dataclass(frozen=True)
class NodeWiring:
    """How one node is wrapped: its parallel branch (if any) and, for a merge, the branches it joins."""

    node_id: str
    branch: str | None
    merge_inputs: tuple[str, ...]


@dataclass(frozen=True)
class NextEdges:
    """A plain node's way on: to `targets` (several: fan out), or to the finish when halted."""

    source: str
    targets: tuple[str, ...]
    in_branch: bool


@dataclass(frozen=True)
class LabelEdges:
    """A router's or judge's edges: the label it wrote to `route` picks the targets."""

    source: str
    table: Mapping[str, tuple[str, ...]]
    branch: str | None


@dataclass(frozen=True)
class JoinEdge:
    """Parallel branches ending at a merge node: it runs once all of `sources` are done."""

    sources: tuple[str, ...]
    target: str


@dataclass(frozen=True)
class Wiring:
    """The state machine's shape, shared by `compile_flow` and the LangGraph exporter."""

    entry: str
    nodes: tuple[NodeWiring, ...]
    edges: tuple[NextEdges | LabelEdges | JoinEdge, ...]


def wiring(spec: FlowSpec, ops: Mapping[str, Operator[Any]], topo: Topology) -> Wiring:
    """Node wrappers and edges, in the order of the flow's nodes (a pure function)."""
    kinds = {nid: op.kind for nid, op in ops.items()}
    nodes = []
    for nid, op in ops.items():
        inputs = tuple(sorted({topo.branch_of[p] for p in topo.predecessors(nid)
                               if p in topo.branch_of})) if op.kind == "merge" else ()
        nodes.append(NodeWiring(nid, topo.branch_of.get(nid), inputs))
    edges: list[NextEdges | LabelEdges | JoinEdge] = []
    joins: dict[str, list[str]] = {}
    for nid, op in ops.items():
        in_branch = nid in topo.branch_of
        if op.kind in ("router", "judge"):
            table: dict[str, list[str]] = {}
            for _, tgt, data in topo.graph.out_edges(nid, data=True):
                table.setdefault(data.get("label") or "", []).append(tgt)
            edges.append(LabelEdges(nid, MappingProxyType({k: tuple(v) for k, v in table.items()}),
                                    topo.branch_of.get(nid)))
            continue
        plain, to_merge = [], []
        for s in topo.successors(nid):
            if kinds[s] == "merge" and in_branch and topo.branch_of.get(nid) != topo.branch_of.get(s):
                to_merge.append(s)
            else:
                plain.append(s)
        for m in to_merge:
            joins.setdefault(m, []).append(nid)
        if plain or not to_merge:
            edges.append(NextEdges(nid, tuple(plain), in_branch))
    for merge, preds in joins.items():
        edges.append(JoinEdge(tuple(sorted(preds)), merge))
    return Wiring(entry=topo.entry or spec.nodes[0].id, nodes=tuple(nodes), edges=tuple(edges))


def build_operators(spec: FlowSpec) -> dict[str, Operator[Any]]:
    """One operator instance per node, params validated (call after `ensure_valid`)."""
    ops: dict[str, Operator[Any]] = {}
    for n in spec.nodes:
        cls = registry.get(n.operator)
        assert cls is not None  # guaranteed by ensure_valid
        ops[n.id] = cls(n.id, cls.Params.model_validate(n.params))
    return ops


def compile_flow(spec: FlowSpec) -> CompiledFlow:
    """Validate (raising ValidationError with every problem) and build the state machine."""
    warnings = ensure_valid(spec)
    ops = build_operators(spec)
    topo = analyse(spec, {nid: op.kind for nid, op in ops.items()})
    wires = wiring(spec, ops, topo)

    builder: StateGraph[Any, _Run, Any, Any] = StateGraph(Memory, context_schema=_Run)
    for w in wires.nodes:
        builder.add_node(w.node_id, make_node(ops[w.node_id], w.branch, w.merge_inputs))
    builder.add_node(FINISH, make_finish())
    builder.add_conditional_edges(START, start_router(wires.entry), [*ops.keys()])
    builder.add_edge(FINISH, END)
    for e in wires.edges:
        if isinstance(e, LabelEdges):
            builder.add_conditional_edges(e.source, label_router(e.table, e.branch),
                                          label_targets(e.table))
        elif isinstance(e, NextEdges):
            builder.add_conditional_edges(e.source, next_router(e.targets, e.in_branch),
                                          sorted({*e.targets, FINISH}))
        else:
            builder.add_edge(list(e.sources) if len(e.sources) > 1 else e.sources[0], e.target)

    graph = builder.compile()
    return CompiledFlow(spec=spec, operators=MappingProxyType(ops), topology=topo, graph=graph,
                        warnings=tuple(warnings))


def start_router(entry: str) -> Any:
    """From START: the entry node, or the node a fork starts at (the run context's
    `start_node`)."""
    def start(state: dict[str, Any], runtime: Runtime[_Run]) -> str:
        return runtime.context.start_node or entry
    return start


def next_router(targets: Sequence[str], in_branch: bool) -> Any:
    """After a plain node: its successors (all of them: a fan-out), or the finish once halted."""
    targets = list(targets)

    def route(state: dict[str, Any]) -> list[str] | str:
        if not targets or (state.get("halt") and not in_branch):
            return FINISH
        return targets if len(targets) > 1 else targets[0]
    return route


def label_router(table: Mapping[str, Sequence[str]], branch: str | None = None) -> Any:
    """After a router or judge: the targets of the label it wrote to `route` (in its branch's
    scope when inside a parallel branch); the finish when halted or the label is unwired."""
    lists = {k: list(v) for k, v in table.items()}

    def route(state: dict[str, Any]) -> list[str] | str:
        if state.get("halt") and branch is None:
            return FINISH
        scope = (state.get("branches") or {}).get(branch, {}) if branch else state
        label = scope.get("route") or ""
        targets = lists.get(label)
        if not targets:
            return FINISH   # an unwired route ends the run (validation warned about it)
        return targets if len(targets) > 1 else targets[0]
    return route


def label_targets(table: Mapping[str, Sequence[str]]) -> list[str]:
    """Every node a label router can go to, the finish included (sorted)."""
    return sorted({t for ts in table.values() for t in ts} | {FINISH})
