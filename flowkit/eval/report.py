"""An evaluation's report: per-flow metrics, deltas against a baseline, per-type breakdown, and
its exports (JSON, CSV, and self-contained Markdown and HTML with inline SVG charts)."""
from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FlowkitError
from .metrics import (
    METRICS,
    PAIRED,
    PairedDiff,
    QuestionResult,
    Summary,
    by_type,
    disagreements,
    paired_bootstrap,
    summarize,
)
from .ranking import half_split_taus

PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2")


@dataclass
class JudgeScore:
    """A model judge's score of one flow (made by `service.grading`, shown by the reports and the
    Compare page): with labels, the prediction-powered estimate and its 95% interval
    (`corrected`), beside the judge's raw mean and the labels-only interval's width; without,
    the judge's raw mean with a bootstrap interval, marked uncorrected. `model` names the judge's
    model wherever the score is shown; `vs_baseline` is the paired difference against the first
    flow (PPI where some questions are labelled for both flows: `vs_corrected`)."""

    flow: str
    grader: str
    model: str
    estimate: PairedDiff
    corrected: bool
    labels: int
    raw_mean: float = math.nan
    labels_only_width: float | None = None
    vs_baseline: PairedDiff | None = None
    vs_corrected: bool = False

    @property
    def width(self) -> float:
        """The estimate's interval width."""
        return self.estimate.high - self.estimate.low

    def to_dict(self) -> dict[str, Any]:
        return {"flow": self.flow, "grader": self.grader, "model": self.model,
                "estimate": self.estimate.to_dict(), "corrected": self.corrected,
                "labels": self.labels,
                "vs_baseline": self.vs_baseline.to_dict() if self.vs_baseline else None}


@dataclass
class EvalReport:
    """Everything shown about one evaluation; flows in column order, the baseline first."""

    eval_id: str
    name: str
    dataset: str
    kb: str
    flows: list[str]
    baseline: str
    k: int | None
    planned: int
    results: dict[str, list[QuestionResult]]
    summaries: dict[str, Summary] = field(default_factory=dict)
    types: dict[str, dict[str, Summary]] = field(default_factory=dict)
    deltas: dict[str, list[PairedDiff]] = field(default_factory=dict)
    disagreements: list[str] = field(default_factory=list)
    #: model judges' scores per flow (empty until the evaluation is graded: `flowkit judge`)
    judges: list[JudgeScore] = field(default_factory=list)
    #: each answer's verdicts: {flow: {question id: {"grader@model": score or None}}}
    verdicts: dict[str, dict[str, dict[str, float | None]]] = field(default_factory=dict)
    #: how its runs went, a record per session that ran it differently ({"concurrency": N,
    #: "server_parallel": P, "requested": M, "workers": W}; flowkit.eval.concurrent)
    execution: list[dict[str, Any]] = field(default_factory=list)
    #: Kendall's tau between the flows' F1 on two random halves of the questions every flow
    #: answered, for 200 splits, sorted (empty for fewer than 3 flows or 10 such questions)
    steadiness: list[float] = field(default_factory=list)

    @property
    def recall_title(self) -> str:
        return f"R@{self.k}" if self.k else "R@all"

    def to_dict(self) -> dict[str, Any]:
        return {"eval_id": self.eval_id, "name": self.name, "dataset": self.dataset, "kb": self.kb,
                "flows": self.flows, "baseline": self.baseline, "recall_k": self.k,
                "questions_planned": self.planned,
                "summary": {f: s.to_dict() for f, s in self.summaries.items()},
                "by_type": {f: {t: s.to_dict() for t, s in ts.items()}
                            for f, ts in self.types.items()},
                "vs_baseline": {f: [d.to_dict() for d in ds] for f, ds in self.deltas.items()},
                "disagreements": self.disagreements,
                "judges": [j.to_dict() for j in self.judges],
                "execution": self.execution,
                "ranking_steadiness": steadiness_summary(self.steadiness),
                "results": {f: [r.to_dict() for r in rs] for f, rs in self.results.items()}}


