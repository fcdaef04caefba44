"""Evaluations fanned out over Ray: questions x flows as tasks on a pool of worker actors.

`run_parallel` is what `run_evaluation(..., EvalRun(RayWorkers(n, ...)))` calls for the runs still
to do. Each actor
builds its own workspace from a picklable factory (the CLI hands `Workspace(data_dir, settings)`),
so each loads its own model (in its own model worker process) and writes its runs and traces to the
same store as a serial evaluation would: run ids, resume and the report are unchanged. Answers are
the same as the serial run's: every actor uses the same settings and seed, and greedy decoding is
deterministic.

`ray.init()` starts a local cluster unless `address` names an existing one. A cluster of several
machines needs server engines (an OpenAI-compatible LLM server, a Chroma server, a database server),
since embedded ones live in one machine's data directory: `check_engines` refuses otherwise.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import FlowkitError
from ..run_request import RunRequest
from .costs import RunCost

LOCAL_ADDRESSES = ("", "local")


@dataclass(frozen=True)
class Task:
    """One run to do: flow `flow_index` on question `question_index`, stored as `run_id`."""

    flow_index: int
    question_index: int
    run_id: str
    question: str


def check_engines(address: str, settings: Any) -> None:
    """Refuse a multi-machine Ray address while the settings name embedded engines."""
    if address in LOCAL_ADDRESSES:
        return
    embedded = []
    if settings.llm.backend == "llama_cpp":
        embedded.append("the model (llm.backend llama_cpp; use an OpenAI-compatible server: "
                        "backend openai + base_url)")
    if not settings.chroma_host:
        embedded.append("the vectors (embedded Chroma; set chroma_host)")
    if not settings.database_url or settings.database_url.startswith("sqlite"):
        embedded.append("the database (SQLite; set database_url to PostgreSQL)")
    if embedded:
        raise FlowkitError(f"--ray-address {address} may span several machines, but these engines "
                           f"live in this machine's data directory: {'; '.join(embedded)}. "
                           "Point the settings at servers, or leave --ray-address out to run "
                           "the workers on this machine.")


class _Worker:
    """A Ray actor: one workspace (model, embedder, knowledge bases, store) that runs tasks."""

    def __init__(self, make_workspace: Callable[[], Any], specs: list[Any], kb: str,
                 eval_id: str, versions: list[int | None], threads: int = 0) -> None:
        from ..compile import compile_flow
        self.ws = make_workspace()
        res = self.ws.resources
        if threads and res.settings.llm.n_threads == 0:
            # workers sharing one machine split its cores: llama.cpp's threads spin while they
            # wait, so N models each on all cores run slower together than one alone
            res.settings = res.settings.with_llm(n_threads=threads)
            import torch
            torch.set_num_threads(threads)
        self.flows = [compile_flow(s) for s in specs]
        self.kb, self.eval_id, self.versions = kb, eval_id, versions

    def run(self, task: Task) -> tuple[Task, str, Any]:
        result = self.ws.run(self.flows[task.flow_index],
                             RunRequest(task.question, kb=self.kb,
                                        flow_version=self.versions[task.flow_index],
                                        eval_id=self.eval_id, run_id=task.run_id))
        return task, result.status, RunCost.of(result)

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        self.ws.close()


@contextmanager
def ray_session(address: str, workers: int) -> Iterator[Any]:
    """Ray for the block (the module `ray`): a local cluster of `workers` CPUs, or the cluster at
    `address`; left running and not shut down when it was already started (a search starts it
    once for all its evaluations), else shut down after."""
    try:
        import ray
    except ImportError as err:
        raise FlowkitError("--workers needs Ray: pip install ray (make install brings it)") from err
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
    if address in LOCAL_ADDRESSES:
        kwargs["num_cpus"] = max(workers, 1)
    else:
        kwargs["address"] = address
    ray.init(**kwargs)
    try:
        yield ray
    finally:
        ray.shutdown()


def run_parallel(tasks: Sequence[Task], make_workspace: Callable[[], Any], specs: list[Any],
                 versions: list[int | None], kb: str, eval_id: str, workers: int,
                 address: str = "", on_done: Callable[[Task, str, Any], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> int:
    """Run `tasks` on `workers` Ray actors; `on_done(task, status, cost)` after each (cost: a
    runner.RunCost). Returns how many ran.

    Tasks go out in order, at most one in flight per actor; `should_stop()` is asked before each
    new task goes out (runs in flight finish)."""
    with ray_session(address, workers) as ray:
        actor_cls: Any = ray.remote(num_cpus=1)(_Worker)
        threads = max(1, (os.cpu_count() or 1) // max(1, workers)) \
            if address in LOCAL_ADDRESSES else 0
        actors: list[Any] = [actor_cls.remote(make_workspace, specs, kb, eval_id, versions, threads)
                  for _ in range(max(1, workers))]
        try:
            pending = list(tasks)
            in_flight: dict[Any, Any] = {}
            ran = 0
            for actor in actors:
                if pending and not (should_stop and should_stop()):
                    in_flight[actor.run.remote(pending.pop(0))] = actor
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                ref = ready[0]
                actor = in_flight.pop(ref)
                try:
                    task, status, cost = ray.get(ref)
                except ray.exceptions.RayError as err:
                    raise FlowkitError(f"an evaluation worker failed: {err}") from err
                ran += 1
                if on_done:
                    on_done(task, status, cost)
                if pending and not (should_stop and should_stop()):
                    in_flight[actor.run.remote(pending.pop(0))] = actor
            return ran
        finally:
            _release(ray, actors)


def _release(ray: Any, actors: list[Any]) -> None:
    """End the actors, their workspaces closed first (no model worker left behind), so a Ray
    session kept for further evaluations gets their CPUs back."""
    for actor in actors:
        try:
            ray.get(actor.close.remote(), timeout=60)
        except ray.exceptions.RayError:
            pass                    # a dead actor has nothing left to close
        ray.kill(actor)
