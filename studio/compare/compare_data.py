"""What the Compare page shows, as plain data: the choices (flows, datasets, knowledge bases), an
evaluation's report, the questions the flows disagree on, and one question's traces side by side.
No Streamlit here, so all of it is testable directly."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from flowkit.errors import FlowkitError
from flowkit.eval.datasets import Dataset
from flowkit.eval.formatting import fmt, fmt_delta
from flowkit.eval.metrics import METRICS, QuestionResult
from flowkit.eval.report import STEADY_MIN_FLOWS, STEADY_MIN_QUESTIONS, EvalReport
from flowkit.eval.runner import EvalPlan
from flowkit.trace import StepEvent
from service import runs
from service.evaluations import (
    MAX_FLOWS,
    MIN_FLOWS,
    EvalInfo,
    dataset_choices,
    evaluations,
    flow_entries,
    load_dataset,
    new_plan,
    open_plan,
    report,
    run_seconds,
)
from service.runs import FlowRef, RunInfo, flow_choices
from service.workspace import Workspace
from studio.common import provenance

__all__ = ["MAX_FLOWS", "MIN_FLOWS", "dataset_choices", "evaluations", "flow_choices",
           "flow_entries", "load_dataset", "new_plan", "open_plan", "report", "run_seconds"]


# ---- choices -------------------------------------------------------------------------------
def flow_label(ref: FlowRef) -> str:
    return ref[1] if ref[0] == "saved" else f"{ref[1]} (template)"


def suggested_kb(dataset: Dataset, kb_names: list[str]) -> str:
    """The knowledge base to preselect: the dataset's own, one named after it, else sample."""
    if dataset.kb and dataset.kb in kb_names:
        return dataset.kb
    slug = kb_slug(dataset.name)
    if slug in kb_names:
        return slug
    if dataset.name == "sample_questions" and "sample" in kb_names:
        return "sample"
    return kb_names[0] if kb_names else slug


def kb_slug(name: str) -> str:
    """A knowledge base name made from a dataset name."""
    s = re.sub(r"[^A-Za-z0-9_\-]+", "_", name).strip("_-") or "dataset"
    return s[:63]


def eval_label(info: EvalInfo) -> str:
    flows = ", ".join(str(f.get("label") or f.get("ref")) for f in info.flows)
    return (f"{info.created_at:%Y-%m-%d %H:%M} · {flows} · {len(info.question_ids)} q of "
            f"{info.dataset} · {info.status} · {info.id}")




# ---- tables --------------------------------------------------------------------------------
def metrics_table(rep: EvalReport) -> list[dict[str, Any]]:
    """One row per flow: n, then every metric (rates in %, tokens whole, calls and seconds to a
    tenth), as numbers for sorting and charts."""
    rows = []
    for f in rep.flows:
        s = rep.summaries[f]
        row: dict[str, Any] = {"flow": f, "n": s.n, "failed": s.failed}
        for m, title, _ in METRICS:
            v = getattr(s, m)
            title = rep.recall_title if m == "recall" else title
            if v is None:
                row[title] = None
            elif m in ("em", "f1", "acc", "recall"):
                row[title] = round(100 * v, 1)
            elif m == "tokens":
                row[title] = round(v)            # whole tokens: "626", not "626.33"
            else:
                row[title] = round(v, 1)
        rows.append(row)
    return rows


#: what the progress line's model calls count (its help)
CALLS_HELP = ("Model calls, not answers: a flow makes one or more for each answer. They are "
              "the calls of the answers run by this job only: answers stored before it (a "
              "resumed evaluation, a column added) are skipped and count none. 'From the cache': "
              "computed before for the same model, prompt and settings, so free now.")

#: what the metrics table's s/q counts (its column's help)
SECONDS_HELP = ("Seconds a question's run costs with every model call computed: a call served "
                "from the completion cache counts the time it took when it was computed. It is "
                "the flow's cost, the same whether this evaluation computed the calls or found "
                "them in the cache, not the time this evaluation took.")


def seconds_note(cost_s: float, wall_s: float) -> str:
    """The s/q beside this evaluation's wall time: why they do not add up (flows that share
    calls each count them, the cache served them once)."""
    line = (f"s/q: the flow's cost computed once (see the column's help); over every answer "
            f"it is {cost_s:,.1f} s, and the runs took {wall_s:,.1f} s here (wall time)")
    if cost_s > wall_s + 0.05:
        line += (": calls that flows share, or that an earlier run computed, came from the "
                 "completion cache")
    return line + "."


