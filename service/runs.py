"""Runs, as the Run, Replay and Compare pages and `flowkit runs` see them: the stored run records
and their steps, and the flows a run can be started from. The run itself is submitted through
Workspace.run / Workspace.fork (service.workspace)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flowkit import templates
from flowkit.eval import metrics
from flowkit.trace import StepEvent
from storage.repo import RunInfo as RunInfo

from .workspace import Workspace

FlowRef = tuple[str, str]   # ("saved" | "template", name)

__all__ = ["FlowRef", "Grade", "RunInfo", "flow_choices", "get_run", "grade_answer", "list_runs",
           "model_loaded", "steps"]


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


@dataclass(frozen=True)
class Grade:
    """An answer marked against a dataset's expected answers: `right` when an expected answer is
    in it as whole words (or equals it); `exact` (0 or 1) and `f1` (0-1) as Compare scores them."""

    right: bool
    exact: float
    f1: float
    expected: tuple[str, ...]


def grade_answer(answer: str, expected: Sequence[str]) -> Grade | None:
    """`answer` marked right or wrong against `expected` (None when there is no expected answer)."""
    golds = [g for g in expected if str(g).strip()]
    if not golds:
        return None
    exact = metrics.exact_match(answer, golds)
    return Grade(right=bool(exact or metrics.accuracy(answer, golds)), exact=exact,
                 f1=metrics.token_f1(answer, golds), expected=tuple(golds))


def model_loaded(ws: Workspace) -> bool:
    """Whether the workspace's model is up (False before the first run starts its worker: the
    first run then waits for it to load). A model with no notion of loading (a test fake, a
    server) counts as loaded. Starts nothing."""
    llm = getattr(ws.resources, "_llm", None)     # Resources.llm would create the model
    if llm is None:
        return False
    return bool(getattr(llm, "loaded", True))
