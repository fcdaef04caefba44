"""Differences between two flow versions: a unified text diff and a node/edge/param summary."""
from __future__ import annotations

import difflib
import json
from typing import Any

from flowkit.spec import FlowSpec, canonical


def unified(old: FlowSpec, new: FlowSpec, old_name: str = "old", new_name: str = "new",
            layout: bool = False) -> str:
    """difflib unified diff of the canonical JSON (layout left out unless asked for)."""
    def text(spec: FlowSpec) -> list[str]:
        data = canonical(spec)
        if layout:
            data["layout"] = {k: v.model_dump() for k, v in sorted(spec.layout.items())}
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False).splitlines(True)
    return "".join(difflib.unified_diff(text(old), text(new), fromfile=old_name, tofile=new_name))


def structural(old: FlowSpec, new: FlowSpec) -> list[str]:
    """One line per change: nodes added/removed, operator/label/param changes, edges, limits."""
    out: list[str] = []
    a = {n.id: n for n in old.nodes}
    b = {n.id: n for n in new.nodes}
    for nid in sorted(set(b) - set(a)):
        out.append(f"+ node {nid} ({b[nid].operator})")
    for nid in sorted(set(a) - set(b)):
        out.append(f"- node {nid} ({a[nid].operator})")
    for nid in sorted(set(a) & set(b)):
        x, y = a[nid], b[nid]
        if x.operator != y.operator:
            out.append(f"~ node {nid}: operator {x.operator} -> {y.operator}")
        if x.label != y.label:
            out.append(f"~ node {nid}: label {x.label!r} -> {y.label!r}")
        for key in sorted(set(x.params) | set(y.params)):
            if x.params.get(key, _MISSING) != y.params.get(key, _MISSING):
                out.append(f"~ node {nid}: param {key}: {_show(x.params.get(key, _MISSING))} -> "
                           f"{_show(y.params.get(key, _MISSING))}")

    def edge_set(spec: FlowSpec) -> set[tuple[str, str, str]]:
        return {(e.source, e.target, e.label or "") for e in spec.edges}
    for s, t, lb in sorted(edge_set(new) - edge_set(old)):
        out.append(f"+ edge {s} -> {t}" + (f" [{lb}]" if lb else ""))
    for s, t, lb in sorted(edge_set(old) - edge_set(new)):
        out.append(f"- edge {s} -> {t}" + (f" [{lb}]" if lb else ""))
    for key, val in new.limits.model_dump().items():
        before = old.limits.model_dump()[key]
        if before != val:
            out.append(f"~ limits.{key}: {before} -> {val}")
    for key in ("description", "entry"):
        if getattr(old, key) != getattr(new, key):
            out.append(f"~ {key}: {getattr(old, key)!r} -> {getattr(new, key)!r}")
    return out


class _Missing:
    def __repr__(self) -> str:
        return "(default)"


_MISSING: Any = _Missing()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(default)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
