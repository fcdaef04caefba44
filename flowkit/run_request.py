"""What one run is asked to do (`RunRequest`), how it starts (`Fresh` | `Fork` | `Resume`), and
what watches it (`RunHooks`): the three values `run_flow` and `Workspace.run` take.

A start's kinds exclude each other by type: a fresh run begins at the flow's entry; a fork goes
on from a step of an earlier run (its node, the memory before it, the counters spent so far,
and the run and step it came from); a resume goes on from the checkpoint a paused run left
(the debug hook that holds the pause comes in `RunHooks.debug`).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .debug import DebugHook
    from .runtime.completion_cache import CompletionCache
    from .trace import TraceSink

#: gets (node id, visit, piece) for every piece of model text as it is generated
OnToken = Callable[[str, int, str], None]


@dataclass(frozen=True)
class Fresh:
    """A run from the flow's entry node with an empty working memory (but the question)."""


@dataclass(frozen=True)
class Fork:
    """A run that goes on from step `parent_step` of run `parent_run_id`: it starts at `node`
    with `memory` (that step's memory before, with the user's changes), `counters` (steps, calls,
    tokens and visits spent before it) and records `edits` (the changes) as its first mark."""

    node: str
    parent_run_id: str
    parent_step: int
    memory: Mapping[str, Any] = field(default_factory=dict)
    counters: Mapping[str, Any] = field(default_factory=dict)
    edits: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Resume:
    """A paused run going on from its checkpoint (thread = its run id); `parent_run_id` and
    `parent_step` repeat the run's own lineage (a resumed fork is still a fork)."""

    parent_run_id: str | None = None
    parent_step: int | None = None


Start = Fresh | Fork | Resume

FRESH = Fresh()


@dataclass(frozen=True)
class RunRequest:
    """What is scoped to one run: the question, the knowledge base it reads, its ids (the run's
    own, the flow version and evaluation it belongs to), the settings recorded with it, and how
    it starts."""

    question: str
    kb: str = ""
    run_id: str | None = None
    flow_version: int | None = None
    eval_id: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    start: Start = FRESH

    @property
    def parent_run_id(self) -> str | None:
        """The run this one goes on from (a fork or a resumed fork), else None."""
        return None if isinstance(self.start, Fresh) else self.start.parent_run_id

    @property
    def parent_step(self) -> int | None:
        """The step of the parent run this one goes on from, else None."""
        return None if isinstance(self.start, Fresh) else self.start.parent_step


@dataclass(frozen=True)
class RunHooks:
    """What watches or steers a run, none of it part of the run's result: where its steps go
    (`sink`; `Workspace.run` adds its store and telemetry), the event that cancels it at its
    next step, the completion cache its deterministic calls are served from (`Workspace.run`
    uses the workspace's when None), the token stream, and the breakpoint hook."""

    sink: TraceSink | None = None
    cancel: threading.Event | None = None
    cache: CompletionCache | None = None
    on_token: OnToken | None = None
    debug: DebugHook | None = None


NO_HOOKS = RunHooks()
