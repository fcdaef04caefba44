"""Stored runs sent to an OpenTelemetry collector (`flowkit trace RUN_ID --otlp`, `flowkit evals
send EVAL_ID`): the runs are read from the workspace's database and sent in one request. Also the
studio's door to the telemetry settings (the Settings page's trace export form, which checks that
the collector answers: `check_collector`) and to what became of a run's live export
(`export_state`, on the Run page)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from flowkit.errors import FlowkitError
from flowkit.telemetry.events import stored_pauses
from flowkit.telemetry.export import FAILED as FAILED
from flowkit.telemetry.export import SENDING as SENDING
from flowkit.telemetry.export import SENT as SENT
from flowkit.telemetry.export import send
from flowkit.telemetry.probe import Probe as Probe
from flowkit.telemetry.probe import probe
from flowkit.telemetry.record import RunRecord
from flowkit.telemetry.settings import TelemetryError as TelemetryError
from flowkit.telemetry.settings import TelemetrySettings as TelemetrySettings
from flowkit.telemetry.settings import live_target as live_target
from flowkit.telemetry.settings import parse_headers as parse_headers
from flowkit.telemetry.settings import target_for
from storage.debug import DebugRepo

from .workspace import Workspace

#: statuses of runs that have ended (a running or paused run is not sent by `evals send`)
ENDED = ("ok", "budget_exceeded", "error", "cancelled", "interrupted")


@dataclass(frozen=True)
class Sent:
    """What went where: the runs and spans sent and the collector's traces URL."""

    runs: int
    spans: int
    url: str


@dataclass(frozen=True)
class ExportState:
    """What became of a run's spans in this studio process's live export: `status` is SENDING,
    SENT or FAILED; `url` the collector's traces URL."""

    status: str
    url: str


def export_state(ws: Workspace, run_id: str) -> ExportState | None:
    """The live export of a run that ended in this process (None: export off, or not known
    here: a run from before the studio started, or one sent too long ago). Starts nothing."""
    known = ws.telemetry.outcome(run_id)
    return ExportState(*known) if known else None


def check_collector(settings: TelemetrySettings) -> Probe | None:
    """Whether the collector that runs would be exported to with `settings` answers (one short
    request: an empty export); None when live export is off. TelemetryError for an environment
    variable that names no usable collector."""
    target = live_target(settings)
    return probe(target) if target is not None else None


def record_of(ws: Workspace, run_id: str) -> RunRecord:
    """A stored run (a unique prefix of its id will do) as a RunRecord, with the pauses of a
    debugged run (the `pause` events it had live; one it is still paused at too)."""
    run = ws.store.get_run(run_id)
    record = RunRecord.from_stored(run, ws.store.steps(run.id))
    history = DebugRepo(ws.store).get(run.id).history
    record.pauses = stored_pauses(history, paused_now=run.record.status == "paused")
    return record


def send_run(ws: Workspace, run_id: str, url: str | None = None) -> Sent:
    """Send one stored run to `url` (else settings' telemetry endpoint, else the environment's)."""
    target = target_for(ws.resources.settings.telemetry, url=url)
    record = record_of(ws, run_id)
    return Sent(1, send([record], target), target.url)


def send_eval(ws: Workspace, eval_id: str, url: str | None = None) -> Sent:
    """Send every ended run of an evaluation, each a trace with `flowkit.eval_id` (and Phoenix's
    `session.id`) set to `eval_id`, so the collector groups them."""
    from .evaluations import eval_repo
    target = target_for(ws.resources.settings.telemetry, url=url)
    repo = eval_repo(ws)
    info = repo.get_eval(eval_id)
    runs = [r for r in repo.runs(info.id) if r.record.status in ENDED]
    if not runs:
        raise FlowkitError(f"evaluation '{info.id}' has no finished runs to send")
    records = [record_of(ws, r.id) for r in runs]
    for record in records:
        record.run = replace(record.run, eval_id=info.id)
    return Sent(len(records), send(records, target), target.url)