def _common_questions(rep: EvalReport) -> int:
    """How many questions every flow has an answer to."""
    ids = [{r.question_id for r in rs} for rs in rep.results.values()]
    return len(set.intersection(*ids)) if ids else 0


def indistinct_note(rep: EvalReport) -> str:
    """When the flows cannot be told apart, in words, with what would help; '' otherwise.

    They cannot when every flow gave the same (normalised) answer to every question answered by
    all: every score difference is then 0, whatever one flow spent more for it."""
    n = _common_questions(rep)
    if len(rep.flows) < 2 or not n or rep.disagreements:
        return ""
    tokens = {f: rep.summaries[f].tokens for f in rep.flows
              if f in rep.summaries and rep.summaries[f].tokens}
    spent = ""
    if len(tokens) > 1:
        cheap, dear = min(tokens, key=tokens.__getitem__), max(tokens, key=tokens.__getitem__)
        if tokens[dear] > 1.05 * tokens[cheap]:
            spent = (f"; {dear} spent {tokens[dear] / tokens[cheap]:.1f}x {cheap}'s tokens per "
                     "question for the same answers")
    return (f"These flows cannot be told apart here: they gave the same answer to each of the "
            f"{n} question(s) every flow answered, so every difference in the scores is 0{spent}. "
            "What would help: more questions (a new comparison with a larger 'Questions'); "
            "questions where the flows would differ (multi-hop ones for flows that search "
            "several times); or a stronger model (Settings page), whose answers depend more on "
            "what each flow retrieves.")


def steadiness_missing(rep: EvalReport) -> str:
    """Why there is no ranking-steadiness line ('' when there is one, or nothing to rank)."""
    if rep.steadiness or not rep.results:
        return ""
    n, flows = _common_questions(rep), len(rep.flows)
    needs = [f"{STEADY_MIN_FLOWS} flows (here {flows})" if flows < STEADY_MIN_FLOWS else "",
             f"{STEADY_MIN_QUESTIONS} questions answered by every flow (here {n})"
             if n < STEADY_MIN_QUESTIONS else ""]
    needs = [x for x in needs if x]
    if not needs:
        return ""
    return ("No ranking-steadiness line (how far the flows' order holds across halves of the "
            f"questions): it needs at least {' and '.join(needs)}.")


def answered(rep: EvalReport) -> tuple[int, int]:
    """(answers in, answers planned) over every column of the evaluation."""
    done = sum(len(rs) for rs in rep.results.values())
    return done, max(rep.planned * len(rep.flows), done)


def zero_note(rep: EvalReport, title: str) -> str:
    """What the page says instead of a chart on which every flow scored 0. While answers are still
    to come it gives no verdict (1 answer of 12 says nothing about a flow); once all are in, it
    says what scoring 0 means: no answer matched (EM, F1, Acc), or no gold passage was found
    (recall, which judges the searches, not the answers)."""
    done, total = answered(rep)
    if done < total:
        return f"**{title}**: nothing to chart yet ({done} of {total} answers in)."
    if title == rep.recall_title:
        return (f"**{title}**: every flow scored 0 (no search put a gold passage in its top "
                f"{rep.k or 'all'}).")
    return f"**{title}**: every flow scored 0 (no answer matched a gold answer this way)."


def delta_table(rep: EvalReport) -> list[dict[str, str]]:
    """Per flow, each metric's difference from the baseline with its 95% bootstrap interval."""
    titles = {m: (rep.recall_title if m == "recall" else t) for m, t, _ in METRICS}
    return [{"flow": f, **{f"Δ {titles[d.metric]}": fmt_delta(d) for d in ds}}
            for f, ds in rep.deltas.items()]


def _index(rep: EvalReport) -> dict[str, dict[str, QuestionResult]]:
    return {f: {r.question_id: r for r in rs} for f, rs in rep.results.items()}


def mark(r: QuestionResult | None) -> str:
    """✓ exact match (EM), ≈ the answer contains a gold answer (Acc) but is not exact, ✗ neither."""
    if r is None:
        return ""
    return "✓" if r.em else "≈" if r.acc else "✗"


