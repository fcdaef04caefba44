"""Runs, as the Run, Replay and Compare pages and `flowkit runs` see them: the stored run records
and their steps, and the flows a run can be started from. The run itself is submitted through
Workspace.run / Workspace.fork (service.workspace)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flowkit import templates
from flowkit.errors import FlowkitError
from flowkit.eval import metrics
from flowkit.memory import OPERATOR_KEYS
from flowkit.trace import USER_EDIT, StepEvent, diff
from storage.repo import RunInfo as RunInfo

from .workspace import Workspace

FlowRef = tuple[str, str]   # ("saved" | "template", name)

__all__ = ["Figures", "FlowRef", "ForkView", "Grade", "PauseEdit", "RunInfo", "asked_question",
           "flow_choices", "fork_view", "get_run", "grade_answer", "list_runs", "model_loaded",
           "own_figures", "parent_steps", "pause_edits", "steps"]


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


def parent_steps(ws: Workspace, run: RunInfo) -> list[StepEvent]:
    """For a fork, its parent's steps before the fork point (they ran before the fork's first
    step: a replay shows them as visited and the fork's numbering continues after them); []
    for a run that is not a fork, or whose parent was deleted."""
    if not run.record.parent_run_id or not run.record.parent_step:
        return []
    try:
        return list(ws.store.steps(run.record.parent_run_id))[:int(run.record.parent_step)]
    except FlowkitError:    # the parent is gone: number from the fork point all the same
        return []


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


@dataclass(frozen=True)
class Figures:
    """Steps, model calls and tokens of a stretch of a run."""

    steps: int
    llm_calls: int
    tokens: int


@dataclass(frozen=True)
class ForkView:
    """A fork in figures that add up: its own steps, calls and tokens (what it ran), and the
    parent's part before the fork point (its steps 0..from_step-1), shown apart; what it changed."""

    parent_run_id: str
    from_step: int
    own: Figures
    parent: Figures
    #: (key, old value, new value) for every working-memory key the fork changed
    memory_changes: list[tuple[str, Any, Any]]
    #: (node id, param, old value, new value) for every node param the fork changed
    param_changes: list[tuple[str, str, Any, Any]]


def own_figures(run_steps: Sequence[StepEvent]) -> Figures:
    """What these steps ran (a fork's stored totals also count its parent's part: the budget)."""
    return Figures(len(run_steps), sum(len(s.llm_calls) for s in run_steps),
                   sum(s.tokens for s in run_steps))


def fork_view(ws: Workspace, run: RunInfo, run_steps: Sequence[StepEvent]) -> ForkView | None:
    """The fork's figures and changes (None for a run that is not a fork). The changes are read
    from what was stored: the fork's first memory-before against the parent's at the fork point,
    and the node params of the two specs."""
    if not run.record.parent_run_id:
        return None
    k = int(run.record.parent_step or 0)
    try:
        parent = ws.store.get_run(run.record.parent_run_id)
        before = ws.store.steps(parent.id)
    except FlowkitError:         # the parent was deleted: its part is what the totals say
        parent, before = None, []
    own = own_figures(run_steps)
    prior = own_figures(before[:k]) if before else Figures(
        k, max(run.record.cost.calls - own.llm_calls, 0), max(run.record.cost.tokens - own.tokens, 0))
    memory: list[tuple[str, Any, Any]] = []
    params: list[tuple[str, str, Any, Any]] = []
    if before and k < len(before) and run_steps:
        old_mem, new_mem = before[k].memory_before or {}, run_steps[0].memory_before or {}
        memory = [(key, old_mem.get(key), new_mem.get(key)) for key in OPERATOR_KEYS
                  if key in new_mem and new_mem.get(key) != old_mem.get(key)]
    if parent is not None:
        old_nodes = {n["id"]: n.get("params", {}) for n in parent.spec.get("nodes", [])}
        for n in run.spec.get("nodes", []):
            old = old_nodes.get(n["id"], {})
            for name, value in (n.get("params") or {}).items():
                if old.get(name) != value:
                    params.append((n["id"], name, old.get(name), value))
    return ForkView(parent.id if parent else run.record.parent_run_id, k, own, prior, memory, params)


@dataclass(frozen=True)
class PauseEdit:
    """A working-memory key a user set while the run was paused at a breakpoint (Edit working
    memory on the Run page, `flowkit debug set`): the stored step the edit is (`step`), the key's
    value before and after, and the node the run went on to with it (None: it has not gone on)."""

    step: int
    key: str
    old: Any
    new: Any
    node: str | None


def pause_edits(run_steps: Sequence[StepEvent]) -> list[PauseEdit]:
    """The memory edits made at the run's pauses, in order (its `user.edit` steps)."""
    out: list[PauseEdit] = []
    for i, s in enumerate(run_steps):
        if s.operator != USER_EDIT:
            continue
        went_on = next((t.node_id for t in run_steps[i + 1:] if t.operator != USER_EDIT), None)
        for key, change in diff(s.memory_before or {}, s.memory_after or {}).items():
            out.append(PauseEdit(s.index, key, change["before"], change["after"], went_on))
    return out


def asked_question(run: RunInfo, run_steps: Sequence[StepEvent]) -> str:
    """The question the run's answer was computed from: the last question set at a pause, else
    the one it was started with."""
    set_at_pauses = [e.new for e in pause_edits(run_steps)
                     if e.key == "question" and isinstance(e.new, str)]
    return set_at_pauses[-1] if set_at_pauses else run.record.question
