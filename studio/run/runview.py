"""What the run page shows: the flows to pick from, a run's progress, cited passages and totals."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from flowkit import registry, templates
from flowkit.errors import FlowkitError
from flowkit.spec import FlowSpec
from flowkit.trace import StepEvent
from service.flows import get_flow
from service.runs import FlowRef, RunInfo, flow_choices, get_run, own_figures
from service.workspace import Workspace
from studio.common import provenance
from studio.common.jobs import JobManager

__all__ = ["FlowRef", "flow_choices"]


def ref_label(ref: FlowRef) -> str:
    kind, name = ref
    return name if kind == "saved" else f"{name} (template)"


def find_ref(choices: list[FlowRef], wanted: str | None) -> FlowRef | None:
    """The choice a name means: a saved flow of that name, else a template ('template:NAME' too)."""
    if not wanted:
        return None
    if wanted.startswith("template:"):
        ref = ("template", wanted.split(":", 1)[1])
        return ref if ref in choices else None
    for kind in ("saved", "template"):
        if (kind, wanted) in choices:
            return (kind, wanted)
    return None


def ref_param(ref: FlowRef) -> str:
    """How a choice is written in the page's query params."""
    return ref[1] if ref[0] == "saved" else f"template:{ref[1]}"


def asked_key(ref: FlowRef | None, kb: str, question: str, breakpoints: list[str]) -> str:
    """What the Run form asks, as one string: a refusal shown for it stays on the page until
    the flow, the knowledge base, the question or the breakpoints change."""
    return "\x1f".join([ref_param(ref) if ref is not None else "", kb, question.strip(),
                         *breakpoints])


def load_ref(ws: Workspace, ref: FlowRef) -> tuple[FlowSpec, int | None]:
    """The spec (and saved version) a choice stands for."""
    kind, name = ref
    if kind == "saved":
        return get_flow(ws, name)
    return templates.load_template(name), None


def step_rows(steps: list[StepEvent]) -> list[dict[str, Any]]:
    """One row per finished step for a progress table."""
    return [{"#": s.index, "node": s.node_id, "visit": s.visit, "operator": s.operator,
             "LLM calls": len(s.llm_calls), "tokens": s.tokens, "ms": round(s.ms),
             "error": s.error or ""} for s in steps]


def next_nodes(spec: dict[str, Any], steps: list[StepEvent]) -> list[str]:
    """The node(s) probably running now, judged from the last finished step and the edges.

    Before the first step: the entry node. After a router or judge: the edge with the label it
    chose. After a node with no way on: [] (the run is finishing).
    """
    nodes = {n["id"]: n for n in spec.get("nodes", [])}
    edges = spec.get("edges", [])
    if not steps:
        entry = spec.get("entry")
        if entry:
            return [entry]
        targets = {e["target"] for e in edges}
        roots = [n for n in nodes if n not in targets]
        return roots[:1]
    last = steps[-1]
    if last.error or last.node_id not in nodes:
        return []
    out = [e for e in edges if e["source"] == last.node_id]
    cls = registry.get(nodes[last.node_id].get("operator", ""))
    if cls is not None and cls.kind in ("router", "judge"):
        route = (last.memory_after or {}).get("route")
        out = [e for e in out if e.get("label") == route]
    return [e["target"] for e in out]


def cited_passages(run: RunInfo, steps: list[StepEvent]) -> list[dict[str, Any]]:
    """The passages the answer cites, in citation order: {id, title, text, score, found, meta}.

    Looked up in the run's final memory documents first (full text), then in what its steps
    retrieved (the start of the text).
    """
    known: dict[str, dict[str, Any]] = {}
    for step in steps:
        for r in step.retrievals:
            for d in r.docs:
                if d.get("id"):
                    known.setdefault(str(d["id"]), dict(d))
        for d in (step.memory_after or {}).get("documents") or []:
            if isinstance(d, dict) and d.get("id"):
                known[str(d["id"])] = dict(d)
    for d in (run.memory or {}).get("documents") or []:
        if isinstance(d, dict) and d.get("id"):
            known[str(d["id"])] = dict(d)
    metas = provenance.known_meta([run.memory, *(s.memory_after for s in steps)])
    out: list[dict[str, Any]] = []
    for cid in run.record.citations:
        hit = known.get(cid)
        if hit is None:
            out.append({"id": cid, "title": "", "text": "", "score": None, "found": False,
                        "meta": {}})
        else:
            out.append({"id": cid, "title": hit.get("title", ""), "text": hit.get("text", ""),
                        "score": hit.get("score"), "found": True,
                        "meta": dict(provenance.meta_of(hit, metas))})
    return out


def retrieved_passages(run: RunInfo) -> list[dict[str, Any]]:
    """The passages in the run's final working memory (what its answer was written from), in
    order: {id, title, text, score, meta}."""
    return [{"id": str(d["id"]), "title": d.get("title", ""), "text": d.get("text", ""),
             "score": d.get("score"), "meta": dict(d.get("meta") or {})}
            for d in (run.memory or {}).get("documents") or []
            if isinstance(d, dict) and d.get("id")]


CITATION_MARK = re.compile(r"\[\d{1,3}\]")


def model_cited(steps: list[StepEvent]) -> bool:
    """Whether the model wrote a citation mark ([n]) in the step that last set the citations.

    Without one the answer operator falls back to passages that share words with the answer;
    those are a guess, not passages the model cited. True when no step shows otherwise."""
    for step in reversed(steps):
        after, before = step.memory_after or {}, step.memory_before or {}
        if "citations" in after and after.get("citations") != before.get("citations"):
            if not step.llm_calls:
                return True
            return any(CITATION_MARK.search(c.completion or "") for c in step.llm_calls)
    return True


