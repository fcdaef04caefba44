"""The LangGraph node wrappers: what runs around every operator call (limits, tracing, errors).

Each node visit: check the limits, build the memory view (global memory plus the branch's own
scope), call the operator with a RunContext that records LLM calls and retrievals, check that it
wrote only what it declared, emit one StepEvent to the sink, and return the update. Failures are
wrapped as NodeError with the node's identity and recorded on that step. `make_finish` is the last
step of every run. The per-run state (`_Run`) is LangGraph's run context (`invoke(context=...)`,
read through `Runtime`); `flowkit.engine` makes it for `run_flow`, `run_context` for callers that
call the node functions themselves (the export).

Used by flowkit.compile (to build the graph) and flowkit.engine (to run it); imports neither.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from langgraph.runtime import Runtime

from .context import BudgetHit, Resources, RunContext
from .contract import Operator
from .errors import FlowkitError, NodeError
from .memory import counter_update, counters_of, visible
from .runtime.completion_cache import CompletionCache
from .spec import Limits
from .trace import StepEvent, TraceSink, jsonable

#: The id of the finishing step every run ends with.
FINISH = "_finish"


#: The halt reason (and run status) of a run whose `cancel` event was set: it stopped at the next
#: step boundary.
CANCELLED = "cancelled"


@dataclass
class _Run:
    """Per-run state shared by the node wrappers: LangGraph's run context of a flowkit run."""

    run_id: str
    resources: Resources
    kb: str
    sink: TraceSink
    limits: Limits
    started: float = field(default_factory=time.perf_counter)
    index: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    error: NodeError | None = None
    cancel: threading.Event | None = None
    #: where deterministic model calls are served from (None: every call computes)
    cache: CompletionCache | None = None
    #: model milliseconds that cached calls did not spend (added back to the run's cost)
    saved_ms: float = 0.0
    #: calls served from the cache
    cached_calls: int = 0
    #: gets (node id, visit, piece) for every piece of model text as it is generated, or None
    on_token: Callable[[str, int, str], None] | None = None
    #: the breakpoint hook of a debugged run (flowkit.debug.DebugHook), else None
    debugger: Any = None
    #: the node a fork starts at (None: the flow's entry)
    start_node: str | None = None

    def limit_hit(self, state: dict[str, Any], calls: int = 0, tokens: int = 0) -> str:
        lim = self.limits
        if self.cancel is not None and self.cancel.is_set():
            return CANCELLED
        used = counters_of(state)
        adding = counter_update(llm_calls=calls, tokens=tokens)
        for counter, cap in lim.caps().items():
            if used[counter] + adding[counter] >= cap:
                return f"max_{counter} ({cap})"
        if time.perf_counter() - self.started >= lim.timeout_s:
            return f"timeout_s ({lim.timeout_s:g})"
        return ""

    def context(self, node_id: str, visit: int, **kwargs: Any) -> RunContext:
        """The RunContext of one node visit of this run."""
        stream = self.on_token
        return RunContext(self.resources, self.kb, node_id, visit, cache=self.cache,
                          run_id=self.run_id, **kwargs,
                          on_token=(lambda piece: stream(node_id, visit, piece)) if stream else None)

    def emit(self, **fields: Any) -> StepEvent:
        with self.lock:
            self.cached_calls += sum(1 for c in fields.get("llm_calls") or []
                                     if c.cached_from is not None)
            event = StepEvent(run_id=self.run_id, index=self.index, **fields)
            self.index += 1
            self.sink.step(event)
        return event


def run_of(runtime: Runtime[_Run]) -> _Run:
    """The flowkit run a node visit belongs to (LangGraph's run context)."""
    return runtime.context


def run_context(*, run_id: str, resources: Resources, kb: str, sink: TraceSink, limits: Limits,
                started: float | None = None) -> Runtime[_Run]:
    """A run context for the wrappers of `make_node` and `make_finish`, for callers that call
    them without `run_flow` (the exported LangGraph package, flowkit.export.runtime): pass it as
    their `runtime`. `started` is a `time.perf_counter()` value."""
    run = _Run(run_id=run_id, resources=resources, kb=kb, sink=sink, limits=limits)
    if started is not None:
        run.started = started
    return Runtime(context=run)


