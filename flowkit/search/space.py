"""The search-space file: what a flow search may vary, validated like a flow and bounded in size.

A space is a small JSON file kept beside the flows it varies (`my_space.json`)::

    {
      "kind": "flowkit-search-space", "version": 1, "name": "rag_space",
      "flows": ["naive_rag", "rewrite_retrieve_read"],        # the template / flow choice
      "params": [                                             # a node's typed params
        {"node": "retrieve", "param": "top_k", "low": 2, "high": 8, "step": 2},
        {"node": "generate", "param": "max_tokens", "choices": [32, 64]}
      ],
      "operators": [                                          # a swap within the same slot
        {"node": "retrieve", "choices": ["retrieval.bm25", "retrieval.dense", "retrieval.hybrid"]}
      ],
      "models": ["default", "smollm2-135m"],                  # packaged ids or GGUF paths
      "max_candidates": 12, "seed": 0
    }

An axis applies to every listed flow that has the node (or only to `"flow": NAME`). A range
(`low`, `high`, `step`; the step defaults to 1 for integers and is required for decimals) is
checked against the operator's typed params, like any value. `check_space` returns every problem
as "where: what" (e.g. `params[0] (node 'retrieve', param 'top_kk'): ...`); `SpaceError` carries
them all.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from .. import jsonread, registry
from ..errors import FlowkitError, SpecError
from ..spec import MAX_DEPTH, MAX_STRING, FlowSpec

KIND = "flowkit-search-space"
MAX_FILE_BYTES = 64 * 1024
#: the largest number of distinct points a space may describe, and of values one range may give
MAX_POINTS = 1_000_000
MAX_AXIS_VALUES = 1_000
#: The largest magnitude of a range's low, high and step (no param is tuned past it; beyond it
#: `high - low` can overflow a float)
MAX_RANGE_ABS = 1e15
MAX_CANDIDATES = 64


class SpaceError(FlowkitError):
    """A space file with problems; `problems` lists each as 'where: what'."""

    def __init__(self, problems: list[str], source: str = "space") -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: the search space has {len(problems)} problem(s):\n{lines}")


class ParamAxis(BaseModel):
    """One node parameter that varies: a list of `choices`, or a range `low`..`high` by `step`."""

    model_config = ConfigDict(extra="forbid")
    node: str = Field(min_length=1)
    param: str = Field(min_length=1)
    flow: str | None = None
    choices: list[Any] | None = Field(None, min_length=1, max_length=MAX_AXIS_VALUES)
    low: float | None = None
    high: float | None = None
    step: float | None = None


class OperatorAxis(BaseModel):
    """A node whose operator may be swapped for another of the same module and kind."""

    model_config = ConfigDict(extra="forbid")
    node: str = Field(min_length=1)
    flow: str | None = None
    choices: list[str] = Field(min_length=2, max_length=16)


class SearchSpace(BaseModel):
    """A whole space: the flows, the axes, the models and how many candidates to try."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["flowkit-search-space"] = "flowkit-search-space"
    version: Literal[1] = 1
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    flows: list[str] = Field(min_length=1, max_length=8)
    params: list[ParamAxis] = Field(default_factory=list, max_length=16)
    operators: list[OperatorAxis] = Field(default_factory=list, max_length=8)
    models: list[str] = Field(default_factory=lambda: ["default"], min_length=1, max_length=4)
    max_candidates: int = Field(12, ge=1, le=MAX_CANDIDATES)
    seed: int = 0


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "space"


def parse_space(data: object, source: str = "space") -> SearchSpace:
    """A SearchSpace from parsed JSON; SpaceError names each field that is wrong."""
    try:
        return SearchSpace.model_validate(data)
    except PydanticValidationError as err:
        raise SpaceError([f"{_where(tuple(e['loc']))}: {e['msg']}" for e in err.errors()],
                         source) from err


def load_space(path: str | Path) -> SearchSpace:
    """Read and parse a space file: a regular file (never a FIFO or a device such as /dev/zero)
    of at most 64 KB of JSON, read by the bounded reader (depth, NaN, duplicate keys, UTF-8)."""
    p = Path(path)
    try:
        raw = jsonread.read_file(p, MAX_FILE_BYTES)
    except SpecError as err:
        if err.code == "unreadable":
            raise FlowkitError(f"cannot read search space '{p}': {err.detail}") from None
        raise SpaceError([f"the file: {err.detail} [{err.code}]"], str(p)) from None
    try:
        data = jsonread.parse(jsonread.decode_utf8(raw, str(p)), str(p),
                              max_depth=MAX_DEPTH, max_string=MAX_STRING)
    except SpecError as err:
        raise SpaceError([f"not JSON: {err}"], str(p)) from err
    return parse_space(data, str(p))


