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

from . import jsonread
from .errors import SpecError, short
from .memory import COUNTERS

SCHEMA_VERSION = 1

# Bounds on a flow document (README: "Limits of a flow file"). A flow is a small graph a person
# draws; these leave ample room for that and refuse a hostile or broken file before it costs much.
#: Largest flow file read, in bytes (the templates are 1-6 kB).
MAX_FILE_BYTES = 2_000_000
#: Most nodes in a flow (the largest template has 8; the canvas stays fluid to about 100).
MAX_NODES = 500
#: Most edges in a flow.
MAX_EDGES = 2_000
#: Longest text anywhere in a flow (description, labels, prompt templates in params), in characters.
MAX_STRING = 20_000
#: Deepest nesting of JSON objects/arrays, checked by a bracket scan before the parser recurses.
MAX_DEPTH = 64
#: Most pydantic errors listed in one message.
_MAX_LISTED = 10


class NodeSpec(BaseModel):
    """One operator instance in a flow."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
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

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    max_steps: int = Field(60, ge=1, le=10_000, description="Node visits in one run")
    max_llm_calls: int = Field(30, ge=1, le=10_000, description="LLM calls in one run")
    max_tokens: int = Field(30_000, ge=16, le=10_000_000, description="Prompt + completion tokens")
    timeout_s: float = Field(600.0, gt=0, le=86_400, description="Wall-clock seconds")

    def caps(self) -> dict[str, int]:
        """The limit on each of the run's counters (flowkit.memory.COUNTERS), in their order:
        counter `c` is bounded by field ``max_<c>``."""
        return {c: int(getattr(self, f"max_{c}")) for c in COUNTERS}


class Position(BaseModel):
    """Where a node sits on the canvas (finite numbers only: JSON has no NaN or Infinity)."""

    model_config = ConfigDict(allow_inf_nan=False)

    x: float = 0.0
    y: float = 0.0


class FlowSpec(BaseModel):
    """A whole flow: nodes, edges, limits; `layout` holds canvas positions only."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    schema_version: int = Field(SCHEMA_VERSION, ge=1, strict=True)
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
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SpecError(f"schema_version must be a positive integer; got {short(version)}",
                        code="bad_schema_version", field="schema_version")
    if version > SCHEMA_VERSION:
        raise SpecError(f"schema_version {version} is newer than this flowkit understands "
                        f"({SCHEMA_VERSION}); upgrade flowkit", code="bad_schema_version",
                        field="schema_version")
    return {**data, "schema_version": SCHEMA_VERSION}


#: pydantic error types of a value of the wrong JSON type (strict mode: no true -> 1, "10" -> 10).
_TYPE_ERRORS = frozenset({"int_type", "float_type", "bool_type", "string_type"})


def _format_pydantic(err: PydanticValidationError) -> tuple[str, str | None]:
    """One line naming each failing field (at most _MAX_LISTED), and the first field's path."""
    errs = err.errors()
    parts, first = [], None
    for e in errs[:_MAX_LISTED]:
        loc = ".".join(short(str(x), 40) for x in e["loc"])
        first = first or loc or None
        got = f" (got {short(json.dumps(e['input']), 40)})" if e["type"] in _TYPE_ERRORS else ""
        parts.append(f"{loc}: {short(e['msg'])}{got}")
    more = f"; and {len(errs) - _MAX_LISTED} more" if len(errs) > _MAX_LISTED else ""
    return "; ".join(parts) + more, first


def _check_sizes(data: dict[str, Any]) -> None:
    """Count nodes and edges before anything walks or validates them."""
    for key, bound, code in (("nodes", MAX_NODES, "too_many_nodes"),
                             ("edges", MAX_EDGES, "too_many_edges"),
                             ("layout", MAX_NODES, "too_many_nodes")):
        value = data.get(key)
        if isinstance(value, (list, dict)) and len(value) > bound:
            raise SpecError(f"{len(value)} {key}; a flow has at most {bound}", code=code, field=key)


def from_dict(data: Any) -> FlowSpec:
    """Build a FlowSpec from parsed JSON (or any untrusted dict); errors carry a code and the
    field path, and quote at most a few dozen characters of the input.

    Strict: every field must already have its JSON type (`max_steps: true` or `"10"` is refused,
    not read as 1 or 10; an integer is accepted where a float is expected)."""
    if not isinstance(data, dict):
        raise SpecError(f"a flow must be a JSON object; got {type(data).__name__}")
    _check_sizes(data)
    jsonread.check_value(data, None, max_depth=MAX_DEPTH, max_string=MAX_STRING)
    try:
        return FlowSpec.model_validate(migrate(data), strict=True)
    except PydanticValidationError as err:
        text, field = _format_pydantic(err)
        raise SpecError(f"invalid flow: {text}", field=field) from None


def read_document(raw: bytes | str, source: str = "<string>") -> Any:
    """Parse a flow document's bytes or text within the bounds (size, UTF-8, depth, numbers,
    text); the parsed JSON value, or SpecError with a code."""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise SpecError(f"{size} bytes; a flow file has at most {MAX_FILE_BYTES}",
                        code="file_too_large", source=source)
    text = jsonread.decode_utf8(raw, source) if isinstance(raw, bytes) else raw
    return jsonread.parse(text, source, max_depth=MAX_DEPTH, max_string=MAX_STRING)


def loads(text: bytes | str, source: str = "<string>") -> FlowSpec:
    """Parse a flow from JSON text or bytes."""
    data = read_document(text, source)
    try:
        return from_dict(data)
    except SpecError as err:
        raise err.at(source) from None


def read_file(path: str | Path) -> bytes:
    """A flow file's bytes, refusing (without reading it all) one over MAX_FILE_BYTES."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise SpecError(f"cannot read flow file {p}: {err.strerror}", code="unreadable") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(f"more than {MAX_FILE_BYTES} bytes; a flow file has at most "
                        f"{MAX_FILE_BYTES}", code="file_too_large", source=str(p))
    return raw


def load(path: str | Path) -> FlowSpec:
    """Read a flow file."""
    return loads(read_file(path), source=str(path))


def to_dict(spec: FlowSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json")


def dumps(spec: FlowSpec) -> str:
    """Canonical JSON: stable key order, two-space indent, trailing newline."""
    try:
        text = json.dumps(to_dict(spec), indent=2, sort_keys=True, ensure_ascii=False,
                          allow_nan=False)
    except ValueError:   # NaN/Infinity in params set from Python: never write them to a file
        raise SpecError(f"flow '{short(spec.name)}' holds a NaN or infinite number; JSON has "
                        "none", code="non_finite_number") from None
    return text + "\n"


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
