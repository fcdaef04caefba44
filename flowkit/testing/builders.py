"""Compact flow builders for tests: flow("name", nodes=[(id, op, params)], edges=["a>b", "j>r:continue"])."""
from __future__ import annotations

from typing import Any

from ..spec import EdgeSpec, FlowSpec, Limits, NodeSpec


def flow(name: str, nodes: list[tuple[str, str] | tuple[str, str, dict[str, Any]]],
         edges: list[str], limits: dict[str, Any] | None = None, entry: str | None = None) -> FlowSpec:
    """Build a FlowSpec; an edge is 'src>dst' or 'src>dst:label'."""
    node_specs = [NodeSpec(id=n[0], operator=n[1], params=(n[2] if len(n) > 2 else {}))
                  for n in nodes]
    edge_specs = []
    for e in edges:
        body, _, label = e.partition(":")
        src, dst = body.split(">")
        edge_specs.append(EdgeSpec(source=src, target=dst, label=label or None))
    return FlowSpec(name=name, nodes=node_specs, edges=edge_specs, limits=Limits(**(limits or {})),
                    entry=entry)
