"""The studio's background jobs: a run, a fork, an ingest, each submitted to the job manager.

A run goes through `Workspace.run` (which stores every step in SQLite as it happens) with an extra
sink that tells the job which node finished and how many tokens were used so far. The run id is
chosen here before the job is queued, so the page can put it in its query params at once and a
refresh finds the same run again.
"""
from __future__ import annotations

import shutil
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from flowkit.errors import ResourceError, short
from flowkit.ingest import ingest
from flowkit.spec import FlowSpec
from flowkit.trace import RunEnd, RunStart, StepEvent
from service.workspace import Workspace

from .jobs import JobManager, Reporter
from .overrides import Overrides, with_overrides


class ProgressSink:
    """A trace sink that reports a run's progress to its job (node, steps, tokens)."""

    def __init__(self, report: Reporter):
        self.report = report

    def start(self, run: RunStart) -> None:
        self.report.update(run_id=run.run_id, parent_run_id=run.parent_run_id,
                           message=f"started {run.flow_name}")

    def step(self, event: StepEvent) -> None:
        self.report.add_tokens(event.tokens)
        self.report.update(node=event.node_id, steps=event.index + 1,
                           message=f"finished step {event.index} ({event.node_id})")

    def end(self, result: RunEnd) -> None:
        self.report.update(message=f"ended: {result.status}")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _result(end: RunEnd) -> dict[str, Any]:
    out = asdict(end)
    out.pop("memory", None)    # the run row keeps it; the job needs only the summary
    return out


def submit_run(jobs: JobManager, ws: Workspace, spec: FlowSpec, question: str, kb: str, *,
               flow_version: int | None = None, overrides: Overrides | None = None) -> tuple[str, str]:
    """Queue a run of `spec` on `question` against knowledge base `kb` (may be "").

    Returns (job id, run id). `overrides` (temperature, node params) apply to this run only.
    """
    run_id = new_run_id()
    spec, view = with_overrides(ws, spec, overrides)

    def work(report: Reporter) -> dict[str, Any]:
        report.update(node=None, message="starting (loading the model on the first run)")
        end = view.run(spec, question, kb, flow_version=flow_version, run_id=run_id,
                       extra_sink=ProgressSink(report))
        return _result(end)

    label = f"{spec.name} on {kb or 'no KB'}: {question[:60]}"
    job_id = jobs.submit("run", label, work, run_id=run_id,
                         meta={"flow": spec.name, "kb": kb, "question": question})
    return job_id, run_id


def submit_fork(jobs: JobManager, ws: Workspace, run_id: str, step_index: int,
                memory_changes: dict[str, Any] | None = None,
                param_changes: dict[str, Any] | None = None) -> str:
    """Queue `Workspace.fork(run_id, step_index, ...)`; the new run id appears once it starts."""

    def work(report: Reporter) -> dict[str, Any]:
        end = ws.fork(run_id, step_index, memory_changes or None, param_changes or None,
                      extra_sink=ProgressSink(report))
        return _result(end)

    changed = [*(memory_changes or {}), *(f"params.{k}" for k in (param_changes or {}))]
    label = f"fork of {run_id} at step {step_index} ({', '.join(changed) or 'no change'})"
    return jobs.submit("fork", label, work, parent_run_id=run_id,
                       meta={"parent_step": step_index, "memory_changes": memory_changes or {},
                             "param_changes": param_changes or {}})


#: The longest file name most file systems accept, in bytes of UTF-8.
MAX_NAME_BYTES = 255


