"""An evaluation's report written out: self-contained Markdown and HTML (inline SVG charts, no
scripts, no external files), CSV (a row per flow and question) and strict JSON; `write` picks by
the file name. What reads from data is escaped for its format (Markdown, HTML, a spreadsheet's
formulas)."""
from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from pathlib import Path
from typing import Any

from ..errors import FlowkitError
from .charts import charts
from .formatting import (
    JUDGE_NOTE,
    delta_rows,
    execution_line,
    judge_rows,
    steadiness_line,
    summary_rows,
    type_rows,
)
from .report import EvalReport

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
