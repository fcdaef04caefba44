"""The Settings page's 'Pull a model' part: a Hugging Face Hub repository and GGUF file name; Pull
starts a background job (studio.settings.tasks.submit_pull) and the page stays usable while it
downloads. Its progress (MB of MB, a bar, Stop) is redrawn every second; the job's id is in the
address (?pull=<job>), and the job lives in the process, so a refresh finds it again. At the end
the pulled model is listed (give its path as the GGUF path above to use it), or the error says
why not (the Hub unreachable, no such file, a sha256 mismatch). A pull that stopped (Stop, a
killed studio, a dropped connection) goes on from the bytes it had when Pull is pressed again.
"""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from service.hub import models_dir, partial_bytes, pulled
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import Job, JobManager, get_jobs
from studio.common.state import SettingsKeys as K
from studio.common.tasks import cancel
from studio.settings import tasks

PARAM = "pull"            # the address holds the pull's job id
POLL_S = 1.0


def progress_text(done: int, total: int | None) -> str:
    """'120 of 253 MB' (or '120 MB' while the size is unknown)."""
    return tasks.pull_progress_text(done, total)


def draw(ws: Workspace) -> None:
    """Draw the pull fields, the pulls under way (and the one in the address), and the pulled
    models; Pull submits a background job and returns at once."""
    jobs = get_jobs()
    st.subheader("Pull a model from the Hugging Face Hub")
    c1, c2, c3 = st.columns([3, 3, 1], vertical_alignment="bottom")
    repo = c1.text_input("Repository", key=K.PULL_REPO, placeholder="ggml-org/gemma-3-1b-it-GGUF")
    filename = c2.text_input("GGUF file", key=K.PULL_FILE,
                             placeholder="gemma-3-1b-it-Q4_K_M.gguf")
    go = c3.button("Pull", key=K.PULL_GO, help="Downloads into the data directory's models "
                   "folder in the background (HF_ENDPOINT: a mirror); the file's sha256 is "
                   "checked against the Hub's. A pull that stopped goes on where it was.")
    kept = partial_bytes(models_dir(ws), repo, filename) if repo and filename else 0
    if go:
        try:
            st.query_params[PARAM] = tasks.submit_pull(jobs, ws, repo, filename)
        except tasks.PullRefused as err:
            st.warning(inert.escape(err))
            st.query_params[PARAM] = err.job_id
        except FlowkitError as err:
            st.error(inert.escape(err))
    elif kept and not _active(jobs, repo, filename):
        st.caption(f"A pull of this file stopped after {progress_text(kept, None)}: Pull goes on "
                   "from there.")
    progress(jobs)
    models = pulled(ws)
    if models:
        st.caption("Pulled models (GGUF paths to give above):")
        st.code("\n".join(str(p) for p in models), language=None)


def _active(jobs: JobManager, repo: str, filename: str) -> bool:
    return any(j.meta.get("repo") == repo.strip() and j.meta.get("filename") == filename.strip()
               for j in tasks.pull_jobs(jobs, active_only=True))


def shown_jobs(jobs: JobManager, address_job: str | None) -> list[Job]:
    """The pulls to show: every one under way (another tab's too) and the one in the address."""
    out = tasks.pull_jobs(jobs, active_only=True)
    if address_job and all(j.id != address_job for j in out):
        job = jobs.get(address_job)
        if job is not None and job.kind == tasks.PULL:
            out.append(job)
    return out


def progress(jobs: JobManager) -> None:
    """Each pull's bar, redrawn every POLL_S while one runs; the whole page reruns once when one
    ends (so the list of pulled models shows the new one)."""
    running = {j.id for j in shown_jobs(jobs, st.query_params.get(PARAM)) if not j.finished}

    @st.fragment(run_every=POLL_S if running else None)
    def _panel() -> None:
        ended = False
        for job in shown_jobs(jobs, st.query_params.get(PARAM)):
            _one(jobs, job)
            ended = ended or (job.id in running and job.finished)
        if ended:
            st.rerun()

    _panel()


def _one(jobs: JobManager, job: Job) -> None:
    what = f"{job.meta.get('repo')}/{job.meta.get('filename')}"
    done, total = int(job.meta.get("done") or 0), job.meta.get("total")
    result = job.result or {}
    if not job.finished:
        fraction = min(max(job.progress or 0.0, 0.0), 1.0)
        st.progress(fraction, text=inert.escape(f"Pulling {what}: {job.message or 'starting'}"))
        if st.button("Stop", key=K.PULL_GO.item("stop", job.id), disabled=job.cancel_requested,
                     help="Stops the download; the bytes downloaded are kept, and Pull goes on "
                          "from them"):
            cancel(jobs, job.id)
    elif job.status == "error":
        st.error(inert.escape(f"Pulling {what} failed: {job.error}"))
    elif result.get("stopped") or job.status == "cancelled":
        kept = int(result.get("kept") or done)
        st.warning(inert.escape(f"Stopped pulling {what} after {progress_text(kept, total)}; "
                                "press Pull to go on from there."))
    else:
        st.success(inert.escape(
            f"Pulled {what} (sha256 checked): {result.get('path')}. To use it, choose 'A GGUF "
            "file on this machine' above and give this path."))
