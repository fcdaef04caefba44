"""Candidates: points of a search space turned into flow specs.

A `Candidate` names a base flow, a model and the changes (operator swaps, param values). The
hand-written flows themselves come first (`base_candidates`), then Optuna samples the rest in
waves (`study`), each point turned into a candidate by `normalise`.
`build_spec` applies a candidate to its base flow and validates the result like any flow; a swap
keeps the params the new operator knows and drops the others.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import registry
from ..errors import FlowkitError
from ..spec import FlowSpec, canonical
from ..validate import ensure_valid
from .space import SearchSpace, axis_values

DEFAULT_MODEL = "default"


@dataclass(frozen=True)
class Candidate:
    """One point: base flow, model, operator swaps (node -> key), params ('node.param' -> value)."""

    flow: str
    model: str = DEFAULT_MODEL
    operators: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"flow": self.flow, "model": self.model, "operators": dict(self.operators),
                "params": dict(self.params)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Candidate:
        return cls(str(d["flow"]), str(d.get("model", DEFAULT_MODEL)),
                   dict(d.get("operators") or {}), dict(d.get("params") or {}))

    def describe(self) -> str:
        """'naive_rag · retrieve=retrieval.bm25 · retrieve.top_k=6 · model smollm2-135m'."""
        flow = self.flow.rsplit("/", 1)[-1].removesuffix(".json")
        parts = [flow] + [f"{n}={op}" for n, op in sorted(self.operators.items())]
        parts += [f"{k}={_short(v)}" for k, v in sorted(self.params.items())]
        if self.model != DEFAULT_MODEL:
            parts.append(f"model {self.model}")
        return " · ".join(parts)


def _short(value: object, width: int = 32) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def build_spec(space: SearchSpace, base: FlowSpec, cand: Candidate, name: str = "") -> FlowSpec:
    """The candidate's flow: its base with the swaps and params applied, validated."""
    nodes = []
    for node in base.nodes:
        op, params = node.operator, dict(node.params)
        new_op = cand.operators.get(node.id)
        if new_op and new_op != op:
            cls = registry.get(new_op)
            if cls is None:
                raise FlowkitError(f"unknown operator '{new_op}'")
            params = {k: v for k, v in params.items() if k in cls.Params.model_fields}
            op = new_op
        cls_now = registry.get(op)
        for key, value in cand.params.items():
            nid, _, pname = key.partition(".")
            if nid == node.id and cls_now is not None and pname in cls_now.Params.model_fields:
                params[pname] = value
        nodes.append(node.model_copy(update={"operator": op, "params": params}))
    spec = base.model_copy(update={"nodes": nodes, "name": name or base.name,
                                   "description": f"{base.description} [search: "
                                                  f"{cand.describe()}]".strip()})
    ensure_valid(spec)
    return spec


def identity(spec: FlowSpec, model: str) -> str:
    """A 10-hex key of what a candidate runs (its flow without name, text or layout, params with
    their defaults, and its model): two points that build the same flow are one candidate."""
    data = canonical(spec)
    for k in ("name", "description"):
        data.pop(k, None)
    for node in data["nodes"]:
        node.pop("label", None)
        cls = registry.get(node["operator"])
        if cls is not None:     # defaults written out: an explicit default is the same flow
            node["params"] = cls.Params.model_validate(node["params"]).model_dump(mode="json")
    blob = json.dumps({"flow": data, "model": model}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def base_candidates(space: SearchSpace) -> list[Candidate]:
    """Each listed flow as written, on the first model."""
    return [Candidate(f, space.models[0]) for f in space.flows]


def normalise(space: SearchSpace, flows: Mapping[str, FlowSpec], flow: str, model: str,
               picks: Mapping[str, Any]) -> Candidate:
    """Keep only the picks that apply to `flow` (its nodes, its operators after the swaps)."""
    spec = flows[flow]
    ops: dict[str, str] = {}
    for i, ax in enumerate(space.operators):
        if ax.flow in (None, flow) and any(n.id == ax.node for n in spec.nodes):
            choice = str(picks[f"o{i}"])
            if choice != spec.node(ax.node).operator:
                ops[ax.node] = choice
    params: dict[str, Any] = {}
    for i, pax in enumerate(space.params):
        if pax.flow in (None, flow) and any(n.id == pax.node for n in spec.nodes):
            op = registry.get(ops.get(pax.node, spec.node(pax.node).operator))
            if op is not None and pax.param in op.Params.model_fields:
                params[f"{pax.node}.{pax.param}"] = axis_values(pax)[int(picks[f"p{i}"])]
    return Candidate(flow, model, ops, params)
