"""Pausing a run: the hook the node wrappers call, and the checkpoint a paused run leaves.

A paused run is a stored checkpoint, not a blocked thread. When a breakpoint hits, the node
wrapper raises `Paused` before the node runs; `run_flow` ends with status ``paused`` and the
`Pause` (the node to run next and its visit, the whole working memory with the engine's counters,
the run's elapsed time and step count). Continuing runs the graph again from that node with that
memory under the same run id (`DebugHook(resume=pause)`), so the steps append to one trace and
the visits, counters and the clock go on where they stopped: time spent paused does not count
against the flow's ``timeout_s``.

How a run goes on from a pause (`mode`):
- ``continue``: until the next breakpoint or the end;
- ``step``: run the paused node and pause before the next one (after a fan-out node the parallel
  branches run as one step: it pauses before the merge);
- ``over``: run until the first node outside the loop the paused node is in (its strongly
  connected component: the loop's judge took the edge out); outside a loop this is ``step``.
Breakpoints still hit while stepping. A run never pauses inside a parallel branch.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import networkx as nx

from .breakpoints import Breakpoint
from .debug_expr import ExprError
from .memory import OPERATOR_KEYS, visible
from .trace import jsonable

if TYPE_CHECKING:
    from .compile import CompiledFlow
    from .nodes import _Run

Mode = Literal["continue", "step", "over"]
MODES: tuple[str, ...] = ("continue", "step", "over")
#: The engine's counters a checkpoint keeps besides working memory (`halt` is never set there).
COUNTER_KEYS: tuple[str, ...] = ("branches", "visits", "steps", "llm_calls", "tokens")


@dataclass
class Pause:
    """Where a paused run stopped and everything needed to go on from there."""

    #: the node that runs next (continue starts here) and the visit it will be
    node: str
    visit: int
    #: "before": a breakpoint before `node`; "after": one after `after_node`, which just ran
    when: str
    #: why it paused, for people: "breakpoint generate@1", "step", "step over loop (judge)"
    reason: str
    #: working memory (operator keys) and the engine's counters (branches, visits, steps, ...)
    state: dict[str, Any]
    #: seconds the run had been running (the clock resumes from here)
    elapsed_s: float
    #: steps recorded so far (the next step's index)
    steps_done: int
    saved_ms: float = 0.0
    cached_calls: int = 0
    #: the breakpoint that hit (its text), if one did
    breakpoint: str | None = None
    after_node: str | None = None
    #: set when a breakpoint's condition could not be evaluated (the run paused to say so)
    condition_error: str | None = None
    paused_at: float = field(default_factory=time.time)

    @property
    def memory(self) -> dict[str, Any]:
        """The working memory at the pause (operator keys only)."""
        return visible(self.state)

    @property
    def counters(self) -> dict[str, Any]:
        return {k: self.state[k] for k in COUNTER_KEYS if k in self.state}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pause:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class Paused(Exception):
    """Raised by a node wrapper to stop the run at a breakpoint; `run_flow` turns it into the
    run's end with status ``paused``."""

    def __init__(self, pause: Pause) -> None:
        super().__init__(f"paused at {pause.node} (visit {pause.visit}): {pause.reason}")
        self.pause = pause


def loop_of(flow: CompiledFlow, node: str) -> frozenset[str]:
    """The nodes of the loop `node` is in (its strongly connected component), or empty when it is
    in none."""
    g = flow.topology.graph
    for comp in nx.strongly_connected_components(g):
        if node in comp and (len(comp) > 1 or g.has_edge(node, node)):
            return frozenset(comp)
    return frozenset()