def make_node(op: Operator[Any], branch: str | None, merge_inputs: tuple[str, ...]) -> Any:
    """The LangGraph node function for one operator instance."""

    allowed = set(op.writes) | ({"route"} if op.kind in ("router", "judge") else set())

    def node(state: dict[str, Any], runtime: Runtime[_Run]) -> dict[str, Any]:
        run = run_of(runtime)
        if state.get("halt"):
            return {}
        reason = run.limit_hit(state)
        if reason:
            return {"halt": reason}
        visit = (state.get("visits") or {}).get(op.node_id, 0) + 1
        if run.debugger is not None:     # may interrupt the graph (flowkit.debug): stop before this node
            run.debugger.before(run, op.node_id, visit, branch, state)
        view = dict(state)
        if branch:
            view.update((state.get("branches") or {}).get(branch, {}))
        if op.kind == "merge":
            view["branches"] = [(state.get("branches") or {}).get(b, {}) for b in merge_inputs]
        before = jsonable(visible(view))
        if op.kind == "merge":
            before["branches"] = jsonable(view["branches"])   # what the merge joined
        usage = {**counters_of(state), "elapsed_s": round(time.perf_counter() - run.started, 3)}
        ctx = run.context(op.node_id, visit,
                          budget=lambda calls, tokens: run.limit_hit(state, calls, tokens),
                          usage=usage, limits=run.limits)
        t0 = time.perf_counter()
        started_at = time.time()
        halt = ""
        try:
            updates = op.run(MappingProxyType(view), ctx) or {}
            extra = set(updates) - allowed
            if extra:
                raise FlowkitError(f"wrote undeclared memory key(s) {sorted(extra)}; "
                                   f"declared: {sorted(allowed)}")
        except BudgetHit as hit:
            updates, halt = {}, hit.reason
        except Exception as err:
            wrapped = NodeError(op.node_id, op.key, visit, err)
            with run.lock:
                run.saved_ms += ctx.saved_ms
            run.emit(node_id=op.node_id, operator=op.key, visit=visit, memory_before=before,
                     memory_after=before, llm_calls=ctx.llm_calls, retrievals=ctx.retrievals,
                     ms=round((time.perf_counter() - t0) * 1000, 2), error=str(wrapped),
                     branch=branch, started_at=started_at)
            run.error = wrapped
            raise wrapped from err
        ms = (time.perf_counter() - t0) * 1000
        with run.lock:
            run.saved_ms += ctx.saved_ms
        after = {**before, **jsonable(updates)}
        if "history" in updates:      # history appends (reducer); show the whole list after
            after["history"] = [*before.get("history", []), *after["history"]]
        if op.kind == "merge":
            after.pop("branches", None)
        run.emit(node_id=op.node_id, operator=op.key, visit=visit, memory_before=before,
                 memory_after=after, llm_calls=ctx.llm_calls, retrievals=ctx.retrievals,
                 ms=round(ms, 2), error=(f"stopped: {halt}" if halt else None), branch=branch,
                 started_at=started_at)
        if run.debugger is not None and not halt:
            run.debugger.after(op.node_id, visit, branch, after, state)
        out: dict[str, Any] = {"visits": {op.node_id: 1},
                               **counter_update(steps=1, llm_calls=len(ctx.llm_calls), tokens=ctx.tokens)}
        if halt:
            out["halt"] = halt
        if branch:
            out["branches"] = {branch: updates}
        else:
            out.update(updates)
        if op.kind == "merge" and merge_inputs:
            out["branches"] = {b: None for b in merge_inputs}
        return out

    node.__name__ = f"node_{op.node_id}"
    return node


FALLBACK_PROMPT = ("Answer the question in one short sentence using the passages.\n\n{passages}\n\n"
                   "Question: {question}\nAnswer:")


def make_finish() -> Any:
    """The last step of every run. After a halt it still leaves an answer from what is in memory."""

    def finish(state: dict[str, Any], runtime: Runtime[_Run]) -> dict[str, Any]:
        run = run_of(runtime)
        if not state.get("halt") or state.get("answer") or state["halt"] == CANCELLED:
            return {}
        before = jsonable(visible(state))
        ctx = run.context(FINISH, 1)
        t0 = time.perf_counter()
        answer = ""
        drafts = state.get("drafts") or []
        if drafts:
            answer = drafts[-1]
        else:
            docs = state.get("documents") or []
            passages = "\n".join(f"[{d.get('id')}] {d.get('text', '')[:400]}" for d in docs[:3])
            try:   # one last call, exempt from the budget, so the user gets an answer
                answer = ctx.llm.complete(FALLBACK_PROMPT.format(
                    passages=passages or "(none)", question=state.get("question", "")),
                    max_tokens=48).text
            except FlowkitError as err:
                answer = ""
                run.saved_ms += ctx.saved_ms
                run.emit(node_id=FINISH, operator="engine.finish", visit=1, memory_before=before,
                         memory_after=before, llm_calls=ctx.llm_calls, retrievals=[],
                         ms=round((time.perf_counter() - t0) * 1000, 2), error=str(err))
                return {}
        run.saved_ms += ctx.saved_ms
        run.emit(node_id=FINISH, operator="engine.finish", visit=1, memory_before=before,
                 memory_after={**before, "answer": answer}, llm_calls=ctx.llm_calls, retrievals=[],
                 ms=round((time.perf_counter() - t0) * 1000, 2))
        return {"answer": answer, **counter_update(llm_calls=len(ctx.llm_calls), tokens=ctx.tokens)}

    return finish
