"""Provenance in a real Chromium with the real default model (issue 46): an HTML page with
sections and a table, printed to PDF by Chromium, ingested by `flowkit ingest` (the default,
structure-aware chunker); naive_rag answers a question on it from the Run page, whose retrieved
passages each say where they came from (file, page, section); the replay shows the same under
the step that retrieved them. Screenshots: test-artifacts/provenance_*.png."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from e2ekit import ART, CHROMIUM, ROOT, RUN_TIMEOUT_MS, page_fixture, settle, studio_fixture

pytestmark = [pytest.mark.e2e, pytest.mark.real]
KB = "manual"
PDF = "types.pdf"
QUESTION = "What is the storage size of bigint?"
HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Numeric Types</title></head>
<body>
<h1>8 Data Types</h1>
<p>The database has a rich set of native data types. This chapter describes the numeric ones.</p>
<h2>8.1 Numeric Types</h2>
<p>Numeric types consist of two-, four-, and eight-byte integers and selectable-precision
decimals. Choose the smallest type that holds the values you need.</p>
<table border="1">
<caption>Table 8.2. Integer Types</caption>
<tr><th>Name</th><th>Storage Size</th><th>Description</th></tr>
<tr><td>smallint</td><td>2 bytes</td><td>small-range integer</td></tr>
<tr><td>integer</td><td>4 bytes</td><td>typical choice for integer</td></tr>
<tr><td>bigint</td><td>8 bytes</td><td>large-range integer</td></tr>
</table>
<h2>8.2 Monetary Types</h2>
<p>The money type stores a currency amount with a fixed fractional precision.</p>
</body></html>
"""


def ingest_manual(home: Path) -> Path:
    """Print the page to PDF with Chromium and ingest it into KB with the CLI."""
    html = home / "types.html"
    html.write_text(HTML)
    pdf = home / PDF
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--no-pdf-header-footer", "--generate-pdf-document-outline",
                    f"--print-to-pdf={pdf}", html.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert pdf.read_bytes().startswith(b"%PDF")
    env = {**os.environ, "FLOWKIT_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    done = subprocess.run([sys.executable, "-m", "service.cli", "ingest", "--kb", KB, str(pdf)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return pdf


studio = studio_fixture("provenance", prepare=ingest_manual)
page = page_fixture(1500, 1400)


def grid_text(page) -> str:
    """The text of every data grid cell on the page (glide's accessible cells)."""
    return " | ".join(page.locator("[data-testid='stDataFrame'] [role='gridcell']")
                      .all_inner_texts())


def test_run_and_replay_say_where_a_passage_came_from(studio, page):
    from playwright.sync_api import expect
    expect.set_options(timeout=60_000)   # a rerun under load takes longer than expect's 5 s
    place = re.compile(rf"{re.escape(PDF)} p\. 1, 8 Data Types")     # file, page, section path

    page.goto(f"{studio.url}/run?flow=naive_rag&kb={KB}")
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=180_000)
    settle(page)
    box = page.locator("textarea[aria-label='Question']")
    box.fill(QUESTION)
    box.press("Control+Enter")
    settle(page)
    page.get_by_role("button", name="Run ▶").click()
    page.wait_for_url(re.compile(r"[?&]run=\w+"))

    # ---- the run ends (the model loaded, the answer stored): its passages say where from ------
    retrieved = page.get_by_text(re.compile(r"^Retrieved passages \(\d+\)$"))
    expect(retrieved).to_be_visible(timeout=RUN_TIMEOUT_MS)
    retrieved.click()
    line = page.get_by_test_id("stCaptionContainer").filter(has_text=place).first
    expect(line).to_be_visible()
    settle(page)
    page.screenshot(path=str(ART / "provenance_run_page.png"), full_page=True)

    # ---- the replay: the retrieval step lists them with the same place --------------------------
    page.get_by_role("link", name="Open the replay").click()
    page.wait_for_url(re.compile(r"/replay\?"))
    expect(page.get_by_text("Step 0 of 1")).to_be_visible()
    page.get_by_role("tab", name="Retrieved").click()
    expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible()
    settle(page)
    assert place.search(grid_text(page)), grid_text(page)[:1000]
    page.screenshot(path=str(ART / "provenance_replay.png"), full_page=True)
