"""FlowSpec: a flow as plain data (JSON), with load, dump, canonical form and migration.

A flow names operators by their registry key ("retrieval.dense"), never by Python path, so loading a
flow can never import or execute anything. Canvas positions live in `layout`, apart from what the
compiler reads.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from .errors import SpecError

SCHEMA_VERSION = 1


class NodeSpec(BaseModel):
    """One operator instance in a flow."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$",
                    description="Unique node id, used in traces and edges")
    operator: str = Field(min_length=1, description="Registry key, e.g. 'retrieval.dense'")
    params: dict[str, Any] = Field(default_factory=dict, description="The operator's params")
    label: str = Field("", description="A display name for the canvas")


class EdgeSpec(BaseModel):
    """A directed edge; `label` is a router's route or a judge's 'continue'/'done'."""

    model_config = ConfigDict(extra="forbid")
    source: str
    target: str
    label: str | None = None


class Limits(BaseModel):
    """Budgets the flow enforces on itself; on overrun the run ends as `budget_exceeded`."""

    model_config = ConfigDict(extra="forbid")
    max_steps: int = Field(60, ge=1, le=10_000, description="Node visits in one run")
    max_llm_calls: int = Field(30, ge=1, le=10_000, description="LLM calls in one run")
    max_tokens: int = Field(30_000, ge=16, le=10_000_000, description="Prompt + completion tokens")
    timeout_s: float = Field(600.0, gt=0, le=86_400, description="Wall-clock seconds")


class Position(BaseModel):
    """Where a node sits on the canvas."""

    x: float = 0.0
    y: float = 0.0


class FlowSpec(BaseModel):
    """A whole flow: nodes, edges, limits; `layout` holds canvas positions only."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    entry: str | None = Field(None, description="First node; default: the node with no incoming edge")
    nodes: list[NodeSpec] = Field(default_factory=list)
    edges: list[EdgeSpec] = Field(default_factory=list)
    limits: Limits = Field(default_factory=Limits)
    layout: dict[str, Position] = Field(default_factory=dict)

    def node(self, node_id: str) -> NodeSpec:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def entry_node(self) -> str | None:
        """The explicit entry, or the single node without incoming edges."""
        if self.entry:
            return self.entry
        targets = {e.target for e in self.edges}
        roots = [n.id for n in self.nodes if n.id not in targets]
        return roots[0] if len(roots) == 1 else None


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older flow document up to SCHEMA_VERSION (returns a new dict)."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int):
        raise SpecError(f"schema_version must be an integer; got {version!r}")
    if version > SCHEMA_VERSION:
        raise SpecError(f"schema_version {version} is newer than this flowkit understands "
                        f"({SCHEMA_VERSION}); upgrade flowkit")
    return {**data, "schema_version": SCHEMA_VERSION}


def _format_pydantic(err: PydanticValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def from_dict(data: Any) -> FlowSpec:
    """Build a FlowSpec from parsed JSON; errors name the field path."""
    if not isinstance(data, dict):
        raise SpecError(f"a flow must be a JSON object; got {type(data).__name__}")
    try:
        return FlowSpec.model_validate(migrate(data))
    except PydanticValidationError as err:
        raise SpecError(f"invalid flow: {_format_pydantic(err)}") from None


def loads(text: str, source: str = "<string>") -> FlowSpec:
    """Parse a flow from JSON text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"{source}: not valid JSON at line {err.lineno}, column {err.colno}: "
                        f"{err.msg}") from None
    try:
        return from_dict(data)
    except SpecError as err:
        raise SpecError(f"{source}: {err}") from None


def load(path: str | Path) -> FlowSpec:
    """Read a flow file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise SpecError(f"cannot read flow file {p}: {err.strerror}") from None
    return loads(text, source=str(p))


def to_dict(spec: FlowSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json")


def dumps(spec: FlowSpec) -> str:
    """Canonical JSON: stable key order, two-space indent, trailing newline."""
    return json.dumps(to_dict(spec), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def dump(spec: FlowSpec, path: str | Path) -> None:
    """Write a flow file atomically (a crash never leaves half a file)."""
    p = Path(path)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(dumps(spec), encoding="utf-8")
    tmp.replace(p)


def canonical(spec: FlowSpec) -> dict[str, Any]:
    """What the compiler reads: the spec without canvas layout, edges sorted."""
    data = to_dict(spec)
    data.pop("layout", None)
    data["edges"] = sorted(data["edges"], key=lambda e: (e["source"], e["target"], e["label"] or ""))
    return data


def fingerprint(spec: FlowSpec) -> str:
    """A short hash of the canonical form; equal for flows that differ only in layout."""
    blob = json.dumps(canonical(spec), sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
