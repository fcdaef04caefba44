"""Where a search stands, as plain data for the Search page: its request, stored state and job
summed up (`watch`), its candidates as table rows with their Editor, Compare and Replay
addresses, its
front with the confirmation figures, and the points of its chart. No Streamlit here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from service import search
from service.search import Entry, SearchRequest, state_mod
from service.workspace import Workspace
from studio.common.jobs import Job, JobManager
from studio.search.search_data import active_job, last_job


@dataclass
class Watch:
    """A search's request, stored state (None before its first save) and job, summed up."""

    sid: str
    request: SearchRequest
    state: state_mod.SearchState | None
    job: Job | None
    status: str            # queued | running | done | stopped | error
    message: str

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")

    @property
    def log(self) -> list[str]:
        return list(self.job.meta.get("log") or []) if self.job else []


def watch(ws: Workspace, jobs: JobManager, sid: str, req: SearchRequest) -> Watch:
    state = state_mod.load(state_mod.state_path(req.space, sid))
    job = active_job(jobs, sid) or last_job(jobs, sid)
    phase = state.phase if state else "race"
    status = "done" if phase == "done" else "stopped"
    message = "" if status == "done" else "stopped before the end: Resume goes on from there"
    if job is not None:
        message = "" if status == "done" else job.message    # a finished search: no last step
        if job.status in ("queued", "running"):
            status = job.status
        elif job.status == "error":
            status, message = "error", job.error or "failed"
        elif job.status == "cancelled" and status != "done":
            message = "cancelled: Resume goes on from where it stopped"
    return Watch(sid, req, state, job, status, message)


def describe(e: Entry) -> str:
    """The candidate in a line ('naive_rag · retrieve.top_k=6')."""
    return e.candidate.describe()


def editor_link(e: Entry) -> str:
    """The Editor's address of the candidate's saved flow ('' before it is saved)."""
    return f"editor?flow={quote(e.flow_name)}" if e.flow_name else ""


def compare_link(e: Entry) -> str:
    """Compare's address of the candidate's evaluation (confirmation first; '' if none)."""
    eid = e.confirm_runs.eval_id or e.search_runs.eval_id
    return f"compare?eval={eid}" if eid else ""


def replay_link(e: Entry) -> str:
    """The Replay page's address of the candidate's best answer (its highest score, fewest
    tokens; on the confirmation questions first), to step through and fork; '' before it has
    one."""
    run_id = e.confirm_runs.best_run or e.search_runs.best_run
    return f"replay?run={quote(str(run_id))}" if run_id else ""


def counts(state: state_mod.SearchState) -> dict[str, int]:
    es = state.entries
    return {"candidates": len(es), "evaluated": sum(1 for e in es if e.reached),
            "dropped": sum(1 for e in es if e.status == "dropped"),
            "kept": sum(1 for e in es if e.status == "kept"),
            "racing": sum(1 for e in es if e.status == "racing")}


def _pct(v: float | None) -> float | None:
    return None if v is None else round(100 * v, 1)


def interval(c: state_mod.Confirmation, cid: str) -> str:
    """'+3.0 [-1.0, +7.0] vs c00', or 'reference' for the best hand-written flow itself."""
    if c.vs == cid:
        return "reference: the best hand-written flow"
    return f"{100 * c.delta:+.1f} [{100 * c.low:+.1f}, {100 * c.high:+.1f}] vs {c.vs}"


def rows(state: state_mod.SearchState) -> list[dict[str, Any]]:
    """One row per candidate: figures in % (F1, or the objective the search ranks on, named in
    the column) and per question, why dropped, links."""
    front = {e.cid for e in search.front_of(state.entries)}
    q = state.quality().short
    out = []
    for e in state.entries:
        c = state.confirm.get(e.cid)
        out.append({"cand": e.cid + (" ★" if e.cid in front else ""),
                    "candidate": describe(e), "status": e.status, "questions": e.reached,
                    f"search {q}": _pct(e.score),
                    "tokens/q": None if e.tokens is None else round(e.tokens),
                    "s/q": None if e.seconds is None else round(e.seconds, 2),
                    f"confirm {q}": _pct(c.score if c else None),
                    "vs best written": interval(c, e.cid) if c else "",
                    "editor": editor_link(e), "compare": compare_link(e),
                    "replay": replay_link(e), "why": e.reason})
    return out


@dataclass
class FrontPoint:
    """One candidate of the front with both figures (confirm is None before confirmation)."""

    entry: Entry
    label: str
    confirm: state_mod.Confirmation | None


def front(state: state_mod.SearchState) -> list[FrontPoint]:
    return [FrontPoint(e, describe(e), state.confirm.get(e.cid))
            for e in search.front_of(state.entries)]


def chart_points(state: state_mod.SearchState) -> list[dict[str, Any]]:
    """The candidates with figures, for the score / tokens chart (front ones marked; the chart
    names the score by the search's objective)."""
    front_ids = {e.cid for e in search.front_of(state.entries)}
    return [{"cand": e.cid, "candidate": describe(e), "status": e.status,
             "score (%)": _pct(e.score), "tokens/q": round(e.tokens or 0.0, 1),
             "questions": e.reached, "front": e.cid in front_ids}
            for e in state.entries if e.score is not None]
