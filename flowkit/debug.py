"""Pausing a run on LangGraph's own mechanism: a dynamic `interrupt()` in the node wrapper and a
checkpointer, resumed with `Command(resume=..., update=...)` (issue 24, item 4).

A run with breakpoints runs on its compiled graph with a checkpointer set (`checkpointed`; the
hook's `DebugHook.checkpointer`: the service passes SqliteSaver on the workspace's SQLite file or
PostgresSaver on its PostgreSQL database, storage.checkpoints) and is invoked with
``thread_id`` = the run id and ``durability="exit"``: LangGraph writes a checkpoint only when
the graph stops (an interrupt, the end or an error), never per step. When a breakpoint hits, the
node wrapper calls `interrupt(payload)` before the node runs; the run ends with status ``paused``.
The pause's working memory and the engine's counters (visits, steps, llm_calls, tokens) are the
checkpoint's state (`read_pause`: `graph.get_state`); the interrupt's payload carries what the
state does not: the node and visit, before/after, the reason, the run's elapsed time, its step
count and cache figures (`Pause.payload`). Continuing compiles the run's stored spec again,
with the same checkpointer and thread (also in another process, after a restart), and invokes
`Command(resume=mode, update=edits)`: LangGraph applies the memory edits, re-runs the paused node
(whose `interrupt()` now returns instead of stopping: `DebugHook` lets it run) and goes on, so the
steps append to one trace and visits, counters and the clock go on where they stopped: time spent
paused does not count against the flow's ``timeout_s``. A run that ends (ok, error, budget) drops
its thread: the checkpointer holds paused runs only, the trace store every run. A continue that
stops on an exception (its process dying) puts the thread back to the pause it continued from
(`restore_thread`: "exit" durability saves a graph stopped that way too).

One source of truth per fact. The checkpointer: the paused state and where it paused. The trace
store (storage.debug, `run_debug`): what LangGraph does not keep, namely the breakpoints, how many
times the run paused (two tabs), the user's memory edits (who, when, which key: the ``user.edit``
steps of the trace) and the edits made during the current pause, not yet sent (they go in as the
continue's `Command.update`; shown on top of the checkpoint meanwhile), the step count the pause
ended at (a continue whose process died goes back there), and the lease (who is continuing: the
`runs` row's compare-and-set paused -> running, so two continues cannot both go on).

Runs without breakpoints (evaluations, exports, plain runs) compile no checkpointer and write
nothing: the graph of `compile_flow` is used unchanged.

Cost (`python bench/checkpointer.py`: scripted model, 16 templates x 20 runs, a busy 2-core
machine, two runs): pausing before the first model-calling node, closing the saver, opening a new
one (a restart) and continuing gives the same answer, steps and prompts as a plain run on 16/16
templates. A debugged run whose breakpoint never hits takes 1.6-2.4x a plain run's engine time
(about 4-6 ms more: one checkpoint written at the end and dropped); each pause adds about 20 ms
(the checkpoint written at the interrupt, read back, the resumed node's re-entry); against a
real model's call (a second or more) neither shows. A paused run's thread holds 1.4-2.6 KB,
0.08x the bytes of the run's own trace; an ended run's thread is dropped, so the checkpointer
holds nothing of finished runs. (Checkpointing every step, LangGraph's default "async"
durability, measured 4.4x the engine's time and 10-40x the trace's bytes: why every run is not
compiled with a checkpointer and debugged ones use "exit".)

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
from typing import TYPE_CHECKING, Any, Literal, cast

import networkx as nx
from langgraph.types import Command, Overwrite, interrupt

from .breakpoints import Breakpoint
from .debug_expr import ExprError
from .errors import FlowkitError
from .memory import COUNTER_KEYS, OPERATOR_KEYS, REDUCED_KEYS, counters_of, visible
from .trace import jsonable

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
    from langgraph.graph.state import CompiledStateGraph

    from .compile import CompiledFlow
    from .nodes import _Run

Mode = Literal["continue", "step", "over"]
MODES: tuple[str, ...] = ("continue", "step", "over")


class CheckpointMissing(FlowkitError):
    """A run is paused in the trace store but the checkpointer holds no pause for its thread."""


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
    #: working memory (operator keys) and the engine's counters (branches, visits, steps, ...):
    #: the checkpoint's state
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

    def payload(self) -> dict[str, Any]:
        """What the interrupt carries: everything but the state (the checkpoint holds that)."""
        return {k: v for k, v in asdict(self).items() if k != "state"}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pause:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def _state_of(values: Mapping[str, Any]) -> dict[str, Any]:
    return jsonable({k: values[k] for k in (*OPERATOR_KEYS, *COUNTER_KEYS) if k in values})


def _config(run_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": run_id}}


def checkpointed(flow: CompiledFlow, checkpointer: BaseCheckpointSaver[Any]
                 ) -> CompiledStateGraph[Any, Any, Any, Any]:
    """`flow`'s graph with `checkpointer` (what a debugged run is invoked on): a copy of the
    compiled graph with the checkpointer set, as `compile(checkpointer=...)` would give, without
    compiling the flow again."""
    return cast("CompiledStateGraph[Any, Any, Any, Any]",
                flow.graph.copy(update={"checkpointer": checkpointer}))


def read_pause(flow: CompiledFlow, checkpointer: BaseCheckpointSaver[Any], run_id: str
               ) -> Pause | None:
    """The pause of run `run_id` as LangGraph's checkpointer holds it (thread `run_id`): the
    pending interrupt's payload and the checkpoint's state; None when it holds no pending
    interrupt for the thread."""
    snap = checkpointed(flow, checkpointer).get_state(_config(run_id))
    pending = [i for t in snap.tasks for i in t.interrupts]
    if not pending or not isinstance(pending[0].value, Mapping):
        return None
    return Pause.from_dict({**pending[0].value, "state": _state_of(snap.values)})


def drop_thread(checkpointer: BaseCheckpointSaver[Any], run_id: str) -> None:
    """Forget run `run_id`'s checkpoints (the run ended or was aborted)."""
    checkpointer.delete_thread(run_id)


