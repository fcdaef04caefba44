""""Add a variant" on the Compare page, in a real Chromium with the real model (issue 23, item 3).

An evaluation of naive_rag and iter_retgen on the first questions of
../shared/data/hotpotqa_dev_500_ircotfmt is run through the CLI (quicker than from the browser;
test_compare_e2e drives that part), then opened on the Compare page. There the user picks
iter_retgen's final answer node, changes its `top_n`, and adds the variant as a new column: the
variant's column appears beside the other two, and the progress says how many of its calls were
computed and how many came from the completion cache (its draft rounds are the parent's calls, so
some must). The knowledge base holds only the passages that came with those questions.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import ROOT, StudioServer, chromium, eventually

from flowkit.eval.datasets import from_path, shared_data_dir, subset_corpus

pytestmark = [pytest.mark.e2e, pytest.mark.real]
SET = "hotpotqa_dev_500_ircotfmt"
N = 3
ARTIFACTS = ROOT / "test-artifacts"


def cli(home: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWKIT_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.run([sys.executable, "-m", "service.cli", "--data-dir", str(home), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A studio over a home holding one finished evaluation; yields (url, eval id)."""
    folder = shared_data_dir() / SET
    if not (folder / "corpus.jsonl").is_file():
        pytest.fail(f"{folder} is missing: the shared QA data must lie beside the repository")
    home = tmp_path_factory.mktemp("variant-e2e")
    ds = from_path(folder)
    subset = home / "subset_corpus.jsonl"            # a temp file, never in the repository
    subset_corpus(ds, ds.first(N), subset)
    cli(home, "ingest", "--kb", "hotpot", str(subset))
    out = home / "report.json"
    cli(home, "eval", "--flow", "naive_rag", "--flow", "iter_retgen", "--dataset", SET,
        "--kb", "hotpot", "--limit", str(N), "--out", str(out))
    eval_id = json.loads(out.read_text())["eval_id"]
    server = StudioServer(home, timeout_s=120, env={"STREAMLIT_RUNNER_POST_SCRIPT_GC": "false"})
    url = server.start()
    try:
        yield url, eval_id
    finally:
        server.stop()


def pick(page: Any, label: str, option: str) -> None:
    """Choose an option of a Streamlit selectbox by its label."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label)
    box.click()
    page.get_by_role("option", name=option, exact=True).click()


def test_a_variant_is_added_as_a_column_with_its_shared_calls_from_the_cache(evaluated):
    url, eval_id = evaluated
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 800})
        page.set_default_timeout(30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.goto(f"{url}/compare?eval={eval_id}")
        try:
            eventually(lambda: f"{2 * N}/{2 * N} answers · done" in page.locator("body").inner_text(),
                       timeout=60, what="the finished evaluation")
        except AssertionError:
            page.screenshot(path=str(ARTIFACTS / "compare_variant_failed.png"), full_page=True)
            raise
        page.get_by_text("Add a variant as a new column").click()
        pick(page, "Variant of", "iter_retgen")
        pick(page, "Change the params of node", "final")
        top_n = page.get_by_label(re.compile(r"^Top N"))
        top_n.fill("2")
        top_n.press("Enter")
        page.get_by_role("button", name="Add and run").click()
        total = 3 * N
        try:
            eventually(lambda: f"{total}/{total} answers · done" in page.locator("body").inner_text(),
                       timeout=600, what=f"{total} answers")
        except AssertionError:
            page.screenshot(path=str(ARTIFACTS / "compare_variant_failed.png"), full_page=True)
            raise
        # the new column, named after its parent, node and params
        variant = re.compile(r"iter_retgen~final\.[0-9a-f]{4}")
        eventually(lambda: variant.search(page.locator("body").inner_text()), timeout=60,
                   what="the variant's column")
        # the progress tells computed calls from cached ones: the draft rounds were the parent's
        caption = eventually(lambda: re.search(r"(\d+) calls computed, (\d+) from the cache",
                                               page.locator("body").inner_text()),
                             timeout=30, what="computed and cached calls in the progress")
        computed, cached = int(caption.group(1)), int(caption.group(2))
        assert cached > 0, caption.group(0)
        assert computed >= N, caption.group(0)       # each question's final answer is new
        page.screenshot(path=str(ARTIFACTS / "compare_variant.png"), full_page=True)
