"""A real flowkit run in Phoenix's own UI (Chromium): the trace tree with the flow's nodes and an
LLM span's prompt; saved as assets/screenshots/phoenix_trace.png (the README shows it)."""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from telkit import run_sent_live

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
QUESTION = "Who designed the Corren Lighthouse?"


@pytest.mark.e2e
@pytest.mark.real
def test_a_real_run_in_phoenix_ui(phoenix, real_resources):
    from playwright.sync_api import expect, sync_playwright
    expect.set_options(timeout=60_000)   # under load the trace loads later than expect's 5 s
    if not Path(CHROMIUM).is_file():
        pytest.fail("Debian chromium is not installed (make browser)")
    result, sink = run_sent_live(phoenix.url, real_resources, QUESTION)
    roots = phoenix.wait_for(1, attribute=f"flowkit.run_id:{result.run_id}", parent_id="null")
    assert len(roots) == 1
    trace_id = roots[0]["context"]["trace_id"]
    with urllib.request.urlopen(phoenix.url + "/v1/projects", timeout=30) as resp:
        project = next(p["id"] for p in json.load(resp)["data"] if p["name"] == "flowkit")
    first_prompt = sink.steps[2].llm_calls[0].prompt          # iter_retgen: retrieve, rounds, generate
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 800})
            page.set_default_timeout(60_000)
            page.goto(f"{phoenix.url}/projects/{project}/traces/{trace_id}")
            tree = page.get_by_text("iter_retgen", exact=True).first
            expect(tree).to_be_visible()
            for node in ("retrieve", "rounds", "generate"):
                expect(page.get_by_text(node, exact=True).first).to_be_visible()
            page.get_by_text("llm", exact=True).first.click()
            # the LLM span's view: the exact prompt the model saw (its question line)
            expect(page.get_by_text(f"Question: {QUESTION}", exact=False).first).to_be_visible()
            assert QUESTION in first_prompt
            page.wait_for_timeout(1000)
            out = ROOT / "assets" / "screenshots" / "phoenix_trace.png"
            page.screenshot(path=str(out))
            art = ROOT / "test-artifacts"
            art.mkdir(exist_ok=True)
            page.screenshot(path=str(art / "phoenix_trace.png"))
        finally:
            browser.close()
    assert out.stat().st_size > 20_000
