"""The studio in a real Chromium with the real default model: run naive_rag on a sample question,
refresh while it runs, open the replay, step through it, fork it from a step with a changed memory
value, follow the fork back to its parent; search a knowledge base side by side. Screenshots go to
test-artifacts/.

The sample knowledge base is ingested by `flowkit setup` (python -m service.cli setup) into a temp FLOWKIT_HOME first.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from e2ekit import ART, RUN_TIMEOUT_MS, ask, eventually, page_fixture, settle, stored_status, studio_fixture

from storage.repo import Store

pytestmark = pytest.mark.e2e

QUESTION = "In what year was the Corren Lighthouse first lit?"
FORK_QUESTION = "Who designed the Corren Lighthouse?"


def _model_workers(home: Path) -> list[int]:
    """Pids of the model worker processes serving the studio on FLOWKIT_HOME=home."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"flowkit.runtime.worker" in cmd and f"FLOWKIT_HOME={home}".encode() in env:
            pids.append(int(proc.name))
    return pids


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])       # utime + stime


studio = studio_fixture("run-replay")
page = page_fixture(1500, 1500)


def test_run_refresh_replay_fork(studio, page):
    from playwright.sync_api import expect

    # ---- run naive_rag on a sample question ----------------------------------------------------
    expect.set_options(timeout=60_000)
    ask(page, studio.url, "naive_rag", QUESTION).click()
    page.wait_for_url(re.compile(r"[?&]run=\w+"))
    run_id = re.search(r"[?&]run=(\w+)", page.url).group(1)

    # ---- a refresh while it runs re-attaches to the same run -------------------------------------
    page.reload()
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible()
    assert f"run={run_id}" in page.url
    expect(page.locator("textarea[aria-label='Question']")).to_have_value(QUESTION)
    expect(page.get_by_text(f"run {run_id}").or_(page.get_by_text("Queued:"))
           .or_(page.get_by_text("starting (loading the model")).first).to_be_visible()
    expect(page.get_by_text("Running now").or_(page.get_by_role("heading", name="Answer"))
           .first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    page.screenshot(path=str(ART / "run_page_running.png"), full_page=True)

    answer = page.get_by_role("heading", name="Answer")      # written live, then the stored one
    expect(answer).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_text("Cited passages").or_(page.get_by_text("cites no passage"))
           .first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("stMetric").filter(has_text="LLM calls")).to_be_visible()
    settle(page)
    page.screenshot(path=str(ART / "run_page.png"), full_page=True)

    # ---- the replay: step through it -------------------------------------------------------------
    page.get_by_role("link", name="Open the replay").click()
    page.wait_for_url(re.compile(r"/replay\?"))
    expect(page.get_by_text("Step 0 of 1")).to_be_visible()
    expect(page.locator("iframe[title='streamlit_agraph.agraph']")).to_be_visible()
    page.get_by_role("button", name=re.compile(r"\bNext$")).click()
    expect(page.get_by_text("Step 1 of 1")).to_be_visible()
    assert "step=1" in page.url
    page.get_by_role("button", name=re.compile(r"\bPrev$")).click()
    expect(page.get_by_text("Step 0 of 1")).to_be_visible()
    page.get_by_role("slider").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_text("Step 1 of 1")).to_be_visible()
    settle(page)
    page.get_by_role("tab", name=re.compile("LLM calls")).click()
    expect(page.get_by_text("Call 1", exact=False).first).to_be_visible()
    expect(page.locator("[data-testid='stVegaLiteChart'] svg").first).to_be_visible()
    page.screenshot(path=str(ART / "replay_page.png"), full_page=True)

    # ---- fork from step 1 (the answer step, after retrieval) with another question -------------
    page.get_by_role("tab", name="Fork from this step").click()
    value = page.locator("textarea[aria-label='New value (JSON)']")
    expect(value).to_have_value(re.compile("Corren Lighthouse first lit"))
    value.fill(f'"{FORK_QUESTION}"')
    value.press("Control+Enter")
    settle(page)
    page.get_by_role("button", name="Fork and run ▶").click()
    page.wait_for_url(re.compile(r"[?&]fork=\w+"))
    expect(page.get_by_text("Fork from step 1 finished")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    page.get_by_role("button", name=re.compile("Open the forked run")).click()
    page.wait_for_url(re.compile(rf"[?&]run=(?!{run_id})\w+"))
    expect(page.get_by_text(f"Forked from run {run_id} step 1")).to_be_visible()
    expect(page.get_by_text(re.compile(r"Changed question: .*Who designed"))).to_be_visible()
    expect(page.get_by_text(re.compile(r"the parent ran 1 step\(s\), 0 LLM call\(s\)"))
           ).to_be_visible()
    expect(page.get_by_test_id("stMetric").filter(has_text="LLM calls").first
           ).to_have_text(re.compile(r"LLM calls\s*1$"))   # the fork's own call (the totals)
    child_id = re.search(r"[?&]run=(\w+)", page.url).group(1)
    expect(page.get_by_text(FORK_QUESTION).first).to_be_visible()
    settle(page)
    page.screenshot(path=str(ART / "replay_forked_run.png"), full_page=True)

    # ---- and the parent lists its fork ---------------------------------------------------------
    page.get_by_role("button", name=re.compile(f"Open the parent run {run_id}")).click()
    page.wait_for_url(re.compile(rf"[?&]run={run_id}"))
    expect(page.get_by_text("Forks of this run: 1")).to_be_visible()
    expect(page.get_by_text("Step 1 of 1")).to_be_visible()        # at the step it forked from
    expect(page.get_by_role("button", name=re.compile(f"Fork {child_id}"))).to_be_visible()


def test_knowledge_page_search_side_by_side(studio, page):
    from playwright.sync_api import expect

    page.goto(f"{studio.url}/knowledge?kb=sample")
    expect(page.get_by_role("heading", name="Knowledge bases")).to_be_visible()
    search = page.locator("input[aria-label='Search']")
    search.fill("Corren Lighthouse keeper")
    search.press("Enter")
    for head in ("BM25", "Dense", "Hybrid (RRF)"):
        expect(page.get_by_text(head, exact=True)).to_be_visible(timeout=60_000)
    expect(page.get_by_text("art-09#0").first).to_be_visible()
    settle(page)
    page.screenshot(path=str(ART / "knowledge_page_search.png"), full_page=True)
    page.get_by_role("tab", name="Chunks").click()
    expect(page.get_by_text(re.compile(r"\d+ chunks · showing 1-20"))).to_be_visible()
    page.screenshot(path=str(ART / "knowledge_page_chunks.png"), full_page=True)


def test_a_model_worker_killed_mid_run_fails_that_run_and_the_studio_goes_on(studio, page):
    """kill -SEGV on the model process while it generates: the run fails with the reason, the
    studio keeps serving, and the next run answers."""
    import signal
    import time

    from playwright.sync_api import expect

    def run_question() -> None:
        ask(page, studio.url, "naive_rag", FORK_QUESTION).click()
        page.wait_for_url(re.compile(r"[?&]run=\w+"))

    if not _model_workers(studio.home):            # a worker that is loading is not generating
        run_question()
        expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    run_question()
    deadline = time.monotonic() + 300
    killed = None
    while killed is None and time.monotonic() < deadline:
        pids = _model_workers(studio.home)
        if pids:
            pid, start = pids[0], _cpu_ticks(pids[0])
            while time.monotonic() < deadline:       # busy: it is reading the prompt or generating
                time.sleep(0.02)
                try:
                    if _cpu_ticks(pid) - start >= 5:
                        os.kill(pid, signal.SIGSEGV)
                        killed = pid
                        break
                except (OSError, ValueError):
                    break
        time.sleep(0.05)
    assert killed, "no busy model worker found to kill"
    expect(page.get_by_text(re.compile(r"the model process died: signal 11 \(SIGSEGV\)")).first
           ).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)
    page.screenshot(path=str(ART / "run_page_worker_killed.png"), full_page=True)

    run_question()                                          # the same studio, a new run
    # the answer box shows as soon as the run starts (the new worker may still be starting):
    # wait for the run to be stored as answered
    new_run = re.search(r"[?&]run=(\w+)", page.url).group(1)
    store = Store(f"sqlite:///{studio.home / 'flowkit.db'}")
    eventually(lambda: stored_status(store, new_run) == "ok", timeout=RUN_TIMEOUT_MS / 1000,
               what="the next run to answer")
    workers = _model_workers(studio.home)
    assert workers and killed not in workers