def axis_values(axis: ParamAxis) -> list[Any]:
    """The values a param axis takes: its choices, or low, low+step, ... up to high."""
    if axis.choices is not None:
        return list(axis.choices)
    assert axis.low is not None and axis.high is not None
    integral = all(float(v).is_integer() for v in (axis.low, axis.high, axis.step or 1))
    step = axis.step or 1
    n = math.floor((axis.high - axis.low) / step + 1e-9) + 1
    vals = [axis.low + i * step for i in range(min(n, MAX_AXIS_VALUES + 1))]
    return [int(v) for v in vals] if integral else [round(v, 10) for v in vals]


def _operator_where(i: int, ax: OperatorAxis) -> str:
    return f"operators[{i}] (node '{ax.node}')"


def _param_where(i: int, ax: ParamAxis) -> str:
    return f"params[{i}] (node '{ax.node}', param '{ax.param}')"


def _axis_shape(i: int, axis: ParamAxis) -> list[str]:
    where = _param_where(i, axis)
    if axis.choices is not None:
        if any(v is not None for v in (axis.low, axis.high, axis.step)):
            return [f"{where}: give choices or a range (low, high, step), not both"]
        return []
    if axis.low is None or axis.high is None:
        return [f"{where}: give choices, or a range with both low and high"]
    for name in ("low", "high", "step"):
        value = getattr(axis, name)
        if value is not None and not (math.isfinite(value) and abs(value) <= MAX_RANGE_ABS):
            return [f"{where}: bad range: {name} {value:g} is out of range (at most "
                    f"{MAX_RANGE_ABS:g} either side of 0)"]
    if axis.low >= axis.high:
        return [f"{where}: bad range: low {axis.low:g} must be below high {axis.high:g}"]
    if axis.step is not None and axis.step <= 0:
        return [f"{where}: bad range: step must be above 0 (got {axis.step:g})"]
    if axis.step is None and not (axis.low.is_integer() and axis.high.is_integer()):
        return [f"{where}: a decimal range needs a step"]
    count = (axis.high - axis.low) / (axis.step or 1)
    if not math.isfinite(count):          # a step so small that the count overflows
        return [f"{where}: the range gives too many values; at most {MAX_AXIS_VALUES}"]
    n = math.floor(count + 1e-9) + 1
    if n > MAX_AXIS_VALUES:
        return [f"{where}: the range gives {n} values; at most {MAX_AXIS_VALUES}"]
    return []


def _targets(axis: ParamAxis | OperatorAxis, flows: Mapping[str, FlowSpec]) -> list[str]:
    names = [axis.flow] if axis.flow else list(flows)
    return [f for f in names if f in flows and any(n.id == axis.node for n in flows[f].nodes)]


def node_operators(space: SearchSpace, flow: str, spec: FlowSpec, node: str) -> list[str]:
    """Every operator a node may run in this space: its own, then the swaps."""
    own = spec.node(node).operator
    out = [own]
    for ax in space.operators:
        if ax.node == node and ax.flow in (None, flow):
            out += [c for c in ax.choices if c not in out]
    return out


def _operator_choice_problems(space: SearchSpace, flows: Mapping[str, FlowSpec], where: str,
                              ax: OperatorAxis, targets: list[str]) -> list[str]:
    """Each choice is a known operator of the same module and kind as the node's own."""
    out = []
    for choice in ax.choices:
        cls = registry.get(choice)
        if cls is None:
            out.append(f"{where}: unknown operator '{choice}'")
            continue
        for f in targets:
            own = registry.get(flows[f].node(ax.node).operator)
            if own is not None and (cls.module, cls.kind) != (own.module, own.kind):
                out.append(f"{where}: '{choice}' is a {cls.module} {cls.kind}, not in the "
                           f"slot of '{own.key}' ({own.module} {own.kind}) in flow '{f}'")
    return out


