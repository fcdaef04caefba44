"""What the Search page needs to start a search, without Streamlit: a starter space for a flow,
checking a space with its question set and budget (the cost estimate), and the search as a
background job (where it stands is search_view's).

A space typed on the page is saved under `<data dir>/searches/<name>-<hash>.json` (named by its
content, so a search's state beside it always belongs to that text); the request that started a
search is kept as `<data dir>/searches/<search id>.request.json`, so `?search=<id>` opens the same
search after a refresh or a restart, and Resume goes on from where it stopped.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flowkit import registry
from flowkit.errors import FlowkitError
from flowkit.spec import FlowSpec
from service import search
from service.search import Entry, SearchRequest
from service.workspace import Workspace
from studio.common.jobs import Job, JobManager, Reporter

SEARCH = "search"                  # the job kind
RETRIEVERS = ["retrieval.bm25", "retrieval.dense", "retrieval.hybrid"]
LOG_LINES = 40


def searches_dir(ws: Workspace) -> Path:
    """Where the page keeps the spaces it saved and the requests of the searches it started."""
    return ws.data_dir / "searches"


# ---- a starter space ---------------------------------------------------------------------------
def starter_space(flows: dict[str, FlowSpec]) -> str:
    """A small space over these flows (JSON text to edit): in each, the retriever swapped among
    bm25 / dense / hybrid and its top_k among 2, 4, 6, where it has such a node (with several
    flows each axis names its flow); 4 candidates a flow, at most 12."""
    params: list[dict[str, Any]] = []
    operators: list[dict[str, Any]] = []
    scoped = len(flows) > 1
    for flow, spec in flows.items():
        where = {"flow": flow} if scoped else {}
        swap = next((n for n in spec.nodes if n.operator in RETRIEVERS), None)
        if swap is not None:
            operators.append({"node": swap.id, **where, "choices": RETRIEVERS})
        top_k = next((n for n in spec.nodes if (cls := registry.get(n.operator)) is not None
                      and "top_k" in cls.Params.model_fields), None)
        if top_k is not None:
            params.append({"node": top_k.id, "param": "top_k", **where, "choices": [2, 4, 6]})
    first = re.sub(r"[^A-Za-z0-9_\-]+", "_", next(iter(flows), "")).strip("_-")
    name = (first if first[:1].isalpha() else f"s_{first}")[:50] + ("_etc" if scoped else "")
    doc = {"kind": "flowkit-search-space", "version": 1, "name": name + "_space",
           "flows": list(flows), "params": params, "operators": operators,
           "models": ["default"], "max_candidates": min(12, 4 * max(1, len(flows))), "seed": 0}
    return json.dumps(doc, indent=2)


def default_ranges(n: int) -> tuple[str, str]:
    """Search on the second half of a set of `n` questions, confirm on the first half."""
    if n < 2:
        return "1", "1"
    half = n // 2
    return f"{half + 1}-{n}", f"1-{half}"


# ---- checking a space ------------------------------------------------------------------------
def save_space(ws: Workspace, text: str) -> Path:
    """The space text saved under its name and content hash (never overwrites another text)."""
    try:
        name = str(json.loads(text).get("name") or "space")
    except (ValueError, AttributeError, RecursionError):   # not JSON (too deep): load_space says
        name = "space"
    name = re.sub(r"[^A-Za-z0-9_\-]+", "_", name)[:64] or "space"
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    folder = searches_dir(ws)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{digest}.json"
    if not path.is_file():
        path.write_text(text, encoding="utf-8")
    return path


def problems(err: FlowkitError) -> list[str]:
    """Each problem of a refused space as 'field: what' (a SpaceError's list), else the error."""
    found = getattr(err, "problems", None)
    return [str(p) for p in found] if found else [str(err)]


@dataclass
class Checked:
    """A space that passed its checks, with its question split and budget: ready to start."""

    request: SearchRequest
    search_id: str
    candidates: int            # all the search will race (later waves included), as estimated
    estimate: str
    resumed: bool


def check(ws: Workspace, text: str, dataset: str, kb: str, search_qs: str, confirm_qs: str,
          budget_calls: int, first_batch: int = 10, budget_hours: float | None = None,
          halving: float = 0.0, workers: int = 1, halving_from: int = 0,
          objective: str = "f1", judge_model: str = "") -> Checked:
    """Validate the space against its flows and the question ranges against the set, sample the
    candidates and estimate the cost; FlowkitError (a SpaceError lists each field) otherwise."""
    if not text.strip():
        raise FlowkitError("the search space is empty: make a starter space or paste one")
    if not kb:
        raise FlowkitError("pick a knowledge base")
    ws.resources.kb(kb).require_ready()
    search.check_halving(halving)
    search.check_halving_from(int(halving_from))
    req = SearchRequest(str(save_space(ws, text)), dataset, kb, search_qs.strip(),
                        confirm_qs.strip(), int(budget_calls), budget_hours or None,
                        first_batch=int(first_batch), halving=float(halving),
                        workers=int(workers), halving_from=int(halving_from),
                        objective=objective, judge_model=judge_model.strip())
    plan = search.prepare(ws, req)
    est = search.estimate(plan)
    return Checked(req, plan.state.search_id, est.candidates, est.describe(), plan.resumed)


# ---- the request of a search, kept for its address ---------------------------------------------
def request_path(ws: Workspace, sid: str) -> Path:
    return searches_dir(ws) / f"{sid}.request.json"


def save_request(ws: Workspace, sid: str, req: SearchRequest) -> None:
    path = request_path(ws, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(req), indent=1), encoding="utf-8")