class DebugHook:
    """What the node wrappers consult around each node (through `_Run.debugger`): pause before a
    node, note a pause due after one. One per run segment (a start, or one continue)."""

    def __init__(self, breakpoints: Iterable[Breakpoint] = (), *, mode: Mode = "continue",
                 resume: Pause | None = None, loop: frozenset[str] = frozenset()) -> None:
        if mode not in MODES:
            raise ValueError(f"mode is one of {MODES}, not {mode!r}")
        self.breakpoints = list(breakpoints)
        self.mode: Mode = mode
        self.resume = resume
        self.loop = loop
        #: set when the run paused (what run_flow's caller stores)
        self.paused: Pause | None = None
        self._skip = (resume.node, resume.visit) if resume else None
        self._pending: tuple[str, str | None, str | None] | None = None   # reason, bp, after node

    def bind(self, run: _Run) -> None:
        """Attach to a run (flowkit.nodes._Run): restore its step count, clock and cache figures
        from the pause it resumes."""
        run.debugger = self
        if self.resume is not None:
            run.index = self.resume.steps_done
            run.started = time.perf_counter() - self.resume.elapsed_s
            run.saved_ms = self.resume.saved_ms
            run.cached_calls = self.resume.cached_calls

    def _pause(self, run: _Run, node: str, visit: int, state: Mapping[str, Any], when: str,
               reason: str, bp: str | None, after_node: str | None = None,
               condition_error: str | None = None) -> Paused:
        keep = {k: state[k] for k in (*OPERATOR_KEYS, *COUNTER_KEYS) if k in state}
        self.paused = Pause(node=node, visit=visit, when=when, reason=reason, state=jsonable(keep),
                            elapsed_s=round(time.perf_counter() - run.started, 6),
                            steps_done=run.index, saved_ms=run.saved_ms,
                            cached_calls=run.cached_calls, breakpoint=bp, after_node=after_node,
                            condition_error=condition_error)
        return Paused(self.paused)

    @staticmethod
    def _env(memory: Mapping[str, Any], state: Mapping[str, Any], visit: int) -> dict[str, Any]:
        env = {k: memory.get(k) for k in OPERATOR_KEYS}
        env.update(visit=visit, steps=state.get("steps", 0), llm_calls=state.get("llm_calls", 0),
                   tokens=state.get("tokens", 0))
        return env

    def _hit(self, node: str, when: str, visit: int, env: Mapping[str, Any]
             ) -> tuple[Breakpoint, str | None] | None:
        for bp in self.breakpoints:
            if not bp.matches(node, when, visit):   # type: ignore[arg-type]
                continue
            try:
                if bp.condition_holds(env):
                    return bp, None
            except ExprError as e:
                return bp, f"the condition of breakpoint '{bp.label()}' could not be evaluated: {e}"
        return None

    def before(self, run: _Run, node: str, visit: int, branch: str | None,
               state: Mapping[str, Any]) -> None:
        """Called before `node` runs; raises Paused when the run is to stop here."""
        if branch:
            return                       # never inside a parallel branch (a due pause waits)
        if self._skip is not None:
            if self._skip == (node, visit):
                self._skip = None        # the node the run resumes at: run it
                if self.mode == "step":
                    self._pending = ("step", None, node)
                return
            self._skip = None
        if self._pending is not None:
            reason, label, after = self._pending
            self._pending = None
            raise self._pause(run, node, visit, state, "after" if after else "before", reason,
                              label, after)
        if self.mode == "over" and node not in self.loop:
            raise self._pause(run, node, visit, state, "before", "step over loop", None)
        hit = self._hit(node, "before", visit, self._env(state, state, visit))
        if hit is not None:
            bp, problem = hit[0], hit[1]
            raise self._pause(run, node, visit, state, "before", f"breakpoint {bp.label()}",
                              bp.label(), condition_error=problem)

    def after(self, node: str, visit: int, branch: str | None, memory: Mapping[str, Any],
              state: Mapping[str, Any]) -> None:
        """Called after `node` ran with the memory it left: a breakpoint after it makes the run
        pause before whichever node runs next."""
        if branch or self._pending is not None:
            return
        hit = self._hit(node, "after", visit, self._env(memory, state, visit))
        if hit is not None:
            bp, problem = hit
            reason = f"breakpoint {bp.label()}" + (f" ({problem})" if problem else "")
            self._pending = (reason, bp.label(), node)


def hook_for(flow: CompiledFlow, breakpoints: Iterable[Breakpoint], mode: Mode = "continue",
             resume: Pause | None = None) -> DebugHook:
    """The hook of one run segment: `mode` is how it goes on from `resume` (ignored on a start)."""
    loop = loop_of(flow, resume.node) if resume is not None and mode == "over" else frozenset()
    if mode == "over" and not loop:
        mode = "step"                    # outside a loop, stepping over it is one step
    return DebugHook(breakpoints, mode=mode if resume is not None else "continue", resume=resume,
                     loop=loop)
