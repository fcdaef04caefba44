"""What an evaluation needs from the workspace it is handed (service.workspace.Workspace is one):
a store that marks dead runs interrupted, the resources (knowledge bases, settings) and a way to
run one question. A Protocol, so the library never imports the service or storage."""
from __future__ import annotations

from typing import Any, Protocol

from ..run_request import RunHooks, RunRequest


class RunStore(Protocol):
    """The part of the run store the runner touches."""

    def mark_interrupted(self) -> Any: ...


class EvalWorkspace(Protocol):
    """A workspace an evaluation runs in."""

    @property
    def store(self) -> RunStore: ...

    @property
    def resources(self) -> Any: ...

    def run(self, flow: Any, request: RunRequest, hooks: RunHooks = ...) -> Any: ...
