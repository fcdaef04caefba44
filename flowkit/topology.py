"""Graph facts of a flow that validation and compilation share: entry, branches, merges, cycles."""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from .spec import FlowSpec


@dataclass
class Topology:
    """The flow as a networkx DiGraph plus where parallel branches start and end."""

    graph: nx.MultiDiGraph
    kinds: dict[str, str]                                # node id -> operator kind
    entry: str | None
    branch_of: dict[str, str] = field(default_factory=dict)      # node -> branch id
    branch_conflicts: dict[str, set[str]] = field(default_factory=dict)  # node -> branch ids
    nested: set[str] = field(default_factory=set)        # fan-out nodes inside a branch
    fanouts: set[str] = field(default_factory=set)

    def successors(self, node: str) -> list[str]:
        return list(dict.fromkeys(self.graph.successors(node)))

    def predecessors(self, node: str) -> list[str]:
        return list(dict.fromkeys(self.graph.predecessors(node)))


def analyse(spec: FlowSpec, kinds: dict[str, str]) -> Topology:
    """Build the graph and assign every node reached from a fan-out to that branch."""
    g = nx.MultiDiGraph()
    for n in spec.nodes:
        g.add_node(n.id)
    for e in spec.edges:
        if e.source in g and e.target in g:
            g.add_edge(e.source, e.target, label=e.label)
    topo = Topology(graph=g, kinds=kinds, entry=spec.entry_node())
    for node in g.nodes:
        if kinds.get(node, "step") in ("step", "merge") and len(topo.successors(node)) > 1:
            topo.fanouts.add(node)
    for fan in sorted(topo.fanouts):
        for start in topo.successors(fan):
            bid = f"{fan}>{start}"
            stack, seen = [start], set()
            while stack:
                node = stack.pop()
                if node in seen or node == fan or kinds.get(node) == "merge":
                    continue
                seen.add(node)
                topo.branch_conflicts.setdefault(node, set()).add(bid)
                if node in topo.fanouts:
                    topo.nested.add(node)
                    continue
                stack.extend(topo.successors(node))
    for node, bids in topo.branch_conflicts.items():
        if len(bids) == 1:
            topo.branch_of[node] = next(iter(bids))
    return topo
