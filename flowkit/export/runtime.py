"""What an exported `graph.py` runs on: flowkit's node wrappers and routers, outside `run_flow`.

An exported package is plain LangGraph code. Each node function calls `FlowRuntime.step` with its
node id, the operator's registry key and its params; each edge uses `next_node` or `on_label`,
which are the compiler's own routers (flowkit.compile). So limits, errors and step records are the
same as under `flowkit run`.

Design: per-run context without a flowkit `_Run` in the config.
LangGraph's server invokes `graph` with only an input such as `{"question": "..."}`. Instead of a
table of runs keyed by run id (it would need clean-up, and a run resumed by another worker would
not find its entry), whatever a run must carry from node to node lives in the graph state, where
LangGraph already keeps it per run and per thread:

- `started`: wall-clock time the run's first node began (keep-first reducer): drives `timeout_s`;
- `steps`, `llm_calls`, `tokens`, `halt`, `visits`: flowkit's own counters, as in the engine;
- `trace`: one record per node visit (append reducer): the run's trace sink; each record has
  its step `index` (see below);
- `run_id`: the server's id of the run that filled the state. A second run on the same thread
  would inherit the first one's counters and trace, so it fails with a clear error instead:
  ask each question on a new thread or as a threadless run.

Step indices. LangGraph runs the nodes of one superstep (a fan-out's parallel branches) in
parallel, and each of them sees the same `steps` count in the state, so that count alone would
give them one index. A node visit's index is the state's `steps` (the steps of the supersteps
before) plus the order in which the visits of its superstep *ended* (the first to end gets the
lowest), as the engine numbers them (its shared counter counts steps as they are recorded).
`StepNumbers` hands those out: a small per-process table keyed by run, holding only the current
superstep's next offset (a superstep's nodes always run in one process), dropped when the run
ends and bounded in size. So indices are unique and 0..n-1 over a run.

Each node call then builds a short-lived engine run context (`flowkit.nodes.run_context`) from that
state, the flow's limits, the resources and the knowledge base, and calls the engine's wrapper
(`make_node` / `make_finish`). The first node of a run (no `started` yet) also checks the input:
a non-empty question and a ready knowledge base.

Resources come from the environment, then from `flowkit_settings.json` next to graph.py, then
flowkit's defaults (see `ExportSettings`); they are created once per settings and process and load
nothing until first used. Runs are sent as OpenTelemetry traces when that file's `telemetry` or
the `OTEL_EXPORTER_OTLP_*` variables say so (flowkit.export.tracing). A run may name another knowledge base with the configurable `kb`; an
in-process caller (tests) may hand ready-made resources as the configurable `flowkit_resources`.
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from .. import registry
from ..compile import FINISH, label_router, next_router
from ..errors import FlowkitError, NodeError, ResourceError
from ..nodes import make_finish, make_node, run_context
from ..runtime.resources import Resources, default_data_dir, load_settings
from ..spec import Limits
from ..trace import ListSink, StepEvent
from .tracing import SETTINGS_KEY, PackageTracer

__all__ = ["FINISH", "ExportSettings", "FlowRuntime", "GraphCodeError", "RunInputError",
           "RunNodeError", "next_node", "on_label"]

#: The settings file an exported package may keep next to graph.py.
SETTINGS_FILE = "flowkit_settings.json"

#: Environment variables, by ExportSettings field; they win over the settings file.
ENV = {"home": "FLOWKIT_HOME", "kb": "FLOWKIT_KB", "model_path": "FLOWKIT_MODEL_PATH",
       "embedder_path": "FLOWKIT_EMBEDDER_PATH", "chroma_host": "FLOWKIT_CHROMA_HOST",
       "chroma_port": "FLOWKIT_CHROMA_PORT"}


class RunInputError(FlowkitError, ValueError):
    """A run cannot start: no question, no such knowledge base, a thread already used.

    Also a ValueError: LangGraph's server passes the messages of builtin errors on to clients."""


class GraphCodeError(FlowkitError, ValueError):
    """graph.py names an operator or params this flowkit cannot run (edited by hand, or written
    by another flowkit version)."""


class RunNodeError(NodeError, RuntimeError):
    """A node failed (the engine's NodeError); also a RuntimeError so that LangGraph's server
    shows clients which node failed and why, not just the error's type."""

    @classmethod
    def of(cls, err: NodeError) -> RunNodeError:
        return cls(err.node, err.operator, err.visit, err.cause)


