"""Debugging a run: start it with breakpoints, look at a pause, edit memory, continue, step, abort.

The one door the CLI and the studio use (`Debugger(workspace)`). A paused run is a LangGraph
checkpoint (its thread in the workspace database's checkpointer, storage.checkpoints; see
flowkit.debug for what is kept where) plus its trace-side record (storage.debug), not a waiting
thread: every call here is short except `start` and
`resume`, which run the flow in the calling thread until it pauses again or ends (the studio calls
them from its background run thread, as it does `Workspace.run`). Any process on the same data
directory can continue a paused run, also after a restart; of two that try at once, one gets it
and the other gets NotPausedError.

API for a UI (all plain data):
- `start(flow, request, breakpoints, hooks)` -> RunEnd (status `paused` or how it ended);
- `show(run_id)` -> PausedRun: node, visit, when, reason, memory, counters, breakpoints, edits;
- `next_prompt(run_id)` -> the paused node's first model call (None when it makes none);
- `resume(run_id, mode, hooks)` with mode continue | step | over -> RunEnd;
- `set_value(run_id, key, value, who)` -> PausedRun (validated; a `user.edit` step in the trace);
- `set_breakpoints(run_id, breakpoints)`; `abort(run_id, who)`.
"""
from __future__ import annotations

import getpass
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from flowkit.breakpoints import Breakpoint, BreakpointError, as_breakpoints, check_breakpoints
from flowkit.compile import CompiledFlow, compile_flow
from flowkit.debug import (
    MODES,
    CheckpointMissing,
    DebugHook,
    Mode,
    Pause,
    drop_thread,
    hook_for,
    read_pause,
)
from flowkit.debug_preview import NextPrompt, next_prompt
from flowkit.engine import run_flow
from flowkit.errors import FlowkitError
from flowkit.memory import visible
from flowkit.memory_edit import EditError, check_value
from flowkit.run_request import NO_HOOKS, Fresh, Resume, RunHooks, RunRequest
from flowkit.spec import FlowSpec
from flowkit.telemetry.debug_sink import DebugTelemetrySink, pause_mark
from flowkit.telemetry.events import stored_pauses
from flowkit.telemetry.record import RunRecord
from flowkit.trace import MultiSink, RunEnd, RunStart, StepEvent, TraceSink
from storage.checkpoints import open_checkpointer
from storage.debug import DebugRepo, NotPausedError
from storage.repo import TraceStore

from .workspace import Workspace

__all__ = ["BreakpointError", "CheckpointMissing", "Debugger", "EditError", "NotPausedError",
           "PausedRun", "breakpoint_problems", "check_value", "paused_memory"]

@dataclass
class PausedRun:
    """What the Run page shows of a debugged run's debugging: its breakpoints, edits and pause.
    What ran and how it ended is the stored run's (`ws.store.get_run`), not copied here."""

    run_id: str
    question: str
    status: str
    breakpoints: list[Breakpoint]
    edits: list[dict[str, Any]]
    pauses: int
    #: the checkpoint (None unless the run is paused now)
    pause: Pause | None = None
    #: the steps recorded so far (the memory diff the replay draws)
    steps: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def edited(self) -> bool:
        return bool(self.edits)


class _DebugSink:
    """The run's trace store, except that a segment ending `paused` is recorded as a pause (its
    state is in LangGraph's checkpointer), and a continue's start does not insert the run again
    (it was claimed)."""

    def __init__(self, trace: TraceStore, repo: DebugRepo, breakpoints: list[Breakpoint],
                 hook: Any, resuming: bool) -> None:
        self.trace, self.repo, self.breakpoints = trace, repo, breakpoints
        self.hook, self.resuming = hook, resuming
        self.started = False

    def start(self, run: RunStart) -> None:
        if not self.resuming:
            self.trace.start(run)
            self.repo.begin(run.run_id, [b.to_dict() for b in self.breakpoints])
        else:          # the pause's history: gone on from when this segment started (as live)
            self.repo.resumed(run.run_id, run.started_at or time.time(), self.hook.mode)
        self.started = True

    def step(self, event: StepEvent) -> None:
        self.trace.step(event)

    def end(self, result: RunEnd) -> None:
        if result.status == "paused" and self.hook.paused is not None:
            self.repo.save_pause(result, pause_mark(self.hook.paused, None, "").to_stored())
        else:
            self.trace.end(result)