def build_report(results: dict[str, list[QuestionResult]], *, eval_id: str = "", name: str = "",
                 dataset: str = "", kb: str = "", baseline: str | None = None, k: int | None = 5,
                 planned: int = 0, n_resamples: int = 1000, seed: int = 0) -> EvalReport:
    """Summaries, per-type breakdown and paired bootstrap deltas against the baseline flow."""
    flows = list(results)
    if not flows:
        raise FlowkitError("nothing to report: no flows")
    base = baseline or flows[0]
    if base not in results:
        raise FlowkitError(f"baseline '{base}' is not one of the flows ({', '.join(flows)})")
    rep = EvalReport(eval_id, name, dataset, kb, flows, base, k,
                     planned or max((len(r) for r in results.values()), default=0), results)
    for f, rs in results.items():
        rep.summaries[f] = summarize(f, rs)
        rep.types[f] = by_type(f, rs)
        if f != base:
            rep.deltas[f] = [paired_bootstrap(rs, results[base], m, n_resamples, seed)
                             for m in PAIRED]
    rep.disagreements = disagreements(results)
    rep.steadiness = _steadiness(results)
    return rep


#: the fewest flows and questions a ranking's steadiness is worth reporting for
STEADY_MIN_FLOWS = 3
STEADY_MIN_QUESTIONS = 10


def _steadiness(results: dict[str, list[QuestionResult]]) -> list[float]:
    if len(results) < STEADY_MIN_FLOWS:
        return []
    by_flow = {f: {r.question_id: float(r.f1 or 0) for r in rs} for f, rs in results.items()}
    common = [q for q in next(iter(by_flow.values())) if all(q in v for v in by_flow.values())]
    if len(common) < STEADY_MIN_QUESTIONS:
        return []
    return half_split_taus({f: [v[q] for q in common] for f, v in by_flow.items()})