def saved_thread(checkpointer: BaseCheckpointSaver[Any], run_id: str) -> CheckpointTuple | None:
    """The latest checkpoint of run `run_id`'s thread with its pending writes (None: none)."""
    return checkpointer.get_tuple(_config(run_id))


def restore_thread(checkpointer: BaseCheckpointSaver[Any], run_id: str,
                   saved: CheckpointTuple | None) -> None:
    """Put run `run_id`'s thread back to `saved` (None: no checkpoint), dropping what a segment
    that did not end wrote: LangGraph's "exit" durability also saves a graph that stopped on an
    exception, and a continue that dies that way must leave the run at the pause it continued
    from (the trace store takes its steps back the same way, storage.repo)."""
    checkpointer.delete_thread(run_id)
    if saved is None:
        return
    parent = saved.parent_config or {"configurable": {"thread_id": run_id, "checkpoint_ns": ""}}
    cfg = checkpointer.put(parent, saved.checkpoint, saved.metadata,
                           dict(saved.checkpoint["channel_versions"]))
    writes: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in saved.pending_writes or []:
        writes.setdefault(task_id, []).append((channel, value))
    for task_id, ws in writes.items():
        checkpointer.put_writes(cfg, ws, task_id)


def edit_update(edits: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Memory edits (key, value) in order as a LangGraph update: the last value of each key,
    replacing (not appending to) a key with a reducer (REDUCED_KEYS: `Overwrite`)."""
    last = dict(edits)
    return {k: Overwrite(v) if k in REDUCED_KEYS else v for k, v in last.items()}


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
    node (a LangGraph interrupt), note a pause due after one. One per run segment (a start, or one
    continue), with the checkpointer the segment's graph is compiled with and, on a continue, the
    memory edits it sends."""

    def __init__(self, breakpoints: Iterable[Breakpoint] = (), *, mode: Mode = "continue",
                 resume: Pause | None = None, loop: frozenset[str] = frozenset(),
                 checkpointer: BaseCheckpointSaver[Any] | None = None,
                 edits: Iterable[tuple[str, Any]] = ()) -> None:
        if mode not in MODES:
            raise ValueError(f"mode is one of {MODES}, not {mode!r}")
        self.breakpoints = list(breakpoints)
        self.mode: Mode = mode
        self.resume = resume
        self.loop = loop
        self.checkpointer = checkpointer
        self.edits = list(edits)
        #: set when the run paused (what run_flow's caller stores)
        self.paused: Pause | None = None
        self._skip = (resume.node, resume.visit) if resume else None
        self._pending: tuple[str, str | None, str | None] | None = None   # reason, bp, after node

    def command(self) -> Command[Any]:
        """What a continue invokes the graph with: the mode as the interrupt's answer, the memory
        edits as an update."""
        return Command(resume=self.mode, update=edit_update(self.edits) or None)

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
               condition_error: str | None = None) -> None:
        self.paused = Pause(node=node, visit=visit, when=when, reason=reason,
                            state=_state_of(state),
                            elapsed_s=round(time.perf_counter() - run.started, 6),
                            steps_done=run.index, saved_ms=run.saved_ms,
                            cached_calls=run.cached_calls, breakpoint=bp, after_node=after_node,
                            condition_error=condition_error)
        interrupt(self.paused.payload())     # stops the graph here (GraphInterrupt)

    @staticmethod
    def _env(memory: Mapping[str, Any], state: Mapping[str, Any], visit: int) -> dict[str, Any]:
        env = {k: memory.get(k) for k in OPERATOR_KEYS}
        env.update(visit=visit, **counters_of(state))
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
        """Called before `node` runs; interrupts the graph when the run is to stop here."""
        if branch:
            return                       # never inside a parallel branch (a due pause waits)
        if self._skip is not None:
            if self._skip == (node, visit):
                self._skip = None        # the node the run resumes at: its interrupt is answered
                assert self.resume is not None
                interrupt(self.resume.payload())
                if self.mode == "step":
                    self._pending = ("step", None, node)
                return
            self._skip = None
        if self._pending is not None:
            reason, label, after = self._pending
            self._pending = None
            self._pause(run, node, visit, state, "after" if after else "before", reason, label,
                        after)
        if self.mode == "over" and node not in self.loop:
            self._pause(run, node, visit, state, "before", "step over loop", None)
        hit = self._hit(node, "before", visit, self._env(state, state, visit))
        if hit is not None:
            bp, problem = hit[0], hit[1]
            self._pause(run, node, visit, state, "before", f"breakpoint {bp.label()}",
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
             resume: Pause | None = None, *, checkpointer: BaseCheckpointSaver[Any] | None = None,
             edits: Iterable[tuple[str, Any]] = ()) -> DebugHook:
    """The hook of one run segment: `mode` is how it goes on from `resume` (ignored on a start);
    `checkpointer` holds the run's pauses (required by `run_flow`); `edits` are the memory edits
    a continue sends."""
    loop = loop_of(flow, resume.node) if resume is not None and mode == "over" else frozenset()
    if mode == "over" and not loop:
        mode = "step"                    # outside a loop, stepping over it is one step
    return DebugHook(breakpoints, mode=mode if resume is not None else "continue", resume=resume,
                     loop=loop, checkpointer=checkpointer, edits=edits)