@dataclass(frozen=True)
class ExportSettings:
    """Where an exported graph finds its resources. Empty means flowkit's default: the data dir
    $FLOWKIT_HOME or ~/.flowkit (with its settings.json), the packaged SmolLM2 model and
    all-MiniLM-L6-v2 embedder, Chroma stored in the data dir."""

    home: str = ""
    kb: str = "sample"
    model_path: str = ""
    embedder_path: str = ""
    chroma_host: str = ""
    chroma_port: int = 8000

    @classmethod
    def resolve(cls, settings_dir: Path | None, environ: Mapping[str, str] | None = None
                ) -> ExportSettings:
        """Environment variables first, then `flowkit_settings.json` in settings_dir, then defaults."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        path = settings_dir / SETTINGS_FILE if settings_dir else None
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as err:
                raise ResourceError(f"{path}: not valid JSON: {err}") from None
            if not isinstance(data, dict):
                raise ResourceError(f"{path}: must be a JSON object")
            known = {*ENV, SETTINGS_KEY}
            unknown = sorted(set(data) - known)
            if unknown:
                raise ResourceError(f"{path}: unknown setting(s) {unknown}; known: {sorted(known)}")
            values.update({k: v for k, v in data.items() if k in ENV and v not in (None, "")})
        values.update({k: env[var] for k, var in ENV.items() if env.get(var)})
        try:
            values["chroma_port"] = int(values.get("chroma_port", 8000))
        except ValueError:
            raise ResourceError(f"chroma_port must be a number; got {values['chroma_port']!r} "
                                f"(FLOWKIT_CHROMA_PORT or {SETTINGS_FILE})") from None
        kwargs: dict[str, Any] = {f.name: (values[f.name] if f.name == "chroma_port"
                                           else str(values[f.name]))
                                  for f in fields(cls) if f.name in values}
        return cls(**kwargs)

    def resources(self) -> Resources:
        """Lazy flowkit Resources for these settings (nothing is loaded yet)."""
        data_dir = Path(self.home).expanduser() if self.home else default_data_dir()
        settings = load_settings(data_dir)
        if self.model_path:
            settings = settings.with_llm(model_path=self.model_path)
        if self.embedder_path:
            settings = replace(settings, embedder_path=self.embedder_path)
        if self.chroma_host:
            settings = replace(settings, chroma_host=self.chroma_host, chroma_port=self.chroma_port)
        return Resources(data_dir, settings)


def next_node(*targets: str, in_branch: bool = False) -> Any:
    """Router after a plain node: to `targets` (several run in parallel), or to FINISH once a
    limit was hit. Without targets: to FINISH."""
    return next_router(targets, in_branch)


def on_label(table: Mapping[str, Sequence[str]], *, branch: str | None = None) -> Any:
    """Router after a router or judge node: the targets of the label it wrote to `route`;
    FINISH when halted or when the label has no edge."""
    return label_router(table, branch)


class StepNumbers:
    """Unique step indices for the node visits of one process's runs (see the module's help):
    `number(run_id, done, steps)` gives `steps` the indices after the `done` steps of earlier
    supersteps and after those already handed out in this superstep."""

    #: runs remembered at once (the oldest is forgotten: a run that never ends here)
    MAX_RUNS = 1024

    def __init__(self) -> None:
        self._next: OrderedDict[str, tuple[int, int]] = OrderedDict()   # run -> (done, offset)
        self._lock = threading.Lock()

    def number(self, run_id: str, done: int, steps: Sequence[StepEvent]) -> list[StepEvent]:
        """`steps` (one node call's, in the order recorded) with their run-wide indices."""
        if not steps:
            return []
        with self._lock:
            seen_done, offset = self._next.pop(run_id, (done, 0))
            if seen_done != done:              # a later superstep (the state's count moved on)
                offset = 0
            self._next[run_id] = (done, offset + len(steps))
            while len(self._next) > self.MAX_RUNS:
                self._next.popitem(last=False)
        return [replace(s, index=done + offset + i) for i, s in enumerate(steps)]

    def forget(self, run_id: str) -> None:
        """The run ended: drop its entry."""
        with self._lock:
            self._next.pop(run_id, None)


class FlowRuntime:
    """One exported flow's runtime: its name and limits, where its settings file lies, and the
    version of the saved flow it was exported from (None: a template or a file)."""

    def __init__(self, name: str, limits: Limits, settings_dir: str | Path | None = None,
                 version: int | None = None) -> None:
        self.name = name
        self.limits = limits
        self.settings_dir = Path(settings_dir) if settings_dir else None
        self.version = version
        self.tracer = PackageTracer(name, version, self.settings_dir / SETTINGS_FILE
                                    if self.settings_dir else None)
        self._nodes: dict[str, Any] = {}
        self._finish = make_finish()
        self.numbers = StepNumbers()
        self._resources: dict[ExportSettings, Resources] = {}
        self._lock = threading.Lock()

    def step(self, node_id: str, operator: str, params: Mapping[str, Any], state: Mapping[str, Any],
             config: RunnableConfig, *, branch: str | None = None,
             merge_inputs: Sequence[str] = ()) -> dict[str, Any]:
        """Run one visit of node `node_id`: the operator registered as `operator` with `params`."""
        node = self._nodes.get(node_id)
        if node is None:
            node = self._nodes[node_id] = make_node(self._operator(node_id, operator, params),
                                                    branch, tuple(merge_inputs))
        return self._call(node, state, config)

    def finish(self, state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        """The engine's finishing step: after a halt it still leaves an answer."""
        return self._call(self._finish, state, config, last=True)

    def settings(self) -> ExportSettings:
        return ExportSettings.resolve(self.settings_dir)

    def resources(self, settings: ExportSettings | None = None) -> Resources:
        """Resources for the current settings, created once per process."""
        settings = settings or self.settings()
        with self._lock:
            if settings not in self._resources:
                self._resources[settings] = settings.resources()
            return self._resources[settings]

    def _operator(self, node_id: str, key: str,
                  params: Mapping[str, Any]) -> registry.Operator[Any]:
        cls = registry.get(key)
        if cls is None:
            raise GraphCodeError(f"node '{node_id}': no operator '{key}' in this flowkit "
                               f"(see `flowkit operators`)")
        try:
            return cls(node_id, cls.Params.model_validate(dict(params)))
        except ValueError as err:
            raise GraphCodeError(f"node '{node_id}' ({key}): invalid params: {err}") from None

    def _call(self, fn: Any, state: Mapping[str, Any], config: RunnableConfig,
              last: bool = False) -> dict[str, Any]:
        configurable = config.get("configurable") or {}
        settings = self.settings()
        resources = configurable.get("flowkit_resources") or self.resources(settings)
        kb = str(configurable.get("kb") or settings.kb)
        first = not state.get("started")
        started = float(state.get("started") or time.time())
        served_run = _served_run_id(config)
        if not first and served_run and state.get("run_id") not in (None, "", served_run):
            raise RunInputError(
                f"flow '{self.name}': this thread already holds run {state.get('run_id')}; "
                "flowkit's counters, visits and trace live in the graph state, so ask each "
                "question on a new thread or as a threadless run (client.runs.wait(None, ...))")
        if first:
            question = state.get("question")
            if not isinstance(question, str) or not question.strip():
                raise RunInputError(f"flow '{self.name}': the input needs a non-empty 'question'")
            if kb:
                try:
                    resources.kb(kb).require_ready()
                except FlowkitError as err:
                    raise RunInputError(f"flow '{self.name}': {err}") from err
        sink = ListSink()
        run_id = (None if first else str(state.get("run_id") or "")) or _run_id(config)
        runtime = run_context(run_id=run_id, resources=resources, kb=kb,
                              sink=sink, limits=self.limits,
                              started=time.perf_counter() - (time.time() - started))
        live = self.tracer.live()
        done = int(state.get("steps") or 0)
        try:
            update = dict(fn(dict(state), runtime=runtime) or {})
        except NodeError as err:
            steps = self.numbers.number(run_id, done, sink.steps)
            self.numbers.forget(run_id)
            if live is not None:
                self.tracer.end(live, run_id, {**state, "started": started}, {}, steps,
                                resources.llm, kb, error=str(err))
            raise RunNodeError.of(err) from err
        steps = self.numbers.number(run_id, done, sink.steps)
        if last:
            self.numbers.forget(run_id)
        if first:
            update["started"] = started
            update["run_id"] = run_id
        if steps:
            update["trace"] = [_record(e) for e in steps]
        if live is not None:
            before = {**state, "started": started}
            if last:
                self.tracer.end(live, run_id, before, update, steps, resources.llm, kb)
            else:
                self.tracer.node(live, run_id, before, steps, resources.llm, kb)
        return update


def _served_run_id(config: RunnableConfig) -> str:
    """The run id a LangGraph server (or the caller) gives the run; empty when none was given."""
    meta = config.get("metadata") or {}
    return str(meta.get("run_id") or (config.get("configurable") or {}).get("run_id") or "")


def _run_id(config: RunnableConfig) -> str:
    """The id written on the run's step events: the server's run id, else the thread, else new."""
    return (_served_run_id(config) or str((config.get("configurable") or {}).get("thread_id") or "")
            or uuid.uuid4().hex[:12])


def _record(e: StepEvent) -> dict[str, Any]:
    """The trace record of one node visit kept in the state (JSON)."""
    return {"index": e.index, "node": e.node_id, "visit": e.visit, "operator": e.operator, "branch": e.branch,
            "llm_calls": len(e.llm_calls), "tokens": e.tokens, "ms": e.ms, "error": e.error}