def _param_value_problems(space: SearchSpace, flows: Mapping[str, FlowSpec], where: str,
                          ax: ParamAxis, targets: list[str]) -> list[str]:
    """The param is one of the node's operators' (own or swapped in), and each value is valid."""
    out = []
    values = axis_values(ax)
    for f in targets:
        node = flows[f].node(ax.node)
        classes = [c for c in (registry.get(k) for k in
                               node_operators(space, f, flows[f], ax.node)) if c is not None]
        knowing = [c for c in classes if ax.param in c.Params.model_fields]
        if not knowing:
            known = sorted({p for c in classes for p in c.Params.model_fields})
            out.append(f"{where}: unknown param for {node.operator} in flow '{f}' "
                       f"(params: {', '.join(known)})")
            continue
        for cls in knowing:
            for v in values:
                try:
                    cls.Params.model_validate({**node.params, ax.param: v})
                except PydanticValidationError as err:
                    msg = "; ".join(e["msg"] for e in err.errors())
                    out.append(f"{where}: value {v!r} is not valid for {cls.key}: {msg}")
                    break
    return out


@dataclass(frozen=True)
class _AxisKind:
    """How one list of axes is checked: where each is named, its own shape, then its choices."""

    axes: Callable[[SearchSpace], Sequence[Any]]
    where: Callable[[int, Any], str]
    shape: Callable[[int, Any], list[str]]
    choices: Callable[[SearchSpace, Mapping[str, FlowSpec], str, Any, list[str]], list[str]]


_AXIS_KINDS = (
    _AxisKind(lambda s: s.operators, _operator_where, lambda i, ax: [],
              _operator_choice_problems),
    _AxisKind(lambda s: s.params, _param_where, _axis_shape, _param_value_problems),
)


def _axes_problems(space: SearchSpace, flows: Mapping[str, FlowSpec]) -> list[str]:
    """Every axis (operators, then params): its shape, its flow, the flows that have its node,
    then its choices in each of them."""
    out = []
    for kind in _AXIS_KINDS:
        for i, ax in enumerate(kind.axes(space)):
            where = kind.where(i, ax)
            shape = kind.shape(i, ax)
            if shape:
                out += shape
                continue
            if ax.flow and ax.flow not in flows:
                out.append(f"{where}: unknown flow '{ax.flow}' (flows: {', '.join(flows)})")
                continue
            targets = _targets(ax, flows)
            if not targets:
                out.append(f"{where}: unknown node: no listed flow has a node '{ax.node}'")
                continue
            out += kind.choices(space, flows, where, ax, targets)
    return out


def size(space: SearchSpace, flows: Mapping[str, FlowSpec]) -> int:
    """How many distinct points the space describes (flows x models x the axes of each flow)."""
    total = 0
    for f in space.flows:
        if f not in flows:
            continue
        n = 1
        for ax in space.params:
            if _targets(ax, {f: flows[f]}) and not _axis_shape(0, ax) and (ax.flow in (None, f)):
                n *= len(axis_values(ax))
        for oax in space.operators:
            if _targets(oax, {f: flows[f]}) and oax.flow in (None, f):
                n *= len(oax.choices)
        total += n
    return total * len(space.models)


def check_space(space: SearchSpace, flows: Mapping[str, FlowSpec],
                model_ok: Callable[[str], str | None] | None = None) -> list[str]:
    """Every problem of a parsed space against its resolved flows (ref -> spec). `model_ok`
    returns None for a usable model name, else why not."""
    out = [f"flows: '{f}' is listed twice" for f in set(space.flows) if space.flows.count(f) > 1]
    out += _axes_problems(space, flows)
    for i, m in enumerate(space.models):
        why = model_ok(m) if model_ok else None
        if why:
            out.append(f"models[{i}]: {why}")
    if not out:
        n = size(space, flows)
        if n > MAX_POINTS:
            out.append(f"space: too many candidates: the space has {n} points; at most "
                       f"{MAX_POINTS} (fewer values per axis, or fewer axes)")
    return out


def validate_space(space: SearchSpace, flows: Mapping[str, FlowSpec],
                   model_ok: Callable[[str], str | None] | None = None,
                   source: str = "space") -> None:
    """Raise SpaceError listing every problem (see `check_space`)."""
    problems = check_space(space, flows, model_ok)
    if problems:
        raise SpaceError(problems, source)
