"""Issue 37, passage labels on the Compare page in a real Chromium with the real default model: an
evaluation of two templates on the first sample question, graded with the context-relevance judge
(both with the CLI before the studio starts); in the side-by-side view every passage the first
flow's answer read is marked relevant, one click each; the judge's column switches from
uncorrected to PPI with the label count, and a reload keeps the marks and the count.
Screenshot: test-artifacts/passage_labels.png."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from e2ekit import ART, ROOT, eventually, page_fixture, settle, studio_fixture

pytestmark = [pytest.mark.e2e, pytest.mark.real]
FLOWS = ("naive_rag", "rewrite_retrieve_read")


def cli(home: Path, *args: str) -> None:
    env = {**os.environ, "FLOWKIT_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    done = subprocess.run([sys.executable, "-m", "service.cli", *args], env=env, cwd=ROOT,
                          timeout=600, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def evaluate_and_grade(home: Path) -> tuple[str, int]:
    """(evaluation id, how many passages the first flow's answer to q01 read)."""
    out = home / "eval.json"
    cli(home, "eval", *[a for f in FLOWS for a in ("--flow", f)], "--dataset",
        "sample_questions", "--kb", "sample", "--limit", "1", "--out", str(out))
    eval_id = str(json.loads(out.read_text())["eval_id"])
    cli(home, "judge", eval_id, "--judge", "context_relevance")
    from service.passage_labels import question_passages
    from service.workspace import Workspace
    ws = Workspace(home)
    try:
        read = question_passages(ws, eval_id, "q01")[FLOWS[0]]
    finally:
        ws.close()
    assert read, "the first flow's answer read no passage"
    return eval_id, len(read)


studio = studio_fixture("passage-labels", prepare=evaluate_and_grade)
page = page_fixture(1500, 1100)


def grid_text(page) -> str:
    return " | ".join(page.locator("[data-testid='stDataFrame'] [role='gridcell']").all_inner_texts())


def passage_radios(page):
    return page.locator("[data-testid='stRadio']").filter(has_text="Your label: passage")


def test_mark_passages_and_see_the_label_count_after_a_reload(studio, page):
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)   # a rerun under load takes longer than expect's 5 s
    eval_id, n = studio.prepared
    page.goto(f"{studio.url}/compare?eval={eval_id}&q=q01")
    expect(page.get_by_role("heading", name="Side by side")).to_be_visible(timeout=180_000)
    settle(page)
    line = page.get_by_text(re.compile(r"^context_relevance on default:\S+: no labels yet"))
    expect(line).to_be_visible()
    eventually(lambda: "uncorrected" in grid_text(page), what="uncorrected judge scores")
    expect(page.get_by_text(f"0 of {n} passages labelled").first).to_be_visible()
    radios = passage_radios(page)
    eventually(lambda: radios.count() >= n, what="a radio per passage read")
    for i in range(n):                       # the first column: the first flow's passages
        passage_radios(page).nth(i).locator("label").filter(
            has_text=re.compile("^relevant$")).click()
        settle(page)
    labelled = re.compile(r"^context_relevance on default:\S+: [1-9]\d* labels?;")
    expect(page.get_by_text(labelled)).to_be_visible()
    eventually(lambda: "PPI" in grid_text(page), what="the judge's score as PPI")
    page.screenshot(path=str(ART / "passage_labels.png"), full_page=True)
    page.reload()
    expect(page.get_by_role("heading", name="Side by side")).to_be_visible(timeout=120_000)
    settle(page)
    expect(page.get_by_text(labelled)).to_be_visible()
    expect(page.get_by_text(f"{n} of {n} passages labelled (the answer counts as labelled)")
           .first).to_be_visible()
    first = passage_radios(page).nth(0).locator("label").filter(has=page.locator("input:checked"))
    assert first.inner_text().strip() == "relevant"
