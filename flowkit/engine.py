"""Running a compiled flow: `run_flow`.

It checks the question and the knowledge base, emits the run's start, invokes the compiled graph
with a per-run context that the node wrappers (flowkit.nodes) read from LangGraph's run context, and
emits how the run ended. `run_context`, `make_node` and `make_finish` are re-exported from
flowkit.nodes for callers that imported them from here.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.errors import GraphRecursionError

from .compile import CompiledFlow
from .context import Resources, count_tokens
from .cost import Cost
from .debug import checkpointed, drop_thread, restore_thread, saved_thread
from .errors import FlowkitError, NodeError, ResourceError
from .memory import counters_of, initial_memory, visible
from .nodes import CANCELLED, _Run, make_finish, make_node, run_context
from .run_request import NO_HOOKS, Fork, Resume, RunHooks, RunRequest
from .trace import ListSink, RunEnd, RunStart, jsonable

__all__ = ["CANCELLED", "make_finish", "make_node", "run_context", "run_flow"]


def run_flow(flow: CompiledFlow, resources: Resources, request: RunRequest,
             hooks: RunHooks = NO_HOOKS) -> RunEnd:
    """Run a compiled flow on `request.question` and return how it ended (status ok |
    budget_exceeded | error | cancelled | paused). Every node visit goes to `hooks.sink` as it
    happens. `request.start` says where it begins: `Fresh` at the entry, `Fork` at a step of an
    earlier run (its node, memory and counters), `Resume` from a paused run's checkpoint (the
    pause is held by `hooks.debug`). Setting `hooks.cancel` stops the run before its next step.
    With `hooks.cache`, deterministic model calls are served from it (and stored in it when
    computed). `hooks.on_token(node_id, visit, piece)` gets the text of every model call as it
    is generated (a call served from the cache: its whole text as one piece); the trace is the
    same without it. With a `hooks.debug` hook (flowkit.debug) breakpoints can pause the run: the
    graph is compiled with the hook's checkpointer (thread = the run id, durability "exit"), a
    breakpoint interrupts it, the run ends with status `paused` and `debug.paused` holds the
    pause. Without a hook nothing is checkpointed. What the nodes need of the run travels in
    LangGraph's run context (`context=`, read by flowkit.nodes through `Runtime`)."""
    question, kb, start, debug = request.question, request.kb, request.start, hooks.debug
    if not isinstance(question, str) or not question.strip():
        raise FlowkitError("the question is empty")
    sink = hooks.sink if hooks.sink is not None else ListSink()
    run_id = request.run_id or uuid.uuid4().hex[:12]
    start_at = start.node if isinstance(start, Fork) else None
    if isinstance(start, Resume) != (debug is not None and debug.resume is not None):
        raise FlowkitError("a resumed run needs the debug hook holding its pause, and only a "
                           "resumed run may have one")
    if start_at is not None and start_at not in flow.operators:
        raise FlowkitError(f"cannot start at '{start_at}': no such node in flow '{flow.name}'")
    if start_at is not None and start_at in flow.topology.branch_of:
        raise FlowkitError(f"cannot fork inside the parallel branch at '{start_at}'; fork from "
                           "the node before the fan-out or from the merge")
    cp = debug.checkpointer if debug is not None else None
    if debug is not None and cp is None:
        raise FlowkitError("a run with breakpoints needs a checkpointer (flowkit.debug)")
    if kb:
        resources.kb(kb).require_ready()
    llm = resources.llm
    n_ctx = int(getattr(llm, "n_ctx", 0) or 0)
    if n_ctx:
        q_tokens = count_tokens(llm, question, hooks.cache)
        if q_tokens > n_ctx // 2:
            raise ResourceError(f"the question is {q_tokens} tokens; the model's context is {n_ctx} "
                                f"(settings: n_ctx), which leaves no room for passages and answer")
    state = initial_memory(question, dict(start.memory) if isinstance(start, Fork) else None)
    for k, v in (start.counters if isinstance(start, Fork) else {}).items():
        state[k] = v
    run = _Run(run_id=run_id, resources=resources, kb=kb, sink=sink, limits=flow.spec.limits,
               cancel=hooks.cancel, cache=hooks.cache, on_token=hooks.on_token,
               start_node=start_at)
    if debug is not None:
        debug.bind(run)
    sink.start(RunStart(run_id=run_id, flow_name=flow.name, spec=flow.resolved_spec(),
                        question=question, kb=kb, model_id=str(getattr(llm, "model_id", "")),
                        model_hash=str(getattr(llm, "model_hash", "")),
                        settings=dict(request.settings),
                        operator_versions=flow.operator_versions(),
                        flow_version=request.flow_version, parent_run_id=request.parent_run_id,
                        parent_step=request.parent_step, started_at=time.time()))
    config: Any = {"recursion_limit": flow.spec.limits.max_steps * 2 + 20}
    graph: Any = flow.graph
    given: Any = state
    extra: dict[str, Any] = {}
    saved = None
    if cp is not None and debug is not None:
        graph = checkpointed(flow, cp)
        config["configurable"] = {"thread_id": run_id}     # LangGraph's own key
        extra = {"durability": "exit"}
        if debug.resume is not None:
            given = debug.command()
            saved = saved_thread(cp, run_id)
    final: dict[str, Any] = dict(state)
    status, error = "ok", None
    try:
        final = graph.invoke(given, config=config, context=run, **extra)
        if debug is not None and "__interrupt__" in final and debug.paused is not None:
            status, final = "paused", dict(debug.paused.state)
        elif final.get("halt"):
            status = CANCELLED if final["halt"] == CANCELLED else "budget_exceeded"
    except NodeError as err:
        status, error = "error", str(err)
    except GraphRecursionError:
        status, error = "budget_exceeded", "the graph passed its recursion limit"
    except FlowkitError as err:
        status, error = "error", str(err)
    except BaseException:
        if cp is not None:             # the segment did not end: the thread goes back
            restore_thread(cp, run_id, saved)
        raise
    if cp is not None and status != "paused":
        drop_thread(cp, run_id)        # the checkpointer keeps paused runs only
    wall_ms = (time.perf_counter() - run.started) * 1000
    used = counters_of(final)
    result = RunEnd(run_id=run_id, status=status, answer=str(final.get("answer") or ""),
                    citations=list(final.get("citations") or []), steps=run.index,
                    cost=Cost(used["llm_calls"], run.cached_calls, used["tokens"],
                              round(wall_ms + run.saved_ms, 2)),
                    error=error, halt_reason=final.get("halt") or None,
                    memory=jsonable(visible(final)), wall_ms=round(wall_ms, 2))
    sink.end(result)
    return result
