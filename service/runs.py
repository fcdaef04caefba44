"""Runs, as the Run, Replay and Compare pages and `flowkit runs` see them: the stored run records
and their steps, and the flows a run can be started from. The run itself is submitted through
Workspace.run / Workspace.fork (service.workspace)."""
from __future__ import annotations

from flowkit import templates
from flowkit.trace import StepEvent
from storage.repo import RunInfo as RunInfo

from .workspace import Workspace

FlowRef = tuple[str, str]   # ("saved" | "template", name)

__all__ = ["FlowRef", "RunInfo", "flow_choices", "get_run", "list_runs", "steps"]


def flow_choices(ws: Workspace) -> list[FlowRef]:
    """Saved flows first (by name), then the templates."""
    return ([("saved", f.name) for f in ws.store.list_flows()]
            + [("template", name) for name in templates.names()])


def get_run(ws: Workspace, run_id: str) -> RunInfo:
    """One stored run (NotFoundError when there is none)."""
    return ws.store.get_run(run_id)


def steps(ws: Workspace, run_id: str) -> list[StepEvent]:
    """A stored run's steps, in order."""
    return ws.store.steps(run_id)


def list_runs(ws: Workspace, limit: int = 50) -> list[RunInfo]:
    """The latest runs, newest first."""
    return ws.store.list_runs(limit=limit)
