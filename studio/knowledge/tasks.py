"""The Knowledge page's background jobs: uploaded files ingested into a knowledge base, and a
question set generated from a knowledge base (service.questiongen), each queued on the
process-wide job manager (studio.common.jobs; what every job shares is in studio.common.tasks).
"""
from __future__ import annotations

import shutil
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from flowkit.errors import DocumentError
from flowkit.eval.questiongen.generate import Progress
from service import knowledge, questiongen
from service.uploads import save_uploads
from service.workspace import Workspace
from studio.common.jobs import InputRefused, JobManager, Reporter
from studio.common.tasks import job_key

QGEN = "questiongen"


def submit_ingest(jobs: JobManager, ws: Workspace, kb: str, files: list[tuple[str, bytes]],
                  chunker: str, params: dict[str, Any]) -> str:
    """Save uploaded (name, bytes) files under <data_dir>/uploads/<id>/ and queue their ingest.

    A file name that is empty, '.' or '..', holds a NUL, '/' or '\\', or is over 255 bytes raises
    uploads.UploadRefused (naming each such file) before anything is created; two files with the same
    name are both kept, the second as 'name (2).ext'. The saved copies are removed when the
    ingest ends, whether it worked or not. A file that cannot be read fails the job with one
    line naming it as the user named it ('notes.txt: not UTF-8 text ...'), never by the path of
    its saved copy.
    """
    folder = ws.data_dir / "uploads" / uuid.uuid4().hex[:10]
    paths = save_uploads(folder, files)
    try:
        return _queue_ingest(jobs, ws, kb, folder, paths, chunker, params,
                             {path: name for path, (name, _) in zip(paths, files)})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _queue_ingest(jobs: JobManager, ws: Workspace, kb: str, folder: Path, paths: list[Path],
                  chunker: str, params: dict[str, Any], names: dict[Path, str]) -> str:
    """Submit the ingest job of the saved `paths` (`names`: each one's name as uploaded); the job
    removes `folder` when it ends."""

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="reading and chunking")

        def progress(done: int, total: int) -> None:
            report.update(progress=done / total if total else 1.0,
                          message=f"embedded {done} of {total} chunks")
        try:
            n = knowledge.ingest_files(ws, kb, paths, chunker, params, progress=progress)
        except DocumentError as err:      # the user's file, named as they named it
            raise InputRefused(f"{err.where(names.get(err.path, err.path.name))}: "
                               f"{err.reason}") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        report.update(progress=1.0, message=f"ingested {n} chunks")
        return {"kb": kb, "chunks": n, "files": [p.name for p in paths]}

    listed = ", ".join(p.name for p in paths)
    return jobs.submit("ingest", f"ingest {listed} into {kb}", work,
                       meta={"kb": kb, "chunker": chunker, "params": params})


def submit_questiongen(jobs: JobManager, ws: Workspace, plan: questiongen.Plan) -> str:
    """Queue the generation of a checked plan (`service.questiongen.plan`), or return the job
    already queued or running for the same plan.

    While it runs, the job's `progress` is kept / asked for, its `message` the progress line and
    `meta["progress"]` the counts (kept, tried, calls computed / cached, drops). Its result holds
    the generated set, not saved: {"plan", "questions", "reviewed", "meta", "progress", "line"};
    the job lives in the process, so a refresh of the page finds the set again. Cancelling stops
    it at the next candidate (what it computed stays in the completion cache)."""
    base = {"kb": plan.kb, "name": plan.name, "target": plan.request.n,
            "estimate": plan.estimate.line()}

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="starting (the model loads on the first call)")

        def on_progress(p: Progress) -> None:
            report.update(progress=min(p.kept / max(p.target, 1), 1.0), message=p.line(),
                          meta={**base, "progress": p.to_dict()})

        out = questiongen.run(ws, plan, on_progress=on_progress,
                              should_stop=report.cancel.is_set)
        report.update(progress=1.0, message=out.progress.line(),
                      meta={**base, "progress": out.progress.to_dict()})
        return {"plan": plan, "questions": out.questions, "reviewed": out.reviewed,
                "meta": out.meta, "progress": out.progress.to_dict(),
                "line": out.progress.line()}

    return jobs.submit(QGEN, f"questions from '{plan.kb}' into '{plan.name}'", work,
                       dedupe_key=job_key(QGEN, plan.kb, plan.name, asdict(plan.request),
                                          plan.model),
                       meta=base)