MARKS_NOTE = "✓ exact match · ≈ contains a gold answer (Acc) but not exactly (EM) · ✗ neither"


def disagreement_table(rep: EvalReport) -> list[dict[str, str]]:
    """The questions where the flows differ: gold, and each flow's answer marked ✓ (EM) or ✗."""
    index = _index(rep)
    rows = []
    for qid in rep.disagreements:
        first = next(index[f][qid] for f in rep.flows if qid in index[f])
        row = {"id": qid, "type": first.type, "question": first.question,
               "gold": " | ".join(first.answers)}
        for f in rep.flows:
            r = index[f].get(qid)
            row[f] = "" if r is None else f"{mark(r)} {r.prediction}"
        rows.append(row)
    return rows


def question_options(rep: EvalReport) -> list[str]:
    """Question ids to inspect: the disagreements first, then the others, in question order."""
    seen = []
    for rs in rep.results.values():
        for r in rs:
            if r.question_id not in seen:
                seen.append(r.question_id)
    dis = [q for q in seen if q in rep.disagreements]
    return dis + [q for q in seen if q not in rep.disagreements]


def question_text(rep: EvalReport, qid: str) -> str:
    for rs in rep.results.values():
        for r in rs:
            if r.question_id == qid:
                return r.question
    return ""


# ---- traces side by side ---------------------------------------------------------------------
@dataclass
class FlowTrace:
    """One flow's answer to one question, with its run and steps (None if it has not run yet)."""

    flow: str
    result: QuestionResult | None
    run: RunInfo | None
    steps: list[StepEvent] = field(default_factory=list)
    passages: list[dict[str, Any]] = field(default_factory=list)


def passages(steps: list[StepEvent], gold: set[str]) -> list[dict[str, Any]]:
    """Distinct passages retrieved in any step, first seen first, marked when gold; `meta` is
    the chunk's metadata as working memory held it (for its provenance line)."""
    metas = provenance.known_meta(m for s in steps for m in (s.memory_after, s.memory_before))
    out: dict[str, dict[str, Any]] = {}
    for s in steps:
        for r in s.retrievals:
            for d in r.docs:
                cid = str(d.get("id"))
                if cid not in out:
                    doc = cid.split("#", 1)[0]
                    out[cid] = {"id": cid, "doc": doc, "title": d.get("title", ""),
                                "score": d.get("score", 0.0), "text": d.get("text", ""),
                                "gold": doc in gold, "step": s.index,
                                "meta": dict(provenance.meta_of(d, metas))}
    return list(out.values())


def traces(ws: Workspace, plan: EvalPlan, rep: EvalReport, qid: str) -> list[FlowTrace]:
    """Each flow's run on question `qid`, in flow order."""
    qi = next((i for i, q in enumerate(plan.questions) if str(q["id"]) == qid), None)
    if qi is None:
        raise FlowkitError(f"question '{qid}' is not part of evaluation {plan.eval_id}")
    gold = {str(d) for d in plan.questions[qi].get("supporting_doc_ids") or []}
    index = _index(rep)
    out = []
    for fi, f in enumerate(plan.flows):
        rid = f"{plan.eval_id}-{fi}-{qi}"
        try:
            run = runs.get_run(ws, rid)
        except FlowkitError:
            out.append(FlowTrace(f.label, None, None))
            continue
        steps = runs.steps(ws, run.id)
        out.append(FlowTrace(f.label, index.get(f.label, {}).get(qid), run, steps,
                             passages(steps, gold)))
    return out


def step_title(s: StepEvent) -> str:
    calls = f", {len(s.llm_calls)} LLM call{'s' if len(s.llm_calls) != 1 else ''}" \
        if s.llm_calls else ""
    err = " · error" if s.error else ""
    return (f"{s.index}. {s.node_id} (visit {s.visit}) · {s.operator} · {s.tokens} tok"
            f"{calls} · {s.ms:.0f} ms{err}")


def score_line(r: QuestionResult | None) -> str:
    if r is None:
        return "not run yet"
    rec = "" if r.recall is None else f" · recall {fmt('recall', r.recall)}%"
    return (f"EM {r.em:.0f} · F1 {r.f1:.2f} · Acc {r.acc:.0f}{rec} · {r.tokens} tok · "
            f"{r.llm_calls} calls · {r.seconds:.1f} s")
