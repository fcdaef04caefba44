"""Several (flow, question) runs of an evaluation in flight at once, for a model server that
batches (`flowkit eval --concurrency N`).

Each run is independent, so N threads of this process each run one, against the model server the
settings name. Only an OpenAI-compatible server (settings: llm.backend "openai") takes that: the
in-process model and the supervised model worker serve one call at a time, so `plan_execution`
falls back to serial runs there with a note saying why.

What a run touches from several threads, and why that is safe: the model client
(`OpenAICompatibleLLM`) opens a connection per call; the completion cache and the run store open
one SQLAlchemy session per call on a shared engine (SQLite in WAL mode with a busy timeout, a
cache entry computed twice at once is stored once); each run has its own trace sink; the
embedder, the BM25 index and the Chroma client's creation hold locks (`Resources.kb` too); progress
is reported from the calling thread only.

Order: runs start in plan order (every flow on a question before the next question), each only
after the one before it has stored its start, so the stored runs keep the serial order; they may
end in another order, and progress is reported as each ends. `stop` (or Ctrl-C, which sets it)
lets the runs in flight end at their next step (status cancelled, done again on resume), starts no
other, and waits for them before returning or raising: no run is left half-written.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import FlowkitError
from ..trace import RunEnd, RunStart, StepEvent

MAX_CONCURRENCY = 64
#: why a concurrency above 1 runs serially with an embedded model
NEEDS_SERVER = ("--concurrency {n} needs a model server (settings: engine, llm.backend 'openai' "
                "with a base_url, e.g. `flowkit serve-model --parallel N`); the {engine} serves "
                "one call at a time, so the runs go one after another")

T = TypeVar("T")
R = TypeVar("R")


def check_concurrency(n: int, option: str = "--concurrency") -> int:
    """`n` when it is a whole number from 1 to MAX_CONCURRENCY, else FlowkitError naming it."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CONCURRENCY:
        raise FlowkitError(f"{option} must be a whole number from 1 to {MAX_CONCURRENCY}; got {n!r}")
    return n


@dataclass(frozen=True)
class Execution:
    """How an evaluation's runs go: `concurrency` runs in flight (1: serially), asked for as
    `requested`; `server_parallel` is the server's parallel slots where it reports them; `note`
    says why fewer run at once than asked ('' when none)."""

    concurrency: int = 1
    requested: int = 1
    server_parallel: int | None = None
    note: str = ""

    def record(self) -> dict[str, Any]:
        """What the evaluation stores and the report shows."""
        out: dict[str, Any] = {"concurrency": self.concurrency}
        if self.requested != self.concurrency:
            out["requested"] = self.requested
        if self.server_parallel is not None:
            out["server_parallel"] = self.server_parallel
        return out


def plan_execution(llm_settings: Any, requested: int,
                   probe: Callable[[str, str], int | None] | None = None) -> Execution:
    """The execution for `requested` runs in flight on the LLM the settings name: that many on an
    OpenAI-compatible server (whose parallel slots `probe(base_url, api_key)` asks; default
    `runtime.server_parallel`), else one, with a note."""
    check_concurrency(requested)
    if llm_settings.backend != "openai":
        engine = ("in-process model" if getattr(llm_settings, "in_process", False)
                  else "model worker")
        note = NEEDS_SERVER.format(n=requested, engine=engine) if requested > 1 else ""
        return Execution(1, requested, None, note)
    if probe is None:
        from ..runtime.server_parallel import server_parallel
        probe = server_parallel
    return Execution(requested, requested, probe(llm_settings.base_url, llm_settings.api_key))


class _Started:
    """A trace sink that only signals when its run has stored its start."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def start(self, run: RunStart) -> None:
        self.event.set()

    def step(self, event: StepEvent) -> None:
        pass

    def end(self, result: RunEnd) -> None:
        pass


def run_concurrently(tasks: Sequence[T], run_one: Callable[[T, threading.Event, Any], R],
                     n: int, on_done: Callable[[T, R], None],
                     stop: threading.Event | None = None) -> int:
    """Run `tasks` with at most `n` in flight: `run_one(task, cancel, started_sink)` runs one
    (it passes `cancel` and `started_sink` to the run: the sink tells the next task it may
    start), `on_done(task, result)` is called in this thread as each ends. Returns how many ran.
    See the module for order, stop and interrupts."""
    check_concurrency(n)
    halt = stop if stop is not None else threading.Event()
    gates = [threading.Event() for _ in tasks]

    def work(i: int, task: T) -> tuple[T, R | None]:
        try:
            while i and not gates[i - 1].wait(0.05):
                if halt.is_set():
                    return task, None
            if halt.is_set():
                return task, None
            return task, run_one(task, halt, _Started(gates[i]))
        finally:
            gates[i].set()

    ran = 0
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="flowkit-eval") as pool:
        pending: set[Future[tuple[T, R | None]]] = {pool.submit(work, i, t)
                                                    for i, t in enumerate(tasks)}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    task, result = fut.result()
                    if result is not None:
                        ran += 1
                        on_done(task, result)
        except BaseException:
            halt.set()                # runs in flight stop at their next step; none starts
            for fut in pending:
                fut.cancel()
            raise                     # leaving the block waits for the runs in flight
    return ran
