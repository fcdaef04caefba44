"""Running a compiled flow: `run_flow`.

It checks the question and the knowledge base, emits the run's start, invokes the compiled graph
with a per-run context that the node wrappers (flowkit.nodes) read from the LangGraph config, and
emits how the run ended. `bind_run`, `make_node` and `make_finish` are re-exported from
flowkit.nodes for callers that imported them from here.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from langgraph.errors import GraphRecursionError

from .compile import CompiledFlow
from .context import Resources, count_tokens
from .debug import DebugHook, checkpointed, drop_thread, restore_thread, saved_thread
from .errors import FlowkitError, NodeError, ResourceError
from .memory import counters_of, initial_memory, visible
from .nodes import CANCELLED, _Run, bind_run, make_finish, make_node
from .runtime.completion_cache import CompletionCache
from .trace import ListSink, RunEnd, RunStart, TraceSink, jsonable

__all__ = ["CANCELLED", "bind_run", "make_finish", "make_node", "run_flow"]


def run_flow(flow: CompiledFlow, question: str, resources: Resources, *, kb: str = "",
             sink: TraceSink | None = None, run_id: str | None = None,
             flow_version: int | None = None, start_at: str | None = None,
             memory: dict[str, Any] | None = None, counters: dict[str, Any] | None = None,
             parent_run_id: str | None = None, parent_step: int | None = None,
             settings: dict[str, Any] | None = None,
             cancel: threading.Event | None = None,
             cache: CompletionCache | None = None,
             on_token: Callable[[str, int, str], None] | None = None,
             debug: DebugHook | None = None) -> RunEnd:
    """Run a compiled flow on one question and return how it ended (status ok | budget_exceeded |
    error | cancelled). Every node visit goes to `sink` as it happens. `start_at` + `memory` fork a
    run from a step of an earlier one. Setting `cancel` stops the run before its next step. With a
    `cache`, deterministic model calls are served from it (and stored in it when computed).
    `on_token(node_id, visit, piece)` gets the text of every model call as it is generated (a
    call served from the cache: its whole text as one piece); the trace is the same without it.
    With a `debug` hook (flowkit.debug) breakpoints can pause the run: the graph is compiled with
    the hook's checkpointer (thread = `run_id`, durability "exit"), a breakpoint interrupts it, the
    run ends with status `paused` and `debug.paused` holds the pause; a hook that resumes a pause
    goes on from the thread's checkpoint (`Command(resume=..., update=edits)`; `start_at`,
    `memory` and `counters` are not used then). Without a hook nothing is checkpointed."""
    if not isinstance(question, str) or not question.strip():
        raise FlowkitError("the question is empty")
    sink = sink if sink is not None else ListSink()
    run_id = run_id or uuid.uuid4().hex[:12]
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
        q_tokens = count_tokens(llm, question, cache)
        if q_tokens > n_ctx // 2:
            raise ResourceError(f"the question is {q_tokens} tokens; the model's context is {n_ctx} "
                                f"(settings: n_ctx), which leaves no room for passages and answer")
    state = initial_memory(question, memory)
    for k, v in (counters or {}).items():
        state[k] = v
    run = _Run(run_id=run_id, resources=resources, kb=kb, sink=sink, limits=flow.spec.limits,
               cancel=cancel, cache=cache, on_token=on_token)
    if debug is not None:
        debug.bind(run)
    sink.start(RunStart(run_id=run_id, flow_name=flow.name, spec=flow.resolved_spec(),
                        question=question, kb=kb, model_id=str(getattr(llm, "model_id", "")),
                        model_hash=str(getattr(llm, "model_hash", "")),
                        settings=settings or {}, operator_versions=flow.operator_versions(),
                        flow_version=flow_version, parent_run_id=parent_run_id,
                        parent_step=parent_step, started_at=time.time()))
    configurable: dict[str, Any] = {"flowkit_run": run, "flowkit_start": start_at}
    config: Any = {"configurable": configurable,
                   "recursion_limit": flow.spec.limits.max_steps * 2 + 20}
    graph: Any = flow.graph
    given: Any = state
    extra: dict[str, Any] = {}
    saved = None
    if cp is not None and debug is not None:
        graph = checkpointed(flow, cp)
        configurable["thread_id"] = run_id
        extra = {"durability": "exit"}
        if debug.resume is not None:
            given = debug.command()
            saved = saved_thread(cp, run_id)
    final: dict[str, Any] = dict(state)
    status, error = "ok", None
    try:
        final = graph.invoke(given, config=config, **extra)
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
                    llm_calls=used["llm_calls"], tokens=used["tokens"],
                    ms=round(wall_ms + run.saved_ms, 2), error=error,
                    halt_reason=final.get("halt") or None, memory=jsonable(visible(final)),
                    wall_ms=round(wall_ms, 2), cached_calls=run.cached_calls)
    sink.end(result)
    return result
