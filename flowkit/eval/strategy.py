"""How one session of an evaluation runs (`EvalRun`): its execution strategy, whose kinds exclude
each other by type (`Serial` | `InFlight(n)` | `RayWorkers(n, ...)`, as the CLI's --workers and
--concurrency do), what it reports progress and notices to, the event that stops it, and the
workspace a FLOW@MODEL column runs in."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import FlowkitError
from .concurrent import check_concurrency

if TYPE_CHECKING:
    from .runner import Progress


@dataclass(frozen=True)
class Serial:
    """One run after another, in this process."""


@dataclass(frozen=True)
class InFlight:
    """`n` runs in flight at once, in threads of this process, to the settings' model server
    (flowkit.eval.concurrent); with an embedded model they run one after another and the
    session's notice says why."""

    n: int

    def __post_init__(self) -> None:
        check_concurrency(self.n)


@dataclass(frozen=True)
class RayWorkers:
    """The runs still to do go to `n` Ray workers (flowkit.eval.parallel), each with its own
    workspace from `make_workspace` (each loads its own model), on the Ray cluster at `address`
    ('' starts a local one)."""

    n: int
    make_workspace: Callable[[], Any]
    address: str = ""


Strategy = Serial | InFlight | RayWorkers

SERIAL = Serial()


def strategy_for(workers: int = 1, concurrency: int = 1,
                 make_workspace: Callable[[], Any] | None = None, address: str = "") -> Strategy:
    """The strategy the CLI's `--workers N` / `--concurrency N` ask for (both above 1: an error
    saying to choose one; workers without a workspace factory: an error)."""
    if workers > 1 and concurrency > 1:
        raise FlowkitError("--workers and --concurrency: choose one (Ray workers each load their "
                           "own model; --concurrency keeps several calls in flight to one server)")
    if workers > 1:
        if make_workspace is None:
            raise FlowkitError("--workers needs a workspace factory for the workers")
        return RayWorkers(workers, make_workspace, address)
    return InFlight(concurrency) if concurrency != 1 else SERIAL


@dataclass(frozen=True)
class EvalRun:
    """One session of an evaluation: how its runs go (`strategy`), who hears of each finished
    run (`progress`) and of a change of plan (`notice`, one line: e.g. why runs go serially),
    the event that stops it cleanly (`stop`), and the workspace a FLOW@MODEL column runs in
    (`workspace_for(model)`, serially only)."""

    strategy: Strategy = SERIAL
    progress: Callable[[Progress], None] | None = None
    stop: threading.Event | None = None
    notice: Callable[[str], None] | None = None
    workspace_for: Callable[[str], Any] | None = None
