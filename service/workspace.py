"""A workspace: one data directory's resources (model, embedder, Chroma) and its database.

The CLI and the studio both go through this: resolve a flow reference, run and store a run, fork a
run from a step. It is the service between the library and storage: the engine never imports
storage (it writes to the sink it is handed) and storage never runs a flow.
"""
from __future__ import annotations

import functools
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from flowkit.compile import CompiledFlow, compile_flow
from flowkit.engine import CANCELLED, run_flow
from flowkit.errors import NotFoundError
from flowkit.memory import counter_update, visible
from flowkit.memory_edit import check_changes
from flowkit.run_request import NO_HOOKS, Fork, RunHooks, RunRequest
from flowkit.runtime.resources import Resources, Settings
from flowkit.spec import FlowSpec
from flowkit.telemetry.events import FORK, MemoryEdit
from flowkit.telemetry.sink import Telemetry
from flowkit.trace import MultiSink, RunEnd, RunStart, TraceSink
from storage.cache import SqlCompletionCache
from storage.repo import Store

from . import flowref


class Workspace:
    """Resources + Store for one data directory. Marks runs left by dead processes interrupted."""

    def __init__(self, data_dir: str | Path | None = None, settings: Settings | None = None) -> None:
        self.resources = Resources(data_dir, settings)
        self.store = Store(self.resources.database_url)
        self.store.mark_interrupted()
        self._cache: SqlCompletionCache | None = None
        self.telemetry = Telemetry()    # OTLP export of runs as they end (settings.telemetry)

    @property
    def data_dir(self) -> Path:
        return self.resources.data_dir

    def close(self) -> None:
        """Stop the model worker this workspace started, without waiting for a call in flight (it
        ends first), and start no other: what the studio does when it drops a workspace."""
        self.resources.close()
        self.telemetry.close(wait=False)

    @property
    def cache_store(self) -> SqlCompletionCache:
        """The completion cache in this workspace's database (whether or not runs use it)."""
        if self._cache is None:
            self._cache = SqlCompletionCache(self.resources.database_url,
                                             self.resources.settings.cache_max_entries)
        return self._cache

    @property
    def completion_cache(self) -> SqlCompletionCache | None:
        """The cache runs use: None when settings (or --no-cache) switch it off."""
        return self.cache_store if self.resources.settings.completion_cache else None

    def share_cache(self, other: Workspace) -> None:
        """Use `other`'s completion cache (a view of a workspace with per-run overrides)."""
        self._cache = other.cache_store

    def set_cache(self, on: bool) -> None:
        """Switch the completion cache on or off for this workspace's runs (the CLI's --no-cache);
        evaluation workers started from its settings follow."""
        self.resources.settings = replace(self.resources.settings, completion_cache=on)

    def resolve_flow(self, ref: str) -> tuple[FlowSpec, int | None]:
        """FLOW as a file path, a saved flow's name, or a template's name (in that order; a
        file that is also a saved flow's name is an error naming both, see service.flowref:
        'file:PATH', 'saved:NAME' or 'template:NAME' picks one)."""
        return flowref.resolve(ref, self.store)

    def run(self, flow: FlowSpec | CompiledFlow, request: RunRequest,
            hooks: RunHooks = NO_HOOKS) -> RunEnd:
        """Compile (if needed) and run one question, storing every step as it happens (in the
        evaluation `request.eval_id` when given). `hooks.sink` gets the steps too; the
        workspace's completion cache serves the run unless `hooks.cache` names another. A fork's
        memory changes (`Fork.edits`) are recorded as the run's first mark."""
        compiled = flow if isinstance(flow, CompiledFlow) else compile_flow(flow)
        start = request.start
        marks = ([MemoryEdit(changes=dict(start.edits), at=time.time(), source=FORK)]
                 if isinstance(start, Fork) and start.edits else [])
        sink = MultiSink(self.store.sink(request.eval_id),
                         *([hooks.sink] if hooks.sink else []),
                         *self.telemetry.sinks(self.resources.settings.telemetry,
                                               request.eval_id, marks))
        return run_flow(compiled, self.resources,
                        replace(request, settings=self.resources.settings.to_dict()),
                        replace(hooks, sink=sink,
                                cache=hooks.cache if hooks.cache is not None
                                else self.completion_cache))

    def record_cancelled(self, flow: FlowSpec, question: str, kb: str, run_id: str, *,
                         flow_version: int | None = None) -> RunEnd:
        """Store a run that was cancelled before it started (status `cancelled`, no steps), so the
        run list and the replay show it; nothing runs and no model is loaded."""
        compiled = compile_flow(flow)
        sink = self.store.sink()
        sink.start(RunStart(run_id=run_id, flow_name=compiled.name, spec=compiled.resolved_spec(),
                            question=question, kb=kb, model_id="", model_hash="",
                            settings=self.resources.settings.to_dict(),
                            operator_versions=compiled.operator_versions(),
                            flow_version=flow_version, started_at=time.time()))
        end = RunEnd(run_id=run_id, status=CANCELLED, answer="", citations=[], steps=0,
                     error="cancelled before it started", halt_reason=CANCELLED)
        sink.end(end)
        return end

    def fork(self, run_id: str, step_index: int, memory_changes: dict[str, Any] | None = None,
             param_changes: dict[str, Any] | None = None,
             extra_sink: TraceSink | None = None,
             cancel: threading.Event | None = None) -> RunEnd:
        """Run on from a step of an earlier run with changed memory or node params.

        The new run starts at that step's node with that step's memory-before (plus the changes),
        and records its parent run and step. Each memory change is checked against its key's type
        (flowkit.memory_edit.check_value): EditError naming the key, before anything runs.
        """
        parent = self.store.get_run(run_id)
        steps = self.store.steps(parent.id)
        if not 0 <= step_index < len(steps):
            raise NotFoundError(f"run '{parent.id}' has no step {step_index} (it has {len(steps)})")
        step = steps[step_index]
        spec = FlowSpec.model_validate({**parent.spec, "layout": {}})
        if param_changes:
            nodes = []
            for n in spec.nodes:
                if n.id == step.node_id:
                    n = n.model_copy(update={"params": {**n.params, **param_changes}})
                nodes.append(n)
            spec = spec.model_copy(update={"nodes": nodes})
        memory = visible(step.memory_before)
        memory.update(check_changes(memory_changes or {}))
        question = str(memory.pop("question", parent.record.question))
        visits: dict[str, int] = {}
        for s in steps[:step_index]:
            visits[s.node_id] = max(visits.get(s.node_id, 0), s.visit)
        counters = {"visits": visits, **counter_update(
            steps=step_index, llm_calls=sum(len(s.llm_calls) for s in steps[:step_index]),
            tokens=sum(s.tokens for s in steps[:step_index]))}
        start = Fork(node=step.node_id, parent_run_id=parent.id, parent_step=step_index,
                     memory=memory, counters=counters, edits=memory_changes or {})
        return self.run(spec, RunRequest(question, kb=parent.record.kb,
                                         flow_version=parent.record.flow_version, start=start),
                        RunHooks(sink=extra_sink, cancel=cancel))


def worker_factory(ws: Workspace) -> functools.partial[Workspace]:
    """What a Ray evaluation worker calls to make its own workspace like `ws` (the same data
    directory and settings, model included; picklable), for `--workers N`: each worker loads its
    own model."""
    return functools.partial(Workspace, ws.data_dir, ws.resources.settings)