def load_request(ws: Workspace, sid: str) -> SearchRequest | None:
    """The request of search `sid` started on this data directory, or None."""
    if not re.fullmatch(r"[0-9a-f]{6,40}", sid or ""):
        return None
    path = request_path(ws, sid)
    if not path.is_file():
        return None
    try:
        return SearchRequest(**json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError) as err:
        raise FlowkitError(f"cannot read the search request '{path}': {err}") from err


def earlier(ws: Workspace) -> list[tuple[str, str]]:
    """(search id, label) of the searches started here, newest first."""
    folder = searches_dir(ws)
    files = sorted(folder.glob("*.request.json"), key=lambda p: p.stat().st_mtime,
                   reverse=True) if folder.is_dir() else []
    out = []
    for p in files:
        sid = p.name.split(".", 1)[0]
        try:
            req = load_request(ws, sid)
        except FlowkitError:
            continue
        if req is not None:
            space = Path(req.space).stem.rsplit("-", 1)[0]
            out.append((sid, f"{space} on {req.dataset} ({req.search_questions}) · {sid}"))
    return out


# ---- the background job ----------------------------------------------------------------------
def active_job(jobs: JobManager, sid: str) -> Job | None:
    for job in reversed(jobs.jobs(kind=SEARCH, active_only=True)):
        if job.meta.get("search_id") == sid:
            return job
    return None


def last_job(jobs: JobManager, sid: str) -> Job | None:
    for job in reversed(jobs.jobs(kind=SEARCH)):
        if job.meta.get("search_id") == sid:
            return job
    return None


def submit(jobs: JobManager, ws: Workspace, sid: str, req: SearchRequest) -> str:
    """Queue the search (or return its job already queued or running). It runs in the job
    manager's one worker thread, so the model is never used by two threads; Cancel stops it
    after the run in flight and a later start resumes it."""
    save_request(ws, sid, req)

    def work(report: Reporter) -> dict[str, Any]:
        lines: list[str] = []

        def log(msg: str) -> None:
            lines.append(msg)
            report.update(meta={"search_id": sid, "log": lines[-LOG_LINES:]}, message=msg)

        def on_run(e: Entry, which: str, p: Any) -> None:
            report.update(message=f"{e.cid} on the {which} questions: question "
                                  f"{p.question_index + 1} of {p.total} ({p.status})")

        report.update(message="preparing (the model loads on the first call)")
        plan = search.prepare(ws, req)
        st = search.run(ws, plan, log=log, on_run=on_run, stop=report.cancel)
        return {"search_id": sid, "phase": st.phase, "race_status": st.race_status}

    return jobs.submit(SEARCH, f"search {sid}: {Path(req.space).stem}", work,
                       dedupe_key=f"{SEARCH}:{sid}", meta={"search_id": sid})


def stop(jobs: JobManager, sid: str) -> bool:
    """Cancel the search's job; False when none is queued or running."""
    job = active_job(jobs, sid)
    return job is not None and jobs.cancel(job.id)