@dataclass(frozen=True)
class CutAnswer:
    """An answer the model was stopped in (finish reason `length`): by the node's `max_tokens`
    (`limit`), or, with fewer tokens written, by the model's context window (`limit` is None)."""

    node_id: str
    tokens: int
    limit: int | None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def cut_answer(run: RunInfo, steps: list[StepEvent]) -> CutAnswer | None:
    """Whether the run's answer ends where the model was stopped at a token limit.

    The step that last set `answer` is read: its last model call must have finished with
    `length`, and the answer must come from the completion's last line (an answer taken from an
    earlier, finished line is whole, whatever the model wrote after it; an empty answer from a
    cut completion counts as cut)."""
    for step in reversed(steps):
        after, before = step.memory_after or {}, step.memory_before or {}
        if "answer" not in after or after.get("answer") == before.get("answer"):
            continue
        if not step.llm_calls or step.llm_calls[-1].finish_reason != "length":
            return None
        call = step.llm_calls[-1]
        lines = [line for line in (call.completion or "").splitlines() if line.strip()]
        answer = _words(run.record.answer or "")
        if answer and lines and answer[-1] not in _words(lines[-1]):
            return None
        params = next((n.get("params") or {} for n in run.spec.get("nodes", [])
                       if n.get("id") == step.node_id), {})
        limit = params.get("max_tokens", _default_param(run.spec, step.node_id, "max_tokens"))
        if not isinstance(limit, int) or call.completion_tokens < limit:
            limit = None
        return CutAnswer(step.node_id, call.completion_tokens, limit)
    return None


def _default_param(spec: dict[str, Any], node_id: str, name: str) -> Any:
    """A node's param's default (a spec stores only what was set)."""
    for n in spec.get("nodes", []):
        cls = registry.get(str(n.get("operator", ""))) if n.get("id") == node_id else None
        if cls is not None:
            return cls.Params.model_json_schema().get("properties", {}).get(name, {}).get("default")
    return None


def rounded(value: Any, digits: int = 2) -> Any:
    """A figure as people read it: floats to `digits` places (0.30000000000000004 -> 0.3),
    whole floats as integers; anything else unchanged."""
    if isinstance(value, float) and not isinstance(value, bool):
        r = round(value, digits)
        return int(r) if r.is_integer() else r
    return value


#: what each of the totals counts (the metric's help, where the figure is)
TOTALS_HELP = {
    "Seconds": "How long the run took (wall time). No call came from the completion cache, so "
               "this is also what the flow costs.",
    "Cost (s)": "What the run costs with every model call computed: its wall time "
                              "here plus the time its calls served from the completion cache "
                              "took when they were first computed. Compare's s/q counts this, "
                              "so a run from the cache and a fresh one compare fairly.",
    "Wall time (s)": "How long this run took here: a call served from the completion cache "
                     "takes almost no time.",
    "Calls from cache": "Of the LLM calls, those served from the completion cache: computed "
                        "before for the same model, prompt and settings (Settings page).",
}


def totals(run: RunInfo, steps: list[StepEvent] | None = None) -> dict[str, Any]:
    """Steps, LLM calls, tokens, seconds (labels as shown, each explained in TOTALS_HELP). With
    calls from the cache the seconds are two figures: the cost (all computed) and the wall time.
    A fork's stored calls and tokens also count its parent's part before the fork point (its
    budget); with `steps` (the run's own), a fork's figures are its own, the parent's part shown
    apart (service.runs.fork_view)."""
    calls, tokens = run.record.cost.calls, run.record.cost.tokens
    if run.record.parent_run_id and steps is not None:
        own = own_figures(steps)
        calls, tokens = own.llm_calls, own.tokens
    out: dict[str, Any] = {"Steps": run.steps, "LLM calls": calls, "Tokens": tokens}
    if not run.record.cost.cached:
        out["Seconds"] = round((run.record.cost.ms or 0) / 1000, 1)
        return out
    out["Calls from cache"] = run.record.cost.cached
    out["Cost (s)"] = round((run.record.cost.ms or 0) / 1000, 1)
    out["Wall time (s)"] = round((run.record.wall_ms or 0) / 1000, 1)
    return out


BadgeColour = Literal["red", "orange", "yellow", "blue", "green", "violet", "gray", "grey", "primary"]
STATUS_COLOURS: dict[str, BadgeColour] = {"ok": "green", "budget_exceeded": "orange", "error": "red", "running": "blue",
                  "interrupted": "gray", "queued": "gray", "cancelled": "gray",
                  "paused": "violet"}


def flow_of(ws: Workspace, jobs: JobManager, run_id: str) -> str:
    """The flow name of a stored run, or of a run still queued in this process ('' if neither):
    what the Flow box shows when the page is opened on a run (`/run?run=ID`)."""
    try:
        return get_run(ws, run_id).record.flow_name
    except FlowkitError:
        job = jobs.find_run(run_id)
        return str(job.meta.get("flow", "")) if job is not None else ""


def question_of(ws: Workspace, jobs: JobManager, run_id: str) -> str:
    """The question of a stored run, or of a run still queued in this process ('' if neither)."""
    try:
        return get_run(ws, run_id).record.question
    except FlowkitError:
        job = jobs.find_run(run_id)
        return str(job.meta.get("question", "")) if job is not None else ""
