"""Issue 40 item 1 in a real Chromium on this CPU-only llama.cpp build: the Settings page shows the
device the model loads on, refuses GPU layers -1 with its message and keeps the settings as they
were, so the next run of a flow is served from the completion cache (the key holds the layers
actually offloaded, 0 here, as before).

A naive_rag run with the real default model (in its worker) is recorded first, in this process,
with a hashing embedder; after the browser's refused save, the same run again is all cache hits
and starts no model.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from e2ekit import ART, CHROMIUM, StudioServer, chromium, settle

from flowkit import templates
from flowkit.run_request import RunRequest
from flowkit.testing import HashEmbedder

pytestmark = [pytest.mark.e2e, pytest.mark.real]
QUESTION = "In what year was the Corren Lighthouse first lit?"
REFUSED = re.compile(r"GPU layers: llm\.n_gpu_layers is -1, but this llama\.cpp build cannot "
                     r"offload to a GPU")


def _run(home: Path, ingest_first: bool) -> tuple[Any, bool]:
    """One naive_rag run on the workspace in `home`; whether its model process was started."""
    from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
    from service.workspace import Workspace

    ws = Workspace(home)
    try:
        ws.resources.set_embedder(HashEmbedder())
        if ingest_first:
            ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
        result = ws.run(templates.load_template("naive_rag"), RunRequest(QUESTION, kb=SAMPLE_KB))
        llm = ws.resources.llm
        return result, bool(getattr(llm, "restarts", 0) or getattr(llm, "_started_once", False))
    finally:
        ws.close()


def test_gpu_layers_refused_on_a_cpu_build_and_the_cache_still_hit(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from flowkit.runtime.resources import load_settings

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    home = tmp_path / "home"
    first, started = _run(home, ingest_first=True)
    assert first.status == "ok" and first.cost.calls > 0 and started
    ART.mkdir(exist_ok=True)
    with StudioServer(home, log=ART / "e2e-settings-gpu-streamlit.log", timeout_s=120) as url, \
            chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(f"{url}/settings")
        layers = page.get_by_role("spinbutton", name="GPU layers")
        layers.wait_for()
        settle(page)
        expect(page.get_by_text("Device: CPU (a CPU-only llama.cpp build) · batch 64 · prefix "
                                "reuse on")).to_be_visible()
        layers.fill("-1")
        page.get_by_role("button", name="Save settings").click()
        expect(page.get_by_text(REFUSED)).to_be_visible()
        page.screenshot(path=str(ART / "e2e-settings-gpu-refused.png"))
    assert load_settings(home).llm.n_gpu_layers is None      # nothing saved
    second, started = _run(home, ingest_first=False)
    assert second.answer == first.answer
    assert second.cost.cached == first.cost.calls > 0
    assert not started                                            # every call from the cache