class UploadRefused(ResourceError):
    """One or more uploaded files have names that cannot be saved as they are; `names` lists them."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.names = [name for name, _ in problems]
        parts = "; ".join(f"{short(repr(name))}: {why}" for name, why in problems)
        super().__init__(f"upload refused, {len(problems)} file name(s) not allowed: {parts}")


def name_problem(name: str) -> str | None:
    """Why `name` cannot be an uploaded file's name, or None when it can.

    Refused: empty (or only spaces), '.' or '..', a NUL, a '/' or '\\' (a path, not a name), or
    more than MAX_NAME_BYTES bytes in UTF-8."""
    if not name.strip():
        return "the name is empty"
    if name in (".", ".."):
        return f"'{name}' is not a file name"
    if "\x00" in name:
        return "the name contains a NUL character"
    for sep in ("/", "\\"):
        if sep in name:
            return f"the name contains '{sep}' (a path, not a file name)"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "the name is not valid Unicode text (a lone surrogate)"
    if size > MAX_NAME_BYTES:
        return f"the name is {size} bytes long in UTF-8 (at most {MAX_NAME_BYTES})"
    return None


def _numbered(name: str, n: int) -> str:
    """`name` with ' (n)' before its extension, the stem cut so it stays within MAX_NAME_BYTES."""
    path = Path(name)
    stem, ext = path.stem, path.suffix
    if len(f" ({n}){ext}".encode()) >= MAX_NAME_BYTES:   # an absurd extension: number the end
        stem, ext = name, ""
    tail = f" ({n}){ext}"
    room = MAX_NAME_BYTES - len(tail.encode())
    head = stem.encode("utf-8")[:room].decode("utf-8", "ignore")
    return head + tail


def upload_names(names: list[str]) -> list[str]:
    """The names to save uploads under, in order: each checked (UploadRefused lists every bad
    one), a repeated name (compared without case) numbered 'name (2).txt', 'name (3).txt', ..."""
    problems = [(n, why) for n in names if (why := name_problem(n)) is not None]
    if problems:
        raise UploadRefused(problems)
    taken: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate.casefold() in taken:
            n += 1
            candidate = _numbered(name, n)
        taken.add(candidate.casefold())
        out.append(candidate)
    return out


def _save_uploads(folder: Path, files: list[tuple[str, bytes]]) -> list[Path]:
    """Write the (name, bytes) files into a new `folder` (names checked first: a refused name
    creates nothing); a failed write removes the folder again."""
    names = upload_names([name for name, _ in files])
    folder.mkdir(parents=True, exist_ok=False)
    try:
        paths = [folder / name for name in names]
        for path, (_, data) in zip(paths, files):
            path.write_bytes(data)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return paths


def submit_ingest(jobs: JobManager, ws: Workspace, kb: str, files: list[tuple[str, bytes]],
                  chunker: str, params: dict[str, Any]) -> str:
    """Save uploaded (name, bytes) files under <data_dir>/uploads/<id>/ and queue their ingest.

    A file name that is empty, '.' or '..', holds a NUL, '/' or '\\', or is over 255 bytes raises
    UploadRefused (naming each such file) before anything is created; two files with the same
    name are both kept, the second as 'name (2).ext'. The saved copies are removed when the
    ingest ends, whether it worked or not.
    """
    folder = ws.data_dir / "uploads" / uuid.uuid4().hex[:10]
    paths = _save_uploads(folder, files)
    try:
        return _queue_ingest(jobs, ws, kb, folder, paths, chunker, params)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _queue_ingest(jobs: JobManager, ws: Workspace, kb: str, folder: Path, paths: list[Path],
                  chunker: str, params: dict[str, Any]) -> str:
    """Submit the ingest job of the saved `paths`; the job removes `folder` when it ends."""

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="reading and chunking")

        def progress(done: int, total: int) -> None:
            report.update(progress=done / total if total else 1.0,
                          message=f"embedded {done} of {total} chunks")
        try:
            n = ingest(ws.resources, kb, paths, chunker, params, progress=progress)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        report.update(progress=1.0, message=f"ingested {n} chunks")
        return {"kb": kb, "chunks": n, "files": [p.name for p in paths]}

    names = ", ".join(p.name for p in paths)
    return jobs.submit("ingest", f"ingest {names} into {kb}", work,
                       meta={"kb": kb, "chunker": chunker, "params": params})