class Debugger:
    """Debug runs of one workspace (see the module's help for the calls)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.repo = DebugRepo(ws.store)

    def start(self, flow: FlowSpec | CompiledFlow, request: RunRequest,
              breakpoints: Sequence[Breakpoint | str | Mapping[str, Any]],
              hooks: RunHooks = NO_HOOKS) -> RunEnd:
        """Run `flow` on `request` (a fresh start: its question, kb, run id and flow version)
        until a breakpoint pauses it (status `paused`) or it ends. Breakpoints are checked first
        (missing node, inside a parallel branch, bad condition). `hooks` as `Workspace.run`
        takes them: `sink` gets the steps too, `cancel`, `on_token`, and `cache` (the
        workspace's when None); the breakpoint hook is the debugger's own."""
        if not isinstance(request.start, Fresh) or hooks.debug is not None:
            raise FlowkitError("a debugged run starts fresh, with the debugger's own breakpoint "
                               "hook (continue a paused one with `resume`)")
        compiled = flow if isinstance(flow, CompiledFlow) else compile_flow(flow)
        bps = check_breakpoints(compiled, breakpoints)
        with open_checkpointer(self.ws.store.url) as cp:
            hook = hook_for(compiled, bps, checkpointer=cp)
            sink = _DebugSink(self.ws.store.sink(request.eval_id), self.repo, bps, hook,
                              resuming=False)
            return run_flow(compiled, self.ws.resources,
                            replace(request, settings=self.ws.resources.settings.to_dict()),
                            self._hooks(hooks, hook, sink,
                                        self._telemetry(hook, request.eval_id)))

    def _hooks(self, given: RunHooks, hook: DebugHook, sink: _DebugSink,
               telemetry: list[TraceSink]) -> RunHooks:
        """A debugged segment's hooks: the caller's, with its steps to the debug sink (and the
        caller's sink, and telemetry), the workspace's completion cache unless the caller gave
        one, and the breakpoint hook."""
        return replace(given, sink=MultiSink(sink, *([given.sink] if given.sink else []),
                                             *telemetry),
                       cache=given.cache if given.cache is not None else self.ws.completion_cache,
                       debug=hook)

    def _telemetry(self, hook: DebugHook, eval_id: str | None = None) -> list[TraceSink]:
        """The segment's live export (none when telemetry is off): its node spans as it ends,
        under the run's root (sent at the first pause) or a continuation span (a later segment;
        flowkit.telemetry.debug_sink), the pause it goes on from as an event."""
        live = self.ws.telemetry.live(self.ws.resources.settings.telemetry)
        return [DebugTelemetrySink(live, hook, eval_id)] if live else []

    def _send_abort(self, run_id: str) -> None:
        """An aborted run's last part: a continuation span under the root its first pause sent,
        from the pause it ended at to now, status cancelled, that pause as its event; nothing
        when telemetry is off."""
        live = self.ws.telemetry.live(self.ws.resources.settings.telemetry)
        if live is None:
            return
        run = self.ws.store.get_run(run_id)
        record = RunRecord.from_stored(run, [])
        last = stored_pauses(self.repo.get(run.id).history)[-1:]     # the one it ended at
        record.root, record.continuation = False, True
        record.part, record.total_steps, record.pauses = "abort", run.steps, last
        if last:
            record.run = replace(record.run, started_at=last[0].paused_at)
        live.submit(record)

    def _compiled(self, spec: dict[str, Any]) -> CompiledFlow:
        return compile_flow(FlowSpec.model_validate({**spec, "layout": {}}))

    def _pause(self, spec: dict[str, Any], run_id: str, held: Mapping[str, Any] | None
               ) -> Pause:
        """The pause of a paused run: LangGraph's checkpoint of its thread, with the edits made
        since (`held`, the trace side: not yet sent) on top. CheckpointMissing when the
        checkpointer holds no pause for it."""
        with open_checkpointer(self.ws.store.url) as cp:
            pause = read_pause(self._compiled(spec), cp, run_id)
        if pause is None:
            raise CheckpointMissing(
                f"run '{run_id}' is paused but LangGraph's checkpointer holds no pause for it "
                f"(thread '{run_id}' in {self.ws.store.engine.url.render_as_string()}): it cannot "
                "be continued; abort it")
        for key, value in (held or {}).get("edits") or []:
            pause.state[key] = value
        pause.steps_done = int((held or {}).get("steps_done", pause.steps_done))
        return pause

    def show(self, run_id: str) -> PausedRun:
        """The debug state of a run: its breakpoints, edits and, while paused, the pause (None
        also when the checkpointer lost it: `require_paused` says so)."""
        run = self.ws.store.get_run(run_id)
        st = self.repo.get(run.id)
        pause = None
        if st.pause is not None:
            try:
                pause = self._pause(run.spec, run.id, st.pause)
            except CheckpointMissing:
                pause = None
        return PausedRun(run_id=run.id, question=run.record.question, status=run.record.status,
                         breakpoints=as_breakpoints(st.breakpoints), edits=st.edits,
                         pauses=st.pauses, pause=pause, steps=run.steps)

    def require_paused(self, run_id: str, doing: str = "use") -> tuple[PausedRun, Pause]:
        view = self.show(run_id)
        if view.pause is None:
            if view.status == "paused":
                self._pause(self.ws.store.get_run(view.run_id).spec, view.run_id, None)
            raise NotPausedError(f"cannot {doing} run '{view.run_id}': it is not paused "
                                 f"(status {view.status})")
        return view, view.pause

    def next_prompt(self, run_id: str) -> NextPrompt | None:
        """The paused node's first model call on the paused memory (nothing is called)."""
        _, pause = self.require_paused(run_id, "preview the next prompt of")
        run = self.ws.store.get_run(run_id)
        return next_prompt(self._compiled(run.spec), pause.node, pause.visit, pause.state,
                           self.ws.resources, run.record.kb)

    def resume(self, run_id: str, mode: Mode = "continue", hooks: RunHooks = NO_HOOKS, *,
               breakpoints: Sequence[Breakpoint | str | Mapping[str, Any]] | None = None,
               expect_pauses: int | None = None) -> RunEnd:
        """Go on from the pause under the same run id: `continue` to the next breakpoint or the
        end, `step` one node, `over` the loop the paused node is in; `hooks` as `start` takes
        them. NotPausedError when the run is not paused or another continue took it first; with
        `expect_pauses` (the pause count the caller saw) also when it was continued and paused
        again since (another tab)."""
        if mode not in MODES:
            raise FlowkitError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
        if hooks.debug is not None:
            raise FlowkitError("a debugged run goes on with the debugger's own breakpoint hook")
        run = self.ws.store.get_run(run_id)
        if expect_pauses is not None:
            seen = self.repo.get(run.id).pauses
            if seen != expect_pauses:
                raise NotPausedError(f"cannot continue run '{run.id}': it was continued elsewhere "
                                     f"since (pause {expect_pauses} seen, now pause {seen})")
        compiled = self._compiled(run.spec)
        new_bps = None if breakpoints is None else [
            b.to_dict() for b in check_breakpoints(compiled, breakpoints)]
        held, stored = self.repo.claim(run.id, new_bps)
        sink: _DebugSink | None = None
        try:
            pause = self._pause(run.spec, run.id, held)
            bps = as_breakpoints(stored)
            question = str(pause.state.get("question") or run.record.question)
            with open_checkpointer(self.ws.store.url) as cp:
                hook = hook_for(compiled, bps, mode, resume=pause, checkpointer=cp,
                                edits=[(k, v) for k, v in held.get("edits") or []])
                sink = _DebugSink(self.ws.store.sink(run.record.eval_id), self.repo, bps, hook,
                                  resuming=True)
                telemetry = self._telemetry(hook, run.record.eval_id)
                request = RunRequest(question, kb=run.record.kb, run_id=run.id,
                                     flow_version=run.record.flow_version,
                                     settings=self.ws.resources.settings.to_dict(),
                                     start=Resume(run.record.parent_run_id, run.record.parent_step))
                return run_flow(compiled, self.ws.resources, request,
                                self._hooks(hooks, hook, sink, telemetry))
        except BaseException:
            if sink is None or not sink.started:
                self.repo.unclaim(run.id)      # nothing ran: the run stays paused where it was
            raise

    def abort(self, run_id: str, who: str = "") -> None:
        """End a paused run as cancelled (its LangGraph thread is dropped)."""
        run = self.ws.store.get_run(run_id)
        view = self.show(run.id)
        self.repo.abort(run.id, who, view.pause.node if view.pause else None)
        with open_checkpointer(self.ws.store.url) as cp:
            drop_thread(cp, run.id)
        self._send_abort(run.id)

    def set_value(self, run_id: str, key: str, value: Any, who: str | None = None) -> PausedRun:
        """Set working-memory `key` of a paused run, validated against the key's type; recorded in
        the trace as a `user.edit` step (memory before/after) with who and when."""
        run = self.ws.store.get_run(run_id)
        checked = check_value(key, value)
        if key == "question" and not (isinstance(checked, str) and checked.strip()):
            raise EditError("cannot set 'question' to empty text")
        view = self.show(run.id)
        pause = view.pause
        if pause is None and view.status == "paused":
            pause = self._pause(run.spec, run.id, None)       # CheckpointMissing: says why
        # not paused: the repository refuses it (running, ended) with the reason
        self.repo.edit(run.id, key, checked, who or _user(),
                       memory=paused_memory(pause) if pause else {},
                       node=pause.node if pause else None)
        return self.show(run.id)

    def set_breakpoints(self, run_id: str, breakpoints: Sequence[Breakpoint | str | Mapping[str, Any]]
                        ) -> PausedRun:
        """Replace a paused run's breakpoints (checked against its flow); they apply from the next
        continue."""
        run = self.ws.store.get_run(run_id)
        bps = check_breakpoints(self._compiled(run.spec), breakpoints)
        self.repo.set_breakpoints(run.id, [b.to_dict() for b in bps])
        return self.show(run.id)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def breakpoint_problems(flow: FlowSpec, texts: Sequence[str]) -> list[str]:
    """What is wrong with each breakpoint written as text (`node[@visit][:after][?condition]`)
    for `flow`, one message per bad line ('line n: ...'); [] when all are good. Blank lines are
    skipped."""
    problems = []
    compiled = compile_flow(flow)
    for n, text in enumerate(texts, 1):
        if not text.strip():
            continue
        try:
            check_breakpoints(compiled, [text.strip()])
        except FlowkitError as err:        # BreakpointError, ExprError
            problems.append(f"line {n}: {err}")
    return problems


def paused_memory(pause: Pause) -> dict[str, Any]:
    """The working memory of a pause (its operator keys, without the engine's counters)."""
    return visible(pause.state)