def steadiness_summary(taus: Sequence[float]) -> dict[str, float] | None:
    """{"median", "q1", "q3", "splits"} of a report's half-split taus (None without them)."""
    if not taus:
        return None
    n = len(taus)
    return {"median": taus[n // 2], "q1": taus[n // 4], "q3": taus[3 * n // 4], "splits": n}


def steadiness_line(rep: EvalReport) -> str:
    """How far the flows' order by F1 holds across halves of these questions, in words, or ''
    (too few flows or questions). A median tau under ~0.6 says the order of close flows here
    may not carry over to other questions: more questions, or flows further apart, are needed."""
    s = steadiness_summary(rep.steadiness)
    if s is None:
        return ""
    verdict = ("steady" if s["median"] >= 0.8 else "fairly steady" if s["median"] >= 0.6
               else "not steady: close flows may swap places on other questions")
    return (f"Ranking steadiness: two random halves of these questions order the flows by F1 "
            f"with Kendall's tau {s['median']:.2f} (median of {int(s['splits'])} splits; middle "
            f"half {s['q1']:.2f} to {s['q3']:.2f}): {verdict}.")


# ---- formatting --------------------------------------------------------------------------
def fmt(metric: str, value: float | None) -> str:
    """A metric value as people read it: rates as percentages with one decimal, tokens as whole
    tokens ("736 tokens/q", never "735.75"), calls and seconds with two decimals. The one
    formatter of every table, chart label and page that shows a metric."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric in ("em", "f1", "acc", "recall"):
        return f"{100 * value:.1f}"
    if metric == "tokens":
        return f"{value:.0f}"
    if metric == "llm_calls":
        return f"{value:.2f}"
    return f"{value:.2f}"


def fmt_delta(d: PairedDiff) -> str:
    if d.n == 0:
        return "-"
    scale = 100 if d.metric in ("em", "f1", "acc", "recall") else 1
    digits = 0 if d.metric == "tokens" else (1 if scale == 100 else 2)
    star = " *" if d.significant else ""
    return (f"{scale * d.mean:+.{digits}f} [{scale * d.low:+.{digits}f}, "
            f"{scale * d.high:+.{digits}f}]{star}")


def _titles(rep: EvalReport) -> list[tuple[str, str]]:
    return [(m, rep.recall_title if m == "recall" else t) for m, t, _ in METRICS]


def summary_rows(rep: EvalReport) -> list[list[str]]:
    """Header + one row per flow: flow, n, failed, then every metric."""
    head = ["flow", "n", "failed", *[t for _, t in _titles(rep)]]
    rows = [head]
    for f in rep.flows:
        s = rep.summaries[f]
        rows.append([f, str(s.n), str(s.failed), *[fmt(m, getattr(s, m)) for m, _ in _titles(rep)]])
    return rows


def delta_rows(rep: EvalReport) -> list[list[str]]:
    titles = dict(_titles(rep))
    rows = [["flow", *[titles[m] for m in PAIRED]]]
    for f, ds in rep.deltas.items():
        rows.append([f, *[fmt_delta(d) for d in ds]])
    return rows


def type_rows(rep: EvalReport) -> list[list[str]]:
    rows = [["flow", "type", "n", "EM", "F1", "Acc", rep.recall_title]]
    for f in rep.flows:
        for t, s in rep.types[f].items():
            rows.append([f, t, str(s.n), fmt("em", s.em), fmt("f1", s.f1), fmt("acc", s.acc),
                         fmt("recall", s.recall)])
    return rows


def _judge_interval(d: PairedDiff, signed: bool = False) -> str:
    if d.n == 0:
        return "-"
    sign = "+" if signed else ""
    return f"{100 * d.mean:{sign}.1f} [{100 * d.low:{sign}.1f}, {100 * d.high:{sign}.1f}]"


def judge_rows(rep: EvalReport) -> list[list[str]]:
    """Header + one row per flow and judge: the estimate in % with its 95% interval, whether
    labels corrected it (PPI) or not, how many labels, and the paired difference with the
    baseline (* the interval excludes 0)."""
    rows = [["flow", "judge (model)", "score [95%]", "kind", "labels", "vs baseline"]]
    for j in rep.judges:
        vs = "-" if j.vs_baseline is None else (_judge_interval(j.vs_baseline, signed=True)
                                                + (" *" if j.vs_baseline.significant else ""))
        rows.append([j.flow, f"{j.grader} ({j.model})", _judge_interval(j.estimate),
                     "PPI" if j.corrected else "uncorrected", str(j.labels), vs])
    return rows


JUDGE_NOTE = ("Model judges: the judge's mean over the flow's answers; with labels corrected "
              "by prediction-powered inference (PPI), without them uncorrected (the judge's own "
              "errors are in it). A judge's calls are never part of a flow's cost.")


# ---- charts (inline SVG, no dependencies) --------------------------------------------------
def bar_svg(title: str, labels: Sequence[str], values: Sequence[float | None],
            width: int = 320, height: int = 180, metric: str | None = None) -> str:
    """A small bar chart as an SVG string; each bar is labelled with `fmt(metric, value)` (three
    significant digits when no metric is named)."""
    vals = [0.0 if v is None or math.isnan(v) else float(v) for v in values]
    top = max(vals, default=0.0) or 1.0
    n = max(len(vals), 1)
    pad_l, pad_b, pad_t = 10, 40, 28
    bw = (width - pad_l * 2) / n
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">'
             f'{html.escape(title)}</text>']
    for i, (lab, v) in enumerate(zip(labels, vals)):
        h = (height - pad_b - pad_t) * v / top
        x = pad_l + i * bw + bw * 0.15
        y = height - pad_b - h
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw * 0.7:.1f}" height="{h:.1f}" '
                     f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(f'<text x="{x + bw * 0.35:.1f}" y="{y - 3:.1f}" text-anchor="middle">'
                     f'{_bar_label(metric, v)}</text>')
        parts.append(f'<text x="{x + bw * 0.35:.1f}" y="{height - pad_b + 14}" '
                     f'text-anchor="middle">{html.escape(lab[:18])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _bar_label(metric: str | None, value: float) -> str:
    if metric is not None:
        return fmt(metric, value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def scatter_svg(points: Sequence[tuple[str, float, float]], x_title: str = "tokens / question",
                y_title: str = "F1", width: int = 420, height: int = 260) -> str:
    """Quality against cost: one labelled point per flow (x: tokens, y: F1)."""
    pad = 46
    xs = [p[1] for p in points] or [0.0]
    ys = [p[2] for p in points] or [0.0]
    x_hi = max(xs) * 1.15 or 1.0
    y_hi = max(max(ys) * 1.15, 0.05)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" '
             'stroke="#555"/>',
             f'<line x1="{pad}" y1="10" x2="{pad}" y2="{height - pad}" stroke="#555"/>',
             f'<text x="{(width + pad) / 2}" y="{height - 10}" text-anchor="middle">'
             f'{html.escape(x_title)}</text>',
             f'<text x="12" y="{(height - pad) / 2}" transform="rotate(-90 12 {(height - pad) / 2})" '
             f'text-anchor="middle">{html.escape(y_title)}</text>',
             f'<text x="{pad - 4}" y="{height - pad}" text-anchor="end">0</text>',
             f'<text x="{pad - 4}" y="16" text-anchor="end">{y_hi:.2f}</text>',
             f'<text x="{width - 10}" y="{height - pad + 14}" text-anchor="end">{x_hi:.0f}</text>']
    for i, (lab, x, y) in enumerate(points):
        cx = pad + (width - 10 - pad) * x / x_hi
        cy = height - pad - (height - pad - 10) * y / y_hi
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" '
                     f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(f'<text x="{cx + 8:.1f}" y="{cy - 6:.1f}">{html.escape(lab)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def charts(rep: EvalReport) -> dict[str, str]:
    """Chart title -> SVG: one bar chart per metric, and the F1 / tokens frontier."""
    out = {}
    for m, title in _titles(rep):
        values = [getattr(rep.summaries[f], m) for f in rep.flows]
        if m == "recall" and all(v is None for v in values):
            continue
        out[title] = bar_svg(title, rep.flows, values, metric=m)
    out["F1 vs tokens/question"] = scatter_svg(
        [(f, rep.summaries[f].tokens, rep.summaries[f].f1) for f in rep.flows])
    return out


# ---- exports ------------------------------------------------------------------------------
#: Markdown's inline syntax: escaped with a backslash in text from data, so no link, image,
#: emphasis or code span starts inside a question, an answer or a name.
_MD_SPECIAL = frozenset("\\`*_[]!|~<>&")


def md_text(text: object) -> str:
    """`text` as Markdown that shows exactly these characters on one line: HTML is written as
    entities (`<script>` stays text), Markdown punctuation is backslash-escaped (no image
    `![x](http://...)` loads, no link hides a target)."""
    out = []
    for ch in " ".join(str(text).splitlines()):
        if ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch == "&":
            out.append("&amp;")
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _md_table(rows: list[list[str]]) -> str:
    cell = md_text
    head, *body = rows
    lines = ["| " + " | ".join(map(cell, head)) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(map(cell, r)) + " |" for r in body]
    return "\n".join(lines)


def _header_lines(rep: EvalReport) -> list[str]:
    done = min((s.n for s in rep.summaries.values()), default=0)
    return [f"Evaluation {md_text(rep.eval_id)}: {len(rep.flows)} flows on {done} of "
            f"{rep.planned} questions of **{md_text(rep.dataset)}**, knowledge base "
            f"**{md_text(rep.kb)}**.",
            f"EM, F1, Acc and {rep.recall_title} in %; tokens are prompt + completion per question; "
            f"{rep.recall_title}: share of gold passages in the top {rep.k or 'all'} of any search "
            "of the run. Deltas: flow minus baseline, mean [95% paired bootstrap interval, 1000 "
            "resamples, seed 0]; * the interval excludes 0.",
            *([md_text(execution_line(rep))] if execution_line(rep) else []),
            *([md_text(steadiness_line(rep))] if steadiness_line(rep) else [])]


def _one_execution(rec: dict[str, Any]) -> str:
    n = int(rec.get("concurrency", 1))
    text = f"{n} runs in flight at once" if n > 1 else "one run at a time"
    if rec.get("workers"):
        text = f"on {rec['workers']} Ray workers"
    if rec.get("requested") and int(rec["requested"]) != n:
        text += f" (--concurrency {rec['requested']} asked; the model was not a server)"
    if rec.get("server_parallel"):
        text += f" (the server reports {rec['server_parallel']} parallel slots)"
    return text


def execution_line(rep: EvalReport) -> str:
    """'Runs: 4 runs in flight at once (the server reports 4 parallel slots).', or '' for an
    evaluation run one run at a time throughout (as every evaluation was before concurrency)."""
    plain = [{"concurrency": 1}]
    if not rep.execution or all(r == plain[0] for r in rep.execution):
        return ""
    return "Runs: " + ", then ".join(_one_execution(r) for r in rep.execution) + "."


def _html_header_lines(rep: EvalReport) -> list[str]:
    """The header lines as plain text (the HTML report escapes them itself)."""
    done = min((s.n for s in rep.summaries.values()), default=0)
    runs, steady = execution_line(rep), steadiness_line(rep)
    return [f"Evaluation {rep.eval_id}: {len(rep.flows)} flows on {done} of {rep.planned} "
            f"questions of {rep.dataset}, knowledge base {rep.kb}.", _header_lines(rep)[1],
            *([runs] if runs else []), *([steady] if steady else [])]


def to_markdown(rep: EvalReport) -> str:
    """A self-contained Markdown report (charts as base64 SVG images)."""
    parts = [f"# {md_text(rep.name or 'Evaluation')}", "", *_header_lines(rep), "", "## Metrics", "",
             _md_table(summary_rows(rep)), ""]
    if rep.deltas:
        parts += [f"## Against the baseline {md_text(rep.baseline)}", "", _md_table(delta_rows(rep)),
                  ""]
    if rep.judges:
        parts += ["## Model judges", "", md_text(JUDGE_NOTE), "", _md_table(judge_rows(rep)), ""]
    parts += ["## By question type", "", _md_table(type_rows(rep)), "", "## Charts", ""]
    for title, svg in charts(rep).items():
        b64 = base64.b64encode(svg.encode()).decode()
        parts.append(f"![{title}](data:image/svg+xml;base64,{b64})")
    parts += ["", f"## Questions where the flows disagree ({len(rep.disagreements)})", ""]
    parts.append(_md_table(_disagreement_rows(rep, limit=50)))
    return "\n".join(parts) + "\n"


def _disagreement_rows(rep: EvalReport, limit: int | None = None) -> list[list[str]]:
    rows = [["id", "question", "gold", *rep.flows]]
    index = {f: {r.question_id: r for r in rs} for f, rs in rep.results.items()}
    for qid in rep.disagreements[:limit]:
        first = next(index[f][qid] for f in rep.flows if qid in index[f])
        cells = []
        for f in rep.flows:
            r = index[f].get(qid)
            cells.append("-" if r is None else f"{'✓' if r.em else '✗'} {r.prediction[:80]}")
        rows.append([qid, first.question[:100], " / ".join(first.answers)[:60], *cells])
    return rows


def _html_table(rows: list[list[str]]) -> str:
    head, *body = rows
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def to_html(rep: EvalReport) -> str:
    """A self-contained HTML report (inline CSS and SVG; no scripts, no external files)."""
    style = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;"
             "font-size:13px}th{background:#f3f3f3}.charts{display:flex;flex-wrap:wrap;gap:12px}")
    body = [f"<h1>{html.escape(rep.name or 'Evaluation')}</h1>",
            *[f"<p>{html.escape(line)}</p>" for line in _html_header_lines(rep)],
            "<h2>Metrics</h2>", _html_table(summary_rows(rep))]
    if rep.deltas:
        body += [f"<h2>Against the baseline {html.escape(rep.baseline)}</h2>",
                 _html_table(delta_rows(rep))]
    if rep.judges:
        body += ["<h2>Model judges</h2>", f"<p>{html.escape(JUDGE_NOTE)}</p>",
                 _html_table(judge_rows(rep))]
    body += ["<h2>By question type</h2>", _html_table(type_rows(rep)), "<h2>Charts</h2>",
             '<div class="charts">', *charts(rep).values(), "</div>",
             f"<h2>Questions where the flows disagree ({len(rep.disagreements)})</h2>",
             _html_table(_disagreement_rows(rep))]
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>'
            f'{html.escape(rep.name or "Evaluation")}</title><style>{style}</style></head><body>'
            + "\n".join(body) + "</body></html>\n")


CSV_FIELDS = ["flow", "question_id", "type", "question", "answers", "prediction", "status", "em",
              "f1", "acc", "recall", "tokens", "llm_calls", "seconds", "run_id", "error"]


#: decimals kept of a float in the exports: enough for any metric, none of the binary noise
#: (0.30000000000000004 is written 0.3)
CSV_DECIMALS = 4
JSON_DECIMALS = 6


def tidy(value: Any, decimals: int = CSV_DECIMALS) -> Any:
    """`value` with every float rounded to `decimals` places (in dicts and lists too); a float
    that is a whole number stays a float (1.0), NaN and infinities are left for the caller."""
    if isinstance(value, float):
        return round(value, decimals) if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: tidy(x, decimals) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [tidy(x, decimals) for x in value]
    return value


#: What a spreadsheet reads as the start of a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string that starts like a formula (`=`, `+`,
    `-`, `@`, tab, carriage return) gets a leading `'` (OWASP's advice); numbers stay numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def to_csv(rep: EvalReport) -> str:
    """One row per flow and question; floats rounded to `CSV_DECIMALS` places; text cells that
    a spreadsheet would run as a formula are neutralised (`csv_cell`). A graded evaluation adds
    one column per judge, `judge:<grader>@<model>` (its verdict, 0..1; empty where none)."""
    judged = sorted({k for qs in rep.verdicts.values() for v in qs.values() for k in v})
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[*CSV_FIELDS, *(f"judge:{k}" for k in judged)],
                       extrasaction="ignore")
    w.writeheader()
    for f in rep.flows:
        for r in rep.results[f]:
            row = tidy(r.to_dict() | {"answers": " | ".join(r.answers)})
            row = row | {"recall": "" if r.recall is None else row["recall"]}
            got = rep.verdicts.get(f, {}).get(r.question_id, {})
            row |= {f"judge:{k}": "" if got.get(k) is None else tidy(got[k]) for k in judged}
            w.writerow({k: csv_cell(v) for k, v in row.items()})
    return buf.getvalue()


def _no_nan(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _no_nan(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_no_nan(x) for x in v]
    return v


def to_json(rep: EvalReport) -> str:
    """The whole report as strict JSON (no NaN: a missing value is null; floats rounded to
    `JSON_DECIMALS` places)."""
    return json.dumps(tidy(_no_nan(rep.to_dict()), JSON_DECIMALS), indent=2, ensure_ascii=False, allow_nan=False,
                      default=str)


def write(rep: EvalReport, path: str | Path) -> Path:
    """Write the report in the format the file name asks for (.json, .csv, .md, .html/.htm)."""
    p = Path(path)
    writers = {".json": to_json, ".csv": to_csv, ".md": to_markdown, ".html": to_html,
               ".htm": to_html}
    fn = writers.get(p.suffix.lower())
    if fn is None:
        raise FlowkitError(f"{p}: write .json, .csv, .md or .html")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(fn(rep), encoding="utf-8")
    return p
