"""Which runs the Replay page offers: the latest ones, plus the run the address names when it is
older; and how each is labelled in the picker."""
from __future__ import annotations

from dataclasses import dataclass, field

from flowkit.errors import NotFoundError
from service.runs import RunInfo, get_run, list_runs
from service.workspace import Workspace

#: how many of the latest runs the picker lists
LATEST = 100


@dataclass
class RunChoices:
    """The runs to pick from (by id, newest first), the run the address asked for when found,
    and the id it asked for when no such run exists."""

    by_id: dict[str, RunInfo] = field(default_factory=dict)
    wanted: str | None = None
    missing: str | None = None


def run_choices(ws: Workspace, wanted: str | None) -> RunChoices:
    """The latest runs; a `wanted` run (?run=) that is not among them is looked up and put first."""
    by_id = {r.id: r for r in list_runs(ws, limit=LATEST)}
    if not wanted or wanted in by_id:
        return RunChoices(by_id, wanted)
    try:
        found = get_run(ws, wanted)
    except NotFoundError:
        return RunChoices(by_id, None, missing=wanted)
    return RunChoices({found.id: found, **by_id}, found.id)


def run_label(run: RunInfo) -> str:
    """A run as the picker shows it: id, (fork), flow, status, when it started, the question."""
    when = run.started_at.strftime("%m-%d %H:%M") if run.started_at else ""
    rec = run.record
    fork = " (fork)" if rec.parent_run_id else ""
    return f"{run.id}{fork} · {rec.flow_name} · {rec.status} · {when} · {rec.question[:60]}"
