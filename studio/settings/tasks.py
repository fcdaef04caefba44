"""The Settings page's background job: a model pulled from the Hugging Face Hub, in a thread of its
own (studio.common.jobs; what every job shares is in studio.common.tasks).
"""
from __future__ import annotations

from typing import Any

from flowkit.errors import FlowkitError
from service import hub
from service.workspace import Workspace
from studio.common.jobs import ExpectedFailure, Job, JobManager, Reporter
from studio.common.tasks import job_key

PULL = "pull"


class PullRefused(FlowkitError):
    """The same file is being pulled already: its job is `job_id` (the page shows its progress)."""

    def __init__(self, message: str, job_id: str) -> None:
        self.job_id = job_id
        super().__init__(message)


def pull_progress_text(done: int, total: int | None) -> str:
    """'120 of 253 MB' (or '120 MB' while the size is unknown)."""
    return f"{done / 1e6:.0f} of {total / 1e6:.0f} MB" if total else f"{done / 1e6:.0f} MB"


def pull_jobs(jobs: JobManager, active_only: bool = False) -> list[Job]:
    """The pulls this process knows of, oldest first."""
    return jobs.jobs(kind=PULL, active_only=active_only)


def submit_pull(jobs: JobManager, ws: Workspace, repo: str, filename: str) -> str:
    """Check the request (FlowkitError, one line) and start pulling `filename` of the Hub
    repository `repo` into the workspace's models folder in a thread of its own (a download never
    uses the model, so it neither waits behind runs nor holds them up). The same file already
    being pulled is refused (PullRefused naming its job), never started twice.

    The job's meta holds done/total bytes (`progress` their ratio); its result the pulled file
    (path, sha256, size), or `stopped` with the bytes kept when it was cancelled: the next pull of
    the file goes on from them, as it does after a killed studio or a dropped connection."""
    repo, filename = repo.strip(), filename.strip()
    hub.check_request(repo, filename)
    folder = hub.models_dir(ws)
    key = job_key(PULL, str(folder), repo, filename)
    for job in pull_jobs(jobs, active_only=True):
        if job.dedupe_key == key:
            raise PullRefused(f"{repo}/{filename} is already being pulled "
                              f"({pull_progress_text(job.meta.get('done', 0), job.meta.get('total'))}"
                              " so far); it was not started again", job.id)
    base = {"repo": repo, "filename": filename, "folder": str(folder)}

    def work(report: Reporter) -> dict[str, Any]:
        report.update(progress=0.0, message="asking the Hub")

        def on_progress(done: int, total: int | None) -> None:
            if report.cancel.is_set():
                raise hub.PullCancelled(f"the pull of {repo}/{filename} was stopped")
            finished = bool(total) and done >= (total or 0)
            report.update(progress=min(done / total, 1.0) if total else None,
                          message=(f"checking the sha256 of {pull_progress_text(done, total)}"
                                   if finished else pull_progress_text(done, total)),
                          meta={**base, "done": done, "total": total})
        try:
            got = hub.pull_into(folder, repo, filename, on_progress=on_progress)
        except hub.PullCancelled:
            kept = hub.partial_bytes(folder, repo, filename)
            report.update(message=f"stopped; {pull_progress_text(kept, None)} kept")
            return {**base, "stopped": True, "kept": kept}
        except hub.HubError as err:     # the Hub's doing, said in full: one log line
            raise ExpectedFailure(str(err)) from None
        report.update(progress=1.0, message=f"pulled {pull_progress_text(got.size_bytes, None)}",
                      meta={**base, "done": got.size_bytes, "total": got.size_bytes})
        return {**base, "path": str(got.path), "sha256": got.sha256, "size_bytes": got.size_bytes,
                "commit": got.commit}

    return jobs.submit(PULL, f"pull {repo}/{filename}", work, dedupe_key=key, own_thread=True,
                       meta={**base, "done": hub.partial_bytes(folder, repo, filename),
                             "total": None})
