"""Breakpoints: where a run pauses so the user can look at working memory, edit it and go on.

A breakpoint names a node and stops the run **before** the node runs (the default) or **after** it
(the run then pauses before whichever node comes next, with the node's writes in memory; after
the last node there is none, so the run ends and its final memory is the run's result). It may
stop only on a given visit (``@3``: the third time a loop reaches the node) and only when a
condition on working memory holds (``?len(documents) < 2``; see flowkit.debug_expr for the
language). Written as text: ``node[@visit][:before|:after][?condition]``, e.g.
``generate``, ``judge@2:after``, ``retrieve?len(documents) == 0``.

Breakpoints belong to a run request, never to a saved flow: a flow runs straight through in
evaluations and exports whatever breakpoints a user set while debugging it.

A node inside a parallel branch cannot hold a breakpoint: a paused run is continued by starting
the graph at the paused node, and a run cannot start in the middle of one branch of a fan-out.
Break before or after the fan-out node, or before the merge, instead (the error says which).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import networkx as nx

from .debug_expr import Condition, ExprError
from .errors import FlowkitError

if TYPE_CHECKING:
    from .compile import CompiledFlow

When = Literal["before", "after"]
#: The largest visit a breakpoint may name (no run makes more steps).
MAX_VISIT = 1_000_000
_HEAD = re.compile(r"^(?P<node>[A-Za-z][A-Za-z0-9_\-]*)(?:@(?P<visit>\d+))?(?::(?P<when>[a-z]+))?$")


class BreakpointError(FlowkitError):
    """A breakpoint that cannot be set: bad text, a missing node, a node inside a parallel
    branch, a bad visit, or a condition that does not parse (the message names the breakpoint)."""


@dataclass(frozen=True)
class Breakpoint:
    """Pause the run before (or after) `node`, on visit `visit` only (None: every visit), when
    `condition` holds (None: always)."""

    node: str
    when: When = "before"
    visit: int | None = None
    condition: str | None = None

    def __post_init__(self) -> None:
        if self.when not in ("before", "after"):
            raise BreakpointError(f"breakpoint '{self.node}': 'when' is before or after, "
                                  f"not {self.when!r}")
        if self.visit is not None and (not isinstance(self.visit, int)
                                       or isinstance(self.visit, bool)
                                       or not 1 <= self.visit <= MAX_VISIT):
            shown = repr(self.visit)
            shown = shown if len(shown) <= 20 else f"{shown[:12]}... ({len(shown)} characters)"
            raise BreakpointError(f"breakpoint '{self.node}': the visit is a number from 1 to "
                                  f"{MAX_VISIT:,}, not {shown}")
        if self.condition is not None:
            try:
                Condition.of(self.condition)
            except ExprError as e:
                raise BreakpointError(f"breakpoint '{self.label()}': the condition "
                                      f"{self.condition!r} {_as_clause(e)}") from None

    def label(self) -> str:
        """The breakpoint as text (what `parse_breakpoint` reads)."""
        text = self.node + (f"@{self.visit}" if self.visit else "")
        text += ":after" if self.when == "after" else ""
        return text + (f"?{self.condition}" if self.condition else "")

    def matches(self, node: str, when: When, visit: int) -> bool:
        """Whether this breakpoint is about `node` at this moment and visit (not its condition)."""
        return self.node == node and self.when == when and self.visit in (None, visit)

    def condition_holds(self, env: Mapping[str, Any]) -> bool:
        """Whether the condition holds over `env` (True without one); ExprError when it cannot be
        evaluated."""
        return True if self.condition is None else Condition.of(self.condition).holds(env)

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "when": self.when, "visit": self.visit,
                "condition": self.condition}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Breakpoint:
        unknown = set(data) - {"node", "when", "visit", "condition"}
        if unknown:
            raise BreakpointError(f"a breakpoint has node, when, visit and condition; "
                                  f"not {sorted(unknown)}")
        node = data.get("node")
        if not isinstance(node, str) or not node:
            raise BreakpointError("a breakpoint needs a node id")
        return cls(node=node, when=data.get("when") or "before", visit=data.get("visit"),
                   condition=data.get("condition") or None)


def _as_clause(e: ExprError) -> str:
    where = f" at column {e.position}" if e.position else ""
    return f"does not parse{where}: {e.detail}"


def parse_breakpoint(text: str) -> Breakpoint:
    """A breakpoint from text ``node[@visit][:before|:after][?condition]``; BreakpointError
    naming the text and what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise BreakpointError("a breakpoint is 'node[@visit][:after][?condition]'; got nothing")
    head, sep, condition = text.strip().partition("?")
    m = _HEAD.match(head.strip())
    if m is None:
        raise BreakpointError(f"breakpoint {text!r}: write node[@visit][:before|:after]"
                              f"[?condition], e.g. 'generate@2:after?len(documents) > 0'")
    when = m.group("when") or "before"
    if when not in ("before", "after"):
        raise BreakpointError(f"breakpoint {text!r}: ':{when}' is neither ':before' nor ':after'")
    if sep and not condition.strip():
        raise BreakpointError(f"breakpoint {text!r}: nothing after '?'; give a condition or "
                              "drop the '?'")
    digits = m.group("visit")
    if digits and len(digits.lstrip("0")) > len(str(MAX_VISIT)):
        raise BreakpointError(f"breakpoint '{m.group('node')}@{digits[:12]}...': the visit is a "
                              f"number from 1 to {MAX_VISIT:,}, not one of {len(digits)} digits")
    visit = int(digits) if digits else None
    return Breakpoint(node=m.group("node"), when=when,  # type: ignore[arg-type]
                      visit=visit, condition=condition.strip() or None)


def as_breakpoints(items: Iterable[Breakpoint | str | Mapping[str, Any]]) -> list[Breakpoint]:
    """Breakpoints from text, dicts (a run request's JSON) or Breakpoint objects."""
    out: list[Breakpoint] = []
    for item in items:
        if isinstance(item, Breakpoint):
            out.append(item)
        elif isinstance(item, str):
            out.append(parse_breakpoint(item))
        elif isinstance(item, Mapping):
            out.append(Breakpoint.from_dict(item))
        else:
            raise BreakpointError(f"a breakpoint is text or an object, not {type(item).__name__}")
    return out


def check_breakpoints(flow: CompiledFlow, items: Iterable[Breakpoint | str | Mapping[str, Any]]
                      ) -> list[Breakpoint]:
    """The breakpoints, checked against `flow`: every node exists and is not inside a parallel
    branch (the message names the fan-out and the merge to break at instead). Every problem at once."""
    bps = as_breakpoints(items)
    problems: list[str] = []
    topo = flow.topology
    for bp in bps:
        if bp.node not in flow.operators:
            problems.append(f"breakpoint '{bp.label()}': flow '{flow.name}' has no node "
                            f"'{bp.node}' (nodes: {', '.join(flow.operators)})")
        elif bp.node in topo.branch_of:
            fan = topo.branch_of[bp.node].split(">", 1)[0]
            merges = sorted(n for n in nx.descendants(topo.graph, bp.node)
                            if topo.kinds.get(n) == "merge")
            instead = f"before or after the fan-out '{fan}'" + (
                f", or before the merge '{merges[0]}'" if merges else "")
            problems.append(f"breakpoint '{bp.label()}': node '{bp.node}' is inside a parallel "
                            f"branch, where a run cannot pause and go on; break {instead}")
    if problems:
        raise BreakpointError("; ".join(problems))
    return bps
